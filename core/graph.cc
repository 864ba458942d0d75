#include "core/graph.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <queue>
#include <unordered_set>

#include "core/check.h"

namespace devplace {

int64_t DTypeBytes(DType dtype) {
  switch (dtype) {
    case DType::kF64:
    case DType::kI64:
      return 8;
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kI8:
    case DType::kBool:
      return 1;
  }
  return 4;
}

namespace {
constexpr std::pair<DType, std::string_view> kDTypeNames[] = {
    {DType::kF32, "f32"}, {DType::kF16, "f16"}, {DType::kBF16, "bf16"}, {DType::kF64, "f64"},
    {DType::kI64, "i64"}, {DType::kI32, "i32"}, {DType::kI8, "i8"},     {DType::kBool, "bool"}};
constexpr std::pair<OpRole, std::string_view> kRoleNames[] = {
    {OpRole::kForward, "forward"}, {OpRole::kBackward, "backward"}, {OpRole::kUpdate, "update"}};
constexpr std::pair<DimKind, std::string_view> kDimNames[] = {{DimKind::kSample, "sample"},
                                                              {DimKind::kAttribute, "attribute"},
                                                              {DimKind::kParameter, "parameter"},
                                                              {DimKind::kReduction, "reduction"}};

template <class E, size_t N>
std::string_view NameOf(const std::pair<E, std::string_view> (&table)[N], E value) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return "?";
}

template <class E, size_t N>
bool Parse(const std::pair<E, std::string_view> (&table)[N], std::string_view text, E* out) {
  for (const auto& [v, name] : table) {
    if (name == text) {
      *out = v;
      return true;
    }
  }
  return false;
}
}  // namespace

std::string_view ToString(OpRole role) { return NameOf(kRoleNames, role); }
std::string_view ToString(DType dtype) { return NameOf(kDTypeNames, dtype); }
std::string_view ToString(DimKind kind) { return NameOf(kDimNames, kind); }
bool ParseOpRole(std::string_view text, OpRole* role) { return Parse(kRoleNames, text, role); }
bool ParseDType(std::string_view text, DType* dtype) { return Parse(kDTypeNames, text, dtype); }
bool ParseDimKind(std::string_view text, DimKind* kind) { return Parse(kDimNames, text, kind); }

int64_t NumElements(const Op& op) {
  int64_t n = 1;
  for (int64_t d : op.shape) n *= d;
  return n;
}

int64_t OutputBytes(const Op& op) { return NumElements(op) * DTypeBytes(op.dtype); }

std::span<const int32_t> Graph::out_edges(OpId id) const {
  return {out_ids_.data() + out_offsets_[id], out_ids_.data() + out_offsets_[id + 1]};
}

std::span<const int32_t> Graph::in_edges(OpId id) const {
  return {in_ids_.data() + in_offsets_[id], in_ids_.data() + in_offsets_[id + 1]};
}

OpId Graph::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

double Graph::total_flops() const {
  double total = 0;
  for (const Op& op : ops_) total += op.flops;
  return total;
}

int64_t Graph::total_param_bytes() const {
  int64_t total = 0;
  for (const Op& op : ops_) total += op.param_bytes;
  return total;
}

int32_t Graph::count_role(OpRole role) const {
  return static_cast<int32_t>(std::count_if(ops_.begin(), ops_.end(), [&](const Op& op) { return op.role == role; }));
}

OpId GraphBuilder::add_op(Op op) {
  ops_.push_back(std::move(op));
  return static_cast<OpId>(ops_.size() - 1);
}

void GraphBuilder::add_edge(OpId src, OpId dst, int64_t bytes) {
  if (bytes < 0 && src >= 0 && src < num_ops()) bytes = OutputBytes(ops_[src]);
  edges_.push_back(Edge{src, dst, bytes});
}

