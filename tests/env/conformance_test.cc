// One conformance suite run against both MDPs (OpenSpiel's RandomSimTest in spirit): random play, checked
// actions, determinism by seed, clones, returns, consistency with the simulator, and observation shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "env/game.h"
#include "env/state.h"
#include "tests/testing/env_fixtures.h"
#include "sim/simulator.h"

namespace devplace::envtest {
namespace {

struct Case {
  MdpKind kind;
  InitialPlacement initial;
  int scenario;
  bool data_parallel = false;  // EnvConfig::data_parallel_action
  ActionSpace space = ActionSpace::kDevices;
};

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = std::string(ToString(info.param.kind));
  if (info.param.kind == MdpKind::kIterative) {
    name += '_';
    name += ToString(info.param.initial);
  }
  name += '_';
  name += Scenarios()[info.param.scenario].name;
  if (info.param.data_parallel) name += "_dp";
  if (info.param.space == ActionSpace::kSoap) name += "_soap";
  return name;
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  const int n = static_cast<int>(Scenarios().size());
  for (int s = 0; s < n; ++s) {
    for (InitialPlacement p : {InitialPlacement::kSingle, InitialPlacement::kRoundRobin, InitialPlacement::kRandom})
      cases.push_back({MdpKind::kIterative, p, s});
    cases.push_back({MdpKind::kOneShot, InitialPlacement::kSingle, s});
    cases.push_back({MdpKind::kIterative, InitialPlacement::kRoundRobin, s, true});
    cases.push_back({MdpKind::kOneShot, InitialPlacement::kSingle, s, true});
    cases.push_back({MdpKind::kIterative, InitialPlacement::kRandom, s, false, ActionSpace::kSoap});
    cases.push_back({MdpKind::kOneShot, InitialPlacement::kSingle, s, false, ActionSpace::kSoap});
  }
  return cases;
}

bool SameObservation(const Observation& a, const Observation& b) {
  return a.num_nodes == b.num_nodes && a.node_features == b.node_features && a.edge_src == b.edge_src &&
         a.edge_dst == b.edge_dst && a.num_devices == b.num_devices && a.device_features == b.device_features &&
         a.placement == b.placement && a.current_node == b.current_node && a.legal_mask == b.legal_mask;
}

// A trajectory recorded step by step.
struct Trajectory {
  std::vector<int32_t> actions;
  std::vector<double> rewards;
  std::vector<Observation> observations;  // before each action, then the terminal one
  double final_return = 0.0;
};

Trajectory Play(PlacementState state, uint64_t action_seed) {
  std::mt19937_64 rng(action_seed);
  Trajectory t;
  while (!state.IsTerminal()) {
    t.observations.emplace_back();
    state.FillObservation(&t.observations.back());
    const int32_t a = RandomLegalAction(state, rng);
    EXPECT_TRUE(state.ApplyAction(a).ok());
    t.actions.push_back(a);
    t.rewards.push_back(state.last_reward());
  }
  t.observations.emplace_back();
  state.FillObservation(&t.observations.back());
  t.final_return = state.Return();
  return t;
}

class Conformance : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    scenario_ = Scenarios()[GetParam().scenario];
    config_.kind = GetParam().kind;
    config_.initial_placement = GetParam().initial;
    config_.oom_penalty = 2.0;
    config_.data_parallel_action = GetParam().data_parallel;
    config_.action_space = GetParam().space;
    config_.star_reshard = GetParam().space == ActionSpace::kSoap;  // the SOAP cases with every candidate column
    game_ = MakeGame(scenario_, config_);
    ASSERT_NE(game_, nullptr);
    const int32_t candidates = GetParam().space == ActionSpace::kSoap
                                   ? 4 * static_cast<int32_t>(MachineSubsets(*scenario_.topology, {}).size())
                                   : (GetParam().data_parallel ? 1 : 0);
    ASSERT_EQ(game_->num_actions(), game_->num_devices() + candidates);
  }
  // Estimated bytes of group `g` on device `d` under `action` (-1: unplaced).
  int64_t MemoryOn(int32_t g, int32_t action, DeviceId d) const {
    if (action < 0) return 0;
    if (game_->is_split(action)) return game_->split_uses(action, d) ? game_->split_memory_bytes(g, action) : 0;
    return action == d ? game_->group_memory_bytes(g) : 0;
  }
  // Penalised time of a complete placement, recomputed with Simulate.
  double SimulatedT(const Strategy& strategy, double* step_time = nullptr, bool* oom = nullptr) const {
    Expected<SimResult> r = Simulate(*scenario_.graph, *scenario_.topology, strategy, PeakRateCost(), config_.sim);
    EXPECT_TRUE(r.ok()) << r.error().message;
    if (step_time) *step_time = r->step_time;
    if (oom) *oom = r->oom;
    // sim/objective.h: an OOM step is charged oom_penalty x T_ref x (1 + the sum of the devices' overage / capacity).
    double overage = 0.0;
    for (DeviceId d = 0; d < scenario_.topology->num_devices(); ++d)
      overage += static_cast<double>(r->devices[d].overage_bytes) /
                 static_cast<double>(scenario_.topology->device(d).memory_bytes);
    return r->step_time + (r->oom ? config_.oom_penalty * ReferenceTime() * (1.0 + overage) : 0.0);
  }
  // The best single-device step time, recomputed with Simulate.
  double ReferenceTime() const {
    double best = std::numeric_limits<double>::infinity();
    for (DeviceId d = 0; d < scenario_.topology->num_devices(); ++d) {
      Expected<SimResult> r = Simulate(*scenario_.graph, *scenario_.topology,
                                       Strategy::AllOn(scenario_.graph->num_ops(), d), PeakRateCost(), config_.sim);
      EXPECT_TRUE(r.ok());
      best = std::min(best, r->step_time);
    }
    return best;
  }

  Scenario scenario_;
  EnvConfig config_;
  std::shared_ptr<const PlacementGame> game_;
};

