// Demonstrations: heuristic placements of a game, for policies to learn from (LibTorch-free part of devplace_learn).
//
// A demonstration is the placement, in the game's colocation groups, that the best of a few search algorithms
// (for example the human expert and m-ETF) finds. During PPO training on the one-shot MDP it is replayed as one
// of a game's sampled episodes (with the policy's own log-probabilities), so that it is reinforced exactly when
// it beats the policy's samples (advantage > 0) and pushed away when the samples have overtaken it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "env/game.h"

namespace devplace {

// A game's demonstration: the action of every group (a device, or the data-parallel action) and the time it is
// charged.
struct Demonstration {
  std::vector<int32_t> device_per_group;
  double penalised_time = 0.0;
  std::string algorithm;  // which of the algorithms found it
  int32_t projected_groups = 0;  // SOAP: split groups whose config no action expresses exactly (projected)
};

// Runs each of `algorithms` (names in the search registry) on the game's graph and machine with the game's cost
// model, seed `seed`, and returns the placement with the lowest penalised time (ties: the earlier algorithm). A
// group whose members run on one device takes that device; when the game has the data-parallel action, a group
// whose members are all configured as that action configures them (PlacementGame::ActionConfig) takes it, so
// the `data-parallel` baseline can be demonstrated. In a SOAP game (env.action_space soap) any split group takes
// the split action equal to it for every member, else it is projected: the candidate with the leader's device
// set and the kind of its most-split dimension, else that device set with another kind, else the leader's first
// device (so Tofu-DP's multi-dimensional splits are demonstrated approximately, and the demonstration is priced
// as projected). Outside SOAP any other split is an error naming the algorithm, as is an empty list.
Expected<Demonstration> MakeDemonstration(const PlacementGame& game, const std::vector<std::string>& algorithms,
                                          uint64_t seed);

// Improves a demonstration of `game` by coordinate descent in the game's action space: `rounds` passes over the
// `groups` groups with the largest compute time on the reference device (heaviest first, lower id on ties); each
// of them tries every device and every split action it can take, the other groups fixed, and keeps the action
// with the lowest penalised time when it is strictly lower than the current one. Deterministic; a pass that
// changes nothing ends the descent. This is how a teacher combines whole-group placements (the expert's model
// parallelism) with a split of its heaviest groups (e.g. a softmax head split along the batch over the devices
// the expert leaves idle), which no single search algorithm of the registry returns. When the time improves,
// `algorithm` gets the suffix "+refine". Returns the number of evaluations; errors when a simulation fails.
Expected<int64_t> RefineDemonstration(const PlacementGame& game, int32_t groups, int32_t rounds, Demonstration* d);

}  // namespace devplace
