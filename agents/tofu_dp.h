// Tofu's partitioning search (Wang, Huang, Li, "Supporting Very Large Models using Automatic Dataflow Graph
// Partitioning", EuroSys 2019) on devplace's strategies: every op is split across 2^k devices by recursive
// bisection; at each bisection level a dynamic programme over the coarsened graph picks, per group of ops, the
// scheme of that level's 2-way split (split one output axis, or partition-n-reduce), minimising the estimated
// time of the level: compute of the parts plus the communication that converts tensor layouts between
// neighbouring groups, reduce-scatters of partial sums and gradient all-reduces.
//
// Coarsening (Tofu's): the colocation groups (a forward op with its backward and update ops) share a scheme;
// an element-wise op whose inputs all come from one group joins it; then the ops of one layer (Op::layer) share
// a scheme, which makes most zoo models a chain. Groups merge only when they have a scheme in common.
//
// Where this deviates from the paper:
// - Whole-op replication is not expressible in an OpConfig (each part computes its own region), so Tofu's
//   "replicate" appears only as the replication of weights under sample/attribute splits (paid for by the
//   gradient all-reduce the simulator models). A group none of whose schemes fits a level (no dimension left
//   that is large enough, or an op without partitionable dimensions) is kept whole on the lower half.
// - The costs are estimated time (seconds) rather than bytes, priced with the cost model and the bandwidth and
//   latency of the transfers across the level's cut (layout conversions) or along the ring the simulator's
//   collectives run on (reduce-scatter, gradient all-reduce), with the links they share. Which devices each
//   level separates is chosen once per machine (TofuDeviceOrder) so that the rings and the cuts run over fast
//   links. Weight-gradient reads follow the simulator: every update part reads the whole gradient, each shard
//   from its lowest replica.
// - Each level is costed on its own (Tofu's recursion), with the sizes left by the levels before it; the DP does
//   not model memory, so it optimises time only (the simulator still reports OOM).
// - Non-chain coarsened graphs are solved exactly by a DP over a topological order whose state is the scheme of
//   every group on the frontier; when the frontier's states exceed TofuOptions::max_states the DP keeps the
//   cheapest ones (a beam) and is no longer exact.
// - With D devices not a power of two, the largest power of two <= D of the fastest devices are used; and the
//   search may return the bisection's strategy after fewer levels when it simulates faster (try_fewer_levels).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "agents/search.h"
#include "core/colocation.h"

namespace devplace {

// Settings of the Tofu DP.
struct TofuOptions {
  // Coarsening beyond colocation groups (forward op + backward + update, which always share a scheme):
  bool group_layers = true;       // ops of one layer (Op::layer) share a scheme
  bool merge_elementwise = true;  // an element-wise op with a single producer group joins that group
  // Largest number of frontier states the DP keeps per step (exact below it, a beam above it).
  int64_t max_states = 4096;
  // Also simulate the strategies the bisection had after fewer levels (on 1, 2, 4, ... devices) and return the
  // fastest: splitting everything across every device does not pay on slow networks.
  bool try_fewer_levels = true;
};

// Scheme ids of one bisection level: a value >= 0 splits that axis of every member's output (each member uses
// its first partitionable dimension with that output_axis); the negative ids are below.
inline constexpr int32_t kTofuReduce = -1;  // split the reduction dimension and sum partial results
inline constexpr int32_t kTofuKeep = -2;    // not split at this level: the group stays on the lower half
// "axis2", "reduce", "keep".
std::string TofuSchemeName(int32_t scheme);

// One level's labelling problem: choose one scheme per unit (a coarsened group of ops) minimising the sum of
// unit costs and pairwise costs between units that exchange tensors.
struct TofuLevelProblem {
  struct Pair {
    int32_t a = 0, b = 0;       // units, a < b
    std::vector<double> cost;   // cost[i * schemes[b].size() + j]: unit a takes its scheme i, unit b its j
  };
  std::vector<std::vector<int32_t>> schemes;  // candidate scheme ids per unit (at least one each)
  std::vector<std::vector<double>> unary;     // unary[u][i]: cost of unit u taking schemes[u][i]
  std::vector<Pair> pairs;                    // at most one pair per two units

  int32_t num_units() const { return static_cast<int32_t>(schemes.size()); }
};

// Total cost of `choice` (an index into schemes[u] per unit).
double TofuLabellingCost(const TofuLevelProblem& problem, std::span<const int32_t> choice);

// The DP's answer: an index into schemes[u] per unit, its cost, and whether it is proven optimal (no beam
// pruning happened).
struct TofuLevelSolution {
  std::vector<int32_t> choice;
  double cost = 0.0;
  bool exact = true;
};

// Minimises the labelling cost by dynamic programming over the units in index order, keeping the schemes of the
// frontier (units already decided that share a pair with a unit not yet decided) as the state, at most
// `max_states` states per step. Ties go to the lower scheme indices. `stop` (may be empty) is polled now and
// then; when it returns true the DP gives up and returns nullopt.
std::optional<TofuLevelSolution> SolveTofuLevel(const TofuLevelProblem& problem, int64_t max_states,
                                                const std::function<bool()>& stop = {});

// The price of transfers that run at the same time on an idle machine: the largest route latency, and the
// seconds per byte when each transfer moves one byte (the busiest link's summed 1/bandwidth).
struct TofuTransferPrice {
  double latency = 0.0;
  double seconds_per_byte = 0.0;
};
TofuTransferPrice TofuConcurrentPrice(const Topology& topology,
                                      std::span<const std::pair<DeviceId, DeviceId>> transfers);

// The recursive-bisection planner: coarsens the graph into units, then, one level at a time, states the level's
// labelling problem (NextLevel) and records the chosen schemes (Apply). ToStrategy turns the choices into
// per-op configs. The problem's graph and topology must outlive the planner.
class TofuPlanner {
 public:
  // Precondition: problem.graph and problem.topology are set.
  TofuPlanner(const SearchProblem& problem, const TofuOptions& options);

