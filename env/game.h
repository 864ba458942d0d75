// PlacementGame: the immutable part of a placement environment (OpenSpiel's Game). It binds a graph, a
// machine, a cost model and an EnvConfig, and precomputes what every state shares: the colocation groups (the
// unit of placement), the group-level DAG, per-group compute and memory estimates, static node and device
// features, and the reference step time that normalises rewards across graphs. States are created with
// NewInitialState(seed). A game is safe to share between threads (it is never modified after Create).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "core/colocation.h"
#include "core/graph.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"
#include "env/candidates.h"
#include "env/config.h"
#include "env/state.h"
#include "sim/cost_model.h"
#include "sim/objective.h"
#include "sim/simulator.h"

namespace devplace {

class PlacementGame : public std::enable_shared_from_this<PlacementGame> {
 public:
  // Validates the config (ValidateEnvConfig), requires a graph a training step can be placed for
  // (sim/estimates.h CheckTrainingGraph) and a topology with at least one device, and runs the reference simulations (one per device). Errors name the field or the op.
  static Expected<std::shared_ptr<const PlacementGame>> Create(std::shared_ptr<const Graph> graph,
                                                               std::shared_ptr<const Topology> topology,
                                                               CostModel cost, EnvConfig config);

  // A fresh episode. `seed` drives everything random in the episode (the random initial placement); the same
  // seed gives the same state. For the iterative MDP this runs one full simulation.
  PlacementState NewInitialState(uint64_t seed) const;

  const Graph& graph() const { return *graph_; }
  const Topology& topology() const { return *topology_; }
  const CostModel& cost() const { return cost_; }
  const EnvConfig& config() const { return config_; }
  MdpKind kind() const { return config_.kind; }

