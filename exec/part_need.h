// Internal to exec/: the geometry part_plan.cc builds a partitioned step from (docs/executor.md, "Partitioned
// execution"): what one part of an op needs of each of its inputs under a config, and whether a split computes
// exactly what the whole op computes over the part's region.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/partition.h"
#include "core/strategy.h"
#include "exec/kernels.h"
#include "exec/op_impl.h"

namespace devplace::exec {

// The extent of `b` along each of its axes.
std::vector<int64_t> Extents(const Box& b);
// Where `inner` starts inside `outer`, per axis.
std::vector<int64_t> Offset(const Box& inner, const Box& outer);
// The slot (in-edge index) of `f`'s inputs that `src` feeds, or -1.
int SlotOf(const Graph& graph, OpId f, OpId src);

// What part `part` of edge e's consumer, under `config`, needs of the edge: a region of the tensor the edge carries
// in its natural coordinates (the producer's output, or the gradient of the consumer's forward op's output).
struct Need {
  Box region;
  bool sum = false;      // partial gradients to add up
  bool zeros = false;    // nothing the consumer computes with: zeros of the edge's shape
  bool weight_grad = false;
  int port = 0;          // the producer's output port
  const EdgeTensor* cut = nullptr;  // set: the edge carries part of the tensor (base.edges[e]); the region is whole
  // With `cut`, when the part takes rows of its op (RowsOnly) and the edge one value per row: the part's rows
  // [cut_lo, cut_lo + cut_len) of what the edge carries (cut_len -1: all of it).
  int64_t cut_lo = 0, cut_len = -1;
};
Need NeedOf(const Graph& graph, const Plan& base, int32_t e, const OpConfig& config, int32_t part);

// Whether `config` splits `op` only along its sample dimension at output axis 0 (each part a block of rows).
bool RowsOnly(const Op& op, const OpConfig& config);
// The shape a part reads of a cut edge: the edge's, with `cut_len` rows when that is set (>= 0).
std::vector<int64_t> CutShape(const EdgeTensor& cut, int64_t cut_len);

// Whether every part of `op` under `config`, computed by the op's computation rebuilt for the part's shapes, gives
// its region of the whole op's result: splits along the sample dimension (output axis 0), along one parameter
// dimension that needs its inputs whole and whose weights shard (`impl` says how; *shard_axis is set to its output
// axis, else -1), and along attribute axes of element-wise ops (and of softmax and layer normalisation off their
// normalised last axis); a cut in-edge only when the parts take rows and the edge carries one value per row.
bool ExactSplit(const Graph& graph, const Plan& base, OpId op, const OpConfig& config, const OpImpl& impl,
                int32_t* shard_axis);

}  // namespace devplace::exec
