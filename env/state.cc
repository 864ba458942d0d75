#include "env/state.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>

#include "core/check.h"
#include "env/game.h"

namespace devplace {

PlacementState::PlacementState(PlacementState&&) noexcept = default;
PlacementState& PlacementState::operator=(PlacementState&&) noexcept = default;
PlacementState::~PlacementState() = default;

PlacementState::PlacementState(std::shared_ptr<const PlacementGame> game, uint64_t seed)
    : game_(std::move(game)), seed_(seed) {
  const PlacementGame& g = *game_;
  placement_.assign(g.num_groups(), -1);
  memory_load_.assign(g.num_devices(), 0);
  compute_load_.assign(g.num_devices(), 0.0);
  mask_.assign(g.num_actions(), 0);
  if (g.kind() == MdpKind::kIterative) InitIterative();
  RefreshMask();
}

MdpKind PlacementState::kind() const { return game_->kind(); }

void PlacementState::InitIterative() {
  const PlacementGame& g = *game_;
  const int32_t num_dev = g.num_devices();
  std::mt19937_64 rng(seed_);
  for (int32_t grp = 0; grp < g.num_groups(); ++grp) {
    int32_t d = 0;
    switch (g.config().initial_placement) {
      case InitialPlacement::kSingle: d = g.reference_device(); break;
      case InitialPlacement::kRoundRobin: d = grp % num_dev; break;
      case InitialPlacement::kRandom: d = static_cast<int32_t>(rng() % static_cast<uint64_t>(num_dev)); break;
    }
    Place(grp, d);
  }
  // The step's change list, sized for the largest group, each entry with room for the largest config an action
  // writes (one device; with split actions every device and a degree per dim of the graph's largest op), so that
  // steps do not allocate.
  size_t largest = 0;
  for (const std::vector<OpId>& members : g.groups().members) largest = std::max(largest, members.size());
  size_t devices = 1, degrees = 0;
  if (g.num_actions() > num_dev) {
    devices = static_cast<size_t>(num_dev);
    for (OpId op = 0; op < g.graph().num_ops(); ++op) degrees = std::max(degrees, g.graph().op(op).dims.size());
  }
  changes_.resize(largest);
  for (auto& change : changes_) {
    change.second.devices.reserve(devices);
    change.second.degrees.reserve(degrees);
  }
  Expected<LentDeltaSimulator> delta = g.LendDeltaSimulator(placement_);
  DEVPLACE_CHECK(delta.ok(), delta.ok() ? "" : delta.error().message);
  delta_ = std::move(*delta);
  RefreshTimeFromDelta();
}

void PlacementState::RefreshTimeFromDelta() {
  // The memory peaks only of the devices that may run out of memory (DeltaSimulator::step_cost).
  cost_ = delta_->step_cost();
  evaluated_ = true;
}

void PlacementState::Load(int32_t group, int32_t action, int sign) {
  const PlacementGame& g = *game_;
  if (g.is_split(action)) {
    for (DeviceId d : g.candidate(action - g.num_devices()).devices) {
      memory_load_[d] += sign * g.split_memory_bytes(group, action);
      compute_load_[d] += sign * g.split_seconds(group, action, d);
    }
    return;
  }
  memory_load_[action] += sign * g.group_memory_bytes(group);
  compute_load_[action] += sign * g.group_seconds(group, action);
}

void PlacementState::Place(int32_t group, int32_t action) {
  if (placement_[group] >= 0) Load(group, placement_[group], -1);
  placement_[group] = action;
  Load(group, action, +1);
}

int64_t PlacementState::OwnMemory(int32_t group, DeviceId device) const {
  const PlacementGame& g = *game_;
  const int32_t action = placement_[group];
  if (g.is_split(action)) return g.split_uses(action, device) ? g.split_memory_bytes(group, action) : 0;
  return action == device ? g.group_memory_bytes(group) : 0;
}

void PlacementState::RefreshMask() {
  const PlacementGame& g = *game_;
  if (IsTerminal()) {
    std::fill(mask_.begin(), mask_.end(), uint8_t{0});
    return;
  }
  const int32_t num_dev = g.num_devices(), num_act = g.num_actions();
  const bool memory_aware = g.config().memory_aware_mask;
  std::vector<int64_t>& free = free_;  // per device: capacity minus the other groups' estimated memory
  free.resize(num_dev);
  const int64_t need = g.group_memory_bytes(current_);
  bool any = false;
  for (DeviceId d = 0; d < num_dev; ++d) {
    free[d] = g.topology().device(d).memory_bytes - (memory_load_[d] - OwnMemory(current_, d));
    mask_[d] = !memory_aware || need <= free[d] ? 1 : 0;
    any = any || mask_[d];
  }
  for (int32_t a = num_dev; a < num_act; ++a) {
    uint8_t legal = g.can_split(current_, a) ? 1 : 0;
    if (legal && memory_aware) {
      const int64_t split_need = g.split_memory_bytes(current_, a);
      for (DeviceId d : g.candidate(a - num_dev).devices) legal = legal && split_need <= free[d];
    }
    mask_[a] = legal;
    any = any || legal;
  }
  if (!any) {
    std::fill(mask_.begin(), mask_.begin() + num_dev, uint8_t{1});
    for (int32_t a = num_dev; a < num_act; ++a) mask_[a] = g.can_split(current_, a) ? 1 : 0;
  }
}

void PlacementState::Advance() {
  ++steps_;
  current_ = current_ + 1 < game_->num_groups() ? current_ + 1 : -1;
  RefreshMask();
}

void PlacementState::EvaluateOneShot() {
  const PlacementGame& g = *game_;
  Expected<StepCost> cost = g.EvaluateCost(placement_);
  DEVPLACE_CHECK(cost.ok(), cost.ok() ? "" : cost.error().message);
  cost_ = *cost;
  evaluated_ = true;
}

Status PlacementState::ApplyAction(int32_t action) {
  const PlacementGame& g = *game_;
  if (IsTerminal()) return Error{"env: action " + std::to_string(action) + " on a terminal state"};
  auto where = [&] {
    return "env: group " + std::to_string(current_) + " (op '" +
           g.graph().op(g.groups().members[current_].front()).name + "'): ";
  };
  if (action < 0 || action >= g.num_actions())
    return Error{where() + "device " + std::to_string(action) + " is not in topology '" + g.topology().name() +
                 "' (" + std::to_string(g.num_devices()) + " devices)"};
  if (!mask_[action]) {
    if (g.is_split(action))
      return Error{where() + "split " + g.candidate(action - g.num_devices()).name +
                   " is not legal (the group cannot take it, or its estimated memory does not fit)"};
    return Error{where() + "device '" + g.topology().device(action).name +
                 "' is not legal (the group's estimated memory does not fit)"};
  }
  double reward = 0.0;
  if (g.kind() == MdpKind::kIterative) {
    const double before = penalised_time();
    if (placement_[current_] != action) {
      const std::vector<OpId>& members = g.groups().members[current_];
      if (changes_.size() < members.size()) changes_.resize(members.size());  // a clone's first step
      for (size_t k = 0; k < members.size(); ++k) {
        changes_[k].first = members[k];
        g.ActionConfigInto(members[k], action, &changes_[k].second);
      }
      Status s = delta_->SetConfigs({changes_.data(), members.size()});
      DEVPLACE_CHECK(s.ok(), s.ok() ? "" : s.error().message);
      Place(current_, action);
      RefreshTimeFromDelta();
    }
    reward = (before - penalised_time()) / g.reference_time();
  } else {
    Place(current_, action);
    if (current_ + 1 == g.num_groups()) {
      EvaluateOneShot();
      reward = -std::sqrt(penalised_time() / g.reference_time());
    }
  }
  last_reward_ = reward;
  return_ += reward;
  Advance();
  return Status::Ok();
}

Status PlacementState::ApplyPlacement(std::span<const int32_t> device_per_group) {
  const PlacementGame& g = *game_;
  if (g.kind() != MdpKind::kOneShot) return Error{"env: ApplyPlacement needs the one-shot MDP"};
  if (steps_ != 0) return Error{"env: ApplyPlacement needs a state with no group placed yet"};
  if (static_cast<int32_t>(device_per_group.size()) != g.num_groups())
    return Error{"env: placement has " + std::to_string(device_per_group.size()) + " devices but the graph has " +
                 std::to_string(g.num_groups()) + " groups"};
  PlacementState next = Clone();
  for (int32_t grp = 0; grp < g.num_groups(); ++grp) {
    Status s = next.ApplyAction(device_per_group[grp]);
    if (!s) return Error{"placement[" + std::to_string(grp) + "]: " + s.error().message};
  }
  *this = std::move(next);
  return Status::Ok();
}

void PlacementState::FillObservation(Observation* obs) const {
  const PlacementGame& g = *game_;
  const int32_t num_grp = g.num_groups(), num_dev = g.num_devices();
  obs->num_nodes = num_grp;
  obs->node_feature_dim = kNodeFeatureDim;
  obs->node_features.assign(g.static_node_features().begin(), g.static_node_features().end());
  for (int32_t grp = 0; grp < num_grp; ++grp) {
    float* row = &obs->node_features[static_cast<size_t>(grp) * kNodeFeatureDim];
    row[kNodeIsCurrent] = grp == current_ ? 1.0f : 0.0f;
    row[kNodeIsPlaced] = placement_[grp] >= 0 ? 1.0f : 0.0f;
  }
  obs->edge_src.assign(g.edge_src().begin(), g.edge_src().end());
  obs->edge_dst.assign(g.edge_dst().begin(), g.edge_dst().end());
  obs->num_devices = num_dev;
  obs->device_feature_dim = kDeviceFeatureDim;
  obs->device_features.assign(g.static_device_features().begin(), g.static_device_features().end());
  for (DeviceId d = 0; d < num_dev; ++d) {
    float* row = &obs->device_features[static_cast<size_t>(d) * kDeviceFeatureDim];
    row[kDeviceComputeLoad] = static_cast<float>(std::min(compute_load_[d] / g.total_reference_seconds(), 4.0));
    row[kDeviceMemoryLoad] = static_cast<float>(
        std::min(static_cast<double>(memory_load_[d]) / static_cast<double>(g.topology().device(d).memory_bytes), 4.0));
  }
  obs->placement.assign(placement_.begin(), placement_.end());
  obs->current_node = current_;
  obs->legal_mask.assign(mask_.begin(), mask_.end());
}

PlacementState PlacementState::Clone() const {
  PlacementState copy(game_, seed_, CloneTag{});
  copy.current_ = current_;
  copy.steps_ = steps_;
  copy.placement_ = placement_;
  copy.memory_load_ = memory_load_;
  copy.compute_load_ = compute_load_;
  copy.mask_ = mask_;
  copy.last_reward_ = last_reward_;
  copy.return_ = return_;
  copy.evaluated_ = evaluated_;
  copy.cost_ = cost_;
  if (delta_) {
    Expected<LentDeltaSimulator> delta = game_->LendDeltaSimulator(placement_);
    DEVPLACE_CHECK(delta.ok(), delta.ok() ? "" : delta.error().message);
    copy.delta_ = std::move(*delta);
  }
  return copy;
}

Strategy PlacementState::strategy() const {
  for (int32_t d : placement_) DEVPLACE_CHECK(d >= 0, "strategy() needs a complete placement");
  return game_->StrategyFromGroups(placement_);
}

double PlacementState::step_time() const {
  DEVPLACE_CHECK(evaluated_, "step_time() needs a complete placement");
  return cost_.step_time;
}

bool PlacementState::oom() const {
  DEVPLACE_CHECK(evaluated_, "oom() needs a complete placement");
  return cost_.oom;
}

double PlacementState::penalised_time() const {
  DEVPLACE_CHECK(evaluated_, "penalised_time() needs a complete placement");
  return game_->PenalisedTime(cost_);
}

const StepCost& PlacementState::cost() const {
  DEVPLACE_CHECK(evaluated_, "cost() needs a complete placement");
  return cost_;
}

}  // namespace devplace
