// C++ half of the Python-overhead measurement (docs/python.md): times Simulate() on a member of a graph family,
// all ops split contiguously over the machine's devices, exactly as examples/simulate_speed.py does from Python.
// Build against an install (docs/packaging.md):
//   c++ -O2 examples/simulate_speed.cc -o simulate_speed $(pkg-config --cflags --libs devplace)
//   ./simulate_speed configs/topologies/dgx1-v100.yaml transformer 10000 20
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/topology_yaml.h"
#include "datasets/families.h"
#include "sim/simulator.h"

int main(int argc, char** argv) {
  using namespace devplace;
  if (argc != 5) {
    std::fprintf(stderr, "usage: simulate_speed TOPOLOGY.yaml FAMILY TARGET_OPS REPEATS\n");
    return 2;
  }
  Expected<Topology> topology = ReadTopologyFile(argv[1]);
  Expected<Graph> graph = GenerateFamilyMember(argv[2], 42, {.target_ops = std::atoi(argv[3])});
  if (!topology.ok() || !graph.ok()) {
    std::fprintf(stderr, "%s\n", (topology.ok() ? graph.error() : topology.error()).message.c_str());
    return 1;
  }
  std::vector<DeviceId> device(graph->num_ops());
  for (OpId i = 0; i < graph->num_ops(); ++i)
    device[i] = static_cast<DeviceId>(static_cast<int64_t>(i) * topology->num_devices() / graph->num_ops());
  const Strategy strategy = Strategy::FromPlacement(device);
  std::vector<double> seconds;
  double step_time = 0;
  for (int r = 0; r < std::atoi(argv[4]); ++r) {
    const auto start = std::chrono::steady_clock::now();
    Expected<SimResult> result = Simulate(*graph, *topology, strategy, CostModel());
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (!result.ok()) return 1;
    step_time = result->step_time;
  }
  std::sort(seconds.begin(), seconds.end());
  std::printf("%s: %d ops, step time %.6f ms, Simulate median %.3f ms over %zu runs\n", graph->name().c_str(),
              graph->num_ops(), step_time * 1e3, seconds[seconds.size() / 2] * 1e3, seconds.size());
  return 0;
}
