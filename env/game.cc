#include "env/game.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/check.h"
#include "sim/estimates.h"

namespace devplace {
namespace {

// log1p(x) / log1p(max), 0 when max is 0.
float LogScaled(double x, double max) { return max > 0 ? static_cast<float>(std::log1p(x) / std::log1p(max)) : 0.0f; }

float Capped(double x, double cap) { return static_cast<float>(std::min(x, cap)); }

bool SameHardware(const Device& a, const Device& b) {
  return a.kind == b.kind && a.peak_flops_f32 == b.peak_flops_f32 && a.peak_flops_f16 == b.peak_flops_f16 &&
         a.memory_bandwidth == b.memory_bandwidth;
}

}  // namespace

Expected<std::shared_ptr<const PlacementGame>> PlacementGame::Create(std::shared_ptr<const Graph> graph,
                                                                     std::shared_ptr<const Topology> topology,
                                                                     CostModel cost, EnvConfig config) {
  if (graph == nullptr) return Error{"env: no graph"};
  if (Status s = CheckTrainingGraph(*graph); !s) return Error{"env: " + s.error().message};
  if (topology == nullptr || topology->num_devices() == 0) return Error{"env: the topology has no devices"};
  if (Status s = ValidateEnvConfig(config); !s) return s.error();
  config.sim.keep_timeline = false;
  std::shared_ptr<PlacementGame> game(new PlacementGame());
  game->graph_ = std::move(graph);
  game->topology_ = std::move(topology);
  game->cost_ = std::move(cost);
  game->config_ = config;
  if (Status s = game->Init(); !s) return s.error();
  return std::shared_ptr<const PlacementGame>(std::move(game));
}

Status PlacementGame::Init() {
  groups_ = ColocationGroups(*graph_);
  InitEdges();
  if (Status s = InitReference(); !s) return s;
  InitEstimates();
  if (config_.data_parallel_action) InitSplits();
  InitNodeFeatures();
  InitDeviceFeatures();
  return Status::Ok();
}

void PlacementGame::InitEdges() {
  std::vector<std::pair<int32_t, int32_t>> pairs;
  pairs.reserve(graph_->edges().size());
  for (const Edge& e : graph_->edges()) {
    const int32_t a = groups_.group_of_op[e.src], b = groups_.group_of_op[e.dst];
    if (a != b) pairs.emplace_back(a, b);
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  edge_src_.resize(pairs.size());
  edge_dst_.resize(pairs.size());
  for (size_t k = 0; k < pairs.size(); ++k) std::tie(edge_src_[k], edge_dst_[k]) = pairs[k];
}

Status PlacementGame::InitReference() {
  const Graph& g = *graph_;
  const Topology& topo = *topology_;
  const int32_t num_dev = topo.num_devices();
  // Reference simulations: the whole graph on each device (identical hardware simulated once).
  Expected<Simulator> sim = Simulator::Create(g, topo, cost_, config_.sim);
  if (!sim) return sim.error();
  single_device_times_.assign(num_dev, 0.0);
  for (DeviceId d = 0; d < num_dev; ++d) {
    DeviceId twin = -1;
    for (DeviceId e = 0; e < d && twin < 0; ++e)
      if (SameHardware(topo.device(e), topo.device(d))) twin = e;
    if (twin >= 0) {
      single_device_times_[d] = single_device_times_[twin];
      continue;
    }
    Expected<double> t = sim->RunStepTime(Strategy::AllOn(g.num_ops(), d));
    if (!t) return t.error();
    single_device_times_[d] = *t;
  }
  // The simulator has priced every op on every kind of device: keep it for Evaluate.
  pool_.push_back(std::make_unique<Simulator>(std::move(*sim)));
  reference_device_ = static_cast<DeviceId>(
      std::min_element(single_device_times_.begin(), single_device_times_.end()) - single_device_times_.begin());
  reference_time_ = single_device_times_[reference_device_];
  DEVPLACE_CHECK(reference_time_ > 0 && std::isfinite(reference_time_), "reference step time must be positive");
  return Status::Ok();
}

void PlacementGame::InitEstimates() {
  const int32_t num_dev = num_devices(), num_grp = num_groups();
  const OpEstimates estimates = EstimateOps(*graph_, *topology_, cost_, config_.sim.optimizer_state_factor);
  group_seconds_.assign(static_cast<size_t>(num_grp) * num_dev, 0.0);
  group_memory_.assign(num_grp, 0);
  total_memory_ = 0;
  for (int32_t grp = 0; grp < num_grp; ++grp) {
    for (OpId op : groups_.members[grp]) {
      for (DeviceId d = 0; d < num_dev; ++d)
        group_seconds_[static_cast<size_t>(grp) * num_dev + d] += estimates.time(op, d);
      group_memory_[grp] += estimates.memory_bytes[op];
    }
    total_memory_ += group_memory_[grp];
  }
  total_reference_seconds_ = 0.0;
  for (int32_t grp = 0; grp < num_grp; ++grp) total_reference_seconds_ += group_seconds(grp, reference_device_);
}

void PlacementGame::InitNodeFeatures() {
  const Graph& g = *graph_;
  const int32_t num_grp = num_groups();
  std::vector<double> flops(num_grp, 0.0), out_bytes(num_grp, 0.0), param_bytes(num_grp, 0.0);
  std::vector<int32_t> in_deg(num_grp, 0), out_deg(num_grp, 0);
  for (size_t k = 0; k < edge_src_.size(); ++k) {
    ++out_deg[edge_src_[k]];
    ++in_deg[edge_dst_[k]];
  }
  for (int32_t grp = 0; grp < num_grp; ++grp) {
    for (OpId op : groups_.members[grp]) {
      flops[grp] += g.op(op).flops;
      out_bytes[grp] += static_cast<double>(OutputBytes(g.op(op)));
      param_bytes[grp] += static_cast<double>(g.op(op).param_bytes);
    }
  }
  const double max_flops = *std::max_element(flops.begin(), flops.end());
  const double max_out = *std::max_element(out_bytes.begin(), out_bytes.end());
  const double max_param = *std::max_element(param_bytes.begin(), param_bytes.end());
  const double max_in_deg = *std::max_element(in_deg.begin(), in_deg.end());
  const double max_out_deg = *std::max_element(out_deg.begin(), out_deg.end());
  node_features_.assign(static_cast<size_t>(num_grp) * kNodeFeatureDim, 0.0f);
  for (int32_t grp = 0; grp < num_grp; ++grp) {
    float* row = &node_features_[static_cast<size_t>(grp) * kNodeFeatureDim];
    const std::vector<OpId>& members = groups_.members[grp];
    int32_t role_count[3] = {0, 0, 0};
    for (OpId op : members) ++role_count[static_cast<int>(g.op(op).role)];
    const double n = static_cast<double>(members.size());
    row[kNodeLogFlops] = LogScaled(flops[grp], max_flops);
    row[kNodeLogOutputBytes] = LogScaled(out_bytes[grp], max_out);
    row[kNodeLogParamBytes] = LogScaled(param_bytes[grp], max_param);
    row[kNodeForwardFraction] = static_cast<float>(role_count[static_cast<int>(OpRole::kForward)] / n);
    row[kNodeBackwardFraction] = static_cast<float>(role_count[static_cast<int>(OpRole::kBackward)] / n);
    row[kNodeUpdateFraction] = static_cast<float>(role_count[static_cast<int>(OpRole::kUpdate)] / n);
    row[kNodeLogInDegree] = LogScaled(in_deg[grp], max_in_deg);
    row[kNodeLogOutDegree] = LogScaled(out_deg[grp], max_out_deg);
    row[kNodeTopoPosition] = num_grp > 1 ? static_cast<float>(static_cast<double>(grp) / (num_grp - 1)) : 0.0f;
    row[kNodeComputeShare] = static_cast<float>(group_seconds(grp, reference_device_) / total_reference_seconds_);
    row[kNodeMemoryShare] =
        total_memory_ > 0 ? static_cast<float>(static_cast<double>(group_memory_[grp]) / total_memory_) : 0.0f;
  }
}

void PlacementGame::InitDeviceFeatures() {
  const Topology& topo = *topology_;
  double max_peak = 0.0, max_bw = 0.0;
  for (const Device& d : topo.devices()) {
    max_peak = std::max(max_peak, d.peak_flops_f32);
    max_bw = std::max(max_bw, d.memory_bandwidth);
  }
  std::unordered_map<std::string, int32_t> host_index;
  for (const Device& d : topo.devices()) host_index.emplace(d.host, static_cast<int32_t>(host_index.size()));
  const int32_t num_hosts = static_cast<int32_t>(host_index.size());
  device_features_.assign(static_cast<size_t>(num_devices()) * kDeviceFeatureDim, 0.0f);
  for (DeviceId d = 0; d < num_devices(); ++d) {
    const Device& dev = topo.device(d);
    float* row = &device_features_[static_cast<size_t>(d) * kDeviceFeatureDim];
    row[kDevicePeakFlops] = max_peak > 0 ? static_cast<float>(dev.peak_flops_f32 / max_peak) : 0.0f;
    row[kDeviceMemoryBandwidth] = max_bw > 0 ? static_cast<float>(dev.memory_bandwidth / max_bw) : 0.0f;
    row[kDeviceCapacity] =
        total_memory_ > 0 ? Capped(static_cast<double>(dev.memory_bytes) / total_memory_, 4.0) : 4.0f;
    row[kDeviceHost] =
        num_hosts > 1 ? static_cast<float>(static_cast<double>(host_index.at(dev.host)) / (num_hosts - 1)) : 0.0f;
  }
}

void PlacementGame::InitSplits() {
  const Graph& g = *graph_;
  const int32_t num_dev = num_devices(), num_grp = num_groups();
  std::vector<DeviceId> all(static_cast<size_t>(num_dev));
  for (DeviceId d = 0; d < num_dev; ++d) all[d] = d;
  split_configs_.assign(g.num_ops(), OpConfig{});
  splittable_.assign(num_grp, 1);
  split_memory_.assign(num_grp, 0);
  split_seconds_.assign(static_cast<size_t>(num_grp) * num_dev, 0.0);
  sync_seconds_.assign(num_grp, 0.0);
  for (int32_t grp = 0; grp < num_grp; ++grp) {
    int64_t replicated_bytes = 0;
    for (OpId op : groups_.members[grp]) {
      const Op& o = g.op(op);
      std::optional<OpConfig> split = SplitConfig(o, all);
      if (!split) {
        splittable_[grp] = 0;
        continue;
      }
      split_configs_[op] = std::move(*split);
      const OpConfig& c = split_configs_[op];
      bool replicated = false;
      for (size_t k = 0; k < c.degrees.size(); ++k)
        replicated |= c.degrees[k] > 1 && o.dims[k].kind == DimKind::kSample;
      if (replicated) replicated_bytes += o.param_bytes;
      split_memory_[grp] += OpPartMemoryEstimate(o, c, config_.sim.optimizer_state_factor);
      for (DeviceId d = 0; d < num_dev; ++d)
        split_seconds_[static_cast<size_t>(grp) * num_dev + d] +=
            cost_.ComputeTime(g, op, c, static_cast<int>(d), topology_->device(d));
    }
    if (replicated_bytes > 0 && num_dev > 1) {
      double slowest_hop = 0.0;
      for (DeviceId d = 0; d < num_dev; ++d)
        slowest_hop = std::max(slowest_hop, topology_->transfer_time_estimate(d, (d + 1) % num_dev,
                                                                              (replicated_bytes + num_dev - 1) / num_dev));
      sync_seconds_[grp] = 2.0 * (num_dev - 1) * slowest_hop;
    }
  }
}

PlacementState PlacementGame::NewInitialState(uint64_t seed) const { return PlacementState(shared_from_this(), seed); }

double PlacementGame::PenalisedTime(const StepCost& cost) const {
  return cost.Penalised(reference_time_, config_.oom_penalty);
}

OpConfig PlacementGame::ActionConfig(OpId op, int32_t action) const {
  if (is_data_parallel(action)) {
    DEVPLACE_CHECK(group_splittable(groups_.group_of_op[op]), "data-parallel action on a group that cannot be split");
    return split_configs_[op];
  }
  DEVPLACE_CHECK(action >= 0 && action < num_devices(), "group device out of range");
  return OpConfig{{action}, {}};
}

Strategy PlacementGame::StrategyFromGroups(std::span<const int32_t> device_per_group) const {
  DEVPLACE_CHECK(static_cast<int32_t>(device_per_group.size()) == num_groups(), "one device per group");
  Strategy strategy;
  strategy.configs.resize(graph_->num_ops());
  for (OpId op = 0; op < graph_->num_ops(); ++op)
    strategy.configs[op] = ActionConfig(op, device_per_group[groups_.group_of_op[op]]);
  return strategy;
}

Expected<SimResult> PlacementGame::Evaluate(std::span<const int32_t> device_per_group) const {
  if (static_cast<int32_t>(device_per_group.size()) != num_groups())
    return Error{"env: placement has " + std::to_string(device_per_group.size()) + " devices but the graph has " +
                 std::to_string(num_groups()) + " groups"};
  for (size_t g = 0; g < device_per_group.size(); ++g) {
    const int32_t a = device_per_group[g];
    if (is_data_parallel(a) && !group_splittable(static_cast<int32_t>(g)))
      return Error{"env: placement[" + std::to_string(g) + "]: group (op '" +
                   graph_->op(groups_.members[g].front()).name + "') cannot be split over all " +
                   std::to_string(num_devices()) + " devices"};
    if (a < 0 || a >= num_actions())
      return Error{"env: placement[" + std::to_string(g) + "]: device " + std::to_string(a) +
                   " is not in topology '" + topology_->name() + "' (" + std::to_string(num_devices()) +
                   " devices)"};
  }
  std::unique_ptr<Simulator> sim;
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    if (!pool_.empty()) {
      sim = std::move(pool_.back());
      pool_.pop_back();
    }
  }
  if (sim == nullptr) {
    Expected<Simulator> created = Simulator::Create(*graph_, *topology_, cost_, config_.sim);
    if (!created) return created.error();
    sim = std::make_unique<Simulator>(std::move(*created));
  }
  Expected<SimResult> result = sim->Run(StrategyFromGroups(device_per_group));
  std::lock_guard<std::mutex> lock(pool_mutex_);
  pool_.push_back(std::move(sim));
  return result;
}

}  // namespace devplace