TEST_P(Conformance, RandomPlayReachesTerminalWithLegalActionsOnly) {
  for (uint64_t seed = 0; seed < 5; ++seed) {
    PlacementState state = game_->NewInitialState(seed);
    std::mt19937_64 rng(seed + 100);
    int32_t steps = 0;
    while (!state.IsTerminal()) {
      EXPECT_EQ(state.current_node(), steps);  // groups are visited once, in order
      const int32_t a = RandomLegalAction(state, rng);
      ASSERT_TRUE(state.ApplyAction(a).ok());
      EXPECT_EQ(state.placement()[steps], a);
      ++steps;
      ASSERT_LE(steps, game_->num_groups());
    }
    EXPECT_EQ(steps, game_->num_groups());
    EXPECT_EQ(state.num_steps(), steps);
    EXPECT_EQ(state.current_node(), -1);
    EXPECT_TRUE(state.is_complete());
    EXPECT_EQ(std::count(state.LegalActionsMask().begin(), state.LegalActionsMask().end(), 1), 0);
    const double before = state.Return();
    EXPECT_FALSE(state.ApplyAction(0).ok());  // terminal
    EXPECT_EQ(state.Return(), before);
  }
}

TEST_P(Conformance, IllegalActionsAreRejectedAndLeaveTheStateUnchanged) {
  PlacementState state = game_->NewInitialState(3);
  std::mt19937_64 rng(5);
  int masked_seen = 0;
  while (!state.IsTerminal()) {
    Observation before, after;
    state.FillObservation(&before);
    const double ret = state.Return(), last = state.last_reward();
    const int32_t steps = state.num_steps();
    std::vector<int32_t> bad = {-1, game_->num_actions(), game_->num_actions() + 7};
    for (int32_t d = 0; d < game_->num_actions(); ++d)
      if (!state.LegalActionsMask()[d]) bad.push_back(d), ++masked_seen;
    for (int32_t a : bad) {
      Status s = state.ApplyAction(a);
      EXPECT_FALSE(s.ok()) << "action " << a;
      if (!s.ok()) {
        EXPECT_NE(s.error().message.find(Numbered("group ", state.current_node())), std::string::npos);
      }
      state.FillObservation(&after);
      EXPECT_TRUE(SameObservation(before, after));
      EXPECT_EQ(state.Return(), ret);
      EXPECT_EQ(state.last_reward(), last);
      EXPECT_EQ(state.num_steps(), steps);
    }
    ASSERT_TRUE(state.ApplyAction(RandomLegalAction(state, rng)).ok());
  }
  if (scenario_.name == "random_tight") {
    EXPECT_GT(masked_seen, 0) << "the tight scenario must exercise the mask";
  }
}

