// The SOAP action space of PlacementGame by hand: the machine's device subsets and split candidates, each
// candidate's tables (compute, memory, sync, resharding, uniform splits) on small graphs, and tables that do not
// depend on the build threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/mesh.h"
#include "core/topology_yaml.h"
#include "env/config.h"
#include "env/game.h"
#include "env/observation.h"
#include "sim/simulator.h"
#include "tests/testing/env_fixtures.h"

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
  auto game = MakeGame(graph, topo, config);
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
  auto game = MakeGame(graph, Share(TwoHosts(int64_t{16} << 30)), config);
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
      games.push_back(MakeGame(graph, topology, config));
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
