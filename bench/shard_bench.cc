// Sharding propagation speed (issue 17's target: a spec over a 50k-op graph in under 1 s): the data-parallel
// annotation (the labels' batch axis over an 8-device mesh) propagated to every op of transformer family members of
// 1k, 10k and 50k training ops (seed 42), and the lowering of the result to per-op configs.
//   build/bench/shard_bench            (docs/performance.md, "Sharding propagation")
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <map>

#include "core/sharding.h"
#include "core/sharding_propagation.h"
#include "datasets/families.h"

namespace devplace {
namespace {

const Graph& Member(int ops) {
  static std::map<int, Graph> graphs;  // built once per size, outside the timed loops
  auto it = graphs.find(ops);
  if (it == graphs.end()) {
    FamilyOptions options;
    options.target_ops = ops;
    Expected<Graph> g = GenerateFamilyMember("transformer", 42, options);
    if (!g) {
      std::fprintf(stderr, "shard_bench: %s\n", g.error().message.c_str());
      std::abort();
    }
    it = graphs.emplace(ops, std::move(g).value()).first;
  }
  return it->second;
}

Mesh DataMesh() { return Mesh{"data8", {8}, {"data"}, {0, 1, 2, 3, 4, 5, 6, 7}}; }

std::vector<ShardingAnnotation> DataParallel() {
  ShardingSpec spec;
  spec.dims = {{0}};
  return {ShardingAnnotation{"input/*labels", spec, false, "bench: data parallel"}};
}

void Propagate(benchmark::State& state) {
  const Graph& graph = Member(static_cast<int>(state.range(0)));
  const Mesh mesh = DataMesh();
  const std::vector<ShardingAnnotation> annotations = DataParallel();
  int64_t replicated = 0;
  for (auto _ : state) {
    Expected<ShardingPlan> plan = PropagateSharding(graph, mesh, annotations);
    if (!plan) {
      state.SkipWithError(plan.error().message.c_str());
      return;
    }
    replicated = static_cast<int64_t>(plan->replicated.size());
    benchmark::DoNotOptimize(plan->specs.data());
  }
  state.counters["ops"] = graph.num_ops();
  state.counters["replicated_forward_ops"] = static_cast<double>(replicated);
}

void PropagateAndLower(benchmark::State& state) {
  const Graph& graph = Member(static_cast<int>(state.range(0)));
  const Mesh mesh = DataMesh();
  const std::vector<ShardingAnnotation> annotations = DataParallel();
  for (auto _ : state) {
    Expected<ShardingPlan> plan = PropagateSharding(graph, mesh, annotations);
    if (!plan) {
      state.SkipWithError(plan.error().message.c_str());
      return;
    }
    Expected<Strategy> strategy = LowerSpecs(graph, plan->specs, mesh);
    if (!strategy) {
      state.SkipWithError(strategy.error().message.c_str());
      return;
    }
    benchmark::DoNotOptimize(strategy->configs.data());
  }
  state.counters["ops"] = graph.num_ops();
}

BENCHMARK(Propagate)->Arg(1000)->Arg(10000)->Arg(50000)->Unit(benchmark::kMillisecond);
BENCHMARK(PropagateAndLower)->Arg(1000)->Arg(10000)->Arg(50000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace devplace

BENCHMARK_MAIN();
