// `devplace train` keeps runs safe: a fresh run does not wipe a previous one, a resumed run keeps its own
// experiment, and a checkpoint that cannot be written (disk full, here a file-size limit) stops training with
// one line while the last good checkpoint stays the newest.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "tests/apps/cli_runner.h"

namespace devplace::testing {
namespace {

namespace fs = std::filesystem;

// A tiny experiment: two small graphs, two iterations, a checkpoint after each.
std::string TinyExperiment(int seed) {
  return "name: tiny\nseed: " + std::to_string(seed) + "\ntopologies: [" + DEVPLACE_SOURCE_DIR +
         "/configs/topologies/dgx1-v100.yaml]\n"
         "train: [{family: ptb, seeds: {from: 1, count: 2}, target_ops: 60}]\n"
         "policy: {hidden: 16, sage_layers: 1, transformer_layers: 1, heads: 2, feedforward: 16, segment: 8}\n"
         "ppo: {iterations: 4, graphs_per_iteration: 2, samples_per_graph: 2, epochs: 1, minibatches: 1}\n"
         "checkpoint_every: 1\neval_every: 0\n";
}

// A directory holding e.yaml and a run of two iterations in run/.
std::string TrainedRun(const std::string& name) {
  const std::string dir = FreshDir(name);
  WriteText(dir, "e.yaml", TinyExperiment(3));
  const CliRun run = RunDevplace({"train", "--config", "e.yaml", "-o", "run", "--iterations", "2"}, dir);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(fs::exists(dir + "/run/ckpt/model-2.pt"));
  return dir;
}

TEST(CliTrain, RefusesToReplaceAPreviousRunUnlessAsked) {
  const std::string dir = TrainedRun("train-overwrite");
  const std::string state = ReadText(dir + "/run/ckpt/state.json");
  const std::string log = ReadText(dir + "/run/log.csv");
  const CliRun again = RunDevplace({"train", "--config", "e.yaml", "-o", "run", "--iterations", "1"}, dir);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(again.err.rfind("devplace: run: holds a previous run (ckpt, log.csv, config.yaml", 0), 0u) << again.err;
  EXPECT_EQ(again.err.find("\n"), again.err.size() - 1) << again.err;
  EXPECT_NE(again.err.find("); continue it with --resume, or replace it with --overwrite\n"), std::string::npos);
  EXPECT_EQ(ReadText(dir + "/run/ckpt/state.json"), state);
  EXPECT_EQ(ReadText(dir + "/run/log.csv"), log);
  EXPECT_TRUE(fs::exists(dir + "/run/ckpt/model-2.pt"));

  const CliRun replaced =
      RunDevplace({"train", "--config", "e.yaml", "-o", "run", "--iterations", "1", "--overwrite"}, dir);
  EXPECT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_TRUE(fs::exists(dir + "/run/ckpt/model-1.pt"));
  EXPECT_FALSE(fs::exists(dir + "/run/ckpt/model-2.pt"));
}

TEST(CliTrain, ResumingWithAnotherExperimentIsRefused) {
  const std::string dir = TrainedRun("train-resume-config");
  WriteText(dir, "other.yaml", TinyExperiment(4));
  const std::string state = ReadText(dir + "/run/ckpt/state.json");
  const CliRun other = RunDevplace({"train", "--config", "other.yaml", "-o", "run", "--resume"}, dir);
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_EQ(other.err, "devplace: other.yaml: differs from the experiment of the run in run (run/config.yaml); "
                       "resume without --config, or start a new run in another directory\n");
  EXPECT_EQ(ReadText(dir + "/run/ckpt/state.json"), state);
  const CliRun same = RunDevplace({"train", "--config", "e.yaml", "-o", "run", "--resume", "--iterations", "1"}, dir);
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_TRUE(fs::exists(dir + "/run/ckpt/model-3.pt"));
}

// Resumes under a file-size limit smaller than a checkpoint file: the next checkpoint cannot be written.
TEST(CliTrain, AFailedCheckpointWriteStopsWithOneLineAndKeepsTheLastGoodOne) {
  const std::string dir = TrainedRun("train-disk-full");
  const std::string state = ReadText(dir + "/run/ckpt/state.json");
  ASSERT_GT(fs::file_size(dir + "/run/ckpt/model-2.pt"), 16384u);
  const std::vector<std::string> before = ListTree(dir + "/run/ckpt");
  // --json: no progress messages, so stderr holds the failure alone.
  const CliRun run =
      RunDevplace({"train", "-o", "run", "--resume", "--json"}, dir, CliLimits{.file_size_bytes = 16384});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_EQ(run.err, "devplace: run/ckpt/model-3.pt: cannot write: File too large (stopped after iteration 3; "
                     "--resume continues from the last checkpoint written)\n");
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(ReadText(dir + "/run/ckpt/state.json"), state);  // iteration 2 is still the newest checkpoint
  EXPECT_EQ(ListTree(dir + "/run/ckpt"), before);              // no temporary, no orphaned model-3.pt
  // ... and the run resumes from it once there is room again.
  const CliRun resumed = RunDevplace({"train", "-o", "run", "--resume", "--iterations", "1"}, dir);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(fs::exists(dir + "/run/ckpt/model-3.pt"));
}

// The iteration of the newest checkpoint in `run` (0 while there is none).
int64_t CheckpointIteration(const std::string& run) {
  const std::string text = ReadText(run + "/ckpt/state.json");
  return text.empty() ? 0 : nlohmann::json::parse(text).at("iteration").get<int64_t>();
}

// SIGKILL after the checkpoint of iteration 1, 2 or 3 of 4 (or while writing the next one), then --resume: the
// final checkpoint is bit for bit the uninterrupted run's (the SHA-256 of the parameter and optimizer files, the
// RNG state, the best-time table) and so is the log apart from wall times.
TEST(CliTrain, ResumesAfterSigkillAtSeveralPointsBitForBit) {
  const std::string dir = FreshDir("train-kill");
  WriteText(dir, "e.yaml", TinyExperiment(3));
  const CliRun whole = RunDevplace({"train", "--config", "e.yaml", "-o", "whole", "--json"}, dir);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const nlohmann::json reference = nlohmann::json::parse(ReadText(dir + "/whole/ckpt/state.json"));
  ASSERT_EQ(reference.at("iteration"), 4);
  for (int point : {1, 2, 3}) {
    SCOPED_TRACE("killed after iteration " + std::to_string(point));
    const std::string run = "run" + std::to_string(point);
    const CliProcess p = StartDevplace({"train", "--config", "e.yaml", "-o", run, "--json"}, dir);
    ASSERT_GT(p.pid, 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (CheckpointIteration(dir + "/" + run) < point && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ::kill(p.pid, SIGKILL);
    const CliRun killed = FinishDevplace(p);
    ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << killed.err;
    ASSERT_LT(CheckpointIteration(dir + "/" + run), 4) << "the run finished before it was killed";
    const CliRun resumed = RunDevplace({"train", "-o", run, "--resume", "--json"}, dir);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    const nlohmann::json state = nlohmann::json::parse(ReadText(dir + "/" + run + "/ckpt/state.json"));
    for (const char* key : {"iteration", "evaluations", "rng_state", "best_relative_times", "model_bytes",
                            "model_sha256", "optimizer_bytes", "optimizer_sha256"})
      EXPECT_EQ(state.at(key), reference.at(key)) << key;
    EXPECT_EQ(WithoutLastColumn(ReadText(dir + "/" + run + "/log.csv")),
              WithoutLastColumn(ReadText(dir + "/whole/log.csv")));
  }
}

// A checkpoint whose files were damaged after it was written is refused with one line before LibTorch reads it.
TEST(CliTrain, ACorruptedCheckpointIsOneLine) {
  const std::string dir = TrainedRun("train-corrupt");
  const std::string optim = dir + "/run/ckpt/optim-2.pt";
  const std::string bytes = ReadText(optim);
  WriteText(dir, "run/ckpt/optim-2.pt", bytes.substr(0, bytes.size() - 100));
  const CliRun truncated = RunDevplace({"train", "-o", "run", "--resume", "--json"}, dir);
  EXPECT_EQ(truncated.exit_code, 1);
  EXPECT_EQ(truncated.err, "devplace: run/ckpt/optim-2.pt: truncated: " + std::to_string(bytes.size() - 100) +
                               " bytes, its state.json records " + std::to_string(bytes.size()) + "\n");
  std::string flipped = bytes;
  flipped[bytes.size() / 3] ^= 0x01;
  WriteText(dir, "run/ckpt/optim-2.pt", flipped);
  const CliRun corrupted = RunDevplace({"train", "-o", "run", "--resume", "--json"}, dir);
  EXPECT_EQ(corrupted.exit_code, 1);
  EXPECT_EQ(corrupted.err, "devplace: run/ckpt/optim-2.pt: corrupted: its SHA-256 differs from the one its "
                           "state.json records\n");
  EXPECT_EQ(corrupted.out, "");
}

}  // namespace
}  // namespace devplace::testing
