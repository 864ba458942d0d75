// Executions as two ranks of a Gloo group on loopback inside one test process (header-only: only tests that link
// the executor include it).
#pragma once

#include <thread>
#include <vector>

#include "distributed/config.h"
#include "exec/multiprocess.h"
#include "tests/testing/ranks.h"

namespace devplace::testing {

// `strategy` run as two ranks of a Gloo group on loopback (devices mapped by RankOfDevices), each rank a thread of
// this process with a process group of its own; both ranks' results (every rank gets the whole result).
inline std::vector<Expected<ExecResult>> RunAsTwoRanks(const Graph& g, const Topology& t, const Strategy& strategy,
                                                       const ExecOptions& options) {
  const int port = FreeLoopbackPort();
  std::vector<Expected<ExecResult>> results(2, Expected<ExecResult>(Error{"not run"}));
  std::vector<std::thread> ranks;
  for (int32_t r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      DistributedConfig config{.rank = r, .world_size = 2, .local_rank = r, .master_addr = "127.0.0.1",
                               .master_port = port, .timeout_seconds = 60.0};
      results[r] = ExecuteStrategyAsRank(g, t, strategy, options, config);
    });
  for (std::thread& r : ranks) r.join();
  return results;
}

}  // namespace devplace::testing
