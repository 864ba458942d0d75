// EnvBatch: lockstep stepping over several games, seeding, automatic reset, episode statistics, checking.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "env/batch.h"
#include "tests/testing/env_fixtures.h"

namespace devplace::envtest {
namespace {

std::vector<std::shared_ptr<const PlacementGame>> MixedGames() {
  const std::vector<Scenario> sc = Scenarios();
  EnvConfig iterative;
  iterative.initial_placement = InitialPlacement::kRandom;
  EnvConfig one_shot;
  one_shot.kind = MdpKind::kOneShot;
  return {MakeGame(sc[0], iterative), MakeGame(sc[1], one_shot), MakeGame(sc[2], iterative)};
}

// Legal random actions for every env of `batch`.
std::vector<int32_t> RandomActions(const EnvBatch& batch, std::mt19937_64& rng) {
  std::vector<int32_t> actions;
  for (int32_t i = 0; i < batch.num_envs(); ++i) actions.push_back(RandomLegalAction(batch.state(i), rng));
  return actions;
}

TEST(EnvBatch, RejectsBadArguments) {
  EXPECT_FALSE(EnvBatch::Create({}, 4, 0).ok());
  EXPECT_FALSE(EnvBatch::Create(MixedGames(), 0, 0).ok());
  EXPECT_FALSE(EnvBatch::Create({nullptr}, 2, 0).ok());
}

TEST(EnvBatch, EnvsCycleOverGamesWithTheirOwnSeeds) {
  std::vector<std::shared_ptr<const PlacementGame>> games = MixedGames();
  Expected<EnvBatch> batch = EnvBatch::Create(games, 7, 100);
  ASSERT_TRUE(batch.ok()) << batch.error().message;
  for (int32_t i = 0; i < 7; ++i) {
    EXPECT_EQ(batch->game_of(i), i % 3);
    EXPECT_EQ(&batch->state(i).game(), games[i % 3].get());
    // The first episode's seed is the first draw of a generator seeded base_seed + i.
    EXPECT_EQ(batch->state(i).seed(), std::mt19937_64(100 + i)());
    EXPECT_EQ(batch->observation(i).num_nodes, games[i % 3]->num_groups());
    EXPECT_EQ(batch->observation(i).placement, batch->state(i).placement());
  }
}

TEST(EnvBatch, StepsAutoResetAndRecordsEpisodes) {
  std::vector<std::shared_ptr<const PlacementGame>> games = MixedGames();
  Expected<EnvBatch> batch = EnvBatch::Create(games, 6, 7);
  ASSERT_TRUE(batch.ok());
  std::mt19937_64 rng(3);
  BatchStep step;
  std::vector<double> sums(6, 0.0);
  std::vector<std::vector<int32_t>> actions_of(6);
  std::vector<uint64_t> seed_of(6);
  for (int32_t i = 0; i < 6; ++i) seed_of[i] = batch->state(i).seed();
  int32_t longest = 0;
  for (const auto& g : games) longest = std::max(longest, g->num_groups());
  for (int32_t t = 0; t < longest + 2; ++t) {
    std::vector<int32_t> actions = RandomActions(*batch, rng);
    const size_t finished_before = batch->finished_episodes().size();
    ASSERT_TRUE(batch->Step(actions, &step).ok());
    ASSERT_EQ(step.rewards.size(), 6u);
    size_t k = finished_before;
    for (int32_t i = 0; i < 6; ++i) {
      sums[i] += step.rewards[i];
      actions_of[i].push_back(actions[i]);
      if (!step.dones[i]) {
        EXPECT_EQ(batch->state(i).num_steps(), static_cast<int32_t>(actions_of[i].size()));
        continue;
      }
      // The finished episode: its statistics match a replay of the same seed and actions on a fresh state.
      ASSERT_LT(k, batch->finished_episodes().size());
      const EpisodeStats& e = batch->finished_episodes()[k++];
      EXPECT_EQ(e.env, i);
      EXPECT_EQ(e.game, i % 3);
      EXPECT_EQ(e.seed, seed_of[i]);
      EXPECT_EQ(e.length, games[i % 3]->num_groups());
      EXPECT_EQ(e.episode_return, sums[i]);
      PlacementState replay = games[i % 3]->NewInitialState(seed_of[i]);
      for (int32_t a : actions_of[i]) ASSERT_TRUE(replay.ApplyAction(a).ok());
      EXPECT_TRUE(replay.IsTerminal());
      EXPECT_EQ(e.episode_return, replay.Return());
      EXPECT_EQ(e.final_step_time, replay.step_time());
      EXPECT_EQ(e.oom, replay.oom());
      // The env restarted with the next seed of its generator.
      EXPECT_EQ(batch->state(i).num_steps(), 0);
      EXPECT_NE(batch->state(i).seed(), seed_of[i]);
      EXPECT_EQ(batch->observation(i).current_node, 0);
      sums[i] = 0.0;
      actions_of[i].clear();
      seed_of[i] = batch->state(i).seed();
    }
    EXPECT_EQ(k, batch->finished_episodes().size());
  }
  EXPECT_GE(batch->finished_episodes().size(), 6u);
}

TEST(EnvBatch, IsDeterministicAndResetRestartsTheSeeds) {
  auto run = [](EnvBatch& batch) {
    std::mt19937_64 rng(11);
    BatchStep step;
    std::vector<double> rewards;
    for (int t = 0; t < 40; ++t) {
      EXPECT_TRUE(batch.Step(RandomActions(batch, rng), &step).ok());
      rewards.insert(rewards.end(), step.rewards.begin(), step.rewards.end());
    }
    return rewards;
  };
  Expected<EnvBatch> a = EnvBatch::Create(MixedGames(), 5, 42);
  Expected<EnvBatch> b = EnvBatch::Create(MixedGames(), 5, 42);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<double> ra = run(*a);
  EXPECT_EQ(ra, run(*b));
  a->Reset();
  EXPECT_TRUE(a->finished_episodes().empty());
  EXPECT_EQ(run(*a), ra);
}

TEST(EnvBatch, IllegalActionChangesNothing) {
  Expected<EnvBatch> batch = EnvBatch::Create(MixedGames(), 3, 1);
  ASSERT_TRUE(batch.ok());
  std::mt19937_64 rng(1);
  std::vector<int32_t> actions = RandomActions(*batch, rng);
  const std::vector<int32_t> before = batch->state(0).placement();
  std::vector<int32_t> bad = actions;
  bad[2] = 99;
  BatchStep step;
  Status s = batch->Step(bad, &step);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("env 2"), std::string::npos);
  EXPECT_EQ(batch->state(0).num_steps(), 0);
  EXPECT_EQ(batch->state(0).placement(), before);
  EXPECT_FALSE(batch->Step(std::vector<int32_t>{0}, &step).ok());  // wrong count
  EXPECT_TRUE(batch->Step(actions, &step).ok());
}

TEST(EnvBatch, WholePlacementsForOneShotGames) {
  const std::vector<Scenario> sc = Scenarios();
  EnvConfig one_shot;
  one_shot.kind = MdpKind::kOneShot;
  std::vector<std::shared_ptr<const PlacementGame>> games = {MakeGame(sc[0], one_shot), MakeGame(sc[1], one_shot)};
  Expected<EnvBatch> batch = EnvBatch::Create(games, 4, 5);
  ASSERT_TRUE(batch.ok());
  std::vector<std::vector<int32_t>> placements;
  for (int32_t i = 0; i < 4; ++i) {
    const int32_t n = batch->game(batch->game_of(i)).num_groups();
    std::vector<int32_t> p;
    for (int32_t g = 0; g < n; ++g) p.push_back((g + i) % batch->game(batch->game_of(i)).num_devices());
    placements.push_back(p);
  }
  std::vector<uint64_t> seeds;
  for (int32_t i = 0; i < 4; ++i) seeds.push_back(batch->state(i).seed());
  BatchStep step;
  std::vector<std::vector<int32_t>> wrong = placements;
  wrong[3].pop_back();
  ASSERT_FALSE(batch->StepPlacements(wrong, &step).ok());
  EXPECT_EQ(batch->state(0).num_steps(), 0);
  EXPECT_TRUE(batch->finished_episodes().empty());
  ASSERT_TRUE(batch->StepPlacements(placements, &step).ok());
  ASSERT_EQ(batch->finished_episodes().size(), 4u);
  for (int32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(step.dones[i], 1);
    PlacementState replay = games[i % 2]->NewInitialState(seeds[i]);
    ASSERT_TRUE(replay.ApplyPlacement(placements[i]).ok());
    EXPECT_EQ(step.rewards[i], replay.Return());
    EXPECT_EQ(batch->finished_episodes()[i].final_step_time, replay.step_time());
    EXPECT_EQ(batch->state(i).num_steps(), 0);
  }
}

}  // namespace
}  // namespace devplace::envtest
