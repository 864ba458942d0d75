// Settings of a placement environment (one typed config with defaults, validated before use).
//
// Experiment YAML files' `env:` section is read straight into EnvConfig by config/experiment_config.cc (env/ only
// receives this typed struct). Keys and values:
//   env:
//     kind: iterative | one_shot            -> EnvConfig::kind (ParseMdpKind)
//     initial_placement: single | round_robin | random
//                                           -> EnvConfig::initial_placement (ParseInitialPlacement)
//     oom_penalty: 1.0                      -> EnvConfig::oom_penalty
//     memory_aware_mask: true               -> EnvConfig::memory_aware_mask
//     data_parallel_action: false           -> EnvConfig::data_parallel_action
//     action_space: devices | soap          -> EnvConfig::action_space (ParseActionSpace)
//     sim: {segment_bytes: 4194304, max_segments: 8, optimizer_state_factor: 2.0}
//                                           -> EnvConfig::sim (sim/simulator.h SimOptions; keep_timeline is
//                                              not an experiment key)
// The reader rejects unknown keys; ValidateEnvConfig checks the values.
#pragma once

#include <string_view>
#include <vector>

#include "core/mesh.h"
#include "core/status.h"
#include "sim/simulator.h"

namespace devplace {

// The two MDPs: Placeto's iterative improvement and GDP's one-shot placement (docs/environments.md).
enum class MdpKind { kIterative, kOneShot };

// The full placement an iterative episode starts from.
enum class InitialPlacement {
  kSingle,      // every group on the game's reference device (the fastest single device)
  kRoundRobin,  // group g on device g % num_devices
  kRandom,      // each group on a device drawn uniformly, from the state's seed
};

// What an action can say about a group (docs/environments.md).
enum class ActionSpace {
  kDevices,  // one device (plus the data-parallel action when EnvConfig::data_parallel_action is set)
  kSoap,     // one device, or a split over a device subset along one dimension kind (env/candidates.h)
};

struct EnvConfig {
  MdpKind kind = MdpKind::kIterative;
  // Iterative MDP only: where the groups sit before the first step.
  InitialPlacement initial_placement = InitialPlacement::kSingle;
  // A placement that runs out of memory is charged step_time + oom_penalty x reference_time x (1 + overage)
  // (sim/objective.h; >= 0, finite).
  double oom_penalty = 1.0;
  // When true, a device is legal for a group only if the group's estimated memory fits in the device's
  // remaining estimated memory (all devices are legal when none fits); when false every device is legal.
  bool memory_aware_mask = true;
  // When true, a state has one more action than the machine has devices: action num_devices() splits the group
  // over all devices (core/strategy.h SplitConfig; data parallelism for ops with a sample dimension: weights
  // replicated, gradients all-reduced). It is legal for groups whose every member can be split that many ways.
  bool data_parallel_action = false;
  // kSoap: actions are the devices followed by env/candidates.h SoapCandidates(topology, meshes) (which include
  // the all-devices sample split, so data_parallel_action must stay false).
  ActionSpace action_space = ActionSpace::kDevices;
  // kSoap only, not an experiment key (set when the policy reads the star columns, policy.candidate_features 22):
  // compute the star reshard estimates and candidate feature columns 19-21 (PlacementGame::
  // split_star_reshard_seconds); when false they are 0, and a game does not pay their cost (about 0.5 s of CPU
  // for a 50k-op graph on 8 GPUs).
  bool star_reshard = false;
  // kSoap only, not an experiment key: meshes the topology declares (core/mesh.h); their axes add device subsets.
  std::vector<Mesh> meshes;
  // Options of every simulation the environment runs.
  SimOptions sim;
  // Not an experiment key: threads PlacementGame::Create fills the split candidates' tables and simulates their
  // uniform splits on (<= 0: the machine's cores). The game is the same whatever the count.
  int32_t build_threads = 0;
};

// Checks the values; errors name the field, e.g. "env.oom_penalty: must be >= 0 and finite".
Status ValidateEnvConfig(const EnvConfig& config);

// "iterative" / "one_shot".
std::string_view ToString(MdpKind kind);
// "devices" / "soap".
std::string_view ToString(ActionSpace space);
// "single" / "round_robin" / "random".
std::string_view ToString(InitialPlacement placement);
// Parse the names produced by ToString; return false on an unknown name (the output is then unchanged).
bool ParseMdpKind(std::string_view text, MdpKind* kind);
bool ParseInitialPlacement(std::string_view text, InitialPlacement* placement);
bool ParseActionSpace(std::string_view text, ActionSpace* space);

}  // namespace devplace
