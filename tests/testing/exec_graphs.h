// Small training graphs for the executor tests, together covering every op type the executor reconstructs.
#pragma once

#include "core/graph.h"
#include "core/strategy.h"
#include "core/topology.h"

namespace devplace::testing {

// Convolutions (plain, strided with bias, depthwise, grouped, rectangular, causal 1-D), pooling, batch and layer
// normalisation, activations, arithmetic, sums, softmax, concat, flatten, a multi-input dense layer and the loss.
Graph ConvTrainingGraph();
// Embeddings (full and per time step), an unrolled LSTM with shared weights, dot and additive attention, context,
// stacking, an ENAS highway node, multi-head attention (fused and broadcast keys), sampled and full softmax losses.
Graph SequenceTrainingGraph();
// The executor's view of this machine: configs/topologies/cpu-local.yaml (two devices).
Topology CpuLocal();
// Colocation groups spread round-robin over two devices (a valid strategy that moves many tensors).
Strategy SpreadGroups(const Graph& graph);

}  // namespace devplace::testing
