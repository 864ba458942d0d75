// Data-parallel training: the group's environment variables, and real groups of ranks on loopback (child
// processes of dist_rank_helper): 2 ranks train what 1 process trains, rank 0's checkpoint resumes in one process,
// and a rank that dies or stalls stops the others within the timeout.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "agents/learned/checkpoint.h"
#include "distributed/config.h"
#include "agents/learned/learning.h"
#include "agents/learned/policy.h"
#include "tests/testing/learn_fixtures.h"
#include "tests/testing/ranks.h"

namespace devplace {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

Expected<std::optional<DistributedConfig>> FromEnv(const std::map<std::string, std::string>& vars) {
  return DistributedConfigFromEnv(
      [&](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      7.0);
}

TEST(Distributed, GroupFromTorchrunAndMpirunVariables) {
  Expected<std::optional<DistributedConfig>> none = FromEnv({});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  Expected<std::optional<DistributedConfig>> torchrun = FromEnv(
      {{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "10.0.0.2"}, {"MASTER_PORT", "29400"}});
  ASSERT_TRUE(torchrun.ok()) << torchrun.error().message;
  ASSERT_TRUE(torchrun->has_value());
  EXPECT_EQ((*torchrun)->rank, 3);
  EXPECT_EQ((*torchrun)->world_size, 4);
  EXPECT_EQ((*torchrun)->local_rank, 1);
  EXPECT_EQ((*torchrun)->master_addr, "10.0.0.2");
  EXPECT_EQ((*torchrun)->master_port, 29400);
  EXPECT_EQ((*torchrun)->timeout_seconds, 7.0);

  Expected<std::optional<DistributedConfig>> mpirun =
      FromEnv({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
               {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}, {"GLOO_SOCKET_IFNAME", "eth1"}});
  ASSERT_TRUE(mpirun.ok()) << mpirun.error().message;
  EXPECT_EQ((*mpirun)->rank, 1);
  EXPECT_EQ((*mpirun)->world_size, 2);
  EXPECT_EQ((*mpirun)->local_rank, 1);
  EXPECT_EQ((*mpirun)->interface, "eth1");

  // A group of one needs no rendezvous.
  Expected<std::optional<DistributedConfig>> alone = FromEnv({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  ASSERT_TRUE(alone.ok()) << alone.error().message;
  EXPECT_EQ((*alone)->world_size, 1);

  auto error_of = [](const std::map<std::string, std::string>& vars) {
    Expected<std::optional<DistributedConfig>> c = FromEnv(vars);
    return c.ok() ? std::string("(accepted)") : c.error().message;
  };
  EXPECT_EQ(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}),
            "MASTER_ADDR: not set (needed with WORLD_SIZE=2)");
  EXPECT_EQ(error_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}}), "RANK=2: expected an integer in [0, WORLD_SIZE)");
  EXPECT_EQ(error_of({{"RANK", "x"}, {"WORLD_SIZE", "2"}}), "RANK=x: expected an integer in [0, WORLD_SIZE)");
  EXPECT_EQ(error_of({{"RANK", "0"}}), "WORLD_SIZE: not set (RANK is)");
  EXPECT_EQ(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}}),
            "MASTER_PORT=70000: expected an integer in [1, 65535]");
}

using testing::FreeLoopbackPort;
using testing::RankProcess;
using testing::ReadText;
using testing::WaitRank;

// Starts dist_rank_helper as `rank` of `world`: trains `config` into `run_dir` for `iterations` with the group's
// `timeout`, stderr to `stderr_path`.
RankProcess SpawnRank(int rank, int world, int port, const std::string& config, const std::string& run_dir,
                      int iterations, double timeout, const std::string& stderr_path, bool resume = false) {
  std::vector<std::string> args = {config, run_dir, std::to_string(iterations), std::to_string(timeout)};
  if (resume) args.push_back("--resume");
  return testing::SpawnRank(DEVPLACE_DIST_HELPER, args, rank, world, port, stderr_path);
}