TEST_P(Conformance, SameSeedGivesIdenticalTrajectories) {
  for (uint64_t seed : {1u, 2u, 99u}) {
    Trajectory a = Play(game_->NewInitialState(seed), seed * 31);
    Trajectory b = Play(game_->NewInitialState(seed), seed * 31);
    EXPECT_EQ(a.actions, b.actions);
    EXPECT_EQ(a.rewards, b.rewards);  // bit for bit
    EXPECT_EQ(a.final_return, b.final_return);
    ASSERT_EQ(a.observations.size(), b.observations.size());
    for (size_t k = 0; k < a.observations.size(); ++k) EXPECT_TRUE(SameObservation(a.observations[k], b.observations[k]));
  }
}

TEST_P(Conformance, ClonesDivergeIndependently) {
  PlacementState state = game_->NewInitialState(8);
  std::mt19937_64 rng(21);
  const int32_t half = game_->num_groups() / 2;
  std::vector<int32_t> prefix;
  for (int32_t k = 0; k < half; ++k) {
    prefix.push_back(RandomLegalAction(state, rng));
    ASSERT_TRUE(state.ApplyAction(prefix.back()).ok());
  }
  PlacementState clone = state.Clone();
  Observation o1, o2;
  state.FillObservation(&o1);
  clone.FillObservation(&o2);
  EXPECT_TRUE(SameObservation(o1, o2));
  EXPECT_EQ(clone.Return(), state.Return());
  EXPECT_EQ(clone.seed(), state.seed());

  // Continue each with different actions; each must equal a fresh replay of its own action sequence.
  Trajectory rest_a = Play(std::move(state), 1000);
  Trajectory rest_b = Play(std::move(clone), 2000);
  for (const Trajectory* rest : {&rest_a, &rest_b}) {
    PlacementState replay = game_->NewInitialState(8);
    for (int32_t a : prefix) ASSERT_TRUE(replay.ApplyAction(a).ok());
    for (size_t k = 0; k < rest->actions.size(); ++k) {
      Observation o;
      replay.FillObservation(&o);
      EXPECT_TRUE(SameObservation(o, rest->observations[k]));
      ASSERT_TRUE(replay.ApplyAction(rest->actions[k]).ok());
      EXPECT_EQ(replay.last_reward(), rest->rewards[k]);
    }
    EXPECT_EQ(replay.Return(), rest->final_return);
  }
}

TEST_P(Conformance, ReturnIsTheSumOfRewards) {
  PlacementState state = game_->NewInitialState(4);
  std::mt19937_64 rng(404);
  double sum = 0.0;
  EXPECT_EQ(state.Return(), 0.0);
  EXPECT_EQ(state.last_reward(), 0.0);
  while (!state.IsTerminal()) {
    ASSERT_TRUE(state.ApplyAction(RandomLegalAction(state, rng)).ok());
    sum += state.last_reward();
    EXPECT_EQ(state.Return(), sum);
  }
}

TEST_P(Conformance, RewardsAgreeWithTheSimulator) {
  const double t_ref = ReferenceTime();
  EXPECT_EQ(game_->reference_time(), t_ref);
  PlacementState state = game_->NewInitialState(6);
  std::mt19937_64 rng(606);
  double t_initial = 0.0;
  if (GetParam().kind == MdpKind::kIterative) {
    ASSERT_TRUE(state.is_complete());
    t_initial = SimulatedT(state.strategy());
    EXPECT_DOUBLE_EQ(state.penalised_time(), t_initial);
  } else {
    EXPECT_FALSE(state.is_complete());
  }
  double t_prev = t_initial;
  while (!state.IsTerminal()) {
    ASSERT_TRUE(state.ApplyAction(RandomLegalAction(state, rng)).ok());
    if (GetParam().kind == MdpKind::kIterative) {
      double step_time = 0.0;
      bool oom = false;
      const double t = SimulatedT(state.strategy(), &step_time, &oom);
      EXPECT_EQ(state.step_time(), step_time);  // delta simulation equals the full simulation bit for bit
      EXPECT_EQ(state.oom(), oom);
      EXPECT_NEAR(state.last_reward(), (t_prev - t) / t_ref, 1e-12 * std::max(1.0, std::abs(t_prev / t_ref)));
      t_prev = t;
    } else if (!state.IsTerminal()) {
      EXPECT_EQ(state.last_reward(), 0.0);
    }
  }
  double step_time = 0.0;
  bool oom = false;
  const double t_final = SimulatedT(state.strategy(), &step_time, &oom);
  EXPECT_EQ(state.step_time(), step_time);
  EXPECT_EQ(state.oom(), oom);
  if (GetParam().kind == MdpKind::kIterative) {
    EXPECT_NEAR(state.Return(), (t_initial - t_final) / t_ref, 1e-9 * std::max(1.0, t_initial / t_ref));
  } else {
    EXPECT_DOUBLE_EQ(state.last_reward(), -std::sqrt(t_final / t_ref));
    EXPECT_DOUBLE_EQ(state.Return(), -std::sqrt(t_final / t_ref));
  }
}