  // Colocation groups: the nodes of observations; groups are numbered in topological order.
  const OpGroups& groups() const { return groups_; }
  int32_t num_groups() const { return groups_.num_groups(); }
  int32_t num_devices() const { return topology_->num_devices(); }
  // Actions of a state: the devices, then the split candidates (env/candidates.h): none by default, the single
  // data-parallel candidate with EnvConfig::data_parallel_action, SoapCandidates with ActionSpace::kSoap.
  int32_t num_actions() const { return num_devices() + num_candidates(); }
  int32_t num_candidates() const { return static_cast<int32_t>(candidates_.size()); }
  // Candidate `c` (0 <= c < num_candidates()); action num_devices() + c.
  const SplitCandidate& candidate(int32_t c) const { return candidates_[c]; }
  // True when `action` is a split action (a candidate, not a device).
  bool is_split(int32_t action) const { return action >= num_devices() && action < num_actions(); }
  // The data-parallel action: the kind-less candidate (data_parallel_action) or the all-devices sample split
  // (SOAP); -1 when the game has none.
  int32_t data_parallel_action() const { return data_parallel_action_; }
  bool is_data_parallel(int32_t action) const { return action >= 0 && action == data_parallel_action_; }
  // Split actions only (precondition is_split(action)). Whether the group can take the action: every member has
  // a config under the candidate (CandidateOpConfig) and, for a candidate with a kind, at least one member is
  // split natively along that kind (otherwise the action would repeat another); the subset has >= 2 devices.
  bool can_split(int32_t group, int32_t action) const { return can_split_[SplitIndex(group, action)] != 0; }
  // The group's estimated bytes on each device of the subset (sum of OpPartMemoryEstimate over the members).
  int64_t split_memory_bytes(int32_t group, int32_t action) const { return split_memory_[SplitIndex(group, action)]; }
  // The group's compute seconds on `device` when split (its part there), 0 when the device is not in the subset.
  double split_seconds(int32_t group, int32_t action, DeviceId device) const;
  // Whether `device` runs a part of the split action.
  bool split_uses(int32_t action, DeviceId device) const { return position(action, device) >= 0; }
  // The compute time of the group's slowest part when split.
  double split_slowest_seconds(int32_t group, int32_t action) const;
  // An estimate of the ring all-reduce of the group's replicated gradients (parameters of members split along a
  // sample dimension): 2 (n - 1) steps, each moving 1/n of the bytes over the slowest hop of the subset's ring
  // (Topology::transfer_time_estimate), n the subset's size. 0 for groups without replicated weights.
  double split_sync_seconds(int32_t group, int32_t action) const { return sync_seconds_[SplitIndex(group, action)]; }
  // An estimate of the resharding the split implies when the group's neighbours are not split alike: for every
  // edge between a member and another group, a sliced input is scattered ((n - 1) / n of its bytes), a whole input
  // broadcast ((n - 1) x its bytes), a sliced output gathered ((n - 1) / n), a partial-sum output reduced
  // (2 (n - 1) / n); the total divided by n moves over the slowest hop of the subset's ring.
  double split_reshard_seconds(int32_t group, int32_t action) const {
    return reshard_seconds_[SplitIndex(group, action)];
  }
  // The resharding left when every neighbour group that can take the same split action takes it: for an edge to
  // such a group, the bytes each part needs of the other side's tensor and its own part on that device does not
  // hold (core/partition.h NeededBox, OwnedBox; part p of both on the subset's p-th device), plus the reduce-scatter
  // of partial-sum outputs ((n - 1) / n of them); edges to groups that cannot take it count as in
  // split_reshard_seconds. The total divided by n moves over the slowest hop of the subset's ring.
  double split_uniform_reshard_seconds(int32_t group, int32_t action) const {
    return uniform_reshard_seconds_[SplitIndex(group, action)];
  }
  // Both estimates above price the edges to neighbours that are not split alike as a ring collective over the
  // subset; for an unsplit neighbour that is wrong: every part's bytes come from, or go to, the one device the
  // neighbour runs on, over that device's links. The star estimate assumes the neighbours are on the reference
  // device X: for each edge to another group, part p (on a device other than X) receives from X the region of the
  // producer's output it needs (NeededBox; a parameter-split consumer needs the whole tensor) and each distinct
  // shard of a member's output (OwnedBox) goes from its part to X, once per producer; these transfers run together,
  // sharing links (core/topology.h ConcurrentTransferTime: the busiest link's bytes, e.g. the broadcast of a
  // tensor from gpu0 to gpu5-7 of a DGX-1 over one PCIe uplink, which the ring over NVLink did not see). Added as
  // a ring over the subset: the bytes members of the group miss of each other's outputs when their configs
  // differ (a member without the candidate's dimension falls back to a sample split) and the reduce-scatter of
  // partial-sum outputs ((n - 1) / n). 0 unless EnvConfig::star_reshard.
  double split_star_reshard_seconds(int32_t group, int32_t action) const {
    return star_reshard_seconds_[SplitIndex(group, action)];
  }
  // The same with the neighbours that can take the candidate taking it (their edges priced as in
  // split_uniform_reshard_seconds, on the ring); only edges to the others go to the reference device.
  double split_uniform_star_reshard_seconds(int32_t group, int32_t action) const {
    return uniform_star_reshard_seconds_[SplitIndex(group, action)];
  }
  // The penalised step time (PenalisedTime) of the strategy in which every group that can take the candidate
  // `c` (0 <= c < num_candidates()) takes it and every other group runs on the reference device; simulated at
  // Create for the candidates of kind sample (and the kind-less one), 0 for the others (one simulation each,
  // so a 50k-op graph on an 8-GPU machine pays three).
  double uniform_step_time(int32_t c) const { return uniform_step_times_[c]; }
  // The simulated cost of that strategy (uniform_step_time is its PenalisedTime); a default StepCost (step time 0)
  // for the candidates not simulated.
  const StepCost& uniform_cost(int32_t c) const { return uniform_costs_[c]; }
  // That strategy's action per group: split action num_devices() + c where can_split, else the reference device.
  std::vector<int32_t> UniformPlacement(int32_t c) const;
  // Group-level edges: a -> b when some op of group a feeds some op of group b (deduplicated, no self loops,
  // sorted by (src, dst)). Groups that colocate forward and backward ops make this graph cyclic in general
  // (forward a -> b, gradient b -> a); both directions are kept.
  const std::vector<int32_t>& edge_src() const { return edge_src_; }
  const std::vector<int32_t>& edge_dst() const { return edge_dst_; }

