// Environment steps do not allocate once a game's simulators have grown to what its episodes need: an iterative
// state borrows its delta simulator from the game and hands it back, so a later episode reuses its buffers, and
// gives the same episode as a fresh simulator. Counted with a replacement of the global operator new
// (tests/testing/allocation_count.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/topology_yaml.h"
#include "env/batch.h"
#include "env/config.h"
#include "env/game.h"
#include "env/state.h"
#include "tests/testing/env_fixtures.h"
#include "tests/testing/allocation_count.h"

namespace devplace::envtest {
namespace {

struct Episode {
  std::vector<double> rewards;
  int64_t step_allocations = 0;  // made by ApplyAction calls (not by creating the state)
  int32_t split_actions = 0;     // actions that split a group (PlacementGame::is_split)
};

// An episode of `game` from state seed 0, each action drawn from `seed` among the legal ones.
Episode Play(const std::shared_ptr<const PlacementGame>& game, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Episode episode;
  PlacementState state = game->NewInitialState(0);
  while (!state.IsTerminal()) {
    const int32_t action = RandomLegalAction(state, rng);
    episode.split_actions += game->is_split(action) ? 1 : 0;
    const int64_t before = testing::ThreadAllocations();
    const Status s = state.ApplyAction(action);
    episode.step_allocations += testing::ThreadAllocations() - before;
    EXPECT_TRUE(s.ok());
    episode.rewards.push_back(state.last_reward());
  }
  return episode;
}

std::vector<std::shared_ptr<const Topology>> Machines() {
  return {Share(ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml").value()),
          Share(Pair(4, int64_t{1} << 22))};  // small devices: the OOM check's memory pass runs
}

TEST(StepAllocation, IterativeEpisodesReuseTheirSimulatorAndDoNotAllocate) {
  for (const auto& topology : Machines()) {
    EnvConfig config;
    config.kind = MdpKind::kIterative;
    const auto game = MakeGame(Share(RandomTrainingGraph(5, 600)), topology, config);
    const Episode fresh = Play(game, 3);  // a new simulator
    EXPECT_GT(fresh.step_allocations, 0) << topology->name() << ": the count sees the simulator's allocations";
    // The simulator's lists settle over the first episodes (the buffers a compaction's reorder passes round, which
    // depend on when the compactions come: in the third episode since the ordered pass jumps over stretches, in the
    // second before); later episodes only reuse them.
    for (int round = 1; round < 5; ++round) {
      const Episode again = Play(game, 3);  // the first episode's simulator, set back to the start
      EXPECT_EQ(again.rewards, fresh.rewards) << topology->name() << ", episode " << round;
      if (round >= 3) {
        EXPECT_EQ(again.step_allocations, 0) << topology->name() << ", episode " << round;
      }
    }
    // Two states at once: the second cannot borrow the first's simulator, builds its own and plays the same.
    PlacementState held = game->NewInitialState(0);
    EXPECT_EQ(Play(game, 3).rewards, fresh.rewards) << topology->name();
  }
}

// Split actions write the candidate's config into the state's change list in place (CandidateOpConfigInto), and
// the task builder keeps its rings' lists, so iterative episodes of the SOAP action space, and of the data-parallel
// action, do not allocate either once the simulator has grown to the partitioned groups' tasks: the same episode
// played again allocates in no step from the fourth time on. (A rebuild's reorder swaps each per-task array with a
// scratch list shared by the arrays of its type, so a buffer that grew serves another array next time; the data-
// parallel episode here still grows one the third time.)
TEST(StepAllocation, SplitActionEpisodesDoNotAllocate) {
  const auto topology =
      Share(ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml").value());
  for (const bool soap : {true, false}) {
    const std::string name = soap ? "soap" : "data parallel";
    EnvConfig config;
    config.kind = MdpKind::kIterative;
    if (soap) config.action_space = ActionSpace::kSoap;
    else config.data_parallel_action = true;
    const auto game = MakeGame(Share(RandomTrainingGraph(7, 300)), topology, config);
    const Episode fresh = Play(game, 5);
    EXPECT_GT(fresh.split_actions, 0) << name << ": the episode takes split actions";
    for (int round = 1; round < 5; ++round) {
      const Episode again = Play(game, 5);
      EXPECT_EQ(again.rewards, fresh.rewards) << name << ", episode " << round;
      if (round >= 3) {
        EXPECT_EQ(again.step_allocations, 0) << name << ", episode " << round;
      }
    }
  }
}

// An EnvBatch that finishes an iterative episode ends it before it starts the next, so the next episode borrows
// the finished one's delta simulator instead of building a second one while the first waits idle in the game:
// after each restart of a one-env batch the game holds no idle simulator. The restart writes the initial strategy
// over the list that came back with the simulator: from the second on, the step that restarts allocates only the
// new state's own lists, nothing per op or group.
TEST(StepAllocation, EnvBatchRestartReusesTheFinishedEpisodesSimulator) {
  EnvConfig config;
  config.kind = MdpKind::kIterative;
  const auto game = MakeGame(
      Share(RandomTrainingGraph(5, 300)),
      Share(ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml").value()),
      config);
  {
    Expected<EnvBatch> batch = EnvBatch::Create({game}, 1, 11);
    ASSERT_TRUE(batch.ok());
    std::mt19937_64 rng(2);
    BatchStep step;
    for (int restarts = 0; restarts < 3;) {
      const int32_t action = RandomLegalAction(batch->state(0), rng);
      const int64_t before = testing::ThreadAllocations();
      ASSERT_TRUE(batch->Step({&action, 1}, &step).ok());
      const int64_t allocations = testing::ThreadAllocations() - before;
      if (step.dones[0]) {
        ++restarts;
        EXPECT_EQ(game->idle_delta_simulators(), 0u) << "after restart " << restarts;
        if (restarts >= 2) {
          EXPECT_LT(allocations, 16) << "restart " << restarts << " (" << game->num_groups() << " groups)";
        }
      }
    }
  }
  // The batch's simulator went back to the game with the batch.
  EXPECT_EQ(game->idle_delta_simulators(), 1u);
}

// One-shot episodes: the steps before the last only place a group; the last simulates the placement with a
// simulator of the game's pool, which keeps the strategy it ran last and its lists, so an episode played again
// (needing no more room than before) allocates in no step, with split actions too. The last step's cost is that
// of Evaluate's result.
TEST(StepAllocation, OneShotEpisodesDoNotAllocate) {
  for (const auto& topology : Machines()) {
    for (const ActionSpace space : {ActionSpace::kDevices, ActionSpace::kSoap}) {
      const std::string name = topology->name() + (space == ActionSpace::kSoap ? " soap" : "");
      EnvConfig config;
      config.kind = MdpKind::kOneShot;
      config.action_space = space;
      const auto game = MakeGame(Share(RandomTrainingGraph(5, 600)), topology, config);
      for (uint64_t seed = 1; seed < 4; ++seed) {
        const Episode first = Play(game, seed);
        const Episode episode = Play(game, seed);
        if (space == ActionSpace::kSoap) {
          EXPECT_GT(first.split_actions, 0) << name;
        }
        EXPECT_EQ(episode.step_allocations, 0) << name << ", episode " << seed;
        EXPECT_EQ(episode.rewards, first.rewards) << name << ", episode " << seed;
        std::mt19937_64 rng(seed);
        PlacementState state = game->NewInitialState(0);
        while (!state.IsTerminal()) ASSERT_TRUE(state.ApplyAction(RandomLegalAction(state, rng)).ok());
        const StepCost full = CostOf(game->Evaluate(state.placement()).value(), *topology);
        EXPECT_EQ(state.cost().step_time, full.step_time);
        EXPECT_EQ(state.cost().oom, full.oom);
        EXPECT_EQ(state.cost().overage, full.overage);
        EXPECT_EQ(episode.rewards.back(), state.last_reward());
      }
    }
  }
}

}  // namespace
}  // namespace devplace::envtest
