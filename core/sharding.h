// Sharding specs (GSPMD): the layout of an op's output tensor on a device mesh, and its lowering to the per-op
// configs (core/strategy.h) every simulator, executor and baseline consumes, and the lifting back.
//
// Lowering an op whose output has spec S on mesh M: the op dimension (op.dims) whose output_axis is tensor axis a is
// split over the mesh axes S.dims[a], and the op's first reduction dimension over S.partial (its parts then hold
// partial sums, reduced by the consumer's conversion). Degree of a dimension = product of its axes' extents. Part p
// (row-major over the degrees; within a dimension the listed axes are major to minor) runs on the mesh device at the
// coordinates the part's index gives on the used axes; the axes the spec does not use index the copies (OpConfig): an
// op replicated over an axis runs on every device of it, as GSPMD's replicated computation does (no transfers feed
// its replicas). A spec using no axis lowers to one part copied on every device of the mesh, in the mesh's order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/mesh.h"
#include "core/status.h"
#include "core/strategy.h"

namespace devplace {

// Layout of one tensor on a mesh: per tensor axis the mesh axes (indices into Mesh::axes, major to minor) it is
// split over (empty = replicated along it), and the mesh axes over which it is a pending partial sum.
struct ShardingSpec {
  std::vector<std::vector<int32_t>> dims;
  std::vector<int32_t> partial;

  // The fully replicated spec of a tensor of rank `rank`.
  static ShardingSpec Replicated(int32_t rank);
  // True when no axis is split and nothing is partial.
  bool is_replicated() const;
  bool operator==(const ShardingSpec&) const = default;
};

// Number of shards tensor axis `axis` is cut into (product of its mesh axes' extents).
int64_t ShardCount(const ShardingSpec& spec, int32_t axis, const Mesh& mesh);
// Number of distinct devices the spec spreads over (product over all used axes, partial included).
int64_t SpecParts(const ShardingSpec& spec, const Mesh& mesh);

// Checks `spec` for a tensor of shape `shape` on `mesh`: one entry per axis, known mesh axes, no mesh axis used
// twice (dims and partial together), every split axis at least as long as its shard count and, unless
// `allow_padding`, divisible by it. Errors describe the problem, e.g. "axis 1 (extent 6) is not divisible by 4 shards".
Status ValidateSpec(const ShardingSpec& spec, const std::vector<int64_t>& shape, const Mesh& mesh, bool allow_padding);

// Text of a spec with axis names, e.g. "[data, -, model] partial(model)" or "[(data, model)]".
std::string FormatSpec(const ShardingSpec& spec, const Mesh& mesh);

// The mesh axes of each of op.dims under `spec` (see the file comment). Errors when `spec` splits a tensor axis
// that no partitionable dimension of the op slices, or is partial for an op without a reduction dimension.
Expected<std::vector<std::vector<int32_t>>> DimAxesOf(const Op& op, const ShardingSpec& spec);
// The config of `op` under per-dimension axes `dim_axes` (one entry per op.dims) on `mesh`.
OpConfig LowerDimAxes(const std::vector<std::vector<int32_t>>& dim_axes, const Mesh& mesh);
// ValidateSpec (shape = op.shape) then the config of `op` under `spec` on `mesh`.
Expected<OpConfig> LowerSpec(const Op& op, const ShardingSpec& spec, const Mesh& mesh, bool allow_padding = true);
// The spec whose lowering is exactly `config`, or std::nullopt when there is none (devices off the mesh or not in
// its layout, a split of a non-first reduction dimension or of a dimension without an output axis). Mesh axes of
// extent 1 are never used by a lifted spec.
std::optional<ShardingSpec> LiftConfig(const Op& op, const OpConfig& config, const Mesh& mesh);

// The collectives that convert one layout of a tensor into another (GSPMD): a pending sum over a mesh axis is
// all-reduced, or reduce-scattered when the target splits a tensor axis over that mesh axis; a split the target does
// not have is all-gathered; a split moved to another tensor axis (or to another position among an axis's mesh axes)
// is an all-to-all; a split the source does not have is a local slice (free).
enum class ReshardKind : uint8_t { kAllReduce, kReduceScatter, kAllGather, kAllToAll, kSlice };
std::string_view ToString(ReshardKind kind);

// One collective over one mesh axis. from_axis / to_axis: the tensor axes split over `mesh_axis` before and after
// (-1: none, e.g. an all-reduce's source is partial and its target replicated along it).
struct ReshardStep {
  ReshardKind kind = ReshardKind::kSlice;
  int32_t mesh_axis = 0;
  int32_t from_axis = -1;
  int32_t to_axis = -1;
  bool operator==(const ReshardStep&) const = default;
};

// The steps turning layout `from` into layout `to` (same rank; `to` is not partial), ordered by mesh axis. Empty when
// the layouts are equal.
std::vector<ReshardStep> ReshardingSteps(const ShardingSpec& from, const ShardingSpec& to);

// The layout of `producer`'s output that `consumer` reads when its own output has spec `consumer_spec`: each of
// the consumer's split dimensions that slices an input axis the producer has splits that axis alike (the first
// such dimension per axis); everything else is read whole. Precondition: DimAxesOf(consumer, consumer_spec) is ok.
ShardingSpec InputSpecFor(const Op& consumer, const ShardingSpec& consumer_spec, const Op& producer);

// Per edge of `graph` (by edge id) between two forward ops: the steps converting the producer's layout into the one
// the consumer reads (InputSpecFor), given one spec per op; empty for other edges and for edges needing none.
std::vector<std::vector<ReshardStep>> ForwardEdgeResharding(const Graph& graph, const std::vector<ShardingSpec>& specs);

// One spec per op of `graph` lowered to a strategy (ValidateStrategy is the caller's). Errors name the op.
// `weight_shard_axis` (ZeRO stage 3, -1: none): every op holding weights (a forward op with parameters or its
// backward op) whose spec splits a tensor axis over that mesh axis and whose lowering has replicas of its weight
// shards gets OpConfig::shard_weights (its weights and gradients split over those replicas too).
Expected<Strategy> LowerSpecs(const Graph& graph, const std::vector<ShardingSpec>& specs, const Mesh& mesh,
                              int32_t weight_shard_axis = -1);

}  // namespace devplace
