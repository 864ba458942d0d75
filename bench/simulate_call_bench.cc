// The C++ half of bench/python_overhead.py (issue 24: simulating a 10k-op graph from Python costs within 10% of
// the same call in C++): Simulate() on transformer family member seed 42 of about 10k training ops, all ops cut
// into contiguous blocks over dgx1-v100's 8 devices, analytic costs; exactly the call devplace.simulate() makes.
//   build/bench/simulate_call_bench                (one run)
//   /usr/bin/python3 bench/python_overhead.py      (paired against Python; docs/performance.md)
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

#include "core/topology_yaml.h"
#include "datasets/families.h"
#include "sim/simulator.h"

namespace devplace {
namespace {

void BM_SimulateCall(benchmark::State& state) {
  Expected<Topology> topology = ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/dgx1-v100.yaml");
  Expected<Graph> graph = GenerateFamilyMember("transformer", 42, {.target_ops = static_cast<int>(state.range(0))});
  if (!topology.ok() || !graph.ok()) {
    std::fprintf(stderr, "simulate_call_bench: %s\n", (topology.ok() ? graph.error() : topology.error()).message.c_str());
    std::abort();
  }
  std::vector<DeviceId> device(graph->num_ops());
  for (OpId i = 0; i < graph->num_ops(); ++i)
    device[i] = static_cast<DeviceId>(static_cast<int64_t>(i) * topology->num_devices() / graph->num_ops());
  const Strategy strategy = Strategy::FromPlacement(device);
  double step_time = 0.0;
  for (auto _ : state) {
    Expected<SimResult> result = Simulate(*graph, *topology, strategy, CostModel());
    if (!result.ok()) std::abort();
    step_time = result->step_time;
  }
  state.counters["ops"] = graph->num_ops();
  state.counters["step_time_ms"] = step_time * 1e3;
}
BENCHMARK(BM_SimulateCall)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace devplace

BENCHMARK_MAIN();
