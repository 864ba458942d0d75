// EnvBatch: N environments stepped in lockstep over a list of games (EnvPool style, single-threaded).
// Env i plays game i % num_games. Env i owns a std::mt19937_64 seeded with base_seed + i; each new episode of
// env i draws its state seed from it, so a batch is deterministic given (games, num_envs, base_seed).
// Finished episodes restart automatically: after a Step that ends env i's episode, observation(i) shows the
// first observation of its next episode, and the finished episode's statistics are appended to
// finished_episodes().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "core/status.h"
#include "env/game.h"
#include "env/observation.h"
#include "env/state.h"

namespace devplace {

// The outcome of one finished episode.
struct EpisodeStats {
  int32_t env = 0;
  int32_t game = 0;              // index into the batch's games
  uint64_t seed = 0;             // the episode's state seed
  int32_t length = 0;            // actions taken
  double episode_return = 0.0;   // sum of rewards
  double final_step_time = 0.0;  // simulated step time of the final placement (seconds)
  bool oom = false;              // the final placement runs out of memory
};

// Per-env results of one Step, filled in place (resized to num_envs()).
struct BatchStep {
  std::vector<double> rewards;
  std::vector<uint8_t> dones;  // 1 when the step ended the env's episode (the env has been reset)
};

class EnvBatch {
 public:
  // Requires at least one game, num_envs >= 1. Games may mix MDP kinds, graphs and topologies. Starts every
  // env's first episode, as Reset() does.
  static Expected<EnvBatch> Create(std::vector<std::shared_ptr<const PlacementGame>> games, int32_t num_envs,
                                   uint64_t base_seed);

  int32_t num_envs() const { return static_cast<int32_t>(states_.size()); }
  int32_t num_games() const { return static_cast<int32_t>(games_.size()); }
  const PlacementGame& game(int32_t index) const { return *games_[index]; }
  // Index of the game env `env` plays.
  int32_t game_of(int32_t env) const { return env % num_games(); }

  // Re-seeds every env's generator with base_seed + i and starts a new episode in every env.
  // Clears finished_episodes().
  void Reset();

  const PlacementState& state(int32_t env) const { return *states_[env]; }
  const Observation& observation(int32_t env) const { return observations_[env]; }

  // Applies actions[i] to env i (actions.size() == num_envs()). All actions are checked first; on an error
  // (naming the env) nothing changes.
  Status Step(std::span<const int32_t> actions, BatchStep* out);
  // One-shot whole placements: placements[i] (device per group of env i's game) is applied to env i with
  // PlacementState::ApplyPlacement; every env must be one-shot and at the start of an episode. All envs are
  // checked (on a clone) first; on an error nothing changes. Every episode ends, so all dones are 1.
  Status StepPlacements(std::span<const std::vector<int32_t>> placements, BatchStep* out);

  const std::vector<EpisodeStats>& finished_episodes() const { return finished_; }
  void ClearFinishedEpisodes() { finished_.clear(); }

 private:
  EnvBatch() = default;
  void StartEpisode(int32_t env);
  void Finish(int32_t env);

  std::vector<std::shared_ptr<const PlacementGame>> games_;
  uint64_t base_seed_ = 0;
  std::vector<std::mt19937_64> rngs_;
  // Always set between calls; empty only while StartEpisode replaces an env's state (the finished state goes
  // first, so that an iterative episode's delta simulator returns to the game before the next episode borrows one).
  std::vector<std::optional<PlacementState>> states_;
  std::vector<Observation> observations_;
  std::vector<EpisodeStats> finished_;
};

}  // namespace devplace
