// PlacementGame: the immutable part of a placement environment (OpenSpiel's Game). It binds a graph, a
// machine, a cost model and an EnvConfig, and precomputes what every state shares: the colocation groups (the
// unit of placement), the group-level DAG, per-group compute and memory estimates, static node and device
// features, and the reference step time that normalises rewards across graphs. States are created with
// NewInitialState(seed). A game is safe to share between threads (it is never modified after Create).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "core/colocation.h"
#include "core/graph.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"
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
  // Actions of a state: the devices, plus the data-parallel action when EnvConfig::data_parallel_action is set.
  int32_t num_actions() const { return num_devices() + (config_.data_parallel_action ? 1 : 0); }
  // The id of the data-parallel action (num_devices()), or -1 when the game has none.
  int32_t data_parallel_action() const { return config_.data_parallel_action ? num_devices() : -1; }
  // True when `action` is the data-parallel action.
  bool is_data_parallel(int32_t action) const { return config_.data_parallel_action && action == num_devices(); }
  // Data-parallel action only: whether every member of the group can be split over all devices
  // (SplitConfig), and the group's estimated memory and compute time per device when it is.
  bool group_splittable(int32_t group) const { return splittable_[group] != 0; }
  int64_t group_split_memory_bytes(int32_t group) const { return split_memory_[group]; }
  double group_split_seconds(int32_t group, DeviceId device) const {
    return split_seconds_[static_cast<size_t>(group) * num_devices() + device];
  }
  // Data-parallel action only: an estimate of the ring all-reduce of the group's replicated gradients (members
  // split along a sample dimension) when split: 2 (D - 1) steps, each moving 1/D of the bytes over the slowest
  // hop of the ring 0 -> 1 -> ... -> D-1 -> 0 (Topology::transfer_time_estimate). 0 for groups without weights.
  double group_sync_seconds(int32_t group) const { return sync_seconds_[group]; }
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
  // forward members (kept for the backward pass). group_split_memory_bytes sums OpPartMemoryEstimate.
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
  // The config of op `op` when its group takes `action`: {action} for a device, the op's split config for the
  // data-parallel action. Precondition: the action is in range (and the group splittable if data-parallel).
  OpConfig ActionConfig(OpId op, int32_t action) const;
  // The strategy of an action per group: every op on its group's device, or split over all devices (SplitConfig)
  // for the data-parallel action. Precondition: one action in range per group, splittable where data-parallel.
  Strategy StrategyFromGroups(std::span<const int32_t> device_per_group) const;
  // Simulates that strategy (equal to Simulate() of StrategyFromGroups). Thread-safe: it borrows a Simulator
  // from a pool kept by the game, so repeated evaluations reuse priced ops and buffers. Errors on a wrong size,
  // an action out of range or a data-parallel action on a group that cannot be split.
  Expected<SimResult> Evaluate(std::span<const int32_t> device_per_group) const;

  // Static node features, row-major [num_groups x kNodeFeatureDim]; the dynamic columns (is-current,
  // is-placed) are 0. Device features likewise, with the load columns 0.
  const std::vector<float>& static_node_features() const { return node_features_; }
  const std::vector<float>& static_device_features() const { return device_features_; }

 private:
  PlacementGame() = default;
  // Init's steps, in order: groups' edges, reference simulations, per-group estimates, the data-parallel
  // action's tables, static features.
  Status Init();
  void InitEdges();
  Status InitReference();
  void InitEstimates();
  void InitSplits();
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
  // Data-parallel action only (empty otherwise): the split config of every op, and per group.
  std::vector<OpConfig> split_configs_;
  std::vector<uint8_t> splittable_;
  std::vector<int64_t> split_memory_;
  std::vector<double> split_seconds_;  // [group x device]
  std::vector<double> sync_seconds_;
  int64_t total_memory_ = 0;
  double total_reference_seconds_ = 0.0;
  DeviceId reference_device_ = 0;
  double reference_time_ = 0.0;
  std::vector<double> single_device_times_;
  std::vector<float> node_features_, device_features_;
  // Idle simulators for Evaluate (a cache, not observable state).
  mutable std::mutex pool_mutex_;
  mutable std::vector<std::unique_ptr<Simulator>> pool_;
};

}  // namespace devplace
