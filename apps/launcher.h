// The local launcher behind `devplace run --processes N`: starts N ranks of this program on this machine with the
// torchrun environment conventions, passes rank 0's output through and fails cleanly when any rank fails.
#pragma once

#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"
#include "exec/executor.h"

namespace devplace::cli {

// Runs this program (/proc/self/exe) `processes` times with arguments `args` (without argv[0]), each with
// MASTER_ADDR=127.0.0.1, MASTER_PORT (a free loopback port), RANK, WORLD_SIZE and LOCAL_RANK set. Rank 0's stdout
// is this process's; the other ranks' stdout is discarded; every rank's stderr is this process's. Waits for all.
// When a rank fails (non-zero exit or a signal), the others get `grace_seconds` to notice and exit on their own,
// then are killed. Returns 0 when every rank exited 0; otherwise prints one line on stderr naming the first rank
// that failed and how, and returns 1. Throws CliError when the ranks cannot be started.
// `stdout_path` non-empty: rank 0's stdout goes to that file instead.
int LaunchLocalRanks(int processes, const std::vector<std::string>& args, double grace_seconds,
                     const std::string& stdout_path = "");

// Executes `strategy` as `processes` ranks of `devplace run --json` on this machine (graph, topology and strategy
// written to files in `work_dir`, which must exist) and returns rank 0's result: step times, copies, bytes and
// stand-ins (per-op and per-device numbers are not carried). Errors: a rank failed (its stderr passes through).
Expected<ExecResult> ExecuteInLocalProcesses(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                             const ExecOptions& options, int32_t processes,
                                             const std::string& work_dir, double timeout_seconds);

// `args` without the option `name` and its value ("--name V" or "--name=V"): the command line each rank runs.
std::vector<std::string> WithoutOption(const std::vector<std::string>& args, const std::string& name);

}  // namespace devplace::cli