namespace {

Error OpError(const Op& op, const std::string& what) { return Error{"op '" + op.name + "': " + what}; }

// Checks one op's own fields (not its edges).
Status ValidateOp(const Op& op) {
  if (op.name.empty()) return Error{"an op has an empty name"};
  if (op.type.empty()) return OpError(op, "type must not be empty");
  if (!(op.flops >= 0) || !std::isfinite(op.flops)) return OpError(op, "flops must be a finite number >= 0");
  if (op.flops > kMaxOpFlops) {
    char flops[32];  // "1e+308", not the 309 digits of std::to_string
    std::snprintf(flops, sizeof flops, "%.6g", op.flops);
    return OpError(op, "flops " + std::string(flops) + " is absurdly large (> 1e18)");
  }
  if (op.param_bytes < 0) return OpError(op, "param_bytes must be >= 0");
  if (op.param_bytes > kMaxTensorBytes) return OpError(op, "param_bytes is absurdly large (> 4 TiB)");
  int64_t elements = 1;
  for (size_t i = 0; i < op.shape.size(); ++i) {
    int64_t d = op.shape[i];
    if (d <= 0) return OpError(op, "shape[" + std::to_string(i) + "] must be > 0, got " + std::to_string(d));
    if (elements > kMaxTensorBytes / d) return OpError(op, "output tensor is absurdly large (> 4 TiB)");
    elements *= d;
  }
  if (elements > kMaxTensorBytes / DTypeBytes(op.dtype)) return OpError(op, "output tensor is absurdly large (> 4 TiB)");
  const auto rank = static_cast<int32_t>(op.shape.size());
  for (size_t i = 0; i < op.dims.size(); ++i) {
    const PartitionDim& dim = op.dims[i];
    std::string where = "dims[" + std::to_string(i) + "]: ";
    if (dim.size <= 0) return OpError(op, where + "size must be > 0");
    if (dim.output_axis < -1 || dim.output_axis >= rank)
      return OpError(op, where + "output_axis " + std::to_string(dim.output_axis) + " is outside the output's rank " +
                             std::to_string(rank));
    if (dim.input_axis < -1) return OpError(op, where + "input_axis must be >= -1");
    if (dim.output_axis >= 0 && op.shape[dim.output_axis] != dim.size)
      return OpError(op, where + "size " + std::to_string(dim.size) + " differs from shape[" +
                             std::to_string(dim.output_axis) + "] = " + std::to_string(op.shape[dim.output_axis]));
    if (dim.kind == DimKind::kReduction && dim.output_axis != -1)
      return OpError(op, where + "a reduction dim has no output axis (output_axis must be -1)");
    if (dim.kind != DimKind::kReduction && dim.output_axis == -1)
      return OpError(op, where + "a " + std::string(ToString(dim.kind)) + " dim needs an output_axis");
  }
  return Status::Ok();
}

// Builds CSR lists of edge ids grouped by `key(edge)`, each group sorted by `other(edge)` then edge id.
template <class Key, class Other>
void BuildCsr(const std::vector<Edge>& edges, int32_t n, Key key, Other other, std::vector<int32_t>* offsets,
              std::vector<int32_t>* ids) {
  offsets->assign(n + 1, 0);
  for (const Edge& e : edges) ++(*offsets)[key(e) + 1];
  for (int32_t i = 0; i < n; ++i) (*offsets)[i + 1] += (*offsets)[i];
  ids->resize(edges.size());
  std::vector<int32_t> fill(offsets->begin(), offsets->end() - 1);
  for (int32_t e = 0; e < static_cast<int32_t>(edges.size()); ++e) (*ids)[fill[key(edges[e])]++] = e;
  for (int32_t i = 0; i < n; ++i) {
    std::sort(ids->begin() + (*offsets)[i], ids->begin() + (*offsets)[i + 1], [&](int32_t a, int32_t b) {
      return std::pair(other(edges[a]), a) < std::pair(other(edges[b]), b);
    });
  }
}

}  // namespace

