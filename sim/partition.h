// Partition geometry for the simulator (internal to sim/): the per-part byte counts the cost model needs and the
// parameter bytes an op stands for, over the regions core/partition.h defines (docs/simulator.md describes the model).
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/partition.h"
#include "core/strategy.h"
#include "sim/cost_model.h"

namespace devplace::sim {

// The geometry itself lives in core/partition.h (shared with the executor).
using devplace::kMaxRank;
using devplace::Box;
using devplace::FullBox;
using devplace::Volume;
using devplace::OverlapVolume;
using devplace::Intersection;
using devplace::SameBox;
using devplace::PartLayout;
using devplace::Layout;
using devplace::CopyIndex;
using devplace::ReductionIndex;
using devplace::ReductionRing;
using devplace::ShardIndex;
using devplace::ReplicaIndex;
using devplace::ComputedBox;
using devplace::OwnedBox;
using devplace::NeededBox;
using devplace::NearestCopy;
using devplace::ShardSource;

// Bytes of `part`'s inputs, output and weights, for the cost model; fills *shape with the part's output shape.
int64_t PartBytesAccessed(const Graph& graph, OpId op, const OpConfig& config, int32_t part,
                          std::vector<int64_t>* shape);
// The work a cost model prices for `part` of `op` under `config`: its output shape (written to *shape, which the
// returned work views, so it lives as long as *shape is unchanged), its FLOPs (the op's over its distinct parts)
// and its bytes accessed (PartBytesAccessed).
PartWork PartWorkOf(const Graph& graph, OpId op, const OpConfig& config, int32_t part, std::vector<int64_t>* shape);

// How the flat weights (or weight gradients, or optimizer state) an op stands for are held across its parts: in
// WeightPieces equal pieces (piece k covers [k/n, (k+1)/n) of them), part p holding piece WeightPiece. One piece per
// weight shard; with OpConfig::shard_weights (ZeRO-3) each shard is cut further into one piece per replica (replica
// i holding piece i of its shard).
int32_t WeightPieces(const Op& op, const OpConfig& config);
int32_t WeightPiece(const Op& op, const OpConfig& config, int32_t part);

// Parameter bytes whose weights, gradients or optimizer state an op stands for: its own param_bytes for
// forward ops, its forward op's for backward and update ops (0 when none).
int64_t ParamBytesOf(const Graph& graph, OpId op);

}  // namespace devplace::sim
