// `devplace run --processes N`: the local launcher starts N ranks (torchrun's variables), rank 0's result is the
// program's output (one JSON object with --json), and a failing rank makes the launcher fail with a line naming it.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "tests/apps/cli_runner.h"

namespace devplace::testing {
namespace {

const char* const kCpuStrategy = R"({"format": "devplace.strategy", "version": 1, "graph": "tiny",
 "ops": [{"op": "x", "devices": ["cpu0"]}, {"op": "fc", "devices": ["cpu1"]}]}
)";

std::string Inputs(const std::string& name) {
  const std::string dir = FreshDir(name);
  WriteText(dir, "g.json", kTinyGraph);
  WriteText(dir, "t.yaml", ReadText(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/cpu-local.yaml"));
  WriteText(dir, "p.json", kCpuStrategy);
  return dir;
}

TEST(CliProcesses, TwoRanksRunAndRankZeroPrintsTheResult) {
  const std::string dir = Inputs("processes-two");
  const CliRun run = RunDevplace({"run", "-g", "g.json", "-t", "t.yaml", "-p", "p.json", "--backend", "cpu",
                                  "--warmup", "1", "--repeats", "2", "--processes", "2", "--json"},
                                 dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);  // exactly one object: the other rank prints nothing
  EXPECT_EQ(j["processes"], 2);
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["cuda_index"], nlohmann::json::array());  // the device map: empty exactly when all run on the CPU
  EXPECT_EQ(j["copies"], 1);  // x's output crosses from rank 0 to rank 1 (fc's gradient to x has no edge)
  EXPECT_EQ(j["measured_ms"]["steps"].size(), 2u);
  EXPECT_GT(j["measured_ms"]["median"].get<double>(), 0.0);
  EXPECT_GT(j["devices"][1]["busy_ms"].get<double>(), 0.0);  // rank 1's numbers reach rank 0
}

// `devplace validate` runs a multi-process twin row through the launcher (ExecuteInLocalProcesses): rank 0's JSON,
// device map (`cuda_index`) included, becomes the row's measurement.
TEST(CliProcesses, ValidateMeasuresTheTwinRowThroughTheLauncher) {
  const std::string dir = Inputs("processes-validate");
  WriteText(dir, "v.yaml",
            "name: twins\nseed: 1\ntopology: t.yaml\ncalibrate: false\n"
            "exec: {warmup_steps: 1, timed_steps: 2}\nprofile: {warmup_runs: 1, timed_runs: 2}\n"
            "models: [{file: g.json}]\nalgorithms: [round-robin]\nrandom_placements: 0\n"
            "multi_process: {processes: 2, topology: t.yaml}\n");
  const CliRun run = RunDevplace({"validate", "--suite", "v.yaml", "-o", "out", "--json"}, dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["strategies"], 2);  // round-robin and its two-process twin
  EXPECT_EQ(j["failed"], 0) << ReadText(dir + "/out/results.csv");
  EXPECT_NE(ReadText(dir + "/out/results.csv").find("round-robin x2p"), std::string::npos);
}

TEST(CliProcesses, BadInputFailsOnceBeforeAnyRankStarts) {
  const std::string dir = Inputs("processes-three");
  const CliRun three = RunDevplace({"run", "-g", "g.json", "-t", "t.yaml", "-p", "p.json", "--backend", "cpu",
                                    "--processes=3", "--timeout", "5"},
                                   dir);
  EXPECT_EQ(three.exit_code, 1);
  EXPECT_TRUE(three.out.empty()) << three.out;
  EXPECT_EQ(three.err,
            "devplace: WORLD_SIZE=3: expected one process per device (2), per host (1) or per device the strategy "
            "uses (2) of topology 'cpu-local'\n");
  const CliRun missing = RunDevplace({"run", "-g", "nothing.json", "-t", "t.yaml", "-p", "p.json", "--processes",
                                      "2"},
                                     dir);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err.find("devplace: nothing.json: "), 0u) << missing.err;
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;
}

TEST(CliProcesses, AFailingRankFailsTheLaunchWithALineNamingIt) {
  const std::string dir = Inputs("processes-failing");
  // Every rank builds the whole plan, and a 1 TiB activation cannot be allocated under a 64 GiB address space
  // (inherited by the ranks): each rank fails with its own line, the launcher with one naming the first.
  WriteText(dir, "g.json", Replace(kTinyGraph, R"("shape": [64, 256]})", R"("shape": [4194304, 65536]})"));
  const CliRun run = RunDevplace({"run", "-g", "g.json", "-t", "t.yaml", "-p", "p.json", "--backend", "cpu",
                                  "--processes", "2", "--timeout", "20"},
                                 dir, CliLimits{.address_space_bytes = 64L << 30});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(run.out.empty()) << run.out;
  EXPECT_NE(run.err.find("out of memory on cpu"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(" of 2 exited with status 1; the run failed"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace devplace::testing