TEST_P(Conformance, ObservationsHaveFixedShapesAndBoundedFeatures) {
  PlacementState state = game_->NewInitialState(2);
  std::mt19937_64 rng(202);
  Observation obs;
  for (;;) {
    state.FillObservation(&obs);
    EXPECT_EQ(obs.node_feature_dim, kNodeFeatureDim);
    EXPECT_EQ(obs.device_feature_dim, kDeviceFeatureDim);
    EXPECT_EQ(obs.num_nodes, game_->num_groups());
    EXPECT_EQ(obs.num_devices, scenario_.topology->num_devices());
    ASSERT_EQ(obs.node_features.size(), static_cast<size_t>(obs.num_nodes) * kNodeFeatureDim);
    ASSERT_EQ(obs.device_features.size(), static_cast<size_t>(obs.num_devices) * kDeviceFeatureDim);
    ASSERT_EQ(obs.placement.size(), static_cast<size_t>(obs.num_nodes));
    EXPECT_EQ(obs.legal_mask, state.LegalActionsMask());
    EXPECT_EQ(obs.current_node, state.current_node());
    EXPECT_EQ(obs.placement, state.placement());
    for (float f : obs.node_features) EXPECT_TRUE(f >= 0.0f && f <= 1.0f) << f;
    for (float f : obs.device_features) EXPECT_TRUE(f >= 0.0f && f <= 4.0f) << f;
    for (int32_t n = 0; n < obs.num_nodes; ++n) {
      const float* row = &obs.node_features[static_cast<size_t>(n) * kNodeFeatureDim];
      EXPECT_EQ(row[kNodeIsCurrent], n == obs.current_node ? 1.0f : 0.0f);
      EXPECT_EQ(row[kNodeIsPlaced], obs.placement[n] >= 0 ? 1.0f : 0.0f);
    }
    // Device loads follow the placement.
    std::vector<double> compute(obs.num_devices, 0.0), memory(obs.num_devices, 0.0);
    for (int32_t n = 0; n < obs.num_nodes; ++n) {
      const int32_t a = obs.placement[n];
      for (DeviceId d = 0; d < obs.num_devices; ++d) {
        if (game_->is_split(a)) compute[d] += game_->split_seconds(n, a, d);
        else if (a == d) compute[d] += game_->group_seconds(n, d);
        memory[d] += static_cast<double>(MemoryOn(n, a, d));
      }
    }
    for (int32_t d = 0; d < obs.num_devices; ++d) {
      const float* row = &obs.device_features[static_cast<size_t>(d) * kDeviceFeatureDim];
      EXPECT_NEAR(row[kDeviceComputeLoad], std::min(compute[d] / game_->total_reference_seconds(), 4.0), 1e-5);
      EXPECT_NEAR(row[kDeviceMemoryLoad],
                  std::min(memory[d] / static_cast<double>(scenario_.topology->device(d).memory_bytes), 4.0), 1e-5);
    }
    ASSERT_EQ(obs.edge_src.size(), obs.edge_dst.size());
    for (size_t k = 0; k < obs.edge_src.size(); ++k) {
      EXPECT_NE(obs.edge_src[k], obs.edge_dst[k]);
      EXPECT_TRUE(obs.edge_src[k] >= 0 && obs.edge_src[k] < obs.num_nodes);
      EXPECT_TRUE(obs.edge_dst[k] >= 0 && obs.edge_dst[k] < obs.num_nodes);
      if (k > 0) {
        EXPECT_LT(std::make_pair(obs.edge_src[k - 1], obs.edge_dst[k - 1]),
                  std::make_pair(obs.edge_src[k], obs.edge_dst[k]));
      }
    }
    if (state.IsTerminal()) break;
    ASSERT_TRUE(state.ApplyAction(RandomLegalAction(state, rng)).ok());
  }
}

