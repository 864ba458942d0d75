// RunValidateSuite end to end on a small graph and this machine: profiled, placed, executed, simulated, reported.
#include <gtest/gtest.h>

#include <filesystem>

#include <unistd.h>

#include "core/graph_json.h"
#include "tests/testing/exec_graphs.h"
#include "workflows/validate.h"

namespace devplace {
namespace {

TEST(ValidateWorkflow, ExecutesAndSimulatesEveryStrategy) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("devplace-workflows-validate-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(WriteGraphFile(testing::ConvTrainingGraph(), (dir / "conv.json").string()).ok());
  Expected<ValidateSuite> suite = ValidateSuiteFromYaml(
      "name: tiny\nseed: 2\ntopology: " DEVPLACE_SOURCE_DIR "/configs/topologies/cpu-local.yaml\ncalibrate: false\n"
      "exec: {warmup_steps: 1, timed_steps: 2}\nprofile: {warmup_runs: 1, timed_runs: 2}\n"
      "models: [{file: conv.json}]\nalgorithms: [single, round-robin]\nrandom_placements: 1\n",
      "tiny.yaml", dir.string());
  ASSERT_TRUE(suite.ok()) << suite.error().message;
  std::vector<std::string> lines;
  ValidateRunOptions options{(dir / "out").string(), "devplace validate --suite tiny.yaml",
                             [&](const std::string& line) { lines.push_back(line); }};
  Expected<ValidateRun> run = RunValidateSuite(*suite, options);
  ASSERT_TRUE(run.ok()) << run.error().message;
  ASSERT_EQ(run->models, std::vector<std::string>{"conv"});
  ASSERT_EQ(run->rows.size(), 3u);
  EXPECT_EQ(run->failed, 0);
  for (const ValidateRow& row : run->rows) {
    EXPECT_TRUE(row.ok) << row.strategy << ": " << row.error;
    EXPECT_GT(row.measured, 0.0);
    EXPECT_GT(row.simulated, 0.0);
    EXPECT_LE(row.measured_min, row.measured);
  }
  EXPECT_EQ(run->rows[2].strategy, "random-0");
  EXPECT_GT(run->rows[1].copies, 0);  // round-robin moves tensors between the two workers
  for (const char* file : {"results.csv", "summary.md", "costs-conv.json"})
    EXPECT_TRUE(std::filesystem::exists(dir / "out" / file)) << file;
  EXPECT_FALSE(lines.empty());

  ValidateSuite unknown = *suite;
  unknown.algorithms = {"single", "tofu"};
  Expected<ValidateRun> bad = RunValidateSuite(unknown, {(dir / "bad").string(), "x", {}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.find("tiny.yaml: algorithms[1]: "), 0u) << bad.error().message;
  EXPECT_FALSE(std::filesystem::exists(dir / "bad"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace devplace