  // Sum over the group's members of the op's compute time when placed whole on `device`.
  double group_seconds(int32_t group, DeviceId device) const {
    return group_seconds_[static_cast<size_t>(group) * num_devices() + device];
  }
  // Estimated bytes the group pins on its device: the sum of its members' sim/estimates.h OpMemoryEstimate,
  // (2 + sim.optimizer_state_factor) x parameter bytes (weights, gradients, optimizer state) plus the outputs of
  // forward members (kept for the backward pass). split_memory_bytes sums OpPartMemoryEstimate.
  int64_t group_memory_bytes(int32_t group) const { return group_memory_[group]; }
  int64_t total_memory_bytes() const { return total_memory_; }
  // Sum over groups of group_seconds(group, reference_device()).
  double total_reference_seconds() const { return total_reference_seconds_; }

  // The device on which the whole graph runs fastest (lowest id on ties), and that step time (seconds, > 0,
  // memory ignored). Rewards are measured in units of reference_time().
  DeviceId reference_device() const { return reference_device_; }
  double reference_time() const { return reference_time_; }
  // Step time of the whole graph on each device (memory ignored), indexed by DeviceId.
  const std::vector<double>& single_device_times() const { return single_device_times_; }

  // The time a placement is charged (sim/objective.h StepCost::Penalised): its step time, plus
  // oom_penalty x reference_time() x (1 + overage) when it runs out of memory.
  double PenalisedTime(const StepCost& cost) const;
  // The config of op `op` when its group takes `action`: {action} for a device, CandidateOpConfig for a split.
  // Precondition: the action is in range (and can_split for the op's group if a split).
  OpConfig ActionConfig(OpId op, int32_t action) const;
  // The same written into *config (its device list reused: no allocation for a device action).
  void ActionConfigInto(OpId op, int32_t action, OpConfig* config) const;
  // The strategy of an action per group (ActionConfig of every op). Precondition: one action in range per group,
  // can_split where a split.
  Strategy StrategyFromGroups(std::span<const int32_t> device_per_group) const;
  // Simulates that strategy (equal to Simulate() of StrategyFromGroups). Thread-safe: it borrows a Simulator
  // from a pool kept by the game, so repeated evaluations reuse priced ops and buffers. Errors on a wrong size,
  // an action out of range or a split action the group cannot take.
  Expected<SimResult> Evaluate(std::span<const int32_t> device_per_group) const;
  // Its cost (CostOf of Evaluate's result, sim/objective.h) without assembling a SimResult: what a one-shot
  // episode's last step needs. Thread-safe like Evaluate, with the same errors; does not allocate once the
  // game's simulators have run (each keeps the strategy it simulated last and rewrites it in place).
  Expected<StepCost> EvaluateCost(std::span<const int32_t> device_per_group) const;
  // A delta simulator of StrategyFromGroups(device_per_group) (the game's graph, machine, cost model and
  // simulator options): one that an iterative state handed back (set to that strategy afresh, the same state as a
  // new one's, its buffers and priced ops kept; the strategy written over the list that came back with it, so
  // that this allocates nothing once the lists have grown), else a new one. Thread-safe. Precondition: each
  // action valid for its group (as StrategyFromGroups). Errors: a placement of the wrong size, and
  // DeltaSimulator::Create's. The game keeps at most one idle delta simulator (kIdleDeltaSimulators) until it is
  // destroyed.
  Expected<LentDeltaSimulator> LendDeltaSimulator(std::span<const int32_t> device_per_group) const;
  // How many handed-back delta simulators the game holds idle now (at most kIdleDeltaSimulators); for tests and
  // memory accounting. Thread-safe.
  size_t idle_delta_simulators() const;

