// Tofu DP search time on zoo models: the whole search (coarsening, one DP per bisection level, and the
// simulation of the candidates after 3, 2, 1 and 0 levels) and the DP alone (no simulation).
// Counters: step_ms = simulated step time of the returned strategy, evals = simulations run, units = coarsened
// groups, ops = ops of the training graph.
#include <benchmark/benchmark.h>

#include <string>

#include "agents/tofu_dp.h"
#include "core/topology_yaml.h"
#include "datasets/zoo.h"

namespace devplace {
namespace {

struct Setup {
  Graph graph;
  Topology topology;
};

Setup Load(const std::string& model, const std::string& machine) {
  return Setup{BuildZooModel(model).value(),
               ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/" + machine + ".yaml").value()};
}

void BM_TofuSearch(benchmark::State& state, const std::string& model, const std::string& machine) {
  const Setup s = Load(model, machine);
  const SearchProblem problem{&s.graph, &s.topology, MakeAnalyticCostModel(), {}};
  const TofuDpSearch search;
  SearchResult result;
  for (auto _ : state) result = search.Search(problem, SearchRequest{}).value();
  const SimResult sim = Simulate(s.graph, s.topology, result.strategy, problem.cost).value();
  state.counters["step_ms"] = sim.step_time * 1e3;
  state.counters["evals"] = static_cast<double>(result.evaluations);
  state.counters["ops"] = s.graph.num_ops();
}

void BM_TofuDpOnly(benchmark::State& state, const std::string& model, const std::string& machine) {
  const Setup s = Load(model, machine);
  const SearchProblem problem{&s.graph, &s.topology, MakeAnalyticCostModel(), {}};
  int32_t units = 0;
  for (auto _ : state) {
    TofuPlanner planner(problem, TofuOptions{});
    for (int32_t level = 0; level < planner.num_levels(); ++level) {
      const TofuLevelProblem next = planner.NextLevel();
      planner.Apply(next, SolveTofuLevel(next, TofuOptions{}.max_states)->choice);
    }
    benchmark::DoNotOptimize(planner.ToStrategy());
    units = planner.num_units();
  }
  state.counters["units"] = units;
  state.counters["ops"] = s.graph.num_ops();
}

BENCHMARK_CAPTURE(BM_TofuSearch, resnet152_dgx1, std::string("resnet152"), std::string("dgx1-v100"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TofuSearch, inception_v3_dgx1, std::string("inception_v3"), std::string("dgx1-v100"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TofuSearch, gnmt8_dgx1, std::string("gnmt8"), std::string("dgx1-v100"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TofuSearch, resnet152_p100_4x4_ib, std::string("resnet152"), std::string("p100-4x4-ib"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TofuDpOnly, resnet152_dgx1, std::string("resnet152"), std::string("dgx1-v100"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TofuDpOnly, gnmt8_dgx1, std::string("gnmt8"), std::string("dgx1-v100"))
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace devplace

BENCHMARK_MAIN();
