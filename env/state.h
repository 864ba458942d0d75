// PlacementState: one episode of a placement MDP (OpenSpiel's State), created by
// PlacementGame::NewInitialState. Both MDPs visit the colocation groups once, in group-id (topological) order;
// each action is a device id for current_node().
//
// Iterative (Placeto): the episode starts from a full initial placement (EnvConfig::initial_placement). Each
// step moves the current group to the chosen device and re-simulates incrementally (DeltaSimulator); the reward
// is (T_prev - T_new) / T_ref, with T the penalised time (PlacementGame::PenalisedTime) and T_ref the game's
// reference_time(). Return() is therefore (T_initial - T_now) / T_ref.
// One-shot (GDP): groups start unplaced and are placed one per step, with reward 0 until the last step, whose
// reward is -sqrt(T / T_ref) for the complete placement (one full simulation).
//
// Actions are the game's num_actions(): device ids, then the split candidates (PlacementGame::candidate: the
// data-parallel action with EnvConfig::data_parallel_action, the SOAP candidates with ActionSpace::kSoap);
// placement() holds the action of each group.
// Legal actions: with EnvConfig::memory_aware_mask, device d is legal when the current group's estimated memory
// fits in d's capacity minus the estimated memory of the other groups placed on d, and a split action when the
// group can take it (PlacementGame::can_split) and its per-device share fits on every device of the subset; when
// no action qualifies, all devices and the split actions the group can take are legal (a policy can never get
// stuck). Without the memory-aware mask every device is legal, and every split action the group can take.
//
// A state is a move-only value (it may own an incremental simulator); Clone() makes an independent copy.
// A state keeps its game alive (shared_ptr). Not thread-safe; distinct states are independent.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/strategy.h"
#include "env/config.h"
#include "env/observation.h"
#include "sim/objective.h"
#include "sim/simulator.h"

namespace devplace {

class PlacementGame;

// A delta simulator lent by a game to an iterative state (PlacementGame::LendDeltaSimulator); it goes back to the
// game's pool when the handle is destroyed or assigned over, so that the next episode reuses its buffers and
// priced ops instead of building a simulator afresh. Move-only; empty when default-constructed or moved from.
class LentDeltaSimulator {
 public:
  LentDeltaSimulator() = default;
  // `strategy`: the list the game wrote the simulator's initial strategy into; it goes back to the pool with the
  // simulator, for the next lending to write over.
  LentDeltaSimulator(std::shared_ptr<const PlacementGame> game, std::unique_ptr<DeltaSimulator> sim, Strategy strategy)
      : game_(std::move(game)), sim_(std::move(sim)), strategy_(std::move(strategy)) {}
  LentDeltaSimulator(LentDeltaSimulator&&) noexcept = default;
  LentDeltaSimulator& operator=(LentDeltaSimulator&& other) noexcept {
    if (this != &other) {
      GiveBack();
      game_ = std::move(other.game_);
      sim_ = std::move(other.sim_);
      strategy_ = std::move(other.strategy_);
    }
    return *this;
  }
  ~LentDeltaSimulator() { GiveBack(); }

  explicit operator bool() const { return sim_ != nullptr; }
  DeltaSimulator* operator->() const { return sim_.get(); }
  DeltaSimulator& operator*() const { return *sim_; }

 private:
  void GiveBack() noexcept;  // hands the simulator and the list to the game's pool (env/game_simulators.cc)
  std::shared_ptr<const PlacementGame> game_;
  std::unique_ptr<DeltaSimulator> sim_;
  Strategy strategy_;
};

class PlacementState {
 public:
  PlacementState(PlacementState&&) noexcept;
  PlacementState& operator=(PlacementState&&) noexcept;
  ~PlacementState();

  const PlacementGame& game() const { return *game_; }
  const std::shared_ptr<const PlacementGame>& shared_game() const { return game_; }
  MdpKind kind() const;
  // The seed the episode was created with.
  uint64_t seed() const { return seed_; }

