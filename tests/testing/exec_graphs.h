// Small training graphs for the executor tests, together covering every op type the executor reconstructs, and
// the options those tests run them with.
#pragma once

#include <cstdint>

#include "core/graph.h"
#include "core/strategy.h"
#include "core/topology.h"
#include "exec/executor.h"

namespace devplace::testing {

// Convolutions (plain, strided with bias, depthwise, grouped, rectangular, causal 1-D), pooling, batch and layer
// normalisation, activations, arithmetic, sums, softmax, concat, flatten, a multi-input dense layer and the loss.
Graph ConvTrainingGraph();
// Embeddings (full and per time step), an unrolled LSTM with shared weights, dot and additive attention, context,
// stacking, an ENAS highway node, multi-head attention (fused and broadcast keys), sampled and full softmax losses.
Graph SequenceTrainingGraph();
// A one-block Transformer training graph: token embedding (vocabulary `vocab`, width `width`), q/k/v projections,
// `heads`-head attention, output projection with a residual, layer norm, a feed-forward block of 2 x width with a
// residual, and a softmax loss over the vocabulary; ids and labels of shape [batch, seq].
Graph TinyTransformer(int64_t batch, int64_t seq, int64_t vocab, int64_t width, int64_t heads);
// The executor's view of this machine: configs/topologies/cpu-local.yaml (two devices).
Topology CpuLocal();
// Colocation groups spread round-robin over two devices (a valid strategy that moves many tensors).
Strategy SpreadGroups(const Graph& graph);
// One timed step and no warm-up on the CPU backend, threads unpinned, with every value recorded (loss, gradients,
// new weights): what the tests that compare a strategy's step with the single-device step run.
inline ExecOptions OneRecordedCpuStep() {
  ExecOptions options;
  options.warmup_steps = 0;
  options.timed_steps = 1;
  options.backend = "cpu";
  options.pin_threads = false;
  options.record_values = true;
  return options;
}

}  // namespace devplace::testing
