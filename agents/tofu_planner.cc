// TofuPlanner: coarsening, the cost of each level's schemes, and the strategy the chosen schemes make.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_map>

#include "agents/tofu_dp.h"
#include "core/check.h"

namespace devplace {
namespace {

constexpr int32_t kNumAxes = 12;                  // output axes a scheme may split (the simulator's max rank)
constexpr uint32_t kReduceBit = 1u << kNumAxes;   // mask bit of the partition-n-reduce scheme
constexpr uint32_t kAllSchemes = (1u << (kNumAxes + 1)) - 1;

int32_t SchemeOfBit(int32_t bit) { return bit == kNumAxes ? kTofuReduce : bit; }

bool IsShardKind(DimKind kind) { return kind == DimKind::kParameter || kind == DimKind::kReduction; }

// Schemes op `op` can take at all (some dimension of size >= 2 for it). Update ops follow their group: they
// always split their one parameter dimension.
uint32_t SchemeMask(const Op& op) {
  if (op.role == OpRole::kUpdate) return !op.dims.empty() && op.dims[0].size >= 2 ? kAllSchemes : 0;
  uint32_t mask = 0;
  for (const PartitionDim& d : op.dims) {
    if (d.size < 2) continue;
    if (d.kind == DimKind::kReduction) mask |= kReduceBit;
    else if (d.output_axis >= 0 && d.output_axis < kNumAxes) mask |= 1u << d.output_axis;
  }
  return mask;
}

// Element-wise in Tofu's sense: no weights, inputs of the output's shape, and every dimension maps an output
// axis to the same input axis.
bool IsElementwise(const Graph& graph, OpId id) {
  const Op& op = graph.op(id);
  if (op.dims.empty() || op.param_bytes > 0) return false;
  for (int32_t e : graph.in_edges(id))
    if (graph.op(graph.edge(e).src).shape != op.shape) return false;
  return std::all_of(op.dims.begin(), op.dims.end(), [](const PartitionDim& d) {
    return !IsShardKind(d.kind) && d.output_axis >= 0 && d.output_axis == d.input_axis;
  });
}

// Union-find over colocation groups whose roots carry the schemes every member can take.
struct GroupSets {
  std::vector<int32_t> parent;
  std::vector<uint32_t> mask;

