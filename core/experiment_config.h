// A learning experiment (configs/experiments/*.yaml): which graphs a policy trains and is evaluated on, on
// which machines, the environment, the policy architecture and the PPO settings. Also the JSON sidecar of a
// training checkpoint. Format in docs/learning.md. LibTorch-free typed structs; yaml-cpp and nlohmann-json stay
// behind these readers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace devplace {

// One graph: exactly one of a family member (family, seed, optional target_ops), a zoo model (zoo, optional
// batch) or a graph file.
struct GraphSource {
  std::string family;
  uint64_t seed = 0;
  int32_t target_ops = 0;
  std::string zoo;
  int64_t batch = 0;
  std::string file;

  // A short label, e.g. "nmt-s3-n300", "gnmt2", or the file's stem.
  std::string label() const;
};

// The `env:` section; names are those of env/config.h (checked by the learning library, which owns EnvConfig).
struct ExperimentEnv {
  std::string kind = "one_shot";          // one_shot | iterative
  std::string initial_placement = "single";
  double oom_penalty = 1.0;
  bool memory_aware_mask = true;
  bool data_parallel_action = false;      // an extra action: split the group over all devices
  int64_t segment_bytes = int64_t{4} << 20;
  int32_t max_segments = 8;
  double optimizer_state_factor = 2.0;
};

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
  // Not a `policy:` key: copied from env.data_parallel_action by the reader, so that the output layer also
  // scores the environment's data-parallel action.
  bool data_parallel_action = false;
};

// The `ppo:` section.
struct PpoConfig {
  int32_t iterations = 100;
  int32_t graphs_per_iteration = 4;  // training games sampled per iteration
  int32_t samples_per_graph = 16;    // episodes per sampled game
  int32_t epochs = 4;                // passes over the iteration's data
  int32_t minibatches = 2;           // per epoch (the iteration's graphs are split among them)
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
  // The policy PPO samples and trains is softmax(logits / temperature): above 1 it explores more (fine-tuning a
  // policy whose training made it nearly deterministic), below 1 less. Greedy placement is unaffected.
  double temperature = 1.0;
};

struct ExperimentConfig {
  std::string name;
  uint64_t seed = 0;
  std::vector<std::string> topologies;  // topology YAML paths (resolved); games = graphs x topologies
  std::vector<GraphSource> train;       // training graphs
  std::vector<GraphSource> eval;        // held-out graphs, evaluated zero-shot during training
  ExperimentEnv env;
  PolicyConfig policy;
  PpoConfig ppo;
  int32_t eval_every = 10;        // iterations between held-out evaluations (0: only at the end)
  int32_t checkpoint_every = 10;  // iterations between checkpoints (the last iteration is always saved)
  int32_t threads = 1;            // intra-op threads of the policy
  std::string base_dir;           // directory relative paths were resolved against
};

// Reads an experiment. Graph lists accept single entries and seed ranges:
//   train: [{family: nmt, seeds: {from: 0, count: 16}, target_ops: 300}, {zoo: gnmt2}]
// Unknown keys are rejected; errors read "<file>: <field>: <reason>".
Expected<ExperimentConfig> ReadExperimentConfig(const std::string& path);
Expected<ExperimentConfig> ExperimentConfigFromYaml(const std::string& text, const std::string& source,
                                                    const std::string& base_dir);

// The JSON sidecar of a training checkpoint (RUN/ckpt/state.json).
struct CheckpointMeta {
  int64_t iteration = 0;           // iterations completed
  int64_t evaluations = 0;         // simulator evaluations so far
  double wall_seconds = 0.0;       // training wall time so far
  std::string rng_state;           // the trainer's std::mt19937_64, as written by operator<<
  std::string config_yaml;         // the experiment file's text
  std::string config_source;       // its path when training started
  std::string base_dir;            // the directory its relative paths were resolved against
  std::string model_file;          // parameters, relative to the checkpoint directory
  std::string optimizer_file;      // optimizer state, relative to the checkpoint directory (may be empty)
  std::vector<double> best_relative_times;  // per training game: best T / T_ref seen so far
};

std::string CheckpointMetaToJson(const CheckpointMeta& meta);
Expected<CheckpointMeta> CheckpointMetaFromJson(const std::string& text, const std::string& source);

}  // namespace devplace
