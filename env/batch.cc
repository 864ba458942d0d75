#include "env/batch.h"

#include <string>
#include <utility>

#include "core/check.h"

namespace devplace {

Expected<EnvBatch> EnvBatch::Create(std::vector<std::shared_ptr<const PlacementGame>> games, int32_t num_envs,
                                    uint64_t base_seed) {
  if (games.empty()) return Error{"env batch: needs at least one game"};
  for (size_t k = 0; k < games.size(); ++k)
    if (games[k] == nullptr) return Error{"env batch: game " + std::to_string(k) + " is null"};
  if (num_envs < 1) return Error{"env batch: num_envs must be >= 1, got " + std::to_string(num_envs)};
  EnvBatch batch;
  batch.games_ = std::move(games);
  batch.base_seed_ = base_seed;
  batch.rngs_.resize(static_cast<size_t>(num_envs));
  batch.observations_.resize(static_cast<size_t>(num_envs));
  batch.states_.reserve(static_cast<size_t>(num_envs));
  for (int32_t i = 0; i < num_envs; ++i) {
    batch.rngs_[i].seed(base_seed + static_cast<uint64_t>(i));
    batch.states_.push_back(batch.games_[batch.game_of(i)]->NewInitialState(batch.rngs_[i]()));
    batch.states_[i]->FillObservation(&batch.observations_[i]);
  }
  return batch;
}

void EnvBatch::Reset() {
  finished_.clear();
  for (int32_t i = 0; i < num_envs(); ++i) {
    rngs_[i].seed(base_seed_ + static_cast<uint64_t>(i));
    StartEpisode(i);
  }
}

void EnvBatch::StartEpisode(int32_t env) {
  states_[env].reset();
  states_[env] = games_[game_of(env)]->NewInitialState(rngs_[env]());
  states_[env]->FillObservation(&observations_[env]);
}

void EnvBatch::Finish(int32_t env) {
  const PlacementState& s = *states_[env];
  finished_.push_back(EpisodeStats{.env = env,
                                   .game = game_of(env),
                                   .seed = s.seed(),
                                   .length = s.num_steps(),
                                   .episode_return = s.Return(),
                                   .final_step_time = s.step_time(),
                                   .oom = s.oom()});
}

static void ResizeStep(int32_t n, BatchStep* out) {
  out->rewards.assign(static_cast<size_t>(n), 0.0);
  out->dones.assign(static_cast<size_t>(n), 0);
}

Status EnvBatch::Step(std::span<const int32_t> actions, BatchStep* out) {
  if (static_cast<int32_t>(actions.size()) != num_envs())
    return Error{"env batch: got " + std::to_string(actions.size()) + " actions for " + std::to_string(num_envs()) +
                 " envs"};
  for (int32_t i = 0; i < num_envs(); ++i) {
    const int32_t a = actions[i];
    const std::vector<uint8_t>& mask = states_[i]->LegalActionsMask();
    if (a < 0 || a >= static_cast<int32_t>(mask.size()) || !mask[a])
      return Error{"env batch: env " + std::to_string(i) + ": action " + std::to_string(a) + " is not legal"};
  }
  ResizeStep(num_envs(), out);
  for (int32_t i = 0; i < num_envs(); ++i) {
    PlacementState& s = *states_[i];
    Status status = s.ApplyAction(actions[i]);
    DEVPLACE_CHECK(status.ok(), "a pre-checked action failed");
    out->rewards[i] = s.last_reward();
    if (s.IsTerminal()) {
      out->dones[i] = 1;
      Finish(i);
      StartEpisode(i);
    } else {
      s.FillObservation(&observations_[i]);
    }
  }
  return Status::Ok();
}

Status EnvBatch::StepPlacements(std::span<const std::vector<int32_t>> placements, BatchStep* out) {
  if (static_cast<int32_t>(placements.size()) != num_envs())
    return Error{"env batch: got " + std::to_string(placements.size()) + " placements for " +
                 std::to_string(num_envs()) + " envs"};
  std::vector<PlacementState> next;
  next.reserve(static_cast<size_t>(num_envs()));
  for (int32_t i = 0; i < num_envs(); ++i) {
    next.push_back(states_[i]->Clone());
    if (Status s = next.back().ApplyPlacement(placements[i]); !s)
      return Error{"env batch: env " + std::to_string(i) + ": " + s.error().message};
  }
  ResizeStep(num_envs(), out);
  for (int32_t i = 0; i < num_envs(); ++i) {
    states_[i] = std::move(next[i]);
    out->rewards[i] = states_[i]->last_reward();
    out->dones[i] = 1;
    Finish(i);
    StartEpisode(i);
  }
  return Status::Ok();
}

}  // namespace devplace
