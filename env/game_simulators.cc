// PlacementGame's simulators: the strategy of a placement, Evaluate / EvaluateCost on the game's pooled
// simulators, and the delta simulators it lends to iterative states (LendDeltaSimulator, LentDeltaSimulator).
#include <mutex>
#include <string>
#include <utility>

#include "core/check.h"
#include "env/game.h"

namespace devplace {

Expected<LentDeltaSimulator> PlacementGame::LendDeltaSimulator(std::span<const int32_t> device_per_group) const {
  if (static_cast<int32_t>(device_per_group.size()) != num_groups())
    return Error{"delta simulator: placement has " + std::to_string(device_per_group.size()) + " entries for " +
                 std::to_string(num_groups()) + " groups"};
  PooledDeltaSimulator lent;
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    if (!delta_pool_.empty()) {
      lent = std::move(delta_pool_.back());
      delta_pool_.pop_back();
    }
  }
  FillStrategy(device_per_group, &lent.strategy);
  if (lent.sim != nullptr) {
    if (Status s = lent.sim->SetStrategy(lent.strategy); !s) {
      TakeBack(std::move(lent.sim), std::move(lent.strategy));
      return s.error();
    }
  } else {
    Expected<DeltaSimulator> created =
        DeltaSimulator::Create(*graph_, *topology_, lent.strategy, cost_, config_.sim);
    if (!created) return created.error();
    lent.sim = std::make_unique<DeltaSimulator>(std::move(*created));
  }
  return LentDeltaSimulator(shared_from_this(), std::move(lent.sim), std::move(lent.strategy));
}

size_t PlacementGame::idle_delta_simulators() const {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  return delta_pool_.size();
}

void PlacementGame::TakeBack(std::unique_ptr<DeltaSimulator> delta, Strategy strategy) const {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  if (delta_pool_.size() < kIdleDeltaSimulators) delta_pool_.push_back({std::move(delta), std::move(strategy)});
}  // (a simulator the pool does not keep is freed here, after the lock)

void LentDeltaSimulator::GiveBack() noexcept {
  if (sim_ != nullptr && game_ != nullptr) {
    try {
      game_->TakeBack(std::move(sim_), std::move(strategy_));
    } catch (...) {
      // The pool is a cache: a simulator it cannot keep (no memory for the list) is simply freed.
    }
  }
  sim_.reset();
  game_.reset();
}

Strategy PlacementGame::StrategyFromGroups(std::span<const int32_t> device_per_group) const {
  DEVPLACE_CHECK(static_cast<int32_t>(device_per_group.size()) == num_groups(), "one device per group");
  Strategy strategy;
  FillStrategy(device_per_group, &strategy);
  return strategy;
}

void PlacementGame::FillStrategy(std::span<const int32_t> device_per_group, Strategy* strategy) const {
  strategy->configs.resize(static_cast<size_t>(graph_->num_ops()));
  for (OpId op = 0; op < graph_->num_ops(); ++op)
    ActionConfigInto(op, device_per_group[groups_.group_of_op[op]], &strategy->configs[op]);
}

Status PlacementGame::CheckPlacement(std::span<const int32_t> device_per_group) const {
  if (static_cast<int32_t>(device_per_group.size()) != num_groups())
    return Error{"env: placement has " + std::to_string(device_per_group.size()) + " devices but the graph has " +
                 std::to_string(num_groups()) + " groups"};
  for (size_t g = 0; g < device_per_group.size(); ++g) {
    const int32_t a = device_per_group[g];
    if (a < 0 || a >= num_actions())
      return Error{"env: placement[" + std::to_string(g) + "]: device " + std::to_string(a) +
                   " is not in topology '" + topology_->name() + "' (" + std::to_string(num_devices()) +
                   " devices)"};
    if (is_split(a) && !can_split(static_cast<int32_t>(g), a))
      return Error{"env: placement[" + std::to_string(g) + "]: group (op '" +
                   graph_->op(groups_.members[g].front()).name + "') cannot take split " +
                   candidates_[a - num_devices()].name};
  }
  return Status::Ok();
}

template <class Result, class RunFn>
Expected<Result> PlacementGame::Simulated(std::span<const int32_t> device_per_group, RunFn run) const {
  if (Status s = CheckPlacement(device_per_group); !s) return s.error();
  PooledSimulator pooled;
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    if (!pool_.empty()) {
      pooled = std::move(pool_.back());
      pool_.pop_back();
    }
  }
  if (pooled.sim == nullptr) {
    Expected<Simulator> created = Simulator::Create(*graph_, *topology_, cost_, config_.sim);
    if (!created) return created.error();
    pooled.sim = std::make_unique<Simulator>(std::move(*created));
  }
  FillStrategy(device_per_group, &pooled.strategy);  // over the one this simulator ran last
  Expected<Result> result = run(*pooled.sim, pooled.strategy);
  std::lock_guard<std::mutex> lock(pool_mutex_);
  pool_.push_back(std::move(pooled));
  return result;
}

Expected<SimResult> PlacementGame::Evaluate(std::span<const int32_t> device_per_group) const {
  return Simulated<SimResult>(device_per_group, [](Simulator& sim, const Strategy& s) { return sim.Run(s); });
}

Expected<StepCost> PlacementGame::EvaluateCost(std::span<const int32_t> device_per_group) const {
  return Simulated<StepCost>(device_per_group, [](Simulator& sim, const Strategy& s) { return sim.RunCost(s); });
}

}  // namespace devplace