  // Bisection levels: log2 of the number of devices used.
  int32_t num_levels() const { return static_cast<int32_t>(level_price_.size()); }
  int32_t levels_applied() const { return static_cast<int32_t>(applied_); }
  // The devices the strategy uses, in TofuDeviceOrder; level l halves this list by bit k-1-l of the index
  // (k = num_levels()): level 0 separates the first half from the second.
  const std::vector<DeviceId>& devices() const { return used_; }
  int32_t num_units() const { return static_cast<int32_t>(units_.size()); }
  // Ops of unit u, in topological order. Units are numbered in topological order of their first op.
  const std::vector<OpId>& unit_ops(int32_t u) const { return units_[u]; }

  // The labelling problem of the next level, given the levels applied so far. Precondition: levels remain.
  TofuLevelProblem NextLevel() const;
  // Records the next level's choice (indices into level.schemes, as returned by NextLevel).
  void Apply(const TofuLevelProblem& level, std::span<const int32_t> choice);
  // The strategy after the levels applied so far: op o runs on 2^s devices (s = levels that split it), with
  // degree 2^m on each dimension split m times; colocated ops share device lists; it validates.
  Strategy ToStrategy() const;

 private:
  double Seconds(int32_t level, double bytes) const;  // moving bytes across the level's cut
  int32_t DimFor(OpId op, int32_t scheme) const;
  bool Feasible(OpId op, int32_t scheme) const;
  double OpCost(OpId op, int32_t dim) const;  // compute, reduce-scatter and gradient all-reduce
  double EdgeCost(int32_t level, int32_t edge, int32_t src_dim, int32_t dst_dim) const;
  void Coarsen();

  const Graph& graph_;
  const Topology& topology_;
  CostModel cost_;
  TofuOptions options_;
  OpGroups groups_;
  std::vector<DeviceId> used_;
  DeviceId compute_device_ = 0;          // the slowest used device, which prices compute
  std::vector<TofuTransferPrice> level_price_;  // per level: all pairs across its cut exchanging at once
  TofuTransferPrice ring_price_;                 // one step of a ring collective through devices()
  std::vector<std::vector<OpId>> units_;
  std::vector<int32_t> unit_of_op_;
  std::vector<uint32_t> unit_mask_;               // per unit: bit a = split axis a, bit 12 = reduce
  std::vector<std::vector<int32_t>> unit_edges_;  // edges inside each unit
  struct UnitPair {
    int32_t a = 0, b = 0;
    std::vector<int32_t> edges;
  };
  std::vector<UnitPair> unit_pairs_;
  std::vector<int64_t> param_bytes_;              // parameter bytes each op stands for (its forward op's)
  std::vector<std::vector<int32_t>> degrees_;     // per op: current degree per dim
  std::vector<std::vector<int32_t>> level_dims_;  // per op: the dim split at each applied level, -1 = kept
  size_t applied_ = 0;
};

// The order in which the bisection uses `devices` (a power of two of them): the k-bit index of a device in the
// order names its half at every level (the most significant bit at the first level). An op split along one
// dimension into all parts runs part p on order[p], and the simulator's rings (gradient all-reduce,
// reduce-scatter) visit its parts in that order; so the order minimises the price (TofuConcurrentPrice, per
// byte) of one step of the ring through it, then the sum over levels of the price of every pair the level
// separates exchanging at once (exhaustively up to 8 devices, by pairwise swaps beyond). Deterministic.
std::vector<DeviceId> TofuDeviceOrder(const Topology& topology, std::vector<DeviceId> devices);

// Tofu's DP as a search algorithm ("tofu-dp"). Deterministic (the seed is unused). The DP itself runs no
// simulation. Afterwards it simulates, from the most split down and while the budget lasts, the strategy after
// all levels and (with try_fewer_levels) after fewer levels, and returns the fastest one that fits in memory
// (ties go to the more split one); with no budget left it returns the strategy after all levels unsimulated.
// With budget.max_seconds set, a level whose DP cannot finish in time takes each unit's cheapest scheme on its
// own instead.
class TofuDpSearch : public SearchAlgorithm {
 public:
  explicit TofuDpSearch(TofuOptions options = {}) : options_(options) {}
  std::string name() const override { return "tofu-dp"; }

 protected:
  Expected<SearchResult> DoSearch(const SearchProblem& problem, const SearchRequest& request) const override;

 private:
  TofuOptions options_;
};

}  // namespace devplace
