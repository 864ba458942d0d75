// Zero-shot placement of a 50k-op graph (issue 19's target: under 5 s): `LearnedPolicy::Place` of the nmt family
// member seed 3 at --target-ops 50000 (the graph `devplace graph gen --family nmt --seed 3 --target-ops 50000`
// writes) on dgx1-v100 with the analytic cost model, as `devplace place` calls it. Each iteration is one whole
// placement: the game's tables and uniform splits, the policy's passes, the final simulation. The policy is loaded
// and the graph built once, outside the timing (`devplace place` adds both: process start with LibTorch, reading the
// 30 MB graph file); like it, the process keeps freed memory for reuse (core/allocator.h). Reported per policy:
// seconds per placement (wall and process CPU), the placement's step time.
//   place_bench [--policy=DIR[,DIR...]] [--no-uniform] [benchmark flags]
// (default models/soap-context and models/soap-ensemble). Results and the command are in docs/performance.md.
#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "agents/learned/learning.h"
#include "core/allocator.h"
#include "core/mesh.h"
#include "core/topology_yaml.h"
#include "datasets/families.h"
#include "sim/cost_model.h"

namespace {

using namespace devplace;

struct Settings {
  std::vector<std::string> policies = {std::string(DEVPLACE_SOURCE_DIR) + "/models/soap-context",
                                       std::string(DEVPLACE_SOURCE_DIR) + "/models/soap-ensemble"};
  bool uniform = true;  // PlaceOptions' default: the fastest uniform split kept when faster (no simulation)
};

[[noreturn]] void Fail(const std::string& message) {
  std::cerr << "place_bench: " << message << "\n";
  std::exit(1);
}

template <typename T>
T Unwrap(Expected<T> value) {
  if (!value) Fail(value.error().message);
  return std::move(value).value();
}

// CPU seconds (user + system) of this process, all threads.
double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

const Graph& Nmt50k() {
  static const Graph graph = [] {
    FamilyOptions options;
    options.target_ops = 50000;
    return Unwrap(GenerateFamilyMember("nmt", 3, options));
  }();
  return graph;
}

void PlaceZeroShot(benchmark::State& state, const std::string& policy_dir, bool uniform) {
  const std::string topology_path = std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml";
  const Graph& graph = Nmt50k();
  const Topology topology = Unwrap(ReadTopologyFile(topology_path));
  const CostModel cost = MakeAnalyticCostModel();
  std::unique_ptr<LearnedPolicy> policy = Unwrap(LearnedPolicy::Load(policy_dir));
  PlaceOptions options;
  options.meshes = Unwrap(ReadTopologyMeshes(topology_path, topology));
  options.uniform = uniform;
  double cpu = 0.0, step_time = 0.0;
  for (auto _ : state) {
    const double cpu_before = ProcessCpuSeconds();
    PlaceResult result = Unwrap(policy->Place(graph, topology, cost, SimOptions{}, options));
    cpu += ProcessCpuSeconds() - cpu_before;
    step_time = result.step_time;
    benchmark::DoNotOptimize(result.strategy);
  }
  state.counters["ops"] = graph.num_ops();
  state.counters["cpu_s"] = cpu / static_cast<double>(state.iterations());
  state.counters["step_time_ms"] = 1e3 * step_time;
}

}  // namespace

int main(int argc, char** argv) {
  devplace::KeepFreedMemoryForReuse();  // as the devplace program does
  Settings settings;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--policy=", 0) == 0) {
      settings.policies.clear();
      std::stringstream list(arg.substr(9));
      for (std::string dir; std::getline(list, dir, ',');) settings.policies.push_back(dir);
    } else if (arg == "--no-uniform") {
      settings.uniform = false;
    } else {
      rest.push_back(argv[i]);
    }
  }
  for (const std::string& dir : settings.policies) {
    const std::string name = "PlaceZeroShot/nmt50k/" + dir.substr(dir.find_last_of('/') + 1) +
                             (settings.uniform ? "" : "/no-uniform");
    benchmark::RegisterBenchmark(name.c_str(), PlaceZeroShot, dir, settings.uniform)
        ->Unit(benchmark::kSecond)
        ->UseRealTime()
        ->Iterations(2);
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
