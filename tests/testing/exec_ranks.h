// Executions as two ranks of a Gloo group on loopback inside one test process (header-only: only tests that link
// the executor include it).
#pragma once

#include <thread>
#include <vector>

#include "distributed/config.h"
#include "exec/multiprocess.h"
#include "tests/testing/ranks.h"

namespace devplace::testing {

// `strategy` run as `world` ranks of a Gloo group on loopback (devices mapped by RankOfDevices), each rank a thread
// of this process with a process group of its own; every rank's result (every rank gets the whole result).
inline std::vector<Expected<ExecResult>> RunAsRanks(const Graph& g, const Topology& t, const Strategy& strategy,
                                                    const ExecOptions& options, int32_t world) {
  const int port = FreeLoopbackPort();
  std::vector<Expected<ExecResult>> results(world, Expected<ExecResult>(Error{"not run"}));
  std::vector<std::thread> ranks;
  for (int32_t r = 0; r < world; ++r)
    ranks.emplace_back([&, r] {
      DistributedConfig config{.rank = r, .world_size = world, .local_rank = r, .master_addr = "127.0.0.1",
                               .master_port = port, .timeout_seconds = 60.0};
      results[r] = ExecuteStrategyAsRank(g, t, strategy, options, config);
    });
  for (std::thread& r : ranks) r.join();
  return results;
}

// RunAsRanks with two ranks.
inline std::vector<Expected<ExecResult>> RunAsTwoRanks(const Graph& g, const Topology& t, const Strategy& strategy,
                                                       const ExecOptions& options) {
  return RunAsRanks(g, t, strategy, options, 2);
}

}  // namespace devplace::testing
