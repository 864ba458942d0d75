// `devplace train` keeps runs safe: a fresh run does not wipe a previous one, a resumed run keeps its own
// experiment, and a checkpoint that cannot be written (disk full, here a file-size limit) stops training with
// one line while the last good checkpoint stays the newest.
#include <filesystem>
#include <string>

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

}  // namespace
}  // namespace devplace::testing
