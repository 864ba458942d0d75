// PpoLearner: collects episodes of placement games with a PolicyNet and improves it with PPO (clipped surrogate,
// GAE, value and entropy terms, minibatch epochs, gradient clipping, Adam with a linear learning-rate schedule).
// Used by training (many games) and fine-tuning (one game). Internal to devplace_learn.
//
// One-shot MDP (TransformerPlacer): one forward pass gives logits for every group; an episode walks the groups
// in order, reads the state's legal mask, picks a device from the masked distribution and applies it. Each
// group's choice is one PPO token; an episode is one MDP step whose reward is -sqrt(T / T_ref), so GAE gives
// every token of the episode the advantage R - V.
// Iterative MDP (PlacetoPolicy): the episodes of one game run in lockstep, one batched forward per step; GAE
// runs over each episode's per-step improvements.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "agents/learned/policy.h"
#include "agents/learned/ppo.h"
#include "config/experiment_config.h"
#include "core/status.h"
#include "sim/objective.h"
#include "env/game.h"

namespace devplace {

// A game with its static tensors.
struct GameEntry {
  std::shared_ptr<const PlacementGame> game;
  GameTensors tensors;
  std::string label;
  // One-shot MDP: a placement (device per group) that sampled collections replay as their first episode, where
  // legal (agents/learned/demonstration.h); empty: none.
  std::vector<int32_t> demonstration;
  // The behaviour-cloning weight of this game's demonstration (decaying as the learning rate does); unset: the
  // learner's ppo.demonstration_coef.
  std::optional<double> demonstration_coef;
};
GameEntry MakeGameEntry(std::shared_ptr<const PlacementGame> game, std::string label);

// The outcome of one episode.
struct EpisodeResult {
  std::vector<int32_t> placement;  // device per group: the final one (one-shot) or the best visited (iterative)
  double penalised_time = 0.0;     // of `placement` (the environment's number, PPO's signal)
  StepCost cost;                   // of `placement` (the ranking a placer keeps its best by)
  double episode_return = 0.0;
};

class ProcessGroup;

// Episodes of one game plus what PPO needs to learn from them.
struct GameRollout {
  const GameEntry* entry = nullptr;
  std::vector<EpisodeResult> episodes;
  int64_t evaluations = 0;  // simulations the episodes ran
  // Training data (A = the game's actions). One-shot: actions [S, N], masks [S, N, A], old_logp [S, N];
  // values/returns/advantages per episode. Iterative: observations of the S * N steps (episode-major), masks
  // [T, A], actions/old_logp [T]; values/returns/advantages per step.
  torch::Tensor actions, masks, old_logp;
  IterativeBatch observations;
  std::vector<double> values, returns, advantages;
  bool demonstrated = false;  // one-shot: episode 0 replayed the entry's demonstration
  // One-shot with PolicyConfig::coherence: [S, N] the first decoding pass's action per group of each episode
  // (the second pass's logits depend on them); undefined otherwise.
  torch::Tensor first_actions;
};

// Averages over the minibatch updates of one Update call.
struct UpdateStats {
  double policy_loss = 0.0, value_loss = 0.0, entropy = 0.0, clip_fraction = 0.0, approx_kl = 0.0;
  double grad_norm = 0.0;
};

// Completes an iteration's rollouts on every rank of `group`: rank r has collected rollouts r, r + W, ... (the
// others are empty) and sends their training data (not their episode results) to the other ranks; rollout k is a
// game of `entries[k]`. Errors: the group lost a rank.
Status ShareRollouts(std::vector<GameRollout>* rollouts, const std::vector<const GameEntry*>& entries,
                     ProcessGroup& group);

// Sets the intra-op threads of LibTorch and of the BLAS library under it (OpenBLAS keeps its own pool, whose
// idle threads spin and steal the CPU from the simulator on small machines).
void SetPolicyThreads(int32_t threads);

// Runs work(i) once for every i in [0, count) on min(threads, count) threads (the caller among them). Items are
// claimed in index order from a shared counter, so `work` must write only what belongs to its item and must not
// depend on which thread runs it. With more than one thread, LibTorch and BLAS use one intra-op thread each
// during the call (the caller's setting is restored afterwards), so the threads do not oversubscribe the cores.
// An exception thrown by `work` is rethrown in the caller after every thread has stopped.
void RunParallel(size_t count, int32_t threads, const std::function<void(size_t)>& work);

class PpoLearner {
 public:
  // `net` must outlive the learner. `total_iterations` sets the learning-rate schedule. `threads` (>= 1) is how
  // many games' losses Update computes at once (RunParallel); the step does not depend on it, bit for bit.
  PpoLearner(PolicyNet* net, const PpoConfig& config, int64_t total_iterations, int32_t threads = 1);