  // Static node features, row-major [num_groups x kNodeFeatureDim]; the dynamic columns (is-current,
  // is-placed) are 0. Device features likewise, with the load columns 0.
  const std::vector<float>& static_node_features() const { return node_features_; }
  const std::vector<float>& static_device_features() const { return device_features_; }
  // Static candidate features, row-major [num_groups x num_candidates x kCandidateFeatureDim]
  // (env/observation.h CandidateFeature); empty without candidates.
  const std::vector<float>& candidate_features() const { return candidate_features_; }

 private:
  PlacementGame() = default;
  // Init's steps, in order: groups' edges, reference simulations, per-group estimates, the split candidates'
  // tables, static features.
  Status Init();
  void InitEdges();
  Status InitReference();
  void InitEstimates();
  // The split candidates' tables and, for the candidates of kind sample (and the kind-less one), the uniform
  // split's simulation (InitUniformStep), each candidate one item on the machine's cores.
  Status InitSplits();
  // The hops (src, dst) of a ring over a candidate's devices.
  using RingHops = std::vector<std::pair<DeviceId, DeviceId>>;
  // The slowest hop's transfer time of `bytes` (Topology::transfer_time_estimate).
  static double RingTime(const Topology& topology, const RingHops& hops, int64_t bytes);
  // One candidate's view of the graph while InitSplits fills its tables: each op's config under it
  // (CandidateOpConfig; none where the op cannot take it) and whether that config splits a dim of the candidate's
  // kind, and per edge the missing volume MissingBytes computes (elements of the producer's output; -1 before): an
  // edge between two groups is priced from both sides.
  struct CandidateOps {
    std::vector<std::optional<OpConfig>> config;  // [op]
    std::vector<uint8_t> native;                  // [op]
    std::vector<int64_t> missing;                 // [edge]
  };
  CandidateOps MakeCandidateOps(int32_t c) const;
  // Threads for Init's per-candidate work (EnvConfig::build_threads).
  int32_t BuildThreads() const;
  // Fills group `group`'s row of the split tables for candidate `c`: `ring` its ring's hops, `devices` the
  // device each part runs on.
  void InitSplitGroup(int32_t group, int32_t c, const RingHops& ring, std::span<const Device* const> devices,
                      const CandidateOps& ops);
  // Fills uniform_reshard_seconds_ and neighbour_legal_ of one group and candidate (after the candidate's every
  // can_split_ is set); returns the bytes its edges to groups that can take the candidate miss (MissingBytes, summed).
  double InitUniformReshard(int32_t group, int32_t c, const RingHops& ring, CandidateOps* ops);
  // The bytes the parts of edge `edge`'s consumer miss of its producer's output when both take candidate `c`,
  // part p of both on its p-th device (core/partition.h NeededBox, OwnedBox), summed over the parts; computed once
  // per edge into `ops`.
  double MissingBytes(int32_t edge, CandidateOps* ops) const;
  // Fills star_reshard_seconds_ and uniform_star_reshard_seconds_ of a group and a split action it can take
  // (game_reshard.cc; after the candidate's every can_split_ is set), given InitUniformReshard's result for them.
  void InitStarReshard(int32_t group, int32_t action, const RingHops& ring, double legal_missing_bytes,
                       CandidateOps* ops);
  // Simulates candidate c's uniform placement (UniformPlacement) into uniform_costs_ and uniform_step_times_ (after
  // the candidate's every can_split_ is set).
  Status InitUniformStep(int32_t c);
  void InitCandidateFeatures();
  size_t SplitIndex(int32_t group, int32_t action) const {
    return static_cast<size_t>(group) * candidates_.size() + static_cast<size_t>(action - num_devices());
  }
  // Position of `device` in the split action's subset, or -1.
  int32_t position(int32_t action, DeviceId device) const {
    return position_[static_cast<size_t>(action - num_devices()) * num_devices() + device];
  }
  void InitNodeFeatures();
  void InitDeviceFeatures();

