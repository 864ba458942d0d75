// RunValidateSuite end to end on a small graph and this machine: profiled, placed, executed, simulated, reported.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "core/graph_json.h"
#include "datasets/layers.h"
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
  {
    std::ofstream spec(dir / "dp.yaml");
    spec << "mesh: {shape: [2], axes: [data]}\nannotations:\n  - {ops: labels, spec: [data]}\n";
  }
  Expected<ValidateSuite> suite = ValidateSuiteFromYaml(
      "name: tiny\nseed: 2\ntopology: " DEVPLACE_SOURCE_DIR "/configs/topologies/cpu-local.yaml\ncalibrate: false\n"
      "exec: {warmup_steps: 1, timed_steps: 2}\nprofile: {warmup_runs: 1, timed_runs: 2}\n"
      "models: [{file: conv.json}]\nalgorithms: [single, round-robin, data-parallel]\nrandom_placements: 1\n"
      "shardings: [{spec: dp.yaml}]\n",
      "tiny.yaml", dir.string());
  ASSERT_TRUE(suite.ok()) << suite.error().message;
  std::vector<std::string> lines;
  ValidateRunOptions options{(dir / "out").string(), "devplace validate --suite tiny.yaml",
                             [&](const std::string& line) { lines.push_back(line); }};
  Expected<ValidateRun> run = RunValidateSuite(*suite, options);
  ASSERT_TRUE(run.ok()) << run.error().message;
  ASSERT_EQ(run->models, std::vector<std::string>{"conv"});
  // single, round-robin, data-parallel, random-0, then the lowered sharding spec
  ASSERT_EQ(run->rows.size(), 5u);
  EXPECT_EQ(run->rows[4].strategy, "shard-dp");
  EXPECT_EQ(run->failed, 0);
  EXPECT_EQ(run->rows[2].strategy, "data-parallel");
  EXPECT_EQ(run->rows[2].device_ops, std::to_string(testing::ConvTrainingGraph().num_ops()) + "/" +
                                         std::to_string(testing::ConvTrainingGraph().num_ops()));
  for (const ValidateRow& row : run->rows) {
    EXPECT_TRUE(row.ok) << row.strategy << ": " << row.error;
    EXPECT_GT(row.measured, 0.0);
    EXPECT_GT(row.simulated, 0.0);
    EXPECT_LE(row.measured_min, row.measured);
  }
  EXPECT_EQ(run->rows[3].strategy, "random-0");
  EXPECT_EQ(run->rows[1].kind, "placement");
  EXPECT_EQ(run->rows[2].kind, "split");
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

// Pipeline rows: a plan per suite entry (the layers cut into stages of similar FLOPs), executed with its schedule and
// simulated as a pipeline; a plan the machine cannot hold is a failed row, not a failed suite.
TEST(ValidateWorkflow, PipelineRowsExecuteAndSimulateTheirPlans) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("devplace-workflows-pipeline-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  LayerBuilder b("mlp");
  const OpId labels = b.Input("labels", {8}, DType::kI64);
  OpId h = b.Input("x", {8, 16});
  for (int i = 0; i < 4; ++i) {
    b.SetScope("layer" + std::to_string(i));
    h = b.Relu(b.Linear({h}, 32, true, "fc"));
  }
  b.SetScope("head");
  b.SoftmaxCrossEntropy(b.Linear({h}, 10, true, "out"), labels);
  const Graph g = std::move(b).BuildTraining().value();
  ASSERT_TRUE(WriteGraphFile(g, (dir / "mlp.json").string()).ok());
  Expected<ValidateSuite> suite = ValidateSuiteFromYaml(
      "name: piped\nseed: 2\ntopology: " DEVPLACE_SOURCE_DIR "/configs/topologies/cpu-local.yaml\ncalibrate: false\n"
      "exec: {warmup_steps: 1, timed_steps: 2}\nprofile: {warmup_runs: 1, timed_runs: 2}\n"
      "models: [{file: mlp.json}]\nalgorithms: [single]\n"
      "pipelines: [{stages: 2, microbatches: 2, schedule: gpipe}, {stages: 1, microbatches: 4},\n"
      "            {stages: 2, microbatches: 16}]\n",
      "piped.yaml", dir.string());
  ASSERT_TRUE(suite.ok()) << suite.error().message;
  Expected<ValidateRun> run = RunValidateSuite(*suite, {(dir / "out").string(), "devplace validate", {}});
  ASSERT_TRUE(run.ok()) << run.error().message;
  ASSERT_EQ(run->rows.size(), 4u);
  EXPECT_EQ(run->rows[1].strategy, "pipeline-2s-m2-gpipe");
  EXPECT_EQ(run->rows[2].strategy, "pipeline-1s-m4-1f1b");
  for (int i : {1, 2}) {
    const ValidateRow& row = run->rows[i];
    EXPECT_EQ(row.kind, "pipeline");
    EXPECT_TRUE(row.ok) << row.strategy << ": " << row.error;
    EXPECT_GT(row.measured, 0.0);
    EXPECT_GT(row.simulated, 0.0);
  }
  const std::string& parts = run->rows[2].device_ops;  // one stage on both devices: as many parts on each
  EXPECT_EQ(parts.substr(0, parts.find('/')), parts.substr(parts.find('/') + 1));
  EXPECT_FALSE(run->rows[3].ok);  // 16 micro-batches of a batch of 8
  EXPECT_NE(run->rows[3].error.find("exceed the batch"), std::string::npos) << run->rows[3].error;
  EXPECT_EQ(run->failed, 1);
  std::filesystem::remove_all(dir);
}

