// The star reshard estimate and its candidate feature columns (PlacementGame::split_star_reshard_seconds,
// kCandidateStar*): the resharding a split forces on unsplit neighbours, priced as transfers to and from the
// reference device over its links, by hand on a machine whose devices hang off one switch.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "core/partition.h"
#include "env/config.h"
#include "env/game.h"
#include "env/observation.h"
#include "tests/testing/env_fixtures.h"

namespace devplace::envtest {
namespace {

constexpr double kBandwidth = 1e9, kLatency = 1e-6;

// Four equal devices, each with one link (1 GB/s, 1 us) to a switch: everything device 0 sends or receives
// crosses its one uplink, as a DGX-1's gpu0 reaches gpu5-7 over one PCIe link.
std::shared_ptr<const Topology> Star() {
  TopologyBuilder b("star4");
  for (int i = 0; i < 4; ++i) b.add_device(MakeDevice(Numbered("d", i), 1e9, int64_t{16} << 30));
  const NodeId s = b.add_switch({"s", "h0"});
  for (int i = 0; i < 4; ++i) b.add_bidirectional_link(i, s, kBandwidth, kLatency, "pcie");
  Expected<Topology> t = std::move(b).Build();
  EXPECT_TRUE(t.ok()) << t.error().message;
  return std::make_shared<const Topology>(std::move(t).value());
}

std::shared_ptr<const PlacementGame> SoapGame(std::shared_ptr<const Graph> graph, std::shared_ptr<const Topology> t,
                                              bool star = true) {
  EnvConfig config;
  config.kind = MdpKind::kOneShot;
  config.action_space = ActionSpace::kSoap;
  config.star_reshard = star;
  Expected<std::shared_ptr<const PlacementGame>> game = PlacementGame::Create(graph, t, PeakRateCost(), config);
  EXPECT_TRUE(game.ok()) << game.error().message;
  return game.ok() ? *game : nullptr;
}

TEST(StarReshard, ABroadcastFromTheNeighboursDeviceSharesItsUplink) {
  auto graph = std::make_shared<const Graph>(MatmulTrainingGraph(2));
  auto game = SoapGame(graph, Star());
  ASSERT_NE(game, nullptr);
  ASSERT_EQ(game->reference_device(), 0);
  const int32_t all_sample = 4 + 0, all_param = 4 + 2;
  ASSERT_EQ(game->candidate(2).name, "all/parameter");
  const OpId fc1 = graph->find("fc1");
  const int32_t g = game->groups().group_of_op[fc1];
  ASSERT_TRUE(game->can_split(g, all_param));
  // Under the parameter split every part of fc1 needs relu0's whole output (64 x 256 f32), and relu0's group
  // cannot take the split, so it stays on device 0: three copies leave device 0 over its one uplink. The ring
  // estimate moves (n - 1) / n of the broadcast bytes per hop, in parallel, a quarter of what the uplink carries.
  const double input = 64.0 * 256 * 4;
  EXPECT_GE(game->split_star_reshard_seconds(g, all_param), 3 * input / kBandwidth + 2 * kLatency);
  EXPECT_GT(game->split_star_reshard_seconds(g, all_param), 2 * game->split_reshard_seconds(g, all_param));
  // Without split neighbours the uniform star estimate prices the same transfers.
  EXPECT_DOUBLE_EQ(game->split_uniform_star_reshard_seconds(g, all_param), game->split_star_reshard_seconds(g, all_param));

  // Under the sample split every op of the chain splits alike: nothing moves when the neighbours split too.
  const int32_t relu = game->groups().group_of_op[graph->find("relu0")];
  ASSERT_TRUE(game->can_split(relu, all_sample));
  EXPECT_EQ(game->split_uniform_star_reshard_seconds(relu, all_sample), 0.0);
  EXPECT_EQ(game->split_uniform_reshard_seconds(relu, all_sample), 0.0);
  // With them on device 0, each part's slice of every tensor crossing the group's boundary moves once between
  // device 0 and the part's device: at least the three other parts' slices of relu0's input over the uplink.
  EXPECT_GE(game->split_star_reshard_seconds(relu, all_sample), 3 * (input / 4) / kBandwidth + 2 * kLatency);

  // The columns: net gains and the share from the star estimates, bounded.
  const int32_t num_cand = game->num_candidates();
  const std::vector<float>& f = game->candidate_features();
  const float* row = &f[(static_cast<size_t>(g) * num_cand + 2) * kCandidateFeatureDim];
  const double t = game->group_seconds(g, 0);
  const double saved = std::max(0.0, t - game->split_slowest_seconds(g, all_param));
  const double sync = game->split_sync_seconds(g, all_param), star = game->split_star_reshard_seconds(g, all_param);
  const double n = game->num_groups(), total = game->total_reference_seconds();
  EXPECT_FLOAT_EQ(row[kCandidateStarNetGain],
                  static_cast<float>(std::clamp(n * (saved - sync - star) / (4.0 * total), -1.0, 1.0)));
  EXPECT_FLOAT_EQ(row[kCandidateStarReshardShare], static_cast<float>(star / (saved + sync + star)));
  EXPECT_FLOAT_EQ(row[kCandidateUniformStarNetGain], row[kCandidateStarNetGain]);
  EXPECT_LT(row[kCandidateStarNetGain], row[kCandidateNetGain]);
  for (float x : f) EXPECT_TRUE(x >= -1.0f && x <= 4.0f) << x;

  // Without EnvConfig::star_reshard the estimates and their columns are 0 and the other columns unchanged.
  auto plain = SoapGame(graph, Star(), false);
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->split_star_reshard_seconds(g, all_param), 0.0);
  const std::vector<float>& pf = plain->candidate_features();
  ASSERT_EQ(pf.size(), f.size());
  for (size_t i = 0; i < f.size(); ++i) {
    const auto column = static_cast<int32_t>(i % kCandidateFeatureDim);
    EXPECT_EQ(pf[i], column >= kCandidateFeatureDimV2 ? 0.0f : f[i]) << i;
  }
}

}  // namespace
}  // namespace devplace::envtest
