// The public, LibTorch-free face of devplace_learn: train a placement policy from an experiment config, and
// place graphs with a trained policy (zero-shot, or after fine-tuning within a budget of simulator
// evaluations). Formats, the MDPs and the architecture are described in docs/learning.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distributed/config.h"
#include "config/experiment_config.h"
#include "core/graph.h"
#include "core/mesh.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"
#include "sim/cost_model.h"
#include "sim/simulator.h"

namespace devplace {

// One training iteration, as logged to RUN/log.csv (one row each).
struct TrainIteration {
  int64_t iteration = 0;             // 1-based
  double mean_reward = 0.0;          // mean episode return of the iteration's episodes
  double mean_relative_time = 0.0;   // geometric mean of T / T_ref over the iteration's episodes
  double best_relative_time = 0.0;   // geometric mean over the training games sampled so far of their best T / T_ref
  double entropy = 0.0;              // mean per-action policy entropy (nats)
  double policy_loss = 0.0, value_loss = 0.0, clip_fraction = 0.0, approx_kl = 0.0;
  double learning_rate = 0.0;
  int64_t evaluations = 0;           // simulator evaluations so far (whole run)
  double heldout_relative_time = 0.0;  // geometric mean of the zero-shot T / T_ref on the eval graphs; 0 when not
                                       // evaluated this iteration
  double wall_seconds = 0.0;         // training wall time so far (whole run)
  double rollout_seconds = 0.0;      // wall time of this iteration's rollouts (all ranks done); not logged
  int64_t rollout_placements = 0;    // placements (episodes) sampled in them, over all ranks; not logged
};

// Header and row of RUN/log.csv.
std::string TrainLogHeader();
std::string TrainLogRow(const TrainIteration& it);

struct TrainOptions {
  std::string config_path;  // experiment YAML (ignored with resume: the checkpoint's copy is used)
  std::string run_dir;      // created if missing; holds config.yaml, log.csv, ckpt/
  bool resume = false;      // continue from run_dir/ckpt exactly where it stopped
  std::function<void(const TrainIteration&)> on_iteration;  // may be empty
  std::function<void(const std::string&)> on_message;       // setup messages (may be empty)
  int64_t max_iterations = 0;  // > 0: stop after this many iterations of this call (the run can be resumed)
  // Set with world_size >= 2: this process is one rank of a data-parallel training group (distributed.h). Every
  // rank runs TrainPolicy with the same options; each collects its share of every iteration's games, gradients
  // are summed over the ranks each minibatch, rank 0 alone writes run_dir (the others never touch it) and reads
  // the config or, with resume, the checkpoint, which it sends to the others. Callbacks run on rank 0 only.
  // A rank that dies or stalls longer than the timeout makes the others return an Error naming the step.
  std::optional<DistributedConfig> distributed;
};

struct TrainSummary {
  int64_t iterations = 0;        // completed, whole run
  int64_t evaluations = 0;
  std::string checkpoint_dir;    // run_dir/ckpt
  std::string log_path;          // run_dir/log.csv
  double heldout_relative_time = 0.0;  // last held-out evaluation (0 without eval graphs)
  int32_t rank = 0, world_size = 1;    // this process's place in its training group
};

// Trains (or resumes) a policy; writes log.csv each iteration and checkpoints atomically (model and optimizer
// files, then state.json naming them: a crash leaves the previous checkpoint intact). Errors name the file.
// Each iteration's games and each game's episode seed are drawn from the trainer's RNG whatever the number of
// ranks, so a group of N ranks trains what one process trains (up to the order of floating-point sums), and a
// checkpoint resumes with any number of ranks.
Expected<TrainSummary> TrainPolicy(const TrainOptions& options);

// Placement with a trained policy.
struct PlaceOptions {
  int64_t finetune_evaluations = 0;  // > 0: fine-tune with PPO within this many simulator evaluations
  double max_seconds = 0.0;          // > 0: also stop fine-tuning after this wall time
  uint64_t seed = 0;                 // sampling and fine-tuning randomness
  // > 0: after the greedy placement, sample this many placements from the policy (softmax of its logits over
  // sample_temperature, masked to legal actions, one simulation each) and keep the best by the searches' ranking
  // (fits first, then faster): Placeto/GDP-style best-of-k inference. Fine-tuning, if asked, starts after them.
  int32_t samples = 0;
  double sample_temperature = 0.0;   // (0: the experiment's ppo.temperature, usually 1)
  // Meshes over the target topology whose axis lines add device subsets to the SOAP candidates
  // (env/candidates.h MachineSubsets), as training does with its topologies' `meshes:`. Only for a policy of the
  // SOAP action space (Place returns an error otherwise).
  std::vector<Mesh> meshes;
  // true: also consider the game's fastest uniform split (PlacementGame::uniform_step_time: every group that can
  // takes one sample-kind candidate, e.g. data parallelism over all devices), which the game simulated when it was
  // built (no further evaluation), and keep it when it beats the policy's placements (before fine-tuning, which
  // then starts from it as its best). false: the policy's placements only.
  bool uniform = true;
  // > 0: run the policy's coherence pass this many times (PolicyConfig::coherence_passes) in the greedy, sampled
  // and fine-tuning episodes instead of the policy's own count; only for a policy with the coherence pass (Place
  // returns an error otherwise).
  int32_t coherence_passes = 0;
  int32_t finetune_samples = 0;      // episodes per fine-tuning iteration (0: the experiment's samples_per_graph)
  double finetune_lr = 0.0;          // (0: the experiment's ppo.lr)
  double finetune_temperature = 0.0; // sampling temperature while fine-tuning (0: the experiment's ppo.temperature)
  // Called after each fine-tuning iteration with (evaluations used, best step time so far).
  std::function<void(int64_t, double)> progress;
};

struct PlaceResult {
  Strategy strategy;              // the best placement found (respects colocation groups)
  double step_time = 0.0;         // simulated step time of `strategy`
  bool oom = false;
  double zero_shot_step_time = 0.0;  // of the greedy placement (the policy's most likely action per group)
  bool zero_shot_oom = false;
  double sampled_step_time = 0.0;    // of the best of the greedy and the sampled placements (0 without samples)
  bool sampled_oom = false;
  double uniform_step_time = 0.0;    // of the fastest uniform split (0 without PlaceOptions::uniform or candidates)
  int64_t evaluations = 0;        // simulator evaluations used
  double seconds = 0.0;
  int32_t num_groups = 0;         // colocation groups placed
  int32_t num_actions = 0;        // actions per group: the devices, then the split candidates (if any)
};

// A trained policy loaded from a checkpoint directory (RUN/ckpt or models/<name>), or an ensemble of them: a
// directory whose ensemble.json (config/checkpoint_meta.h EnsembleMeta) names two or more checkpoints of one-shot
// policies with equal policy and environment configs (typically one recipe trained with different seeds). An
// ensemble decodes every group from the mean of its members' log-probabilities over the group's legal actions,
// in every coherence pass (agents/learned/learner.h PpoLearner::set_ensemble). Not thread-safe.
class LearnedPolicy {
 public:
  // Errors: missing or malformed state.json, ensemble.json or parameter file (named); ensemble members that do
  // not read the same inputs.
  static Expected<std::unique_ptr<LearnedPolicy>> Load(const std::string& policy_dir);
  ~LearnedPolicy();

  // Places `graph` on `topology`: zero-shot (the most likely legal device for each group), when asked the best of
  // that and `options.samples` sampled placements, and, when asked, fine-tunes a copy of the policy (of an
  // ensemble, its first member) on this graph and returns the best placement seen. Errors: a topology with more
  // devices than the policy addresses.
  Expected<PlaceResult> Place(const Graph& graph, const Topology& topology, const CostModel& cost,
                              const SimOptions& sim, const PlaceOptions& options);

  const ExperimentConfig& experiment() const;  // of an ensemble: its first member's
  int64_t trained_iterations() const;          // of an ensemble: its first member's
  int32_t ensemble_size() const;               // 1 for a single policy

 private:
  struct Impl;
  explicit LearnedPolicy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The default shipped policy: models/soap-context in the source tree (places and partitions, SOAP action space).
std::string DefaultPolicyDir();

}  // namespace devplace
