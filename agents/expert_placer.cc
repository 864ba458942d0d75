#include "agents/expert_placer.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "sim/estimates.h"
#include "agents/search_budget.h"
#include "core/colocation.h"
#include "sim/objective.h"

namespace devplace {

namespace {

// Layers as units of placement (GroupLayerIndex: each group belongs to the layer of its first member).
struct Layers {
  std::vector<int32_t> layer_of_group;
  std::vector<double> seconds;         // per layer: mean compute of its groups
  std::vector<int64_t> memory_bytes;   // per layer
};

Layers GroupLayers(const Graph& graph, const OpGroups& groups, const GroupEstimates& estimates) {
  Layers layers;
  layers.layer_of_group = GroupLayerIndex(graph, groups);
  for (int32_t g = 0; g < groups.num_groups(); ++g) {
    const auto l = static_cast<size_t>(layers.layer_of_group[g]);
    if (l == layers.seconds.size()) {  // layers are numbered in the order groups reach them
      layers.seconds.push_back(0);
      layers.memory_bytes.push_back(0);
    }
    layers.seconds[l] += estimates.mean_seconds[g];
    layers.memory_bytes[l] += estimates.memory_bytes[g];
  }
  return layers;
}

// Greedy contiguous split of layers over `k` devices: each device takes layers while its compute (divided by its
// relative speed) stays within `bound` and its memory within capacity. Returns the device per layer, or an
// empty vector if the layers do not fit.
std::vector<DeviceId> GreedySplit(const Layers& layers, const Topology& t, int k, double bound,
                                  const std::vector<double>& speed) {
  std::vector<DeviceId> device_of_layer(layers.seconds.size());
  int device = 0;
  double load = 0;
  int64_t memory = 0;
  for (size_t l = 0; l < layers.seconds.size(); ++l) {
    double time = layers.seconds[l] / speed[device];
    bool fits = load + time <= bound && memory + layers.memory_bytes[l] <= t.device(device).memory_bytes;
    if (!fits && (load > 0 || memory > 0)) {
      if (++device == k) return {};
      load = 0;
      memory = 0;
      time = layers.seconds[l] / speed[device];
    }
    load += time;
    memory += layers.memory_bytes[l];
    device_of_layer[l] = device;
  }
  return device_of_layer;
}

// The split over k devices with the smallest feasible compute bound (or empty if memory cannot be met).
std::vector<DeviceId> BalancedSplit(const Layers& layers, const Topology& t, int k, const std::vector<double>& speed) {
  double total = 0, largest = 0;
  for (double s : layers.seconds) {
    total += s;
    largest = std::max(largest, s);
  }
  double slowest = *std::min_element(speed.begin(), speed.begin() + k);
  double hi = total / slowest, lo = largest / (*std::max_element(speed.begin(), speed.begin() + k));
  std::vector<DeviceId> best = GreedySplit(layers, t, k, hi, speed);
  if (best.empty()) {
    // Compute can always be met with one device; only memory can fail. Relax the bound fully.
    best = GreedySplit(layers, t, k, std::numeric_limits<double>::infinity(), speed);
    return best;
  }
  for (int iter = 0; iter < 50 && hi - lo > 1e-12 * hi; ++iter) {
    double mid = 0.5 * (lo + hi);
    std::vector<DeviceId> split = GreedySplit(layers, t, k, mid, speed);
    if (split.empty()) {
      lo = mid;
    } else {
      hi = mid;
      best = std::move(split);
    }
  }
  return best;
}

}  // namespace

Expected<SearchResult> PlaceLikeAnExpert(const SearchProblem& problem, const SearchRequest& request) {
  BudgetTracker budget(request);
  const Graph& graph = *problem.graph;
  const Topology& t = *problem.topology;
  OpGroups groups = ColocationGroups(graph);
  OpEstimates estimates = EstimateOps(graph, t, problem.cost, problem.sim.optimizer_state_factor);
  Layers layers = GroupLayers(graph, groups, SumByGroup(estimates, groups));
  std::vector<double> speed(t.num_devices());
  for (DeviceId d = 0; d < t.num_devices(); ++d) speed[d] = t.device(d).peak_flops_f32 / t.device(0).peak_flops_f32;

  Expected<Simulator> simulator = Simulator::Create(graph, t, problem.cost, problem.sim);
  if (!simulator.ok()) return simulator.error();
  Strategy best;
  std::optional<StepCost> best_cost;
  for (int k = 1; k <= t.num_devices(); ++k) {
    if (k > 1 && budget.exhausted()) break;
    std::vector<DeviceId> device_of_layer = BalancedSplit(layers, t, k, speed);
    if (device_of_layer.empty()) {
      if (k < t.num_devices() || !best.configs.empty()) continue;
      // Nothing fits even on all devices: spread by memory alone and let the simulator report the OOM.
      device_of_layer.resize(layers.seconds.size());
      for (size_t l = 0; l < device_of_layer.size(); ++l)
        device_of_layer[l] = static_cast<DeviceId>(l * t.num_devices() / device_of_layer.size());
    }
    std::vector<DeviceId> device_of_op(graph.num_ops());
    for (OpId op = 0; op < graph.num_ops(); ++op)
      device_of_op[op] = device_of_layer[layers.layer_of_group[groups.group_of_op[op]]];
    Strategy candidate = Strategy::FromPlacement(device_of_op);
    Expected<SimResult> sim = simulator->Run(candidate);
    if (!sim.ok()) return sim.error();
    const StepCost cost = CostOf(*sim, t);
    if (!best_cost || cost < *best_cost) {
      best_cost = cost;
      best = std::move(candidate);
    }
    budget.RecordEvaluation(best_cost->step_time);
  }
  budget.ReportFinal(best_cost ? best_cost->step_time : 0.0);
  return SearchResult{std::move(best), budget.evaluations(), budget.seconds()};
}

}  // namespace devplace
