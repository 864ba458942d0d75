// One rank of a multi-process execution, spawned by multiprocess_test.cc with torchrun's environment variables:
//   exec_rank_helper GRAPH.json TOPOLOGY.yaml STRATEGY.json OUT STEPS TIMEOUT_S [READY]
// runs STEPS training steps (no warm-up) as this rank, rank 0 writing every op's checksum (one "%.17g" per line)
// to OUT. With READY: runs one step, creates the file READY, then STEPS more (a peer can be killed mid-step
// then). `exec_rank_helper --calibrate OUT TIMEOUT_S TOPOLOGY.yaml` calibrates the group instead (small sizes; the
// executor's messages between the topology's devices too), rank 0 writing
// "send|all_reduce|all_gather|messages latency bandwidth points" lines to OUT. Failures: one line on stderr, exit
// status 1.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "core/graph_json.h"
#include "core/strategy_json.h"
#include "core/topology_yaml.h"
#include "distributed/config.h"
#include "distributed/process_group.h"
#include "exec/multiprocess.h"
#include "exec/process_calibration.h"

namespace {

int Fail(const std::string& message) {
  std::cerr << "exec_rank_helper: " << message << std::endl;
  return 1;
}

}  // namespace

// Reads the group from torchrun's variables.
devplace::Expected<devplace::DistributedConfig> GroupFromEnv(double timeout) {
  devplace::Expected<std::optional<devplace::DistributedConfig>> config = devplace::DistributedConfigFromEnv(
      [](const char* name) { return static_cast<const char*>(std::getenv(name)); }, timeout);
  if (!config) return config.error();
  if (!config->has_value()) return devplace::Error{"RANK and WORLD_SIZE are not set"};
  return **config;
}

int Calibrate(const std::string& out, double timeout, const std::string& topology_file) {
  using namespace devplace;
  Expected<DistributedConfig> config = GroupFromEnv(timeout);
  if (!config) return Fail(config.error().message);
  Expected<Topology> topology = ReadTopologyFile(topology_file);
  if (!topology) return Fail(topology.error().message);
  Expected<GroupCalibration> c = CalibrateProcessGroup(
      *config, {.min_bytes = 1 << 10, .max_bytes = 1 << 18, .repeats = 3, .chain = 8}, &*topology);
  if (!c) return Fail(c.error().message);
  if (config->rank == 0) {
    std::ofstream o(out);
    for (const auto& [name, fit] : {std::pair<const char*, const PairCalibration*>{"send", &c->send},
                                    {"all_reduce", &c->all_reduce}, {"all_gather", &c->all_gather},
                                    {"messages", &c->messages}})
      o << name << " " << fit->latency << " " << fit->bandwidth << " " << fit->points.size() << "\n";
  }
  return 0;
}

int main(int argc, char** argv) {
  using namespace devplace;
  if (argc == 5 && std::string(argv[1]) == "--calibrate") return Calibrate(argv[2], std::atof(argv[3]), argv[4]);
  if (argc != 7 && argc != 8) return Fail("usage: GRAPH TOPOLOGY STRATEGY OUT STEPS TIMEOUT_S [READY]");
  Expected<Graph> graph = ReadGraphFile(argv[1]);
  if (!graph) return Fail(graph.error().message);
  Expected<Topology> topology = ReadTopologyFile(argv[2]);
  if (!topology) return Fail(topology.error().message);
  Expected<Strategy> strategy = ReadStrategyFile(argv[3], *graph, *topology);
  if (!strategy) return Fail(strategy.error().message);
  Expected<DistributedConfig> config = GroupFromEnv(std::atof(argv[6]));
  if (!config) return Fail(config.error().message);
  ExecOptions options;
  options.warmup_steps = 0;
  options.timed_steps = std::atoi(argv[5]);
  options.backend = "cpu";
  options.record_checksums = true;
  Expected<ExecResult> result = Error{""};
  if (argc == 7) {
    result = ExecuteStrategyAsRank(*graph, *topology, *strategy, options, *config);
  } else {  // the executor API directly: a ready marker between a first step and the rest
    Expected<std::vector<int32_t>> ranks = RankOfDevices(*topology, *strategy, config->world_size);
    if (!ranks) return Fail(ranks.error().message);
    Expected<std::unique_ptr<ProcessGroup>> group = ProcessGroup::Connect(*config);
    if (!group) return Fail(group.error().message);
    ExecOptions first = options;
    first.timed_steps = 1;
    Expected<Executor> executor = Executor::CreateRank(*graph, *topology, *strategy, first, **group, *ranks);
    if (!executor) return Fail(executor.error().message);
    result = executor->Run();
    if (result) std::ofstream(argv[7]) << "ready\n";
    for (int32_t step = 0; step < options.timed_steps && result; ++step) result = executor->Run();
  }
  if (!result) return Fail(result.error().message);
  if (config->rank == 0) {
    std::ofstream out(argv[4]);
    char line[64];
    for (double c : result->op_checksums) {
      std::snprintf(line, sizeof(line), "%.17g\n", c);
      out << line;
    }
  }
  return 0;
}