// Three training games per iteration (rank 0 plays two, rank 1 one) in two minibatches, so minibatches mix
// ranks; two held-out games (one per rank). `two_pass`: the coherence pass and the greedy baseline, whose rollouts
// carry their first-pass actions between ranks.
std::string WriteGroupExperiment(const std::string& dir, int iterations, bool two_pass = false) {
  const std::string path = dir + "/exp.yaml";
  std::ofstream out(path);
  out << "name: group\nseed: 5\n"
      << "topologies: [" << DEVPLACE_SOURCE_DIR << "/configs/topologies/dgx1-v100.yaml]\n"
      << "train: [{family: ptb, seeds: {from: 1, count: 3}, target_ops: 100}]\n"
      << "eval: [{family: ptb, seeds: {from: 9, count: 2}, target_ops: 100}]\n"
      << "policy: {hidden: 16, sage_layers: 1, transformer_layers: 1, heads: 2, feedforward: 16, segment: 8"
      << (two_pass ? ", coherence: true" : "") << "}\n"
      << "ppo: {iterations: " << iterations << ", graphs_per_iteration: 3, samples_per_graph: 4, epochs: 2, "
      << "minibatches: 2" << (two_pass ? ", baseline: greedy" : "") << "}\n"
      << "eval_every: 2\ncheckpoint_every: 1\n";
  return path;
}

struct Loaded {
  std::unique_ptr<PolicyNet> net;
  CheckpointMeta meta;
};

Loaded LoadRun(const std::string& run_dir, const ExperimentConfig& config) {
  Loaded l{std::make_unique<PolicyNet>(config.policy, 99), {}};
  Expected<CheckpointMeta> meta = ReadCheckpointMeta(run_dir + "/ckpt");
  EXPECT_TRUE(meta.ok()) << (meta.ok() ? "" : meta.error().message);
  if (!meta.ok()) return l;
  l.meta = *meta;
  Status loaded = LoadCheckpointTensors(run_dir + "/ckpt", l.meta, *l.net, nullptr);
  EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
  return l;
}

// Largest |a - b| over the parameters of two policies.
double MaxParameterGap(PolicyNet& a, PolicyNet& b) {
  double gap = 0.0;
  auto pb = b.module().named_parameters();
  for (const auto& p : a.module().named_parameters())
    gap = std::max(gap, (p.value() - pb[p.key()]).abs().max().item<double>());
  return gap;
}

std::vector<std::vector<double>> LogRows(const std::string& path) {
  std::istringstream in(ReadText(path));
  std::string line;
  std::getline(in, line);  // header
  std::vector<std::vector<double>> rows;
  while (std::getline(in, line)) {
    std::vector<double> row;
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) row.push_back(cell.empty() ? 0.0 : std::stod(cell));  // empty: not evaluated
    rows.push_back(row);
  }
  return rows;
}