  // Runs `samples` episodes of `entry` (greedy: the most likely legal device everywhere, one episode suffices).
  // Draws episode seeds and sampling uniforms from `rng`. With two or more samples, not greedy, the first episode
  // replays the entry's demonstration if it has one (a group whose demonstrated device is illegal samples instead).
  // Several threads may collect at once (each with its own `rng`), but not while an update runs.
  GameRollout Collect(const GameEntry& entry, int32_t samples, bool greedy, std::mt19937_64& rng);
  // PPO epochs over `rollouts` (advantages normalised across them) at the learning rate of `iteration`.
  UpdateStats Update(std::vector<GameRollout>& rollouts, int64_t iteration, std::mt19937_64& rng);
  // The same update taken by the ranks of `group` together (data parallel). Every rank holds the iteration's
  // whole list of rollouts (ShareRollouts) and `rng` in the same state. Advantages are normalised over the list,
  // the minibatches partition it as Update's do, rank r computes the losses of each minibatch's rollouts r, r + W,
  // ... and the ranks' gradients are summed before clipping and the Adam step, so every rank takes the step one
  // process would take (up to the order of floating-point sums) and the parameters stay identical across ranks.
  // The returned statistics are the group's. Errors: the group lost a rank.
  Expected<UpdateStats> UpdateInGroup(std::vector<GameRollout>& rollouts, int64_t iteration, std::mt19937_64& rng,
                                      ProcessGroup& group);

  // Makes Collect (one-shot MDP only) decode with an ensemble: the policy given to the constructor and `others`.
  // Each member's logits become log-probabilities over each group's statically legal actions (every device, the
  // splits the group can take), their mean is what every pass decodes from (coherence passes: each member's second
  // pass reads the shared actions of the previous pass), and the episodes' values are the constructor's policy's.
  // Every member must read the game tensors the entries were built for (same policy and environment configs).
  // For placement only: Update refuses rollouts collected this way (they are not the constructor's policy's).
  // The members' forward and coherence passes run on up to `threads` threads (RunParallel); the decoding does not
  // depend on it, bit for bit.
  void set_ensemble(std::vector<PolicyNet*> others, int32_t threads = 1);
  // How many times Collect runs the coherence pass (PolicyConfig::coherence_passes; starts at the policy's). The
  // update scores each rollout's recorded draft, so it does not depend on this.
  void set_coherence_passes(int32_t passes) { coherence_passes_ = passes; }
  torch::optim::Adam& optimizer() { return *optimizer_; }
  int32_t threads() const { return threads_; }
  double LearningRate(int64_t iteration) const;
  // Share of the schedule done at `iteration`, in [0, 1]: the learning rate and the demonstration weight follow it.
  double Progress(int64_t iteration) const;

 private:
  GameRollout CollectOneShot(const GameEntry& entry, int32_t samples, bool greedy, std::mt19937_64& rng);
  GameRollout CollectIterative(const GameEntry& entry, int32_t samples, bool greedy, std::mt19937_64& rng);
  PpoLoss Loss(const GameRollout& rollout) const;
  // Update's body; `group` may be null (one process).
  Expected<UpdateStats> RunUpdate(std::vector<GameRollout>& rollouts, int64_t iteration, std::mt19937_64& rng,
                                  ProcessGroup* group);

  PolicyNet* net_;
  std::vector<PolicyNet*> ensemble_;  // set_ensemble's `others` (empty: net_ alone decodes)
  int32_t ensemble_threads_ = 1;
  PpoConfig config_;
  int64_t total_iterations_;
  int32_t threads_;
  int32_t coherence_passes_;
  // The behaviour-cloning weight's share left at the current update (1 - Progress), set by each update; the
  // weight is the game's demonstration_coef (else ppo.demonstration_coef) times it.
  double demonstration_decay_ = 0.0;
  std::unique_ptr<torch::optim::Adam> optimizer_;
};

}  // namespace devplace