  int32_t Find(int32_t g) {
    while (parent[g] != g) g = parent[g] = parent[parent[g]];
    return g;
  }
  // Joins the sets of a and b when they have a scheme in common.
  void Join(int32_t a, int32_t b) {
    a = Find(a);
    b = Find(b);
    if (a == b || (mask[a] & mask[b]) == 0) return;
    if (b < a) std::swap(a, b);
    parent[b] = a;
    mask[a] &= mask[b];
  }
};

int64_t Product(const std::vector<int32_t>& v) {
  int64_t p = 1;
  for (int32_t x : v) p *= x;
  return p;
}

}  // namespace

TofuPlanner::TofuPlanner(const SearchProblem& problem, const TofuOptions& options)
    : graph_(*problem.graph),
      topology_(*problem.topology),
      cost_(problem.cost),
      options_(options),
      groups_(ColocationGroups(graph_)) {
  // The devices: the largest power of two of the fastest ones.
  const int32_t total = topology_.num_devices();
  DEVPLACE_CHECK(total >= 1, "a topology has devices");
  int32_t count = 1;
  while (count * 2 <= total) count *= 2;
  std::vector<DeviceId> by_speed(static_cast<size_t>(total));
  std::iota(by_speed.begin(), by_speed.end(), 0);
  std::stable_sort(by_speed.begin(), by_speed.end(), [&](DeviceId a, DeviceId b) {
    return topology_.device(a).peak_flops_f32 > topology_.device(b).peak_flops_f32;
  });
  used_ = TofuDeviceOrder(topology_, std::vector<DeviceId>(by_speed.begin(), by_speed.begin() + count));
  compute_device_ = used_[0];
  for (DeviceId d : used_)
    if (topology_.device(d).peak_flops_f32 < topology_.device(compute_device_).peak_flops_f32) compute_device_ = d;

  // Level l cuts bit k-1-l of the index into used_: every pair it separates exchanges at once.
  std::vector<std::pair<DeviceId, DeviceId>> transfers;
  for (int32_t bit = count / 2; bit >= 1; bit /= 2) {
    transfers.clear();
    for (int32_t i = 0; i < count; ++i) transfers.push_back({used_[i], used_[i ^ bit]});
    level_price_.push_back(TofuConcurrentPrice(topology_, transfers));
  }
  // Ring collectives run along used_: one step sends from every device to the next at once.
  transfers.clear();
  for (int32_t i = 0; count > 1 && i < count; ++i) transfers.push_back({used_[i], used_[(i + 1) % count]});
  ring_price_ = TofuConcurrentPrice(topology_, transfers);

  const int32_t n = graph_.num_ops();
  param_bytes_.assign(static_cast<size_t>(n), 0);
  degrees_.resize(static_cast<size_t>(n));
  level_dims_.resize(static_cast<size_t>(n));
  for (OpId o = 0; o < n; ++o) {
    const Op& op = graph_.op(o);
    const OpId f = op.role == OpRole::kForward || op.forward_op.empty() ? o : graph_.find(op.forward_op);
    param_bytes_[o] = graph_.op(f < 0 ? o : f).param_bytes;
    degrees_[o].assign(op.dims.size(), 1);
  }
  Coarsen();
}

void TofuPlanner::Coarsen() {
  const int32_t num_groups = groups_.num_groups();
  GroupSets sets;
  sets.parent.resize(static_cast<size_t>(num_groups));
  std::iota(sets.parent.begin(), sets.parent.end(), 0);
  sets.mask.assign(static_cast<size_t>(num_groups), kAllSchemes);
  for (int32_t g = 0; g < num_groups; ++g) {
    bool has_non_update = false;
    for (OpId o : groups_.members[g]) {
      sets.mask[g] &= SchemeMask(graph_.op(o));
      has_non_update |= graph_.op(o).role != OpRole::kUpdate;
    }
    // A group of update ops alone splits its parameters: one scheme, not thirteen equal ones.
    if (!has_non_update) sets.mask[g] &= 1u;
  }
  if (options_.merge_elementwise) {
    for (int32_t g = 0; g < num_groups; ++g) {
      // Before layer grouping, so that an element-wise op joins its producer's group, not a whole layer; and,
      // with layer grouping, only within its layer (else the merges would chain whole layers together).
      bool has_forward = false, other = false;  // other: a non-element-wise op or a second producer
      int32_t producer = -1;
      for (OpId o : groups_.members[g]) {
        const Op& op = graph_.op(o);
        if (op.role != OpRole::kForward) continue;
        if (!IsElementwise(graph_, o)) other = true;
        has_forward = true;
        for (int32_t e : graph_.in_edges(o)) {
          const Op& src_op = graph_.op(graph_.edge(e).src);
          const int32_t src = sets.Find(groups_.group_of_op[graph_.edge(e).src]);
          if (src == sets.Find(g)) continue;
          if (producer >= 0 && producer != src) other = true;
          if (options_.group_layers && !op.layer.empty() && !src_op.layer.empty() && src_op.layer != op.layer)
            other = true;
          producer = src;
        }
      }
      if (has_forward && !other && producer >= 0) sets.Join(producer, g);
    }
  }

  if (options_.group_layers) {
    std::unordered_map<std::string, int32_t> first_of_layer;
    for (int32_t g = 0; g < num_groups; ++g) {
      const std::string& layer = graph_.op(groups_.members[g][0]).layer;
      if (layer.empty()) continue;
      auto [it, inserted] = first_of_layer.emplace(layer, g);
      if (!inserted) sets.Join(it->second, g);
    }
  }
  // Units in the order of their first group (groups follow the topological order of their first op).
  const int32_t n = graph_.num_ops();
  std::vector<int32_t> unit_of_root(static_cast<size_t>(num_groups), -1);
  unit_of_op_.assign(static_cast<size_t>(n), -1);
  for (int32_t g = 0; g < num_groups; ++g) {
    const int32_t root = sets.Find(g);
    if (unit_of_root[root] < 0) {
      unit_of_root[root] = static_cast<int32_t>(units_.size());
      units_.emplace_back();
      unit_mask_.push_back(sets.mask[root]);
    }
    for (OpId o : groups_.members[g]) unit_of_op_[o] = unit_of_root[root];
  }
  for (OpId o : graph_.topological_order()) units_[unit_of_op_[o]].push_back(o);

  unit_edges_.resize(units_.size());
  std::map<std::pair<int32_t, int32_t>, int32_t> pair_index;
  for (int32_t e = 0; e < graph_.num_edges(); ++e) {
    const int32_t a = unit_of_op_[graph_.edge(e).src], b = unit_of_op_[graph_.edge(e).dst];
    if (a == b) {
      unit_edges_[a].push_back(e);
      continue;
    }
    auto [it, inserted] = pair_index.emplace(std::minmax(a, b), static_cast<int32_t>(unit_pairs_.size()));
    if (inserted) unit_pairs_.push_back(UnitPair{std::min(a, b), std::max(a, b), {}});
    unit_pairs_[it->second].edges.push_back(e);
  }
}

double TofuPlanner::Seconds(int32_t level, double bytes) const {
  return bytes <= 0 ? 0.0 : level_price_[level].latency + bytes * level_price_[level].seconds_per_byte;
}

int32_t TofuPlanner::DimFor(OpId op, int32_t scheme) const {
  const Op& o = graph_.op(op);
  if (scheme == kTofuKeep || o.dims.empty()) return -1;
  if (o.role == OpRole::kUpdate) return 0;
  for (size_t j = 0; j < o.dims.size(); ++j) {
    const PartitionDim& d = o.dims[j];
    if (scheme == kTofuReduce ? d.kind == DimKind::kReduction
                              : d.kind != DimKind::kReduction && d.output_axis == scheme)
      return static_cast<int32_t>(j);
  }
  return -1;
}

bool TofuPlanner::Feasible(OpId op, int32_t scheme) const {
  if (scheme == kTofuKeep) return true;
  const int32_t j = DimFor(op, scheme);
  return j >= 0 && graph_.op(op).dims[j].size >= 2 * static_cast<int64_t>(degrees_[op][j]);
}

double TofuPlanner::OpCost(OpId op, int32_t dim) const {
  const Op& o = graph_.op(op);
  OpConfig config;
  config.degrees = degrees_[op];
  if (dim >= 0) config.degrees[dim] *= 2;
  config.devices.resize(static_cast<size_t>(Product(config.degrees)));
  std::iota(config.devices.begin(), config.devices.end(), 0);
  double seconds = cost_.ComputeTime(graph_, op, config, 0, topology_.device(compute_device_));
  if (dim < 0) return seconds;
  const PartitionDim& d = o.dims[dim];
  // A ring collective among r members runs r-1 steps sending (r-1)/r of a box per member (reduce-scatter), or
  // 2(r-1) steps sending 2(r-1)/r (all-reduce); doubling r to 2r adds r steps and box/(2r), respectively 2r
  // steps and box/r: that increment is this level's share.
  if (d.kind == DimKind::kReduction) {
    // Reduce-scatter of the partial sums of the current output box (sliced by the output splits so far).
    double box = static_cast<double>(OutputBytes(o));
    int32_t ring = 1;
    for (size_t j = 0; j < o.dims.size(); ++j) {
      if (o.dims[j].output_axis >= 0) box /= degrees_[op][j];
      if (o.dims[j].kind == DimKind::kReduction) ring *= degrees_[op][j];
    }
    seconds += ring * ring_price_.latency + box / (2 * ring) * ring_price_.seconds_per_byte;
  }
  if (o.role == OpRole::kBackward && param_bytes_[op] > 0 && !IsShardKind(d.kind)) {
    // All-reduce of the current weight shard's gradient among its replicas: two ring steps per doubling.
    double shard = static_cast<double>(param_bytes_[op]);
    int32_t replicas = 1;
    for (size_t j = 0; j < o.dims.size(); ++j) {
      if (IsShardKind(o.dims[j].kind)) shard /= degrees_[op][j];
      else replicas *= degrees_[op][j];
    }
    seconds += 2 * replicas * ring_price_.latency + shard / replicas * ring_price_.seconds_per_byte;
  }
  return seconds;
}

double TofuPlanner::EdgeCost(int32_t level, int32_t edge, int32_t src_dim, int32_t dst_dim) const {
  const Edge& e = graph_.edge(edge);
  if (e.bytes == 0) return 0.0;
  const Op& p = graph_.op(e.src);
  const Op& c = graph_.op(e.dst);
  const int32_t rank = static_cast<int32_t>(p.shape.size());
  const bool weight_gradient = c.role == OpRole::kUpdate;
  // The bytes of this edge within one sub-problem of the level (what one part of the consumer needs so far).
  double bytes = static_cast<double>(e.bytes);
  if (weight_gradient) {
    for (size_t j = 0; j < p.dims.size(); ++j)
      if (IsShardKind(p.dims[j].kind)) bytes /= degrees_[e.src][j];
  } else {
    for (size_t j = 0; j < c.dims.size(); ++j)
      if (c.dims[j].input_axis >= 0 && c.dims[j].input_axis < rank) bytes /= degrees_[e.dst][j];
  }
  // The producer's layout after this level: whole on the lower half, replicated on both, or split (on an axis,
  // or by weight shard for the weight gradient).
  enum class Held { kLowerHalf, kBoth, kSplit } held = Held::kSplit;
  int32_t held_axis = -1;
  if (src_dim < 0) {
    held = Held::kLowerHalf;
  } else if (weight_gradient) {
    held = IsShardKind(p.dims[src_dim].kind) ? Held::kSplit : Held::kBoth;
  } else if (p.dims[src_dim].kind == DimKind::kReduction) {
    // The reduce-scatter leaves each half a slice of the longest axis of the current box (lowest on ties).
    std::vector<int64_t> extent = p.shape;
    for (size_t j = 0; j < p.dims.size(); ++j) {
      const int32_t a = p.dims[j].output_axis;
      if (a >= 0 && a < rank) extent[a] /= degrees_[e.src][j];
    }
    held_axis = rank == 0 ? -1 : static_cast<int32_t>(std::max_element(extent.begin(), extent.end()) - extent.begin());
    if (held_axis < 0) held = Held::kBoth;
  } else {
    held_axis = p.dims[src_dim].output_axis;
    if (held_axis < 0 || held_axis >= rank) held = Held::kBoth;
  }
  // What the consumer needs: all of it on the lower half only (kept), all of it on both halves, or a slice.
  double up = 0.0, down = 0.0;  // bytes from the lower half to the upper one, and back
  if (held == Held::kBoth) return 0.0;
  const int32_t need_axis = dst_dim < 0 || weight_gradient ? -1 : c.dims[dst_dim].input_axis;
  const bool slice = need_axis >= 0 && need_axis < rank;
  if (held == Held::kLowerHalf) {
    if (dst_dim >= 0) up = slice ? bytes / 2 : bytes;
  } else if (dst_dim < 0) {
    down = bytes / 2;
  } else if (!slice) {
    up = down = bytes / 2;
  } else if (need_axis != held_axis) {
    up = down = bytes / 4;
  }
  if (weight_gradient && (up > 0 || down > 0)) {
    // Every part of the update op reads the whole gradient, each shard from one replica (the lowest when none
    // is local): the update parts of a half that will sit below this level all read from one device, and that
    // replica sits in the lower half of every earlier level that replicated the gradient, so the reads cross
    // the slowest of those cuts too.
    const double readers = static_cast<double>(1 << (num_levels() - 1 - level));
    TofuTransferPrice price = level_price_[level];
    for (int32_t l = 0; l < level; ++l) {
      const int32_t d = level_dims_[e.src][l];
      if (d < 0 || IsShardKind(p.dims[d].kind)) continue;
      price.latency = std::max(price.latency, level_price_[l].latency);
      price.seconds_per_byte = std::max(price.seconds_per_byte, level_price_[l].seconds_per_byte);
    }
    return price.latency + std::max(up, down) * readers * price.seconds_per_byte;
  }
  return Seconds(level, std::max(up, down));
}

TofuLevelProblem TofuPlanner::NextLevel() const {
  DEVPLACE_CHECK(static_cast<int32_t>(applied_) < num_levels(), "all levels are applied");
  const int32_t level = static_cast<int32_t>(applied_);
  TofuLevelProblem problem;
  const int32_t num_units = this->num_units();
  problem.schemes.resize(static_cast<size_t>(num_units));
  problem.unary.resize(static_cast<size_t>(num_units));
  std::vector<double> op_cost;  // per dim of one op, plus the kept op last; NaN = not computed yet
  for (int32_t u = 0; u < num_units; ++u) {
    std::vector<int32_t>& schemes = problem.schemes[u];
    for (int32_t bit = 0; bit <= kNumAxes; ++bit) {
      if ((unit_mask_[u] & (1u << bit)) == 0) continue;
      const int32_t scheme = SchemeOfBit(bit);
      if (std::all_of(units_[u].begin(), units_[u].end(), [&](OpId o) { return Feasible(o, scheme); }))
        schemes.push_back(scheme);
    }
    if (schemes.empty()) schemes.push_back(kTofuKeep);
    std::vector<double>& unary = problem.unary[u];
    unary.assign(schemes.size(), 0.0);
    for (OpId o : units_[u]) {
      op_cost.assign(graph_.op(o).dims.size() + 1, std::numeric_limits<double>::quiet_NaN());
      for (size_t i = 0; i < schemes.size(); ++i) {
        const int32_t dim = DimFor(o, schemes[i]);
        double& c = op_cost[dim < 0 ? op_cost.size() - 1 : static_cast<size_t>(dim)];
        if (std::isnan(c)) c = OpCost(o, dim);
        unary[i] += c;
      }
    }
    for (int32_t e : unit_edges_[u])
      for (size_t i = 0; i < schemes.size(); ++i)
        unary[i] += EdgeCost(level, e, DimFor(graph_.edge(e).src, schemes[i]), DimFor(graph_.edge(e).dst, schemes[i]));
  }
  for (const UnitPair& up : unit_pairs_) {
    TofuLevelProblem::Pair pair{up.a, up.b, {}};
    const std::vector<int32_t>& sa = problem.schemes[up.a];
    const std::vector<int32_t>& sb = problem.schemes[up.b];
    pair.cost.assign(sa.size() * sb.size(), 0.0);
    for (int32_t e : up.edges) {
      const Edge& edge = graph_.edge(e);
      const bool forward = unit_of_op_[edge.src] == up.a;
      for (size_t i = 0; i < sa.size(); ++i)
        for (size_t j = 0; j < sb.size(); ++j) {
          const int32_t src_scheme = forward ? sa[i] : sb[j], dst_scheme = forward ? sb[j] : sa[i];
          pair.cost[i * sb.size() + j] +=
              EdgeCost(level, e, DimFor(edge.src, src_scheme), DimFor(edge.dst, dst_scheme));
        }
    }
    problem.pairs.push_back(std::move(pair));
  }
  return problem;
}

void TofuPlanner::Apply(const TofuLevelProblem& level, std::span<const int32_t> choice) {
  DEVPLACE_CHECK(static_cast<int32_t>(applied_) < num_levels(), "all levels are applied");
  DEVPLACE_CHECK(level.num_units() == num_units() && static_cast<int32_t>(choice.size()) == num_units(),
                 "one choice per unit");
  for (int32_t u = 0; u < num_units(); ++u) {
    DEVPLACE_CHECK(choice[u] >= 0 && static_cast<size_t>(choice[u]) < level.schemes[u].size(), "scheme index");
    const int32_t scheme = level.schemes[u][choice[u]];
    for (OpId o : units_[u]) {
      DEVPLACE_CHECK(Feasible(o, scheme), "scheme " + TofuSchemeName(scheme) + " does not fit op '" +
                                              graph_.op(o).name + "'");
      const int32_t dim = DimFor(o, scheme);
      level_dims_[o].push_back(dim);
      if (dim >= 0) degrees_[o][dim] *= 2;
    }
  }
  ++applied_;
}

Strategy TofuPlanner::ToStrategy() const {
  Strategy strategy;
  strategy.configs.resize(static_cast<size_t>(graph_.num_ops()));
  for (const std::vector<OpId>& members : groups_.members) {
    // The leader's parts, row-major over its degrees, go to the devices its levels' halves name: the t-th of
    // the m levels that split dim j takes bit m-1-t of j's part index (bisection halves the slice recursively).
    const OpId leader = members[0];
    const std::vector<int32_t>& degrees = degrees_[leader];
    const int64_t parts = Product(degrees);
    std::vector<DeviceId> devices(static_cast<size_t>(parts));
    for (int64_t p = 0; p < parts; ++p) {
      std::vector<int32_t> digit(degrees.size());
      int64_t rest = p;
      for (size_t j = degrees.size(); j-- > 0;) {
        digit[j] = static_cast<int32_t>(rest % degrees[j]);
        rest /= degrees[j];
      }
      std::vector<int32_t> seen(degrees.size(), 0);
      int32_t index = 0;
      for (size_t l = 0; l < level_dims_[leader].size(); ++l) {
        const int32_t j = level_dims_[leader][l];
        if (j < 0) continue;
        const int32_t m = std::countr_zero(static_cast<uint32_t>(degrees[j]));
        const int32_t bit = (digit[j] >> (m - 1 - seen[j]++)) & 1;
        index |= bit << (num_levels() - 1 - static_cast<int32_t>(l));
      }
      devices[p] = used_[index];
    }
    for (OpId o : members) {
      OpConfig& config = strategy.configs[o];
      config.devices = devices;
      DEVPLACE_CHECK(Product(degrees_[o]) == parts, "colocated ops are split into equally many parts");
      if (parts > 1) config.degrees = degrees_[o];
    }
  }
  return strategy;
}

}  // namespace devplace
