// A learning experiment (configs/experiments/*.yaml): which graphs a policy trains and is evaluated on, on which
// machines, the environment, the policy architecture and the PPO settings. Format in docs/learning.md. The `env:`
// section is read straight into env/'s EnvConfig (its `sim:` part into sim/'s SimOptions); the policy and PPO
// sections are the learning library's schema, kept here, LibTorch-free, so that readers, the trainer and the
// placer share one definition.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "datasets/graph_source.h"
#include "env/config.h"
#include "env/observation.h"

namespace devplace {

// The `policy:` section.
struct PolicyConfig {
  std::string kind = "transformer";  // transformer (one-shot MDP) | placeto (iterative MDP)
  int32_t hidden = 64;               // embedding width
  int32_t sage_layers = 2;           // GraphSAGE layers
  int32_t transformer_layers = 2;    // transformer: encoder layers
  int32_t heads = 4;                 // transformer: attention heads (divides hidden)
  int32_t feedforward = 128;         // transformer: feed-forward width
  int32_t segment = 64;              // transformer: nodes per segment (memory = the previous segment)
  int32_t max_devices = 8;           // devices the output layer can address
  // SOAP: how many of the candidate feature columns (env/observation.h CandidateFeature) the policy reads, the
  // first kCandidateFeatureDimV1 (what policies trained before the uniform columns read, the default, so their
  // checkpoints keep loading), the first kCandidateFeatureDimV2 (before the star columns: models/soap-uniform,
  // models/soap-ring) or all kCandidateFeatureDim.
  int32_t candidate_features = kCandidateFeatureDimV1;
  // Transformer only: a second split head over the groups' position in the layer sequence (the cumulative compute
  // share of the layers in data-flow order, core/colocation.h GroupLayerIndex), gated per graph, and that position
  // as one more GraphSAGE input; it lets the policy place contiguous runs of layers on devices as the expert does,
  // also where unrolling interleaves the layers in topological order (agents/learned/policy.h). Off by default so
  // that earlier policies keep loading.
  bool layer_split = false;
  // Transformer only: a second decoding pass. Each group's logits add, per action kind (device, split), a weight
  // the policy computes for that group times the share of its neighbours (group edges, both directions) whose
  // first-pass action is that action: a small group can follow what its neighbours chose, which independent
  // per-group choices cannot express (agents/learned/policy.h TransformerPlacer::Cohere). Off by default so that
  // earlier policies keep loading.
  bool coherence = false;
  // With coherence: how many times the second pass runs, each on the previous pass's actions (1: once, on the
  // first pass's). Only the last pass's log-probabilities are trained; the one before it is recorded as the
  // episode's draft (agents/learned/learner.h GameRollout::first_actions).
  int32_t coherence_passes = 1;
  // Transformer only, with coherence: the second pass also adds, per group and action, a weight the policy
  // computes for that group times the resharding the action would cost against its neighbours' first-pass actions
  // (env/draft_cost.h; log1p of the seconds in units of the mean group's compute time). A small group sees that
  // splitting next to a whole neighbour scatters and gathers its tensors. Off by default so that earlier policies
  // keep loading.
  bool draft_cost = false;
  // Transformer only: each group's logits add two weights the policy computes for that group, one at the action
  // the human-expert heuristic's placement gives the group (agents/expert_placer.h), one times the compute the
  // expert puts on each action's devices from the other groups (agents/learned/policy.h AddExpertHint): the policy
  // can learn where to follow the expert's layer-per-device layout, and which devices it leaves idle. Building a
  // game's tensors then runs the expert (one simulation per device count). Off by default so that earlier
  // policies keep loading.
  bool expert_hint = false;
  // Transformer only, with expert_hint: two more graph-level context inputs (the FiLM layer's, the layer gate's and
  // the value head's): how much faster than the reference device the expert's placement and the best uniform split
  // run (agents/learned/policy.h GameTensors::strategy_context), so that one policy can tell graphs where splitting
  // pays from graphs where only model parallelism does. One more simulation per game. Off by default so that
  // earlier policies keep loading.
  bool strategy_context = false;
  // Not a `policy:` key: copied from env.data_parallel_action by the reader, so that the output layer also
  // scores the environment's data-parallel action.
  bool data_parallel_action = false;
  // Not a `policy:` key either: true when env.action_space is soap, so that the transformer scores the split
  // candidates from their features (agents/learned/policy.h).
  bool soap = false;