Expected<Graph> GraphBuilder::Build() && {
  Graph g;
  g.name_ = std::move(name_);
  g.ops_ = std::move(ops_);
  g.edges_ = std::move(edges_);
  const int32_t n = g.num_ops();

  g.by_name_.reserve(n);
  for (OpId i = 0; i < n; ++i) {
    if (Status s = ValidateOp(g.ops_[i]); !s.ok()) return s.error();
    if (!g.by_name_.emplace(g.ops_[i].name, i).second) return OpError(g.ops_[i], "duplicate op name");
  }

  std::unordered_set<int64_t> seen_edges;
  seen_edges.reserve(g.edges_.size());
  for (size_t e = 0; e < g.edges_.size(); ++e) {
    const Edge& edge = g.edges_[e];
    if (edge.src < 0 || edge.src >= n || edge.dst < 0 || edge.dst >= n) {
      std::string known = (edge.src >= 0 && edge.src < n) ? "from op '" + g.ops_[edge.src].name + "' "
                          : (edge.dst >= 0 && edge.dst < n) ? "into op '" + g.ops_[edge.dst].name + "' "
                                                            : "";
      return Error{"edge " + std::to_string(e) + " " + known + "refers to an op that does not exist (ids " +
                   std::to_string(edge.src) + " -> " + std::to_string(edge.dst) + ", " + std::to_string(n) + " ops)"};
    }
    if (edge.src == edge.dst) return OpError(g.ops_[edge.src], "has an edge to itself");
    if (edge.bytes < 0 || edge.bytes > kMaxTensorBytes)
      return OpError(g.ops_[edge.src], "edge to '" + g.ops_[edge.dst].name + "' has invalid size " +
                                           std::to_string(edge.bytes) + " bytes");
    if (!seen_edges.insert(int64_t{edge.src} * n + edge.dst).second)
      return OpError(g.ops_[edge.src], "duplicate edge to '" + g.ops_[edge.dst].name + "'");
  }

  BuildCsr(g.edges_, n, [](const Edge& e) { return e.src; }, [](const Edge& e) { return e.dst; }, &g.out_offsets_,
           &g.out_ids_);
  BuildCsr(g.edges_, n, [](const Edge& e) { return e.dst; }, [](const Edge& e) { return e.src; }, &g.in_offsets_,
           &g.in_ids_);

  // Kahn's algorithm, smallest ready id first, for a deterministic order.
  std::vector<int32_t> indegree(n);
  for (OpId i = 0; i < n; ++i) indegree[i] = g.in_offsets_[i + 1] - g.in_offsets_[i];
  std::priority_queue<OpId, std::vector<OpId>, std::greater<>> ready;
  for (OpId i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push(i);
  g.topo_order_.reserve(n);
  while (!ready.empty()) {
    OpId u = ready.top();
    ready.pop();
    g.topo_order_.push_back(u);
    for (int32_t e : g.out_edges(u))
      if (--indegree[g.edges_[e].dst] == 0) ready.push(g.edges_[e].dst);
  }
  if (static_cast<int32_t>(g.topo_order_.size()) != n) {
    // Walk backwards along unfinished predecessors until an op repeats: that op lies on a cycle.
    OpId u = 0;
    while (indegree[u] == 0) ++u;
    std::vector<char> visited(n, 0);
    while (!visited[u]) {
      visited[u] = 1;
      for (int32_t e : g.in_edges(u)) {
        if (indegree[g.edges_[e].src] > 0) {
          u = g.edges_[e].src;
          break;
        }
      }
    }
    return OpError(g.ops_[u], "is on a cycle (the graph must be acyclic)");
  }
  g.topo_rank_.assign(n, 0);
  for (int32_t r = 0; r < n; ++r) g.topo_rank_[g.topo_order_[r]] = r;
  g.forward_op_ids_.assign(n, -1);
  for (OpId i = 0; i < n; ++i)
    if (!g.ops_[i].forward_op.empty()) g.forward_op_ids_[i] = g.find(g.ops_[i].forward_op);
  return g;
}

}  // namespace devplace