TEST_P(Conformance, LegalMaskFollowsTheMemoryEstimates) {
  PlacementState state = game_->NewInitialState(9);
  std::mt19937_64 rng(909);
  const int32_t num_dev = game_->num_devices(), num_act = game_->num_actions();
  std::vector<int32_t> taken(num_act, 0);
  int32_t offered = 0;  // steps with a legal split action
  while (!state.IsTerminal()) {
    const int32_t g = state.current_node();
    std::vector<int64_t> used(num_dev, 0);
    for (int32_t other = 0; other < game_->num_groups(); ++other)
      for (DeviceId d = 0; d < num_dev && other != g; ++d) used[d] += MemoryOn(other, state.placement()[other], d);
    std::vector<uint8_t> expected(num_act, 0);
    for (DeviceId d = 0; d < num_dev; ++d)
      expected[d] = used[d] + game_->group_memory_bytes(g) <= scenario_.topology->device(d).memory_bytes;
    for (int32_t a = num_dev; a < num_act; ++a) {
      if (!game_->can_split(g, a)) continue;
      expected[a] = 1;
      for (DeviceId d : game_->candidate(a - num_dev).devices)
        if (used[d] + game_->split_memory_bytes(g, a) > scenario_.topology->device(d).memory_bytes) expected[a] = 0;
    }
    if (std::count(expected.begin(), expected.end(), 1) == 0) {
      std::fill(expected.begin(), expected.begin() + num_dev, 1);
      for (int32_t a = num_dev; a < num_act; ++a) expected[a] = game_->can_split(g, a) ? 1 : 0;
    }
    EXPECT_EQ(state.LegalActionsMask(), expected) << "group " << g;
    offered += std::count(expected.begin() + num_dev, expected.end(), 1) > 0 ? 1 : 0;
    const int32_t a = RandomLegalAction(state, rng);
    ++taken[a];
    ASSERT_TRUE(state.ApplyAction(a).ok());
  }
  const int32_t splits = std::accumulate(taken.begin() + num_dev, taken.end(), 0);
  if (offered >= 5) {
    EXPECT_GT(splits, 0) << "random play must exercise the split actions";
  }
}

TEST_P(Conformance, SplitActionsLowerToValidStrategiesOfTheirCandidate) {
  // Every group takes every split it can, one at a time: the strategy is valid, each member runs on exactly the
  // candidate's devices, and a kind's native split is along a dimension of that kind.
  std::vector<int32_t> base(game_->num_groups(), 0);
  int32_t native_kinds = 0;
  for (int32_t g = 0; g < game_->num_groups(); ++g) {
    for (int32_t a = game_->num_devices(); a < game_->num_actions(); ++a) {
      if (!game_->can_split(g, a)) continue;
      std::vector<int32_t> placement = base;
      placement[g] = a;
      const Strategy strategy = game_->StrategyFromGroups(placement);
      ASSERT_TRUE(ValidateStrategy(strategy, *scenario_.graph, *scenario_.topology).ok());
      const SplitCandidate& cand = game_->candidate(a - game_->num_devices());
      bool native = !cand.kind.has_value();
      for (OpId op : game_->groups().members[g]) {
        const OpConfig& c = strategy.configs[op];
        EXPECT_EQ(c.devices, cand.devices);
        for (size_t k = 0; k < c.degrees.size(); ++k)
          native = native || (c.degrees[k] > 1 && scenario_.graph->op(op).dims[k].kind == *cand.kind);
      }
      EXPECT_TRUE(native) << cand.name;
      native_kinds += cand.kind && *cand.kind != DimKind::kSample ? 1 : 0;
      Expected<SimResult> r = game_->Evaluate(placement);
      ASSERT_TRUE(r.ok()) << r.error().message;
    }
  }
  if (GetParam().space == ActionSpace::kSoap && scenario_.name == "matmul_two_hosts") {
    EXPECT_GT(native_kinds, 0) << "the matmul graph must offer attribute, parameter or reduction splits";
  }
}

INSTANTIATE_TEST_SUITE_P(BothMdps, Conformance, ::testing::ValuesIn(AllCases()), CaseName);

}  // namespace
}  // namespace devplace::envtest