// With the coherence pass and the greedy baseline on, so that what a rank sends carries first-pass actions.
TEST(Distributed, TwoRanksTrainWhatOneProcessTrainsAndRankZerosCheckpointResumesAlone) {
  const std::string dir = learntest::TempDir("group");
  const std::string config_path = WriteGroupExperiment(dir, 3, /*two_pass=*/true);
  Expected<ExperimentConfig> config = ReadExperimentConfig(config_path);
  ASSERT_TRUE(config.ok()) << config.error().message;

  // Rank 1 is given its own run directory: it must never write there.
  const int port = FreeLoopbackPort();
  RankProcess r0 = SpawnRank(0, 2, port, config_path, dir + "/two", 2, 60.0, dir + "/rank0.err");
  RankProcess r1 = SpawnRank(1, 2, port, config_path, dir + "/two-rank1", 2, 60.0, dir + "/rank1.err");
  Expected<TrainSummary> one = TrainPolicy({.config_path = config_path, .run_dir = dir + "/one", .max_iterations = 2});
  ASSERT_TRUE(one.ok()) << one.error().message;
  ASSERT_EQ(WaitRank(r0, std::chrono::seconds(120)), 0) << ReadText(r0.stderr_path);
  ASSERT_EQ(WaitRank(r1, std::chrono::seconds(10)), 0) << ReadText(r1.stderr_path);
  EXPECT_FALSE(fs::exists(dir + "/two-rank1"));

  Loaded a = LoadRun(dir + "/one", *config), b = LoadRun(dir + "/two", *config);
  ASSERT_EQ(b.meta.iteration, 2);
  EXPECT_EQ(a.meta.evaluations, b.meta.evaluations);
  EXPECT_EQ(a.meta.rng_state, b.meta.rng_state);
  ASSERT_EQ(a.meta.best_relative_times.size(), b.meta.best_relative_times.size());
  for (size_t i = 0; i < a.meta.best_relative_times.size(); ++i)
    EXPECT_NEAR(a.meta.best_relative_times[i], b.meta.best_relative_times[i], 1e-9);
  // The parameters moved (4 Adam steps of ~1e-3 each) and moved the same way, up to summation order.
  PolicyNet initial(config->policy, config->seed);
  EXPECT_GT(MaxParameterGap(*a.net, initial), 1e-3);
  EXPECT_LT(MaxParameterGap(*a.net, *b.net), 2e-5);
  // Same log: iteration 1 sampled with identical parameters, so its rollout statistics agree exactly.
  std::vector<std::vector<double>> la = LogRows(dir + "/one/log.csv"), lb = LogRows(dir + "/two/log.csv");
  ASSERT_EQ(la.size(), 2u);
  ASSERT_EQ(lb.size(), 2u);
  for (size_t c = 0; c < 4; ++c) EXPECT_EQ(la[0][c], lb[0][c]) << "column " << c;
  for (size_t i = 0; i < 2; ++i)
    for (size_t c = 0; c + 1 < la[i].size(); ++c)  // all but the wall time
      EXPECT_NEAR(la[i][c], lb[i][c], 1e-4 * (1.0 + std::abs(la[i][c]))) << "row " << i << " column " << c;

  // Rank 0's checkpoint resumes in one process, and the last iteration lands where the 1-process run's does.
  Expected<TrainSummary> resumed = TrainPolicy({.run_dir = dir + "/two", .resume = true});
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  EXPECT_EQ(resumed->iterations, 3);
  ASSERT_TRUE(TrainPolicy({.run_dir = dir + "/one", .resume = true}).ok());
  Loaded a3 = LoadRun(dir + "/one", *config), b3 = LoadRun(dir + "/two", *config);
  EXPECT_EQ(b3.meta.iteration, 3);
  EXPECT_LT(MaxParameterGap(*a3.net, *b3.net), 2e-5);
  fs::remove_all(dir);
}

// The longest iteration of a run after its first, in seconds, from its log.csv (wall_seconds, the last column, is the
// time since the start, so the first row's includes the set-up); 0 with fewer than two rows.
double LongestIteration(const std::string& log_path) {
  std::istringstream in(ReadText(log_path));
  std::string line;
  std::getline(in, line);  // header
  double previous = -1.0, longest = 0.0;
  while (std::getline(in, line)) {
    const size_t comma = line.rfind(',');
    if (comma == std::string::npos) continue;
    const double wall = std::stod(line.substr(comma + 1));
    if (previous >= 0.0) longest = std::max(longest, wall - previous);
    previous = wall;
  }
  return longest;
}