// Multi-process rows: every strategy using both devices gets an "x2p" twin, executed through the launcher the
// caller gives (here a stand-in that runs it in this process, recording the call) and simulated on the
// multi-process machine (here: cpu-local with 2 ms links, so the twins must be simulated slower).
TEST(ValidateWorkflow, MultiProcessRowsUseTheLauncherAndTheProcessMachine) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("devplace-workflows-validate-mp-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(WriteGraphFile(testing::ConvTrainingGraph(), (dir / "conv.json").string()).ok());
  std::ifstream local(DEVPLACE_SOURCE_DIR "/configs/topologies/cpu-local.yaml");
  std::stringstream text;
  text << local.rdbuf();
  std::string slow = text.str();
  const size_t at = slow.find("latency_us: 5");
  ASSERT_NE(at, std::string::npos);
  slow.replace(at, 13, "latency_us: 2000");
  std::ofstream(dir / "slow.yaml") << slow;
  Expected<ValidateSuite> suite = ValidateSuiteFromYaml(
      "name: tiny\nseed: 2\ntopology: " DEVPLACE_SOURCE_DIR "/configs/topologies/cpu-local.yaml\ncalibrate: false\n"
      "exec: {warmup_steps: 1, timed_steps: 2}\nprofile: {warmup_runs: 1, timed_runs: 2}\n"
      "models: [{file: conv.json}]\nalgorithms: [single, round-robin, data-parallel]\nrandom_placements: 1\n"
      "multi_process: {processes: 2, topology: slow.yaml}\n",
      "tiny.yaml", dir.string());
  ASSERT_TRUE(suite.ok()) << suite.error().message;
  std::vector<int32_t> launched;
  ValidateRunOptions options{(dir / "out").string(), "x", {}};
  options.run_processes = [&](const Graph& g, const Topology& t, const Strategy& s, const ExecOptions& o,
                              int32_t processes) {
    launched.push_back(processes);
    return ExecuteStrategy(g, t, s, o);
  };
  Expected<ValidateRun> run = RunValidateSuite(*suite, options);
  ASSERT_TRUE(run.ok()) << run.error().message;
  ASSERT_EQ(run->rows.size(), 7u);  // single uses one device: no twin; data-parallel splits ops: a twin
  EXPECT_EQ(run->rows[4].strategy, "round-robin x2p");
  EXPECT_EQ(run->rows[5].strategy, "data-parallel x2p");
  EXPECT_EQ(run->rows[5].kind, "split x2p");
  EXPECT_EQ(run->rows[6].strategy, "random-0 x2p");
  EXPECT_EQ(launched, (std::vector<int32_t>{2, 2, 2}));
  for (int twin : {1, 2, 3}) {
    ASSERT_TRUE(run->rows[twin + 3].ok) << run->rows[twin + 3].error;
    EXPECT_GT(run->rows[twin + 3].simulated, run->rows[twin].simulated) << run->rows[twin].strategy;
    EXPECT_EQ(run->rows[twin + 3].copies, run->rows[twin].copies);
  }

  options.run_processes = nullptr;  // no launcher: the twins fail and say why, the others run
  Expected<ValidateRun> without = RunValidateSuite(*suite, options);
  ASSERT_TRUE(without.ok()) << without.error().message;
  EXPECT_EQ(without->failed, 3);
  EXPECT_NE(without->rows[4].error.find("need a launcher"), std::string::npos) << without->rows[4].error;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace devplace