  std::shared_ptr<const Graph> graph_;
  std::shared_ptr<const Topology> topology_;
  CostModel cost_;
  EnvConfig config_;
  OpGroups groups_;
  std::vector<int32_t> edge_src_, edge_dst_;
  std::vector<double> group_seconds_;  // [group x device]
  std::vector<int64_t> group_memory_;
  // Split candidates and their tables (empty without candidates).
  std::vector<SplitCandidate> candidates_;
  int32_t data_parallel_action_ = -1;
  std::vector<int32_t> position_;         // [candidate x device]: position in the subset or -1
  std::vector<size_t> first_position_;    // [candidate]: offset of its positions in a group's row of split_seconds_
  size_t positions_ = 0;                  // sum of the subsets' sizes
  std::vector<uint8_t> can_split_;        // [group x candidate]
  std::vector<int64_t> split_memory_;     // [group x candidate]
  std::vector<double> split_seconds_;     // [group x positions]
  std::vector<double> sync_seconds_, reshard_seconds_, uniform_reshard_seconds_;  // [group x candidate]
  std::vector<double> star_reshard_seconds_, uniform_star_reshard_seconds_;       // [group x candidate]
  std::vector<float> neighbour_legal_;  // [group x candidate]: kCandidateNeighbourLegal
  std::vector<double> uniform_step_times_;  // [candidate]
  std::vector<StepCost> uniform_costs_;      // [candidate]
  std::vector<float> candidate_features_;
  int64_t total_memory_ = 0;
  double total_reference_seconds_ = 0.0;
  DeviceId reference_device_ = 0;
  double reference_time_ = 0.0;
  std::vector<double> single_device_times_;
  std::vector<float> node_features_, device_features_;
  friend class LentDeltaSimulator;
  // Keeps a lent delta simulator for the next LendDeltaSimulator while fewer than kIdleDeltaSimulators are idle,
  // else frees it. One is what an environment that starts its next episode as the last one ends can reuse
  // (EnvBatch, the Python env); more would keep, after a rollout of many episodes of one game at once, memory no
  // later episode needs (about 25 MB per simulator at 10k ops), per game of a training set.
  static constexpr size_t kIdleDeltaSimulators = 1;
  void TakeBack(std::unique_ptr<DeltaSimulator> delta, Strategy strategy) const;
  // Evaluate's and EvaluateCost's errors for a placement of the wrong size, an action out of range or a split a
  // group cannot take.
  Status CheckPlacement(std::span<const int32_t> device_per_group) const;
  // A simulator of the pool and the strategy it simulated last.
  struct PooledSimulator {
    std::unique_ptr<Simulator> sim;
    Strategy strategy;
  };
  // Writes StrategyFromGroups(device_per_group) over *strategy (its configs' lists reused).
  void FillStrategy(std::span<const int32_t> device_per_group, Strategy* strategy) const;
  // Checks the placement, borrows a simulator, writes the placement's strategy and returns run(simulator,
  // strategy).
  template <class Result, class RunFn>
  Expected<Result> Simulated(std::span<const int32_t> device_per_group, RunFn run) const;
  // Idle simulators for Evaluate and idle delta simulators for LendDeltaSimulator (caches: they change no result).
  mutable std::mutex pool_mutex_;
  mutable std::vector<PooledSimulator> pool_;
  // An idle delta simulator and the list its last lending's strategy was written into.
  struct PooledDeltaSimulator {
    std::unique_ptr<DeltaSimulator> sim;
    Strategy strategy;
  };
  mutable std::vector<PooledDeltaSimulator> delta_pool_;
};

}  // namespace devplace
