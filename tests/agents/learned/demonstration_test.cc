// Demonstrations: the best heuristic placement of a game, replayed as an episode and cloned by the policy.
#include <gtest/gtest.h>

#include <random>

#include "agents/learned/demonstration.h"
#include "agents/learned/learner.h"
#include "core/topology_yaml.h"
#include "datasets/graph_source.h"
#include "tests/testing/learn_fixtures.h"

namespace devplace {
namespace {

using learntest::MakeGame;
using learntest::MlpTrainingGraph;
using learntest::TinyPolicy;
using learntest::TwoDevices;

TEST(Demonstration, IsTheBestOfTheAlgorithms) {
  auto game = MakeGame(MlpTrainingGraph(4), TwoDevices(4.0), MdpKind::kOneShot);
  Demonstration best = MakeDemonstration(*game, {"round-robin", "single", "m-etf"}, 1).value();
  ASSERT_EQ(static_cast<int32_t>(best.device_per_group.size()), game->num_groups());
  EXPECT_NEAR(best.penalised_time, game->Evaluate(best.device_per_group)->step_time, 1e-15);
  for (const char* name : {"round-robin", "single", "m-etf"})
    EXPECT_LE(best.penalised_time, MakeDemonstration(*game, {name}, 1)->penalised_time) << name;
  EXPECT_FALSE(MakeDemonstration(*game, {}, 1).ok());
  Expected<Demonstration> unknown = MakeDemonstration(*game, {"annealing"}, 1);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("annealing"), std::string::npos);
}

// The data-parallel baseline is demonstrated as the data-parallel action where the game has it, and rejected
// where it does not (its splits cannot be expressed by device actions).
TEST(Demonstration, DataParallelBaselineMapsToTheDataParallelAction) {
  auto game = MakeGame(MlpTrainingGraph(3), TwoDevices(1.0), MdpKind::kOneShot, true, /*data_parallel_action=*/true);
  Demonstration d = MakeDemonstration(*game, {"data-parallel"}, 1).value();
  ASSERT_EQ(static_cast<int32_t>(d.device_per_group.size()), game->num_groups());
  for (int32_t g = 0; g < game->num_groups(); ++g)
    EXPECT_EQ(d.device_per_group[g], game->data_parallel_action()) << "group " << g;
  EXPECT_EQ(d.penalised_time, game->Evaluate(d.device_per_group)->step_time);

  auto plain = MakeGame(MlpTrainingGraph(3), TwoDevices(1.0), MdpKind::kOneShot);
  Expected<Demonstration> rejected = MakeDemonstration(*plain, {"data-parallel"}, 1);
  ASSERT_FALSE(rejected.ok());
  EXPECT_NE(rejected.error().message.find("data_parallel_action is off"), std::string::npos);
}

// On a DGX-1 the data-parallel action rings over NVLink (0 1 2 3 7 5 6 4, as the data-parallel baseline and real
// data parallelism do), so the baseline's splits are the action's and are demonstrated as it.
TEST(Demonstration, DataParallelActionRingsAsTheBaselineOnDgx1) {
  Graph g = BuildGraph(GraphSource{.family = "transformer", .seed = 1, .target_ops = 120}).value();
  Topology t = ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml").value();
  auto game = MakeGame(std::move(g), std::move(t), MdpKind::kOneShot, true, /*data_parallel_action=*/true);
  EXPECT_EQ(game->candidate(0).devices, (std::vector<DeviceId>{0, 1, 2, 3, 7, 5, 6, 4}));
  Expected<Demonstration> d = MakeDemonstration(*game, {"data-parallel"}, 1);
  ASSERT_TRUE(d.ok()) << d.error().message;
  int32_t splits = 0;
  for (int32_t action : d->device_per_group) splits += action == game->data_parallel_action();
  EXPECT_GT(splits, game->num_groups() / 2);
}

// A demonstration every other group on the other device: sampled collections replay it as episode 0, greedy ones
// do not, and with a behaviour-cloning weight the greedy policy learns to place exactly that way.
TEST(Demonstration, IsReplayedAndCloned) {
  auto game = MakeGame(MlpTrainingGraph(4), TwoDevices(1.0), MdpKind::kOneShot);
  GameEntry entry = MakeGameEntry(game, "mlp");
  for (int32_t g = 0; g < game->num_groups(); ++g) entry.demonstration.push_back(g % 2);
  PolicyNet net(TinyPolicy("transformer"), 5);
  PpoConfig ppo;
  ppo.lr = ppo.lr_final = 1e-2;
  ppo.minibatches = 1;
  ppo.demonstration_coef = 5.0;
  PpoLearner learner(&net, ppo, 1);
  std::mt19937_64 rng(2);
  GameRollout greedy = learner.Collect(entry, 1, true, rng);
  EXPECT_FALSE(greedy.demonstrated);
  EXPECT_NE(greedy.episodes[0].placement, entry.demonstration) << "the test needs a policy that starts elsewhere";
  for (int it = 0; it < 40; ++it) {
    std::vector<GameRollout> rollouts;
    rollouts.push_back(learner.Collect(entry, 4, false, rng));
    ASSERT_TRUE(rollouts[0].demonstrated);
    ASSERT_EQ(rollouts[0].episodes[0].placement, entry.demonstration);
    learner.Update(rollouts, it, rng);
  }
  EXPECT_EQ(learner.Collect(entry, 1, true, rng).episodes[0].placement, entry.demonstration);
}

}  // namespace
}  // namespace devplace
