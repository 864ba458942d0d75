// PlacementGame and PlacementState cases checked by hand: configs, features, group edges, rewards on a
// two-group graph, masks, initial placements, whole placements.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/colocation.h"
#include "core/topology_yaml.h"
#include "env/config.h"
#include "env/game.h"
#include "env/state.h"
#include "tests/testing/env_fixtures.h"
#include "sim/simulator.h"

namespace devplace::envtest {
namespace {

// Two forward ops a (1e6 FLOPs) and b (2e6 FLOPs), optionally a -> b carrying `bytes`. Forward only, so the
// groups are {a} and {b}; on 1 GFLOP/s devices a takes 1 ms and b 2 ms.
std::shared_ptr<const Graph> TwoOps(bool edge, int64_t bytes = 1'000'000) {
  GraphBuilder b("two");
  OpId a = b.add_op(MakeOp("a", 1e6, {250'000}));
  OpId c = b.add_op(MakeOp("b", 2e6, {16}));
  if (edge) b.add_edge(a, c, bytes);
  return Share(std::move(b).Build().value());
}


TEST(EnvConfig, ValidatesAndNamesTheField) {
  EXPECT_TRUE(ValidateEnvConfig({}).ok());
  EnvConfig c;
  c.oom_penalty = -1;
  ASSERT_FALSE(ValidateEnvConfig(c).ok());
  EXPECT_NE(ValidateEnvConfig(c).error().message.find("env.oom_penalty"), std::string::npos);
  c.oom_penalty = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(ValidateEnvConfig(c).ok());
  c = {};
  c.sim.max_segments = 0;
  ASSERT_FALSE(ValidateEnvConfig(c).ok());
  EXPECT_NE(ValidateEnvConfig(c).error().message.find("env.sim.max_segments"), std::string::npos);
  EXPECT_FALSE(PlacementGame::Create(TwoOps(false), Share(Pair(2, 1 << 30)), PeakRateCost(), c).ok());
}

TEST(EnvConfig, NamesRoundTrip) {
  for (MdpKind k : {MdpKind::kIterative, MdpKind::kOneShot}) {
    MdpKind parsed = k == MdpKind::kIterative ? MdpKind::kOneShot : MdpKind::kIterative;
    ASSERT_TRUE(ParseMdpKind(ToString(k), &parsed));
    EXPECT_EQ(parsed, k);
  }
  for (InitialPlacement p : {InitialPlacement::kSingle, InitialPlacement::kRoundRobin, InitialPlacement::kRandom}) {
    InitialPlacement parsed = InitialPlacement::kRandom;
    ASSERT_TRUE(ParseInitialPlacement(ToString(p), &parsed));
    EXPECT_EQ(parsed, p);
  }
  MdpKind kind = MdpKind::kOneShot;
  EXPECT_FALSE(ParseMdpKind("placeto", &kind));
  EXPECT_EQ(kind, MdpKind::kOneShot);
  InitialPlacement init = InitialPlacement::kRandom;
  EXPECT_FALSE(ParseInitialPlacement("round-robin", &init));
  EXPECT_EQ(init, InitialPlacement::kRandom);
}

TEST(PlacementGame, RejectsMissingOrEmptyInputs) {
  auto topo = Share(Pair(2, 1 << 30));
  EXPECT_FALSE(PlacementGame::Create(nullptr, topo, PeakRateCost(), {}).ok());
  EXPECT_FALSE(PlacementGame::Create(TwoOps(false), nullptr, PeakRateCost(), {}).ok());
  Expected<std::shared_ptr<const PlacementGame>> empty =
      PlacementGame::Create(Share(Graph()), topo, PeakRateCost(), {});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("no ops"), std::string::npos);
}

TEST(PlacementGame, ReferenceTimeIsTheFastestSingleDevice) {
  // TwoHosts: devices 0 and 1 run at 2 GFLOP/s, 2 and 3 at 1 GFLOP/s. a and b in sequence: 1.5 ms on the fast ones.
  auto game = MakeGame(TwoOps(false), Share(TwoHosts(1 << 30)));
  ASSERT_NE(game, nullptr);
  EXPECT_EQ(game->reference_device(), 0);
  EXPECT_DOUBLE_EQ(game->reference_time(), 1.5e-3);
  EXPECT_DOUBLE_EQ(game->single_device_times()[3], 3e-3);
  EXPECT_DOUBLE_EQ(game->group_seconds(1, 2), 2e-3);
  EXPECT_DOUBLE_EQ(game->total_reference_seconds(), 1.5e-3);
}

TEST(PlacementGame, GroupEdgesOfAnMlpTrainingGraph) {
  // x -> fc0 -> relu0 with backward ops colocated: groups {x}, {fc0, fc0/grad, fc0/update}, {relu0, relu0/grad}.
  auto graph = Share(MlpTrainingGraph(1));
  auto game = MakeGame(graph, Share(Pair(2, 1 << 30)));
  ASSERT_NE(game, nullptr);
  ASSERT_EQ(game->num_groups(), 3);
  const OpGroups& g = game->groups();
  const int32_t x = g.group_of_op[graph->find("x")], fc = g.group_of_op[graph->find("fc0")],
                relu = g.group_of_op[graph->find("relu0")];
  EXPECT_EQ(g.group_of_op[graph->find("fc0/grad")], fc);
  EXPECT_EQ(g.group_of_op[graph->find("fc0/update")], fc);
  EXPECT_EQ(g.group_of_op[graph->find("relu0/grad")], relu);
  // Edges: x -> fc0 and x -> fc0/grad (x -> fc); fc -> relu (forward, saved input); relu/grad -> fc0/grad (relu -> fc).
  std::vector<std::pair<int32_t, int32_t>> edges;
  for (size_t k = 0; k < game->edge_src().size(); ++k) edges.emplace_back(game->edge_src()[k], game->edge_dst()[k]);
  std::vector<std::pair<int32_t, int32_t>> expected = {{x, fc}, {fc, relu}, {relu, fc}};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(edges, expected);
  // Memory estimate of fc: 4 x params (weights, gradients, Adam's two moments) + fc0's output (forward).
  const int64_t params = (256 * 256 + 256) * 4;
  EXPECT_EQ(game->group_memory_bytes(fc), 4 * params + 64 * 256 * 4);
  EXPECT_EQ(game->group_memory_bytes(relu), 64 * 256 * 4);  // relu0/grad's output is not counted
}

TEST(PlacementGame, NodeFeaturesByHand) {
  // Groups {a}, {b}: a has the smaller FLOPs (1e6 vs 2e6), the larger output (1e6 vs 64 bytes).
  auto game = MakeGame(TwoOps(true), Share(Pair(2, 1 << 30)));
  ASSERT_NE(game, nullptr);
  const std::vector<float>& f = game->static_node_features();
  auto at = [&](int n, int c) { return f[static_cast<size_t>(n) * kNodeFeatureDim + c]; };
  EXPECT_FLOAT_EQ(at(0, kNodeLogFlops), static_cast<float>(std::log1p(1e6) / std::log1p(2e6)));
  EXPECT_FLOAT_EQ(at(1, kNodeLogFlops), 1.0f);
  EXPECT_FLOAT_EQ(at(0, kNodeLogOutputBytes), 1.0f);
  EXPECT_FLOAT_EQ(at(1, kNodeLogOutputBytes), static_cast<float>(std::log1p(64.0) / std::log1p(1e6)));
  EXPECT_FLOAT_EQ(at(0, kNodeLogParamBytes), 0.0f);
  EXPECT_FLOAT_EQ(at(0, kNodeForwardFraction), 1.0f);
  EXPECT_FLOAT_EQ(at(0, kNodeBackwardFraction), 0.0f);
  EXPECT_FLOAT_EQ(at(0, kNodeLogInDegree), 0.0f);
  EXPECT_FLOAT_EQ(at(0, kNodeLogOutDegree), 1.0f);
  EXPECT_FLOAT_EQ(at(1, kNodeLogInDegree), 1.0f);
  EXPECT_FLOAT_EQ(at(0, kNodeTopoPosition), 0.0f);
  EXPECT_FLOAT_EQ(at(1, kNodeTopoPosition), 1.0f);
  EXPECT_FLOAT_EQ(at(0, kNodeComputeShare), 1.0f / 3.0f);
  EXPECT_FLOAT_EQ(at(1, kNodeComputeShare), 2.0f / 3.0f);
  EXPECT_FLOAT_EQ(at(0, kNodeMemoryShare), 1e6f / (1e6f + 64.0f));

  // Device loads in an observation: everything on device 0 (single initial placement, iterative).
  PlacementState s = game->NewInitialState(0);
  Observation obs;
  s.FillObservation(&obs);
  auto dev = [&](int d, int c) { return obs.device_features[static_cast<size_t>(d) * kDeviceFeatureDim + c]; };
  EXPECT_FLOAT_EQ(dev(0, kDevicePeakFlops), 1.0f);
  EXPECT_FLOAT_EQ(dev(0, kDeviceComputeLoad), 1.0f);
  EXPECT_FLOAT_EQ(dev(1, kDeviceComputeLoad), 0.0f);
  EXPECT_FLOAT_EQ(dev(0, kDeviceMemoryLoad), static_cast<float>((1e6 + 64) / (1 << 30)));
  EXPECT_FLOAT_EQ(dev(0, kDeviceCapacity), 4.0f);  // 1 GiB / 1 MB, capped
  EXPECT_FLOAT_EQ(dev(0, kDeviceHost), 0.0f);
  EXPECT_EQ(obs.current_node, 0);
  EXPECT_EQ(obs.placement, (std::vector<int32_t>{0, 0}));
}

TEST(PlacementGame, DeviceHostFeatureNumbersHosts) {
  auto game = MakeGame(TwoOps(false), Share(TwoHosts(1 << 30)));
  ASSERT_NE(game, nullptr);
  const std::vector<float>& f = game->static_device_features();
  auto at = [&](int d, int c) { return f[static_cast<size_t>(d) * kDeviceFeatureDim + c]; };
  EXPECT_FLOAT_EQ(at(1, kDeviceHost), 0.0f);
  EXPECT_FLOAT_EQ(at(2, kDeviceHost), 1.0f);
  EXPECT_FLOAT_EQ(at(2, kDevicePeakFlops), 0.5f);
}

TEST(IterativeMdp, RewardOfMovingIndependentOpsApartByHand) {
  // Both on device 0: 3 ms (= T_ref). Keep a there (reward 0), move b to device 1: max(1, 2) = 2 ms.
  auto game = MakeGame(TwoOps(false), Share(Pair(2, 1 << 30)));
  ASSERT_NE(game, nullptr);
  EXPECT_DOUBLE_EQ(game->reference_time(), 3e-3);
  PlacementState s = game->NewInitialState(0);
  EXPECT_DOUBLE_EQ(s.step_time(), 3e-3);
  ASSERT_TRUE(s.ApplyAction(0).ok());
  EXPECT_EQ(s.last_reward(), 0.0);
  ASSERT_TRUE(s.ApplyAction(1).ok());
  EXPECT_DOUBLE_EQ(s.step_time(), 2e-3);
  EXPECT_DOUBLE_EQ(s.last_reward(), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.Return(), 1.0 / 3.0);
  EXPECT_TRUE(s.IsTerminal());
}

TEST(IterativeMdp, RewardOfSplittingAChainByHand) {
  // a -> b with 1 MB over a 1 GB/s link of 10 us latency: 1 ms + 1 ms + 10 us + 2 ms = 4.01 ms, from 3 ms.
  auto game = MakeGame(TwoOps(true), Share(Pair(2, 1 << 30, 1e9, 1e-5)));
  ASSERT_NE(game, nullptr);
  PlacementState s = game->NewInitialState(0);
  ASSERT_TRUE(s.ApplyAction(0).ok());
  ASSERT_TRUE(s.ApplyAction(1).ok());
  EXPECT_NEAR(s.step_time(), 4.01e-3, 1e-15);
  EXPECT_NEAR(s.last_reward(), (3e-3 - 4.01e-3) / 3e-3, 1e-12);
}

TEST(OneShotMdp, RewardIsMinusSqrtOfNormalisedTimeByHand) {
  EnvConfig config;
  config.kind = MdpKind::kOneShot;
  auto game = MakeGame(TwoOps(false), Share(Pair(2, 1 << 30)), config);
  ASSERT_NE(game, nullptr);
  PlacementState s = game->NewInitialState(0);
  EXPECT_FALSE(s.is_complete());
  EXPECT_EQ(s.placement(), (std::vector<int32_t>{-1, -1}));
  ASSERT_TRUE(s.ApplyAction(1).ok());
  EXPECT_EQ(s.last_reward(), 0.0);
  ASSERT_TRUE(s.ApplyAction(0).ok());
  EXPECT_DOUBLE_EQ(s.step_time(), 2e-3);
  EXPECT_DOUBLE_EQ(s.last_reward(), -std::sqrt(2.0 / 3.0));
}

TEST(OneShotMdp, OutOfMemoryIsPenalised) {
  // a's 1 MB output does not fit a 100 kB device anywhere: every placement runs out of memory.
  EnvConfig config;
  config.kind = MdpKind::kOneShot;
  config.oom_penalty = 3.0;
  auto game = MakeGame(TwoOps(false), Share(Pair(2, 100'000)), config);
  ASSERT_NE(game, nullptr);
  PlacementState s = game->NewInitialState(0);
  EXPECT_EQ(s.LegalActionsMask(), (std::vector<uint8_t>{1, 1}));  // nothing fits: everything legal
  ASSERT_TRUE(s.ApplyAction(0).ok());
  ASSERT_TRUE(s.ApplyAction(1).ok());
  EXPECT_TRUE(s.oom());
  // sim/objective.h: step + oom_penalty x T_ref x (1 + overage). Device 0 holds a's 1 MB output, 900 kB over its
  // 100 kB (overage 9); b's 64 bytes fit on device 1. T_ref = 3 ms (both ops on one device).
  EXPECT_DOUBLE_EQ(s.penalised_time(), 2e-3 + 3.0 * 3e-3 * (1.0 + 9.0));
  EXPECT_DOUBLE_EQ(s.Return(), -std::sqrt((2e-3 + 90e-3) / 3e-3));
}

TEST(LegalMask, ExcludesDevicesWithoutRoomAndCanBeTurnedOff) {
  // Three ops of 400 kB output each on two 1 MB devices (estimated memory = forward outputs).
  GraphBuilder b("three");
  for (int i = 0; i < 3; ++i) b.add_op(MakeOp(Numbered("o", i), 1e6, {100'000}));
  auto graph = Share(std::move(b).Build().value());
  EnvConfig config;
  config.kind = MdpKind::kOneShot;
  auto game = MakeGame(graph, Share(Pair(2, 1'000'000)), config);
  ASSERT_NE(game, nullptr);
  PlacementState s = game->NewInitialState(0);
  EXPECT_EQ(s.LegalActionsMask(), (std::vector<uint8_t>{1, 1}));
  ASSERT_TRUE(s.ApplyAction(0).ok());
  EXPECT_EQ(s.LegalActionsMask(), (std::vector<uint8_t>{1, 1}));  // 800 kB <= 1 MB
  ASSERT_TRUE(s.ApplyAction(0).ok());
  EXPECT_EQ(s.LegalActionsMask(), (std::vector<uint8_t>{0, 1}));  // 1.2 MB > 1 MB
  Status bad = s.ApplyAction(0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("not legal"), std::string::npos);
  EXPECT_NE(bad.error().message.find("'o2'"), std::string::npos);

  config.memory_aware_mask = false;
  auto free_game = MakeGame(graph, Share(Pair(2, 1'000'000)), config);
  PlacementState f = free_game->NewInitialState(0);
  ASSERT_TRUE(f.ApplyAction(0).ok());
  ASSERT_TRUE(f.ApplyAction(0).ok());
  EXPECT_EQ(f.LegalActionsMask(), (std::vector<uint8_t>{1, 1}));
  EXPECT_TRUE(f.ApplyAction(0).ok());
}

TEST(DataParallelAction, SplitsTheGroupOverAllDevices) {
  // a (1e6 FLOPs, 1 MB output) and b (2e6 FLOPs, 16 elements), both split along their batch dimension; c has a
  // batch of 1 and cannot be split two ways. On two 1 GFLOP/s devices: a's halves take 0.5 ms, b's 1 ms.
  GraphBuilder b("three");
  b.add_op(MakeOp("a", 1e6, {250'000}));
  b.add_op(MakeOp("b", 2e6, {16}, /*param_bytes=*/800'000));
  b.add_op(MakeOp("c", 1e6, {1}));
  auto graph = Share(std::move(b).Build().value());
  EnvConfig config;
  config.kind = MdpKind::kOneShot;
  config.data_parallel_action = true;
  auto game = MakeGame(graph, Share(Pair(2, int64_t{1} << 30)), config);
  ASSERT_NE(game, nullptr);
  EXPECT_EQ(game->num_actions(), 3);
  EXPECT_EQ(game->data_parallel_action(), 2);
  EXPECT_EQ(game->num_candidates(), 1);
  EXPECT_TRUE(game->can_split(0, 2));
  EXPECT_FALSE(game->can_split(2, 2));
  EXPECT_EQ(game->split_memory_bytes(0, 2), 500'000);
  EXPECT_EQ(game->split_memory_bytes(1, 2), 4 * 800'000 + 32);  // replicated weights, state and half of b
  EXPECT_DOUBLE_EQ(game->split_seconds(1, 2, 1), 1e-3);
  EXPECT_DOUBLE_EQ(game->split_slowest_seconds(1, 2), 1e-3);
  EXPECT_EQ(game->split_sync_seconds(0, 2), 0.0);
  const Topology& t = game->topology();
  EXPECT_DOUBLE_EQ(game->split_sync_seconds(1, 2),
                   2.0 * std::max(t.transfer_time_estimate(0, 1, 400'000), t.transfer_time_estimate(1, 0, 400'000)));

  PlacementState s = game->NewInitialState(0);
  EXPECT_EQ(s.LegalActionsMask(), (std::vector<uint8_t>{1, 1, 1}));
  ASSERT_TRUE(s.ApplyAction(2).ok());
  ASSERT_TRUE(s.ApplyAction(2).ok());
  EXPECT_EQ(s.LegalActionsMask(), (std::vector<uint8_t>{1, 1, 0}));  // c cannot be split
  Status bad = s.ApplyAction(2);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("split all/data-parallel is not legal"), std::string::npos);
  ASSERT_TRUE(s.ApplyAction(1).ok());
  const Strategy strategy = s.strategy();
  EXPECT_EQ(strategy.configs[0], (OpConfig{{0, 1}, {2}}));
  EXPECT_EQ(strategy.configs[1], (OpConfig{{0, 1}, {2}}));
  EXPECT_EQ(strategy.configs[2], (OpConfig{{1}, {}}));
  // Device 1 runs a/2, b/2 and c: 0.5 + 1 + 1 ms.
  EXPECT_DOUBLE_EQ(s.step_time(), 2.5e-3);

  Expected<SimResult> invalid = game->Evaluate(std::vector<int32_t>{0, 0, 2});
  ASSERT_FALSE(invalid.ok());
  EXPECT_NE(invalid.error().message.find("'c') cannot take split all/data-parallel"), std::string::npos);

  config.data_parallel_action = false;
  auto plain = MakeGame(graph, Share(Pair(2, int64_t{1} << 30)), config);
  EXPECT_EQ(plain->num_actions(), 2);
  EXPECT_EQ(plain->data_parallel_action(), -1);
  EXPECT_FALSE(plain->NewInitialState(0).ApplyAction(2).ok());
}

TEST(IterativeMdp, InitialPlacements) {
  auto graph = Share(RandomTrainingGraph(3, 12));
  auto topo = Share(TwoHosts(int64_t{1} << 30));
  EnvConfig config;
  config.initial_placement = InitialPlacement::kSingle;
  auto single = MakeGame(graph, topo, config);
  const PlacementState s = single->NewInitialState(0);
  for (int32_t d : s.placement()) EXPECT_EQ(d, single->reference_device());
  config.initial_placement = InitialPlacement::kRoundRobin;
  auto rr = MakeGame(graph, topo, config);
  const std::vector<int32_t> p = rr->NewInitialState(0).placement();
  for (size_t g = 0; g < p.size(); ++g) EXPECT_EQ(p[g], static_cast<int32_t>(g % 4));
  config.initial_placement = InitialPlacement::kRandom;
  auto rnd = MakeGame(graph, topo, config);
  EXPECT_EQ(rnd->NewInitialState(5).placement(), rnd->NewInitialState(5).placement());
  std::vector<int> count(4, 0);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const PlacementState s = rnd->NewInitialState(seed);
    for (int32_t d : s.placement()) ++count[d];
  }
  for (int c : count) EXPECT_GT(c, 0);
}

TEST(OneShotMdp, ApplyPlacementEqualsStepByStepAndIsChecked) {
  const Scenario sc = Scenarios()[2];  // tight memory: the mask matters
  EnvConfig config;
  config.kind = MdpKind::kOneShot;
  auto game = MakeGame(sc, config);
  ASSERT_NE(game, nullptr);
  PlacementState stepwise = game->NewInitialState(1);
  std::mt19937_64 rng(12);
  std::vector<int32_t> devices;
  while (!stepwise.IsTerminal()) {
    devices.push_back(RandomLegalAction(stepwise, rng));
    ASSERT_TRUE(stepwise.ApplyAction(devices.back()).ok());
  }
  PlacementState whole = game->NewInitialState(1);
  ASSERT_TRUE(whole.ApplyPlacement(devices).ok());
  EXPECT_TRUE(whole.IsTerminal());
  EXPECT_EQ(whole.placement(), stepwise.placement());
  EXPECT_EQ(whole.Return(), stepwise.Return());
  EXPECT_EQ(whole.step_time(), stepwise.step_time());

  PlacementState fresh = game->NewInitialState(1);
  EXPECT_FALSE(fresh.ApplyPlacement(std::vector<int32_t>(devices.begin(), devices.end() - 1)).ok());
  // All on device 0 breaks the mask at some step; the error names that step and nothing changes.
  Status s = fresh.ApplyPlacement(std::vector<int32_t>(devices.size(), 0));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message.rfind("placement[", 0), 0u) << s.error().message;
  EXPECT_EQ(fresh.num_steps(), 0);
  EXPECT_EQ(fresh.placement(), std::vector<int32_t>(devices.size(), -1));
  ASSERT_TRUE(fresh.ApplyAction(devices[0]).ok());
  EXPECT_FALSE(fresh.ApplyPlacement(devices).ok());  // not at the start any more

  config.kind = MdpKind::kIterative;
  auto iterative = MakeGame(sc, config);
  EXPECT_FALSE(iterative->NewInitialState(1).ApplyPlacement(devices).ok());
}

TEST(PlacementGame, EvaluateEqualsSimulateAndIsThreadSafe) {
  const Scenario sc = Scenarios()[1];
  auto game = MakeGame(sc, {});
  ASSERT_NE(game, nullptr);
  std::vector<std::vector<int32_t>> placements;
  std::vector<SimResult> expected;
  std::mt19937_64 rng(17);
  for (int k = 0; k < 6; ++k) {
    std::vector<int32_t> p(game->num_groups());
    for (int32_t& d : p) d = UniformInt(rng, game->num_devices());
    Expected<SimResult> r = Simulate(*sc.graph, *sc.topology, game->StrategyFromGroups(p), PeakRateCost());
    ASSERT_TRUE(r.ok());
    placements.push_back(std::move(p));
    expected.push_back(std::move(*r));
  }
  // Two threads evaluate the placements concurrently, many times, through the game's simulator pool.
  std::vector<int> mismatches(2, 0);
  auto work = [&](int t) {
    for (int rep = 0; rep < 10; ++rep)
      for (size_t k = 0; k < placements.size(); ++k) {
        Expected<SimResult> r = game->Evaluate(placements[(k + t) % placements.size()]);
        const SimResult& want = expected[(k + t) % placements.size()];
        if (!r.ok() || r->step_time != want.step_time || r->oom != want.oom) ++mismatches[t];
      }
  };
  std::thread other(work, 1);
  work(0);
  other.join();
  EXPECT_EQ(mismatches, (std::vector<int>{0, 0}));

  std::vector<int32_t> bad = placements[0];
  bad.pop_back();
  EXPECT_FALSE(game->Evaluate(bad).ok());
  bad = placements[0];
  bad[3] = game->num_devices();
  Expected<SimResult> out = game->Evaluate(bad);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message.find("placement[3]"), std::string::npos);
}

}  // namespace
}  // namespace devplace::envtest
