#include "env/game.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/check.h"
#include "core/cut_alignment.h"
#include "core/device_order.h"
#include "core/parallel.h"
#include "core/partition.h"
#include "sim/estimates.h"

namespace devplace {
namespace {

// log1p(x) / log1p(max), 0 when max is 0.
float LogScaled(double x, double max) { return max > 0 ? static_cast<float>(std::log1p(x) / std::log1p(max)) : 0.0f; }

float Capped(double x, double cap) { return static_cast<float>(std::min(x, cap)); }

// The hops (src, dst) of the ring d0 -> d1 -> ... -> d0 over `devices` (none for fewer than 2).
std::vector<std::pair<DeviceId, DeviceId>> MakeRing(const std::vector<DeviceId>& devices) {
  std::vector<std::pair<DeviceId, DeviceId>> hops;
  for (size_t p = 0; p < devices.size() && devices.size() > 1; ++p)
    hops.emplace_back(devices[p], devices[(p + 1) % devices.size()]);
  return hops;
}

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
  if (Status s = InitSplits(); !s) return s;
  InitNodeFeatures();
  InitDeviceFeatures();
  InitCandidateFeatures();
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
  pool_.push_back({std::make_unique<Simulator>(std::move(*sim)), Strategy{}});
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

double PlacementGame::RingTime(const Topology& topology, const RingHops& hops, int64_t bytes) {
  double worst = 0.0;
  for (const auto& [a, b] : hops) worst = std::max(worst, topology.transfer_time_estimate(a, b, bytes));
  return worst;
}

Status PlacementGame::InitSplits() {
  if (config_.action_space == ActionSpace::kSoap) {
    candidates_ = SoapCandidates(*topology_, config_.meshes);
  } else if (config_.data_parallel_action) {
    SplitCandidate all{{}, std::nullopt, "all/data-parallel"};
    for (DeviceId d = 0; d < num_devices(); ++d) all.devices.push_back(d);
    all.devices = FastRingOrder(*topology_, std::move(all.devices));  // the ring data parallelism runs on
    candidates_.push_back(std::move(all));
  }
  const int32_t num_dev = num_devices(), num_cand = num_candidates();
  for (int32_t c = 0; c < num_cand; ++c) {
    const SplitCandidate& cand = candidates_[c];
    if (data_parallel_action_ < 0 && static_cast<int32_t>(cand.devices.size()) == num_dev &&
        (!cand.kind || *cand.kind == DimKind::kSample))
      data_parallel_action_ = num_dev + c;
  }
  position_.assign(static_cast<size_t>(num_cand) * num_dev, -1);
  first_position_.assign(num_cand, 0);
  positions_ = 0;
  std::vector<RingHops> rings;
  std::vector<std::vector<const Device*>> part_devices(static_cast<size_t>(num_cand));  // per candidate
  for (int32_t c = 0; c < num_cand; ++c) {
    const std::vector<DeviceId>& devs = candidates_[c].devices;
    for (DeviceId d : devs) part_devices[c].push_back(&topology_->device(d));
    first_position_[c] = positions_;
    positions_ += devs.size();
    for (size_t p = 0; p < devs.size(); ++p) position_[static_cast<size_t>(c) * num_dev + devs[p]] = static_cast<int32_t>(p);
    rings.push_back(MakeRing(devs));
  }
  const size_t cells = static_cast<size_t>(num_groups()) * num_cand;
  can_split_.assign(cells, 0);
  split_memory_.assign(cells, 0);
  sync_seconds_.assign(cells, 0.0);
  reshard_seconds_.assign(cells, 0.0);
  split_seconds_.assign(static_cast<size_t>(num_groups()) * positions_, 0.0);
  uniform_reshard_seconds_.assign(cells, 0.0);
  neighbour_legal_.assign(cells, 1.0f);
  star_reshard_seconds_.assign(cells, 0.0);
  uniform_star_reshard_seconds_.assign(cells, 0.0);
  uniform_step_times_.assign(num_cand, 0.0);
  uniform_costs_.assign(num_cand, StepCost{});
  // The candidates whose uniform split is simulated (sample splits, or any dim) take longest: they are claimed
  // first, so that the last items to finish are short ones.
  auto simulated = [&](int32_t c) { return !candidates_[c].kind || *candidates_[c].kind == DimKind::kSample; };
  std::vector<int32_t> order;
  for (int32_t pass = 0; pass < 2; ++pass)
    for (int32_t c = 0; c < num_cand; ++c)
      if (simulated(c) == (pass == 0)) order.push_back(c);
  // Each candidate fills only its own cells and reads only its own can_split_ column, so the candidates run on the
  // machine's cores with the same tables whatever the thread count.
  std::vector<Status> status(static_cast<size_t>(num_cand), Status::Ok());
  ParallelFor(static_cast<size_t>(num_cand), BuildThreads(), [&](size_t item) {
    const int32_t c = order[item];
    CandidateOps ops = MakeCandidateOps(c);
    for (int32_t grp = 0; grp < num_groups(); ++grp) InitSplitGroup(grp, c, rings[c], part_devices[c], ops);
    for (int32_t grp = 0; grp < num_groups(); ++grp) {
      const double legal_missing = InitUniformReshard(grp, c, rings[c], &ops);
      if (config_.star_reshard && can_split(grp, num_devices() + c))
        InitStarReshard(grp, num_devices() + c, rings[c], legal_missing, &ops);
    }
    if (simulated(c)) status[c] = InitUniformStep(c);
  });
  for (const Status& s : status)
    if (!s) return s;
  return Status::Ok();
}

int32_t PlacementGame::BuildThreads() const {
  return config_.build_threads > 0 ? config_.build_threads : HardwareThreads();
}

PlacementGame::CandidateOps PlacementGame::MakeCandidateOps(int32_t c) const {
  const Graph& g = *graph_;
  const SplitCandidate& cand = candidates_[c];
  CandidateOps ops;
  ops.config.resize(g.num_ops());
  ops.native.assign(g.num_ops(), 0);
  ops.missing.assign(g.num_edges(), -1);
  if (cand.devices.size() < 2) return ops;  // one device splits nothing
  for (OpId op = 0; op < g.num_ops(); ++op) {
    bool native = false;
    ops.config[op] = CandidateOpConfig(g.op(op), cand, &native);
    ops.native[op] = native ? 1 : 0;
  }
  return ops;
}

void PlacementGame::InitSplitGroup(int32_t grp, int32_t c, const RingHops& ring,
                                   std::span<const Device* const> devices, const CandidateOps& ops) {
  const Graph& g = *graph_;
  const SplitCandidate& cand = candidates_[c];
  const auto n = static_cast<int64_t>(cand.devices.size());
  const size_t cell = static_cast<size_t>(grp) * candidates_.size() + c;
  double* seconds = &split_seconds_[static_cast<size_t>(grp) * positions_ + first_position_[c]];
  bool any_native = !cand.kind.has_value();
  int64_t replicated_bytes = 0, memory = 0;
  double reshard_bytes = 0.0;
  for (OpId op : groups_.members[grp]) {
    const Op& o = g.op(op);
    const std::optional<OpConfig>& split = ops.config[op];
    if (!split) return;  // the group cannot take the candidate: its row stays 0
    any_native = any_native || ops.native[op] != 0;
    const OpConfig& config = *split;
    bool replicated = false, partial = false, sliced_input = false;
    for (size_t k = 0; k < config.degrees.size(); ++k) {
      if (config.degrees[k] <= 1) continue;
      replicated |= o.dims[k].kind == DimKind::kSample;
      partial |= o.dims[k].output_axis < 0;
      sliced_input |= o.dims[k].input_axis >= 0;
    }
    if (replicated) replicated_bytes += o.param_bytes;
    memory += OpPartMemoryEstimate(o, config, config_.sim.optimizer_state_factor);
    cost_.AddComputeTimes(g, op, config, devices, seconds);
    const double spread = static_cast<double>(n - 1) / static_cast<double>(n);
    for (int32_t e : g.in_edges(op))
      if (groups_.group_of_op[g.edge(e).src] != grp)
        reshard_bytes += static_cast<double>(g.edge(e).bytes) * (sliced_input ? spread : static_cast<double>(n - 1));
    for (int32_t e : g.out_edges(op))
      if (groups_.group_of_op[g.edge(e).dst] != grp)
        reshard_bytes += static_cast<double>(g.edge(e).bytes) * (partial ? 2.0 * spread : spread);
  }
  if (!any_native) {
    std::fill(seconds, seconds + n, 0.0);
    return;
  }
  can_split_[cell] = 1;
  split_memory_[cell] = memory;
  if (replicated_bytes > 0) sync_seconds_[cell] = 2.0 * static_cast<double>(n - 1) * RingTime(*topology_, ring, (replicated_bytes + n - 1) / n);
  if (reshard_bytes > 0) reshard_seconds_[cell] = RingTime(*topology_, ring, static_cast<int64_t>(reshard_bytes / static_cast<double>(n)));
}

double PlacementGame::MissingBytes(int32_t edge, CandidateOps* ops) const {
  const Edge& e = graph_->edge(edge);
  const Op& from = graph_->op(e.src);
  int64_t& volume = ops->missing[edge];
  if (volume < 0) {
    const Op& to = graph_->op(e.dst);
    const OpConfig &from_config = *ops->config[e.src], &to_config = *ops->config[e.dst];
    volume = 0;
    // Cut alike (core/cut_alignment.h): every part needs exactly the box it owns, nothing is missing.
    const bool alike = AlignedCuts(from, from_config, to, to_config);
    for (int32_t p = 0; !alike && p < static_cast<int32_t>(from_config.devices.size()); ++p) {
      const Box need = NeededBox(to, to_config, p, from);
      volume += Volume(need) - OverlapVolume(need, OwnedBox(from, from_config, p));
    }
  }
  return static_cast<double>(e.bytes) * static_cast<double>(volume) /
         static_cast<double>(std::max<int64_t>(1, NumElements(from)));
}

double PlacementGame::InitUniformReshard(int32_t grp, int32_t c, const RingHops& ring, CandidateOps* ops) {
  const size_t cell = static_cast<size_t>(grp) * candidates_.size() + c;
  if (!can_split_[cell]) return 0.0;
  const Graph& g = *graph_;
  const SplitCandidate& cand = candidates_[c];
  const auto n = static_cast<int32_t>(cand.devices.size());
  const double spread = static_cast<double>(n - 1) / static_cast<double>(n);
  const int32_t action = num_devices() + c;
  double reshard = 0.0, edge_bytes = 0.0, legal_bytes = 0.0, legal_missing = 0.0;
  // One edge producer -> consumer to group `other`: priced as both split alike when `other` can take the
  // candidate, else at `blind` times its bytes (split_reshard_seconds' rule).
  auto edge = [&](int32_t e, int32_t other, double blind) {
    if (other == grp) return;
    const auto bytes = static_cast<double>(g.edge(e).bytes);
    edge_bytes += bytes;
    if (!can_split(other, action)) {
      reshard += bytes * blind;
      return;
    }
    legal_bytes += bytes;
    const double m = MissingBytes(e, ops);
    reshard += m;
    legal_missing += m;
  };
  for (OpId op : groups_.members[grp]) {
    const Op& o = g.op(op);
    const OpConfig& config = *ops->config[op];
    bool partial = false, sliced_input = false;
    for (size_t k = 0; k < config.degrees.size(); ++k) {
      if (config.degrees[k] <= 1) continue;
      partial |= o.dims[k].output_axis < 0;
      sliced_input |= o.dims[k].input_axis >= 0;
    }
    if (partial) reshard += static_cast<double>(OutputBytes(o)) * spread;
    for (int32_t e : g.in_edges(op))
      edge(e, groups_.group_of_op[g.edge(e).src], sliced_input ? spread : static_cast<double>(n - 1));
    for (int32_t e : g.out_edges(op)) edge(e, groups_.group_of_op[g.edge(e).dst], spread);
  }
  if (edge_bytes > 0) neighbour_legal_[cell] = static_cast<float>(legal_bytes / edge_bytes);
  if (reshard > 0) uniform_reshard_seconds_[cell] = RingTime(*topology_, ring, static_cast<int64_t>(reshard / n));
  return legal_missing;
}

double PlacementGame::split_seconds(int32_t group, int32_t action, DeviceId device) const {
  const int32_t p = position(action, device);
  if (p < 0) return 0.0;
  const size_t c = static_cast<size_t>(action - num_devices());
  return split_seconds_[static_cast<size_t>(group) * positions_ + first_position_[c] + p];
}

double PlacementGame::split_slowest_seconds(int32_t group, int32_t action) const {
  const size_t c = static_cast<size_t>(action - num_devices());
  const double* row = &split_seconds_[static_cast<size_t>(group) * positions_ + first_position_[c]];
  return *std::max_element(row, row + candidates_[c].devices.size());
}

std::vector<int32_t> PlacementGame::UniformPlacement(int32_t c) const {
  const int32_t action = num_devices() + c;
  std::vector<int32_t> placement(num_groups());
  for (int32_t grp = 0; grp < num_groups(); ++grp) placement[grp] = can_split(grp, action) ? action : reference_device_;
  return placement;
}

Status PlacementGame::InitUniformStep(int32_t c) {
  Expected<SimResult> result = Evaluate(UniformPlacement(c));  // borrows a simulator per call
  if (!result) return result.error();
  uniform_costs_[c] = CostOf(*result, *topology_);
  uniform_step_times_[c] = PenalisedTime(uniform_costs_[c]);
  return Status::Ok();
}

void PlacementGame::InitCandidateFeatures() {
  const int32_t num_grp = num_groups(), num_cand = num_candidates(), num_dev = num_devices();
  candidate_features_.assign(static_cast<size_t>(num_grp) * num_cand * kCandidateFeatureDim, 0.0f);
  if (num_cand == 0) return;
  std::unordered_map<std::string, int32_t> hosts;
  for (const Device& d : topology_->devices()) hosts.emplace(d.host, 0);
  constexpr int64_t kMiB = 1 << 20;
  double fastest = std::numeric_limits<double>::infinity();
  for (DeviceId a = 0; a < num_dev; ++a)
    for (DeviceId b = 0; b < num_dev; ++b)
      if (a != b) fastest = std::min(fastest, topology_->transfer_time_estimate(a, b, kMiB));
  double best_uniform = std::numeric_limits<double>::infinity();
  for (double u : uniform_step_times_)
    if (u > 0) best_uniform = std::min(best_uniform, u);
  for (int32_t c = 0; c < num_cand; ++c) {
    const SplitCandidate& cand = candidates_[c];
    const double u = uniform_step_times_[c];
    const float speedup = u > 0 && num_dev > 1 ? static_cast<float>(std::clamp(
                                                     std::log(reference_time_ / u) / std::log(num_dev), -1.0, 1.0))
                                               : 0.0f;
    const float best = u > 0 ? static_cast<float>(best_uniform / u) : 0.0f;
    std::unordered_map<std::string, int32_t> spanned;
    int64_t capacity = std::numeric_limits<int64_t>::max();
    for (DeviceId d : cand.devices) {
      spanned.emplace(topology_->device(d).host, 0);
      capacity = std::min(capacity, topology_->device(d).memory_bytes);
    }
    const double slowest = RingTime(*topology_, MakeRing(cand.devices), kMiB);
    const int32_t action = num_dev + c;
    for (int32_t grp = 0; grp < num_grp; ++grp) {
      if (!can_split(grp, action)) continue;
      float* row = &candidate_features_[(static_cast<size_t>(grp) * num_cand + c) * kCandidateFeatureDim];
      row[kCandidateLegal] = 1.0f;
      if (cand.kind) row[kCandidateSample + static_cast<int>(*cand.kind)] = 1.0f;
      row[kCandidateSubsetSize] = static_cast<float>(static_cast<double>(cand.devices.size()) / num_dev);
      row[kCandidateSubsetHosts] = static_cast<float>(static_cast<double>(spanned.size()) / hosts.size());
      const double t = group_seconds(grp, reference_device_);
      const double saved = std::max(0.0, t - split_slowest_seconds(grp, action));
      const double sync = split_sync_seconds(grp, action), reshard = split_reshard_seconds(grp, action);
      const double cost = saved + sync + reshard;
      row[kCandidateComputeSaved] = t > 0 ? static_cast<float>(std::clamp(saved / t, 0.0, 1.0)) : 0.0f;
      row[kCandidateNetGain] = static_cast<float>(
          std::clamp(num_grp * (saved - sync - reshard) / (4.0 * total_reference_seconds_), -1.0, 1.0));
      row[kCandidateSyncShare] = cost > 0 ? static_cast<float>(sync / cost) : 0.0f;
      row[kCandidateReshardShare] = cost > 0 ? static_cast<float>(reshard / cost) : 0.0f;
      row[kCandidateMemoryPerDevice] =
          Capped(static_cast<double>(split_memory_bytes(grp, action)) / static_cast<double>(capacity), 4.0);
      row[kCandidateMemoryRatio] = group_memory_[grp] > 0
                                       ? Capped(static_cast<double>(split_memory_bytes(grp, action)) /
                                                    static_cast<double>(group_memory_[grp]), 1.0)
                                       : 1.0f;
      row[kCandidateLinkSpeed] = slowest > 0 && std::isfinite(fastest) ? static_cast<float>(std::min(1.0, fastest / slowest)) : 1.0f;
      const double uniform = split_uniform_reshard_seconds(grp, action), ucost = saved + sync + uniform;
      row[kCandidateUniformNetGain] = static_cast<float>(
          std::clamp(num_grp * (saved - sync - uniform) / (4.0 * total_reference_seconds_), -1.0, 1.0));
      row[kCandidateUniformReshardShare] = ucost > 0 ? static_cast<float>(uniform / ucost) : 0.0f;
      row[kCandidateNeighbourLegal] = neighbour_legal_[SplitIndex(grp, action)];
      row[kCandidateUniformSpeedup] = speedup;
      row[kCandidateUniformBest] = best;
      if (!config_.star_reshard) continue;
      const double star = split_star_reshard_seconds(grp, action), scost = saved + sync + star;
      row[kCandidateStarNetGain] = static_cast<float>(
          std::clamp(num_grp * (saved - sync - star) / (4.0 * total_reference_seconds_), -1.0, 1.0));
      row[kCandidateStarReshardShare] = scost > 0 ? static_cast<float>(star / scost) : 0.0f;
      row[kCandidateUniformStarNetGain] = static_cast<float>(std::clamp(
          num_grp * (saved - sync - split_uniform_star_reshard_seconds(grp, action)) / (4.0 * total_reference_seconds_),
          -1.0, 1.0));
    }
  }
}

PlacementState PlacementGame::NewInitialState(uint64_t seed) const { return PlacementState(shared_from_this(), seed); }

double PlacementGame::PenalisedTime(const StepCost& cost) const {
  return cost.Penalised(reference_time_, config_.oom_penalty);
}

OpConfig PlacementGame::ActionConfig(OpId op, int32_t action) const {
  OpConfig config;
  ActionConfigInto(op, action, &config);
  return config;
}

void PlacementGame::ActionConfigInto(OpId op, int32_t action, OpConfig* config) const {
  if (is_split(action)) {
    DEVPLACE_CHECK(can_split(groups_.group_of_op[op], action), "split action on a group that cannot take it");
    const bool written = CandidateOpConfigInto(graph_->op(op), candidates_[action - num_devices()], config);
    DEVPLACE_CHECK(written, "split action without a config");
    return;
  }
  DEVPLACE_CHECK(action >= 0 && action < num_devices(), "group device out of range");
  config->devices.assign(1, action);
  config->degrees.clear();
  config->shard_weights = false;
}

}  // namespace devplace
