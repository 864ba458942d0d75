// GSPMD-style sharding propagation: from a few user annotations (op name pattern -> spec of the op's output) to a
// spec for every op of a graph, forward and backward along the data flow.
//
// Rules come from each op's partitionable dimensions (core/graph.h), which the model builders set per op type: a
// dimension with input_axis a slices axis a of the op's inputs (part j of d needs block j of d, as the simulator
// reads it), so a producer's split of its output axis a proposes the same mesh axes for that dimension (forward),
// and a consumer's split of such a dimension proposes them for the producer's output axis a (backward), when the
// shard count divides both extents (a head-major [.., heads * head_dim] axis split 4 ways lines up with 4 groups of
// heads). Hence element-wise ops, normalisation and softmax
// (all but the normalised axis), reshape/transpose, concat/stack (all but the concatenated axis), embedding gathers
// (ids -> rows), pooling and reductions pass splits through their kept axes, and a contraction (matmul, convolution,
// LSTM gates) whose input is split along the contracted axis gets its reduction dimension split: its output is
// partial over those mesh axes. Partial sums never propagate (the consumer receives the reduced tensor).
// Priority (GSPMD): annotated ops keep their spec; every other op takes, among the proposals its neighbours make,
// the most sharded first (largest shard count), then any other that stays compatible (a mesh axis once per op,
// shard counts dividing the dimension). Splits of dimensions that slice no input (a matmul's output features, an
// MoE dispatch's experts) make every part read its inputs whole, so they are proposed only in a second phase, after
// the splits that keep inputs sliced reached their fixpoint. Splits only grow, so each phase reaches a fixpoint.
// Backward ops take their forward op's spec and update ops shard over the axes that shard the forward op's weights
// (with `zero_axis`, over that axis too); ops of unknown types are replicated and named in the result. Every lowered
// op covers the whole mesh (its unused axes hold copies), so a colocation group always lands on one device set.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/mesh.h"
#include "core/sharding.h"
#include "core/status.h"

namespace devplace {

// One user annotation: every forward op whose name matches `pattern` (a glob: '*' any run of characters, '?' one
// character) gets `spec` for its output; a spec with fewer entries than the op's rank leaves the trailing axes
// replicated (as JAX's PartitionSpec does). `origin` (e.g. "s.yaml: annotations[2]") prefixes its errors.
struct ShardingAnnotation {
  std::string pattern;
  ShardingSpec spec;
  bool allow_padding = false;  // accept shard counts that do not divide an axis (uneven shards)
  std::string origin;
  // Equal when they say the same (pattern, spec, padding), wherever they were read from.
  bool operator==(const ShardingAnnotation& o) const {
    return pattern == o.pattern && spec == o.spec && allow_padding == o.allow_padding;
  }
};

// What propagation produced and how.
struct ShardingPlan {
  std::vector<ShardingSpec> specs;             // one per op
  std::vector<int32_t> annotation_of_op;       // per op: index of the annotation that set it, or -1
  std::vector<int32_t> ops_per_annotation;     // per annotation: forward ops it matched
  std::vector<OpId> replicated;                // forward ops whose output stayed fully replicated
  std::vector<OpId> unknown_ops;               // forward ops of types without a rule (replicated)
  std::vector<std::string> unknown_types;      // their types, sorted, each once
  int32_t iterations = 0;                      // sweeps (forward + backward) until the fixpoint
};

// True when `name` matches the glob `pattern` ('*' and '?').
bool GlobMatch(std::string_view pattern, std::string_view name);
// Whether propagation has a rule for op type `type` ("<type>_grad" and "update" ops follow their forward op).
bool HasShardingRule(std::string_view type);

// Propagates `annotations` over `graph` on `mesh`. Errors (prefixed with the annotation's origin): an annotation
// that matches no forward op, that does not fit a matched op (rank, unknown split, shard counts), two annotations
// giving one op different specs. `zero_axis` (ZeRO, -1: none): a mesh axis that also shards every weight update (and
// so the optimizer state) whose forward op splits its data over it.
Expected<ShardingPlan> PropagateSharding(const Graph& graph, const Mesh& mesh,
                                         const std::vector<ShardingAnnotation>& annotations, int32_t zero_axis = -1);

// Per annotation: whether it is needed, i.e. propagating `plan`'s annotations without it gives some op another spec
// (or fails). An annotation that is not needed is implied by the others. Costs one propagation per annotation.
std::vector<char> NeededAnnotations(const Graph& graph, const Mesh& mesh,
                                    const std::vector<ShardingAnnotation>& annotations, const ShardingPlan& plan,
                                    int32_t zero_axis = -1);

}  // namespace devplace
