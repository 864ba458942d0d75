// The computation graph: ops (with shapes, FLOPs and memory) and the tensors flowing between them.
// A Graph is an immutable value built by GraphBuilder::Build, which validates it (no cycles, no dangling
// edges, sane sizes, unique names) and precomputes CSR adjacency both ways and a topological order.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace devplace {

using OpId = int32_t;

// Where an op sits in a training step.
enum class OpRole : uint8_t { kForward, kBackward, kUpdate };

// Element type of an op's output tensor.
enum class DType : uint8_t { kF32, kF16, kBF16, kF64, kI64, kI32, kI8, kBool };

// Size in bytes of one element of `dtype`.
int64_t DTypeBytes(DType dtype);
std::string_view ToString(OpRole role);
std::string_view ToString(DType dtype);
// Parse the names produced by ToString; return false on an unknown name.
bool ParseOpRole(std::string_view text, OpRole* role);
bool ParseDType(std::string_view text, DType* dtype);

// The kinds of parallelisable dimensions of an op (FlexFlow's SOAP: sample, operator = attribute/parameter,
// plus reduction dimensions that need a sum of the partial outputs).
enum class DimKind : uint8_t { kSample, kAttribute, kParameter, kReduction };
std::string_view ToString(DimKind kind);
bool ParseDimKind(std::string_view text, DimKind* kind);

// One dimension along which an op can be split into parts.
// - output_axis: the axis of the op's output that the split slices, or -1 (reduction dims: every part
//   produces a full-size partial sum).
// - input_axis: the axis of the op's data inputs that each part needs a slice of, or -1 when every part
//   needs its inputs whole (e.g. the parameter dim of a matmul needs all of the input activations).
// - size: extent of the dimension (for output dims, equal to shape[output_axis]).
struct PartitionDim {
  DimKind kind = DimKind::kSample;
  int32_t output_axis = -1;
  int32_t input_axis = -1;
  int64_t size = 1;
};

// One operation. FLOPs count floating-point operations (a multiply-add is 2 FLOPs).
struct Op {
  std::string name;                 // unique within the graph
  std::string type;                 // e.g. "conv2d", "matmul", "relu", "lstm_cell"
  std::string layer;                // layer/scope path, used by the human-expert and coarsening heuristics
  OpRole role = OpRole::kForward;
  std::vector<int64_t> shape;       // output tensor shape (empty = scalar)
  DType dtype = DType::kF32;
  int64_t param_bytes = 0;          // trainable parameter bytes owned by this op
  double flops = 0.0;               // floating-point operations per execution
  std::string colocation;           // ops with the same non-empty group must share a device
  std::vector<PartitionDim> dims;   // dimensions that may be partitioned (empty = not partitionable)
  std::string forward_op;           // for backward/update ops: the forward op they derive from
};

// Number of elements and bytes of the op's output tensor.
int64_t NumElements(const Op& op);
int64_t OutputBytes(const Op& op);

// A tensor flowing from op `src` to op `dst`, carrying `bytes`.
struct Edge {
  OpId src = 0;
  OpId dst = 0;
  int64_t bytes = 0;
};

// Immutable, validated graph. Edge ids index edges(); adjacency lists hold edge ids sorted by the other end.
class Graph {
 public:
  Graph() = default;

  const std::string& name() const { return name_; }
  int32_t num_ops() const { return static_cast<int32_t>(ops_.size()); }
  int32_t num_edges() const { return static_cast<int32_t>(edges_.size()); }
  const Op& op(OpId id) const { return ops_[id]; }
  const std::vector<Op>& ops() const { return ops_; }
  const Edge& edge(int32_t id) const { return edges_[id]; }
  const std::vector<Edge>& edges() const { return edges_; }

  // Edge ids leaving / entering `id`.
  std::span<const int32_t> out_edges(OpId id) const;
  std::span<const int32_t> in_edges(OpId id) const;
  // A topological order of all ops (deterministic: Kahn's algorithm taking the smallest ready id first).
  const std::vector<OpId>& topological_order() const { return topo_order_; }
  // Position of each op in topological_order().
  int32_t topological_rank(OpId id) const { return topo_rank_[id]; }
  // The op with this name, or -1.
  OpId find(std::string_view name) const;
  // The op named by `id`'s forward_op (find(op(id).forward_op), looked up once at Build), or -1.
  OpId forward_op_of(OpId id) const { return forward_op_ids_[id]; }

  double total_flops() const;
  int64_t total_param_bytes() const;
  // Counts of ops by role.
  int32_t count_role(OpRole role) const;

 private:
  friend class GraphBuilder;
  std::string name_;
  std::vector<Op> ops_;
  std::vector<Edge> edges_;
  std::vector<int32_t> out_offsets_, out_ids_, in_offsets_, in_ids_;
  std::vector<OpId> topo_order_;
  std::vector<int32_t> topo_rank_;
  std::vector<OpId> forward_op_ids_;  // forward_op_of
  // Hashes a name given as any string type, so `find` looks up a string_view without copying it.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view name) const { return std::hash<std::string_view>{}(name); }
  };
  std::unordered_map<std::string, OpId, NameHash, std::equal_to<>> by_name_;
};

// Accumulates ops and edges, then validates and freezes them into a Graph.
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = "graph") : name_(std::move(name)) {}

  // Adds an op and returns its id (ids are dense, in insertion order).
  OpId add_op(Op op);
  // Adds an edge carrying `bytes`; bytes < 0 means "the producer's full output" (OutputBytes(src)).
  void add_edge(OpId src, OpId dst, int64_t bytes = -1);
  int32_t num_ops() const { return static_cast<int32_t>(ops_.size()); }
  const Op& op(OpId id) const { return ops_[id]; }
  Op& mutable_op(OpId id) { return ops_[id]; }

  // Validates and builds. Errors name the offending op, e.g. "op 'conv1': flops must be >= 0".
  // Rejects: duplicate or empty names, cycles (naming an op on the cycle), edges to unknown ops or self-loops,
  // duplicate edges, negative/absurd sizes, shapes with non-positive extents, dims inconsistent with the shape.
  Expected<Graph> Build() &&;

 private:
  std::string name_;
  std::vector<Op> ops_;
  std::vector<Edge> edges_;
};

// Limits beyond which a size is rejected as absurd (a sign of a unit error or overflow in the input).
inline constexpr double kMaxOpFlops = 1e18;
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 42;  // 4 TiB

}  // namespace devplace