  bool IsTerminal() const { return current_ < 0; }
  // The group the next action places (or moves); -1 when terminal.
  int32_t current_node() const { return current_; }
  // Actions applied so far (the episode has game().num_groups() steps).
  int32_t num_steps() const { return steps_; }

  // One entry per action, 1 = legal for current_node(); all 0 when terminal.
  const std::vector<uint8_t>& LegalActionsMask() const { return mask_; }
  // Places (one-shot) or moves (iterative) current_node() on device `action` (or splits it as the split action
  // says) and advances. Errors, leaving the state unchanged: terminal state, action out of
  // range, action not legal.
  Status ApplyAction(int32_t action);
  // One-shot only, from the initial state: applies a whole placement (device per group, e.g. from a
  // non-autoregressive decoder) as num_groups() actions, each checked against the mask of its step.
  // Errors, leaving the state unchanged: wrong MDP, groups already placed, wrong size, an illegal step (named).
  Status ApplyPlacement(std::span<const int32_t> device_per_group);

  // Reward of the last action (0 before the first).
  double last_reward() const { return last_reward_; }
  // Sum of the rewards so far.
  double Return() const { return return_; }

  // Fills `obs` (see env/observation.h), reusing its buffers.
  void FillObservation(Observation* obs) const;
  // An independent copy (same future under the same actions). Re-simulates for the iterative MDP.
  PlacementState Clone() const;

  // Action per group (a device, or a split action >= num_devices()), -1 for unplaced groups.
  const std::vector<int32_t>& placement() const { return placement_; }
  // True when every group has a device: always for the iterative MDP, at the terminal state for one-shot.
  bool is_complete() const { return evaluated_; }
  // The strategy of the placement (PlacementGame::StrategyFromGroups). Precondition: is_complete().
  Strategy strategy() const;
  // Simulated step time (seconds) and OOM of strategy(), and the penalised time T (PlacementGame::PenalisedTime).
  // Precondition: is_complete().
  double step_time() const;
  bool oom() const;
  double penalised_time() const;
  // The step's cost (sim/objective.h): what searches rank placements by. Precondition: is_complete().
  const StepCost& cost() const;

 private:
  friend class PlacementGame;
  PlacementState(std::shared_ptr<const PlacementGame> game, uint64_t seed);
  struct CloneTag {};
  PlacementState(std::shared_ptr<const PlacementGame> game, uint64_t seed, CloneTag)
      : game_(std::move(game)), seed_(seed) {}
  void Place(int32_t group, int32_t action);  // updates placement and loads
  void Load(int32_t group, int32_t action, int sign);  // adds (+1) or removes (-1) the group's loads
  int64_t OwnMemory(int32_t group, DeviceId device) const;  // the group's estimated bytes on `device` now
  void Advance();                             // moves current_ on and refreshes the mask
  void RefreshMask();
  void InitIterative();
  void EvaluateOneShot();
  void RefreshTimeFromDelta();

  std::shared_ptr<const PlacementGame> game_;
  uint64_t seed_ = 0;
  int32_t current_ = 0;
  int32_t steps_ = 0;
  std::vector<int32_t> placement_;     // per group
  std::vector<int64_t> memory_load_;   // per device: estimated bytes of the groups placed there
  std::vector<double> compute_load_;   // per device: compute seconds of the groups placed there
  std::vector<uint8_t> mask_;
  std::vector<int64_t> free_;          // RefreshMask's scratch (per device)
  double last_reward_ = 0.0;
  double return_ = 0.0;
  bool evaluated_ = false;             // cost_ describes the current complete placement
  StepCost cost_;
  // ApplyAction's list of the current group's ops and their new configs (its first `members` entries), sized by
  // InitIterative for the largest group; the entries keep their device lists from step to step, so that a step
  // does not allocate.
  std::vector<std::pair<OpId, OpConfig>> changes_;
  LentDeltaSimulator delta_;  // iterative MDP only
};

}  // namespace devplace