// Two ranks with the given timeout; once rank 0 has logged three iterations (two whole ones after the set-up) and
// checkpointed, `hurt` is sent to rank `victim`. The other rank must exit with the group error within `limit`
// seconds plus three of the run's longest iterations so far (it may be anywhere in its iteration when the victim
// stops and reaches the next collective only at its end; on a loaded machine an iteration takes seconds and the
// next one can take twice as long as the ones before), and the checkpoint must resume. The other rank is waited for
// past that bound (and past the group timeout) so that a late exit fails with its real time.
void ExpectGroupStops(int victim, int hurt, int timeout, double limit, const std::string& name) {
  const std::string dir = learntest::TempDir(name);
  const std::string config_path = WriteGroupExperiment(dir, 1000);
  const int port = FreeLoopbackPort();
  RankProcess ranks[2] = {SpawnRank(0, 2, port, config_path, dir + "/run", 1000, timeout, dir + "/rank0.err"),
                          SpawnRank(1, 2, port, config_path, dir + "/run", 1000, timeout, dir + "/rank1.err")};
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  auto log_rows = [&] {
    const std::string log = ReadText(dir + "/run/log.csv");
    return std::count(log.begin(), log.end(), '\n') - 1;  // less the header
  };
  while (!(fs::exists(dir + "/run/ckpt/state.json") && log_rows() >= 3) && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(fs::exists(dir + "/run/ckpt/state.json") && log_rows() >= 3) << ReadText(ranks[0].stderr_path);
  const double allowed = limit + 3.0 * LongestIteration(dir + "/run/log.csv");
  const RankProcess& other = ranks[1 - victim];
  const auto hurt_at = Clock::now();
  ::kill(ranks[victim].pid, hurt);
  const int code = WaitRank(other, std::chrono::duration<double>(std::max<double>(allowed, timeout) + 10.0));
  const double seconds = std::chrono::duration<double>(Clock::now() - hurt_at).count();
  ::kill(ranks[victim].pid, SIGKILL);
  ::waitpid(ranks[victim].pid, nullptr, 0);
  EXPECT_EQ(code, 1) << "exited after " << seconds << " s";
  const std::string message = ReadText(other.stderr_path);
  EXPECT_NE(message.find("rank " + std::to_string(1 - victim) + " of 2: lost contact with the group during"),
            std::string::npos)
      << message;
  const std::string timeout_text = std::string("the ").append(std::to_string(timeout)).append(" s timeout");
  EXPECT_NE(message.find(timeout_text), std::string::npos) << message;
  EXPECT_LT(seconds, allowed) << "the longest iteration before took " << (allowed - limit) / 3.0 << " s";
  if (hurt == SIGKILL) {
    EXPECT_LT(seconds, timeout) << "a dead rank is noticed before the timeout";
  }
  // The last checkpoint is whole and the run resumes from it in one process.
  Expected<TrainSummary> resumed = TrainPolicy({.run_dir = dir + "/run", .resume = true, .max_iterations = 1});
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  fs::remove_all(dir);
}

TEST(Distributed, RankZerosStartUpErrorReachesEveryRank) {
  const std::string dir = learntest::TempDir("nostart");
  const std::string config_path = WriteGroupExperiment(dir, 2);
  const int port = FreeLoopbackPort();
  RankProcess r0 = SpawnRank(0, 2, port, config_path, dir + "/none", 1, 10.0, dir + "/rank0.err", /*resume=*/true);
  RankProcess r1 = SpawnRank(1, 2, port, config_path, dir + "/none", 1, 10.0, dir + "/rank1.err", /*resume=*/true);
  EXPECT_EQ(WaitRank(r0, std::chrono::seconds(30)), 1);
  EXPECT_EQ(WaitRank(r1, std::chrono::seconds(30)), 1);
  const std::string own = ReadText(r0.stderr_path), relayed = ReadText(r1.stderr_path);
  EXPECT_NE(own.find("state.json"), std::string::npos) << own;
  EXPECT_NE(relayed.find("rank 1 of 2: rank 0 could not start: "), std::string::npos) << relayed;
  EXPECT_NE(relayed.find("state.json"), std::string::npos) << relayed;
  fs::remove_all(dir);
}

// A dead rank's connections close: the other notices at its next collective, long before the timeout (60 s: far
// above the bound of a loaded machine's few-second iterations, so waiting for the timeout cannot pass).
TEST(Distributed, KilledRankStopsTheOtherAndTheCheckpointResumes) { ExpectGroupStops(1, SIGKILL, 60, 5.0, "killed"); }

// A stopped rank keeps its connections open: the other gives up when the timeout passes.
TEST(Distributed, StalledRankStopsTheOtherAfterTheTimeout) { ExpectGroupStops(0, SIGSTOP, 3, 5.0, "stalled"); }

}  // namespace
}  // namespace devplace