  // Field by field: two policies of equal configs read the same inputs and have the same parameters' shapes.
  bool operator==(const PolicyConfig&) const = default;
};

// The `ppo:` section.
struct PpoConfig {
  int32_t iterations = 100;
  int32_t graphs_per_iteration = 4;  // training games sampled per iteration
  int32_t samples_per_graph = 16;    // episodes per sampled game
  int32_t epochs = 4;                // passes over the iteration's data
  int32_t minibatches = 2;           // per epoch (the iteration's graphs are split among them; <= graphs)
  double clip = 0.2;
  double value_coef = 0.5;
  double entropy_coef = 0.01;
  double lr = 1e-3;
  double lr_final = 1e-4;  // learning rate decays linearly from lr to lr_final over the iterations
  double max_grad_norm = 1.0;
  double gamma = 1.0;
  double gae_lambda = 0.95;
  // One-shot MDP only: search algorithms (registry names, plain placements) whose best placement of each training
  // game is replayed as one of its sampled episodes (agents/learned/demonstration.h); empty: none.
  std::vector<std::string> demonstrations;
  // Weight of a cross-entropy term pulling the policy towards the demonstrated devices (behaviour cloning),
  // decaying linearly to 0 over the iterations like the learning rate; 0: the demonstration is only an episode.
  double demonstration_coef = 0.0;
  // With demonstrations: the number of heaviest groups whose actions coordinate descent refines in each training
  // game's demonstration (agents/learned/demonstration.h RefineDemonstration, two passes); 0: none. Training only:
  // fine-tuning replays the unrefined demonstration.
  int32_t demonstration_refine_groups = 0;
  // A saved policy (a checkpoint directory: RUN/ckpt or models/<name>; resolved against the config file's folder)
  // whose parameters a fresh run starts from instead of the seed's random initialisation (warm start); its
  // architecture must equal `policy:`'s (every parameter present with the same shape, else an error naming this
  // key), except that a SOAP policy reading fewer candidate columns is widened (agents/learned/checkpoint.h
  // InitFromSnapshot). Only the parameters are taken: the optimizer, the learning-rate schedule and the RNG start afresh.
  // Ignored on --resume (the run's own checkpoint holds the parameters). Empty: random initialisation.
  std::string init_policy;
  // The policy PPO samples and trains is softmax(logits / temperature): above 1 it explores more (fine-tuning a
  // policy whose training made it nearly deterministic), below 1 less. Greedy placement is unaffected.
  double temperature = 1.0;
  // What a sampled episode's return is compared with to give its advantage. kValue: the value head's estimate of
  // the game (GAE). kGreedy (one-shot MDP only): the return of the policy's greedy placement of the same game,
  // played once per game and iteration (one more simulation), the self-critical baseline of Rennie et al. (2017)
  // and Kool et al. (2019): a sample is reinforced only when it beats the placement that zero-shot use returns,
  // which moves the policy's most likely actions rather than only its samples. The value head is still trained.
  enum class Baseline { kValue, kGreedy };
  Baseline baseline = Baseline::kValue;
};

// A `train:` entry's own teachers: each key given overrides the `ppo:` key of the same name for that entry's games,
// e.g. {zoo: rnnlm2, demonstrations: [expert, tofu-dp], demonstration_refine_groups: 8}; `demonstrations: []`
// gives the entry none. One-shot MDP only.
struct EntryDemonstrations {
  std::optional<std::vector<std::string>> demonstrations;
  std::optional<double> demonstration_coef;
  std::optional<int32_t> demonstration_refine_groups;
};

// What a training game is taught: its entry's overrides over the `ppo:` section.
struct Teachers {
  std::vector<std::string> algorithms;  // empty: no demonstration
  double coef = 0.0;                    // behaviour-cloning weight (decays like ppo.demonstration_coef)
  int32_t refine_groups = 0;
};

struct ExperimentConfig {
  std::string name;
  uint64_t seed = 0;
  std::vector<std::string> topologies;  // topology YAML paths, resolved against base_dir
  std::vector<GraphSource> train;       // training graphs
  std::vector<GraphSource> eval;        // held-out graphs, evaluated zero-shot during training
  // Per `train` source (same order and size): its entry's own teachers (EntryDemonstrations), empty when none.
  std::vector<EntryDemonstrations> train_demonstrations;
  // The environment; the reader defaults `kind` to the one-shot MDP (a transformer policy's).
  EnvConfig env = DefaultExperimentEnv();
  PolicyConfig policy;
  PpoConfig ppo;
  int32_t eval_every = 10;        // iterations between held-out evaluations (0: only at the end)
  int32_t checkpoint_every = 10;  // iterations between checkpoints (the last iteration is always saved)
  int32_t threads = 1;            // intra-op threads of the policy
  // Worker threads that play an iteration's games and compute their PPO losses in parallel (one game per thread
  // at a time, one intra-op thread each when more than one); results do not depend on it.
  int32_t rollout_threads = 1;
  std::string base_dir;           // absolute folder of the config file; relative paths were resolved against it

  // The EnvConfig an experiment starts from when its file has no `env:` section.
  static EnvConfig DefaultExperimentEnv();
  // The teachers of training source `i` (index into `train`).
  Teachers TrainTeachers(size_t i) const;
};

// Reads an experiment. Graph lists accept single entries and seed ranges (config/reader_util.h):
//   train: [{family: nmt, seeds: {from: 0, count: 16}, target_ops: 300}, {zoo: gnmt2}]
// Relative paths are relative to the config file's folder. Unknown keys are rejected; errors read
// "<file>: <field>: <reason>".
Expected<ExperimentConfig> ReadExperimentConfig(const std::string& path);
// The same from text: `source` names it in errors, `base_dir` is what relative paths are resolved against.
Expected<ExperimentConfig> ExperimentConfigFromYaml(const std::string& text, const std::string& source,
                                                    const std::string& base_dir);

}  // namespace devplace
