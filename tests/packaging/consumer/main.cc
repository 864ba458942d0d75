// Uses an installed devplace: builds a three-op chain, a two-GPU machine, places it with a search baseline and
// simulates it. Prints the step time; exits non-zero when anything fails or the result makes no sense.
#include <cstdio>

#include "agents/search.h"
#include "core/graph.h"
#include "core/topology_yaml.h"
#include "sim/simulator.h"

int main() {
  using namespace devplace;
  GraphBuilder builder("chain");
  OpId previous = -1;
  for (int i = 0; i < 3; ++i) {
    Op op;
    op.name = "matmul" + std::to_string(i);
    op.type = "matmul";
    op.shape = {64, 1024};
    op.flops = 2.0 * 64 * 1024 * 1024;
    op.param_bytes = 4 << 20;
    OpId id = builder.add_op(op);
    if (previous >= 0) builder.add_edge(previous, id);
    previous = id;
  }
  Expected<Graph> graph = std::move(builder).Build();
  Expected<Topology> topology = TopologyFromYaml(R"(
name: two
devices:
  - {name: g0, kind: v100, host: h, peak_tflops: 15, memory_bandwidth_gbs: 900, memory_gib: 16}
  - {name: g1, kind: v100, host: h, peak_tflops: 15, memory_bandwidth_gbs: 900, memory_gib: 16}
links:
  - {between: [g0, g1], bandwidth_gbs: 25, latency_us: 2, kind: nvlink}
)", "two.yaml");
  if (!graph.ok() || !topology.ok()) return 1;
  Expected<std::unique_ptr<SearchAlgorithm>> algorithm = MakeSearchAlgorithm("round-robin");
  if (!algorithm.ok()) return 1;
  SearchProblem problem{.graph = &*graph, .topology = &*topology};
  Expected<SearchResult> placed = (*algorithm)->Search(problem, SearchRequest{});
  if (!placed.ok()) return 1;
  Expected<SimResult> result = Simulate(*graph, *topology, placed->strategy, CostModel());
  if (!result.ok() || !(result->step_time > 0) || result->bytes_moved <= 0) return 1;
  std::printf("step time %.6f ms, %lld bytes moved\n", result->step_time * 1e3,
              static_cast<long long>(result->bytes_moved));
  return 0;
}
