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

std::shared_ptr<const Graph> Share(Graph g) { return std::make_shared<const Graph>(std::move(g)); }
std::shared_ptr<const Topology> Share(Topology t) { return std::make_shared<const Topology>(std::move(t)); }

// Two forward ops a (1e6 FLOPs) and b (2e6 FLOPs), optionally a -> b carrying `bytes`. Forward only, so the
// groups are {a} and {b}; on 1 GFLOP/s devices a takes 1 ms and b 2 ms.
std::shared_ptr<const Graph> TwoOps(bool edge, int64_t bytes = 1'000'000) {
  GraphBuilder b("two");
  OpId a = b.add_op(MakeOp("a", 1e6, {250'000}));
  OpId c = b.add_op(MakeOp("b", 2e6, {16}));
  if (edge) b.add_edge(a, c, bytes);
  return Share(std::move(b).Build().value());
}

std::shared_ptr<const PlacementGame> Game(std::shared_ptr<const Graph> g, std::shared_ptr<const Topology> t,
                                          EnvConfig config = {}) {
  Expected<std::shared_ptr<const PlacementGame>> game = PlacementGame::Create(g, t, PeakRateCost(), config);
  EXPECT_TRUE(game.ok()) << game.error().message;
  return game.ok() ? *game : nullptr;
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
  auto game = Game(TwoOps(false), Share(TwoHosts(1 << 30)));
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
  auto game = Game(graph, Share(Pair(2, 1 << 30)));
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
  auto game = Game(TwoOps(true), Share(Pair(2, 1 << 30)));
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
  auto game = Game(TwoOps(false), Share(TwoHosts(1 << 30)));
  ASSERT_NE(game, nullptr);
  const std::vector<float>& f = game->static_device_features();
  auto at = [&](int d, int c) { return f[static_cast<size_t>(d) * kDeviceFeatureDim + c]; };
  EXPECT_FLOAT_EQ(at(1, kDeviceHost), 0.0f);
  EXPECT_FLOAT_EQ(at(2, kDeviceHost), 1.0f);
  EXPECT_FLOAT_EQ(at(2, kDevicePeakFlops), 0.5f);
}

TEST(IterativeMdp, RewardOfMovingIndependentOpsApartByHand) {
  // Both on device 0: 3 ms (= T_ref). Keep a there (reward 0), move b to device 1: max(1, 2) = 2 ms.
  auto game = Game(TwoOps(false), Share(Pair(2, 1 << 30)));
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
  auto game = Game(TwoOps(true), Share(Pair(2, 1 << 30, 1e9, 1e-5)));
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
  auto game = Game(TwoOps(false), Share(Pair(2, 1 << 30)), config);
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
  auto game = Game(TwoOps(false), Share(Pair(2, 100'000)), config);
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
  auto game = Game(graph, Share(Pair(2, 1'000'000)), config);
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
  auto free_game = Game(graph, Share(Pair(2, 1'000'000)), config);
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
  auto game = Game(graph, Share(Pair(2, int64_t{1} << 30)), config);
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
  auto plain = Game(graph, Share(Pair(2, int64_t{1} << 30)), config);
  EXPECT_EQ(plain->num_actions(), 2);
  EXPECT_EQ(plain->data_parallel_action(), -1);
  EXPECT_FALSE(plain->NewInitialState(0).ApplyAction(2).ok());
}

TEST(IterativeMdp, InitialPlacements) {
  auto graph = Share(RandomTrainingGraph(3, 12));
  auto topo = Share(TwoHosts(int64_t{1} << 30));
  EnvConfig config;
  config.initial_placement = InitialPlacement::kSingle;
  auto single = Game(graph, topo, config);
  const PlacementState s = single->NewInitialState(0);
  for (int32_t d : s.placement()) EXPECT_EQ(d, single->reference_device());
  config.initial_placement = InitialPlacement::kRoundRobin;
  auto rr = Game(graph, topo, config);
  const std::vector<int32_t> p = rr->NewInitialState(0).placement();
  for (size_t g = 0; g < p.size(); ++g) EXPECT_EQ(p[g], static_cast<int32_t>(g % 4));
  config.initial_placement = InitialPlacement::kRandom;
  auto rnd = Game(graph, topo, config);
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

namespace devplace::envtest {
namespace {

TEST(SoapActionSpace, SubsetsFollowHostsHalvesAndMeshAxes) {
  // Two hosts of four devices each.
  TopologyBuilder b("two-by-four");
  for (int i = 0; i < 8; ++i) b.add_device(MakeDevice(Numbered("d", i), 1e9, int64_t{1} << 30, i < 4 ? "h0" : "h1"));
  for (int i = 0; i < 8; ++i)
    for (int j = i + 1; j < 8; ++j) b.add_bidirectional_link(i, j, 1e9, 1e-5, "link");
  Topology topo = std::move(b).Build().value();
  std::vector<std::string> names;
  for (const DeviceSubset& s : MachineSubsets(topo, {})) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"all", "host:h0", "host:h1", "half:h0:0", "half:h0:1", "half:h1:0",
                                              "half:h1:1"}));
  // A 2 x 4 mesh adds its columns (axis "data": {0, 4}, {1, 5}, ...); its rows repeat the hosts.
  Mesh mesh = MeshFromShorthand("2x4", {}, topo, "m").value();
  std::vector<DeviceSubset> with_mesh = MachineSubsets(topo, {mesh});
  ASSERT_EQ(with_mesh.size(), 7u + 4u);
  EXPECT_EQ(with_mesh[7].name, "mesh:m:data:0");
  EXPECT_EQ(with_mesh[7].devices, (std::vector<DeviceId>{0, 4}));
  const std::vector<SplitCandidate> candidates = SoapCandidates(topo, {mesh});
  ASSERT_EQ(candidates.size(), 4u * with_mesh.size());
  EXPECT_EQ(candidates[5].name, "host:h0/attribute");
}

TEST(SoapActionSpace, MachineSubsetsRingOverFastLinks) {
  // On a DGX-1 the id-order ring crosses PCIe/QPI (3 -> 4, 7 -> 0); the candidates list the all-NVLink ring that
  // Tofu-DP's splits use, and data parallelism along it is faster than along id order.
  auto topo = std::make_shared<const Topology>(
      ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/dgx1-v100.yaml").value());
  auto graph = Share(MatmulTrainingGraph(2));
  EnvConfig config;
  config.kind = MdpKind::kOneShot;
  config.action_space = ActionSpace::kSoap;
  auto game = Game(graph, topo, config);
  ASSERT_NE(game, nullptr);
  const int32_t all_sample = game->data_parallel_action();
  ASSERT_EQ(game->candidate(all_sample - game->num_devices()).name, "all/sample");
  EXPECT_EQ(game->candidate(all_sample - game->num_devices()).devices, (std::vector<DeviceId>{0, 1, 2, 3, 7, 5, 6, 4}));
  const std::vector<int32_t> everywhere(game->num_groups(), all_sample);
  Strategy ring = game->StrategyFromGroups(everywhere), id_order = ring;
  for (OpConfig& c : id_order.configs) std::sort(c.devices.begin(), c.devices.end());
  Expected<SimResult> along_ring = Simulate(*graph, *topo, ring, PeakRateCost(), config.sim);
  Expected<SimResult> along_ids = Simulate(*graph, *topo, id_order, PeakRateCost(), config.sim);
  ASSERT_TRUE(along_ring.ok() && along_ids.ok());
  EXPECT_LT(along_ring->step_time, along_ids->step_time);
}

TEST(SoapActionSpace, CandidatesSplitAlongTheirKindAndPriceTheirCosts) {
  auto graph = Share(MatmulTrainingGraph(2));
  EnvConfig config;
  config.kind = MdpKind::kOneShot;
  config.action_space = ActionSpace::kSoap;
  auto game = Game(graph, Share(TwoHosts(int64_t{16} << 30)), config);
  ASSERT_NE(game, nullptr);
  ASSERT_EQ(game->num_candidates(), 12);  // {all, host:h0, host:h1} x 4 kinds
  EXPECT_EQ(game->data_parallel_action(), 4);  // all/sample
  const OpId fc = graph->find("fc0");
  const int32_t g = game->groups().group_of_op[fc];
  const int32_t all_param = 4 + 2, all_reduce = 4 + 3, h1_sample = 4 + 8;
  ASSERT_TRUE(game->can_split(g, all_param));
  ASSERT_TRUE(game->can_split(g, all_reduce));
  EXPECT_EQ(game->ActionConfig(fc, all_param), (OpConfig{{0, 1, 2, 3}, {1, 4, 1}}));
  EXPECT_EQ(game->ActionConfig(fc, all_reduce), (OpConfig{{0, 1, 2, 3}, {1, 1, 4}}));
  EXPECT_EQ(game->ActionConfig(fc, h1_sample), (OpConfig{{2, 3}, {2, 1, 1}}));
  // Data parallelism all-reduces the weights' gradients; sharding the parameters does not.
  EXPECT_GT(game->split_sync_seconds(g, 4), 0.0);
  EXPECT_EQ(game->split_sync_seconds(g, all_param), 0.0);
  // A parameter split needs the whole input on every device, a sample split only a slice of it.
  EXPECT_GT(game->split_reshard_seconds(g, all_param), game->split_reshard_seconds(g, 4));
  // A part on the slow host (1 vs 2 GFLOP/s) of a 2-way split does twice the work of a 4-way part at half the
  // speed; the other devices hold no part.
  EXPECT_DOUBLE_EQ(game->split_seconds(g, h1_sample, 2), 4 * game->split_seconds(g, 4, 0));
  EXPECT_EQ(game->split_seconds(g, h1_sample, 0), 0.0);
  EXPECT_FALSE(game->split_uses(h1_sample, 1));
  // A relu has no parameter or reduction dimension: those candidates would repeat its sample split.
  const int32_t relu = game->groups().group_of_op[graph->find("relu0")];
  EXPECT_FALSE(game->can_split(relu, all_param));
  EXPECT_TRUE(game->can_split(relu, 4 + 1));  // attribute
  // Features: fixed width, bounded, zero rows for candidates a group cannot take.
  const std::vector<float>& f = game->candidate_features();
  ASSERT_EQ(f.size(), static_cast<size_t>(game->num_groups()) * 12 * kCandidateFeatureDim);
  for (float x : f) EXPECT_TRUE(x >= -1.0f && x <= 4.0f) << x;
  const float* row = &f[(static_cast<size_t>(relu) * 12 + 6) * kCandidateFeatureDim];
  EXPECT_TRUE(std::all_of(row, row + kCandidateFeatureDim, [](float x) { return x == 0.0f; }));
  const float* param = &f[(static_cast<size_t>(g) * 12 + 2) * kCandidateFeatureDim];
  EXPECT_EQ(param[kCandidateLegal], 1.0f);
  EXPECT_EQ(param[kCandidateParameter], 1.0f);
  EXPECT_EQ(param[kCandidateSubsetSize], 1.0f);
  EXPECT_EQ(param[kCandidateSubsetHosts], 1.0f);
  EXPECT_EQ(param[kCandidateSyncShare], 0.0f);
  EXPECT_GT(param[kCandidateReshardShare], 0.0f);
  // The ring over both hosts crosses the slow switch link; host h0's ring does not.
  const float* h0 = &f[(static_cast<size_t>(g) * 12 + 4) * kCandidateFeatureDim];
  EXPECT_LT(param[kCandidateLinkSpeed], h0[kCandidateLinkSpeed]);
  // Uniform columns: relu0's neighbours (fc0, fc1) take the sample split too, so a data-parallel chain leaves
  // nothing to reshard there, while the neighbour-blind estimate scatters and gathers every edge.
  EXPECT_GT(game->split_reshard_seconds(relu, 4), 0.0);
  EXPECT_EQ(game->split_uniform_reshard_seconds(relu, 4), 0.0);
  const float* relu_dp = &f[(static_cast<size_t>(relu) * 12 + 0) * kCandidateFeatureDim];
  EXPECT_EQ(relu_dp[kCandidateNeighbourLegal], 1.0f);
  EXPECT_EQ(relu_dp[kCandidateUniformReshardShare], 0.0f);
  EXPECT_GT(relu_dp[kCandidateUniformNetGain], relu_dp[kCandidateNetGain]);
  // So is fc0 between x and relu0 (every op here has a batch axis).
  EXPECT_EQ(game->split_uniform_reshard_seconds(g, 4), 0.0);
  EXPECT_GT(game->split_reshard_seconds(g, 4), 0.0);
  // Neither x nor relu0 can take a parameter split: sharding fc0's parameters keeps the neighbour-blind price.
  EXPECT_EQ(param[kCandidateNeighbourLegal], 0.0f);
  EXPECT_GT(game->split_uniform_reshard_seconds(g, all_param), 0.0);
  EXPECT_EQ(game->split_uniform_reshard_seconds(g, all_param), game->split_reshard_seconds(g, all_param));
  // A reduction split reduce-scatters its partial sums whatever the neighbours do.
  EXPECT_GT(game->split_uniform_reshard_seconds(g, all_reduce), 0.0);
  // Uniform step times: simulated for the sample-kind candidates (all, each host), 0 for the other kinds; the
  // columns compare them with the reference time and with the best of them.
  std::vector<int32_t> everywhere(game->num_groups(), 4);
  EXPECT_EQ(game->uniform_step_time(0), game->PenalisedTime(CostOf(*game->Evaluate(everywhere), game->topology())));
  double best = game->uniform_step_time(0);
  for (int32_t c = 0; c < 12; ++c) {
    EXPECT_EQ(game->uniform_step_time(c) > 0, c % 4 == 0) << c;
    // uniform_cost: the simulated cost of the uniform placement, which the placer keeps without simulating again.
    EXPECT_EQ(game->uniform_cost(c).step_time > 0, c % 4 == 0) << c;
    if (c % 4 == 0) {
      const StepCost again = CostOf(*game->Evaluate(game->UniformPlacement(c)), game->topology());
      EXPECT_EQ(game->uniform_cost(c).step_time, again.step_time) << c;
      EXPECT_EQ(game->uniform_cost(c).oom, again.oom) << c;
      EXPECT_EQ(game->uniform_cost(c).overage, again.overage) << c;
      EXPECT_EQ(game->uniform_step_time(c), game->PenalisedTime(game->uniform_cost(c))) << c;
    }
    if (c % 4 == 0) best = std::min(best, game->uniform_step_time(c));
  }
  EXPECT_FLOAT_EQ(relu_dp[kCandidateUniformBest], static_cast<float>(best / game->uniform_step_time(0)));
  EXPECT_FLOAT_EQ(relu_dp[kCandidateUniformSpeedup],
                  static_cast<float>(std::clamp(std::log(game->reference_time() / game->uniform_step_time(0)) /
                                                    std::log(4.0), -1.0, 1.0)));
  EXPECT_EQ(param[kCandidateUniformSpeedup], 0.0f);

  // The whole action space plays: a split group lowers to a valid strategy the simulator runs.
  PlacementState s = game->NewInitialState(0);
  std::vector<int32_t> placement(game->num_groups(), 0);
  placement[g] = all_reduce;
  ASSERT_TRUE(s.ApplyPlacement(placement).ok());
  EXPECT_GT(s.step_time(), 0.0);

  EnvConfig both = config;
  both.data_parallel_action = true;
  EXPECT_FALSE(PlacementGame::Create(graph, Share(TwoHosts(int64_t{16} << 30)), PeakRateCost(), both).ok());
}

// Create fills the split candidates' tables and simulates their uniform splits on EnvConfig::build_threads
// threads: the game is the same for every count (a matmul graph with parameter and reduction splits, a random one,
// on two hosts, every candidate column including the star estimates).
TEST(PlacementGame, TheSoapTablesDoNotDependOnTheBuildThreads) {
  for (std::shared_ptr<const Graph> graph : {Share(MatmulTrainingGraph(3)), Share(RandomTrainingGraph(11, 60))}) {
    auto topology = Share(TwoHosts(int64_t{16} << 30));
    std::vector<std::shared_ptr<const PlacementGame>> games;
    for (int32_t threads : {1, 2, 5}) {
      EnvConfig config;
      config.action_space = ActionSpace::kSoap;
      config.star_reshard = true;
      config.build_threads = threads;
      games.push_back(Game(graph, topology, config));
      ASSERT_NE(games.back(), nullptr);
    }
    const PlacementGame& one = *games[0];
    ASSERT_GT(one.num_candidates(), 2);
    int32_t splits = 0;
    for (size_t k = 1; k < games.size(); ++k) {
      const PlacementGame& other = *games[k];
      ASSERT_EQ(other.num_actions(), one.num_actions());
      EXPECT_EQ(other.candidate_features(), one.candidate_features());
      EXPECT_EQ(other.static_node_features(), one.static_node_features());
      for (int32_t c = 0; c < one.num_candidates(); ++c) EXPECT_EQ(other.uniform_step_time(c), one.uniform_step_time(c));
      for (int32_t g = 0; g < one.num_groups(); ++g)
        for (int32_t a = one.num_devices(); a < one.num_actions(); ++a) {
          ASSERT_EQ(other.can_split(g, a), one.can_split(g, a)) << g << " " << a;
          splits += one.can_split(g, a) ? 1 : 0;
          EXPECT_EQ(other.split_memory_bytes(g, a), one.split_memory_bytes(g, a));
          EXPECT_EQ(other.split_sync_seconds(g, a), one.split_sync_seconds(g, a));
          EXPECT_EQ(other.split_reshard_seconds(g, a), one.split_reshard_seconds(g, a));
          EXPECT_EQ(other.split_uniform_reshard_seconds(g, a), one.split_uniform_reshard_seconds(g, a));
          EXPECT_EQ(other.split_star_reshard_seconds(g, a), one.split_star_reshard_seconds(g, a));
          EXPECT_EQ(other.split_uniform_star_reshard_seconds(g, a), one.split_uniform_star_reshard_seconds(g, a));
          for (DeviceId d = 0; d < one.num_devices(); ++d)
            EXPECT_EQ(other.split_seconds(g, a, d), one.split_seconds(g, a, d));
        }
    }
    EXPECT_GT(splits, 0);  // the tables compared hold splits
    EXPECT_GT(one.uniform_step_time(0), 0.0);
  }
}

}  // namespace
}  // namespace devplace::envtest
