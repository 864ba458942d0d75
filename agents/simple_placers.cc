#include "agents/simple_placers.h"

#include <optional>
#include <random>

#include "agents/group_graph.h"
#include "agents/search_budget.h"
#include "core/colocation.h"
#include "core/device_order.h"
#include "sim/objective.h"

namespace devplace {

namespace {

// The device with the highest f32 peak (lowest id on ties).
DeviceId FastestDevice(const Topology& t) {
  DeviceId best = 0;
  for (DeviceId d = 1; d < t.num_devices(); ++d)
    if (t.device(d).peak_flops_f32 > t.device(best).peak_flops_f32) best = d;
  return best;
}

}  // namespace

Expected<SearchResult> PlaceOnSingleDevice(const SearchProblem& problem, const SearchRequest& request) {
  BudgetTracker clock(request);
  return SearchResult{Strategy::AllOn(problem.graph->num_ops(), FastestDevice(*problem.topology)), 0,
                      clock.seconds()};
}

Expected<SearchResult> PlaceDataParallel(const SearchProblem& problem, const SearchRequest& request) {
  BudgetTracker clock(request);
  const Graph& g = *problem.graph;
  std::vector<DeviceId> ids(static_cast<size_t>(problem.topology->num_devices()));
  for (DeviceId d = 0; d < problem.topology->num_devices(); ++d) ids[d] = d;
  const std::vector<DeviceId> all = FastRingOrder(*problem.topology, std::move(ids));
  Strategy strategy = Strategy::AllOn(g.num_ops(), FastestDevice(*problem.topology));
  OpGroups groups = ColocationGroups(g);
  for (const std::vector<OpId>& members : groups.members) {
    std::vector<OpConfig> split;
    for (OpId op : members)
      if (std::optional<OpConfig> c = SplitConfig(g.op(op), all)) split.push_back(std::move(*c));
    if (split.size() != members.size()) continue;
    for (size_t k = 0; k < members.size(); ++k) strategy.configs[members[k]] = std::move(split[k]);
  }
  return SearchResult{std::move(strategy), 0, clock.seconds()};
}

Expected<SearchResult> PlaceRoundRobin(const SearchProblem& problem, const SearchRequest& request) {
  BudgetTracker clock(request);
  OpGroups groups = ColocationGroups(*problem.graph);
  std::vector<DeviceId> device_of_group(groups.num_groups());
  for (int32_t g = 0; g < groups.num_groups(); ++g) device_of_group[g] = g % problem.topology->num_devices();
  return SearchResult{PlacementFromGroups(groups, device_of_group), 0, clock.seconds()};
}

Expected<SearchResult> PlaceRandomly(const SearchProblem& problem, const SearchRequest& request) {
  BudgetTracker budget(request);
  OpGroups groups = ColocationGroups(*problem.graph);
  std::mt19937_64 rng(request.seed);
  const auto devices = static_cast<uint64_t>(problem.topology->num_devices());
  auto draw = [&]() {
    std::vector<DeviceId> device_of_group(groups.num_groups());
    for (DeviceId& d : device_of_group) d = static_cast<DeviceId>(rng() % devices);
    return PlacementFromGroups(groups, device_of_group);
  };
  Strategy best = draw();
  if (!budget.limited()) return SearchResult{std::move(best), 0, budget.seconds()};

  Expected<Simulator> simulator = Simulator::Create(*problem.graph, *problem.topology, problem.cost, problem.sim);
  if (!simulator.ok()) return simulator.error();
  std::optional<StepCost> best_cost;
  for (bool first = true; first || !budget.exhausted(); first = false) {
    Strategy candidate = first ? best : draw();
    Expected<SimResult> sim = simulator->Run(candidate);
    if (!sim.ok()) return sim.error();
    // The objective's order (sim/objective.h): an OOM placement only wins when nothing that fits was found.
    const StepCost cost = CostOf(*sim, *problem.topology);
    if (!best_cost || cost < *best_cost) {
      best_cost = cost;
      best = std::move(candidate);
    }
    budget.RecordEvaluation(best_cost->step_time);
  }
  budget.ReportFinal(best_cost->step_time);
  return SearchResult{std::move(best), budget.evaluations(), budget.seconds()};
}

}  // namespace devplace
