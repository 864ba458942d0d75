// The draft resharding estimate (env/draft_cost.h): seconds per byte between two actions' layouts, by hand on four
// equal devices behind one switch, and each group edge's bytes against a count over the op edges.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "env/config.h"
#include "env/draft_cost.h"
#include "env/game.h"
#include "tests/testing/env_fixtures.h"

namespace devplace::envtest {
namespace {

// Four equal devices, each with one link to a switch: every pair is the same two hops.
std::shared_ptr<const Topology> Star() {
  TopologyBuilder b("star4");
  for (int i = 0; i < 4; ++i) b.add_device(MakeDevice(Numbered("d", i), 1e9, int64_t{16} << 30));
  const NodeId s = b.add_switch({"s", "h0"});
  for (int i = 0; i < 4; ++i) b.add_bidirectional_link(i, s, 1e9, 1e-6, "pcie");
  Expected<Topology> t = std::move(b).Build();
  EXPECT_TRUE(t.ok()) << t.error().message;
  return std::make_shared<const Topology>(std::move(t).value());
}

std::shared_ptr<const PlacementGame> SoapGame(const Graph& graph, std::shared_ptr<const Topology> t) {
  EnvConfig config;
  config.kind = MdpKind::kOneShot;
  config.action_space = ActionSpace::kSoap;
  Expected<std::shared_ptr<const PlacementGame>> game =
      PlacementGame::Create(std::make_shared<const Graph>(graph), std::move(t), PeakRateCost(), config);
  EXPECT_TRUE(game.ok()) << game.error().message;
  return game.ok() ? *game : nullptr;
}

TEST(DraftCost, SecondsPerByteBetweenLayoutsByHand) {
  auto game = SoapGame(MatmulTrainingGraph(2), Star());
  ASSERT_NE(game, nullptr);
  // Actions: d0..d3, then subset-major candidates: all, half:h0:0 (d0 d1), half:h0:1 (d2 d3), each with sample,
  // attribute, parameter, reduction.
  const int32_t devices = 4;
  auto action = [&](const std::string& name) {
    for (int32_t c = 0; c < game->num_candidates(); ++c)
      if (game->candidate(c).name == name) return devices + c;
    ADD_FAILURE() << "no candidate " << name;
    return -1;
  };
  const int32_t all_sample = action("all/sample"), all_attr = action("all/attribute");
  const int32_t all_param = action("all/parameter"), all_red = action("all/reduction");
  const int32_t half0_sample = action("half:h0:0/sample");
  ASSERT_EQ(game->candidate(half0_sample - devices).devices, (std::vector<DeviceId>{0, 1}));
  const int32_t a = game->num_actions();
  const std::vector<double> m = ActionReshardSecondsPerByte(*game);
  ASSERT_EQ(m.size(), static_cast<size_t>(a) * a);
  auto at = [&](int32_t from, int32_t to) { return m[static_cast<size_t>(from) * a + to]; };
  const double s = game->topology().transfer_time_estimate(0, 1, 1 << 20) / (1 << 20);  // every pair alike
  ASSERT_GT(s, 0.0);
  // An action to itself moves nothing, except a parameter split, whose output is sliced and input whole.
  for (int32_t b = 0; b < a; ++b) {
    if (b < devices || game->candidate(b - devices).kind != DimKind::kParameter) {
      EXPECT_EQ(at(b, b), 0.0) << b;
    }
  }
  EXPECT_DOUBLE_EQ(at(all_param, all_param), 3 * s / 4);
  EXPECT_DOUBLE_EQ(at(0, 1), s);
  // Whole on d0 to a sample split: d1, d2, d3 each miss a quarter, all sent by d0.
  EXPECT_DOUBLE_EQ(at(0, all_sample), 3 * s / 4);
  // A sample split gathered on d0: d0 misses three quarters (the slowest receiver).
  EXPECT_DOUBLE_EQ(at(all_sample, 0), 3 * s / 4);
  // Sample slices to attribute slices: each device holds a sixteenth of what it needs a quarter of.
  EXPECT_DOUBLE_EQ(at(all_sample, all_attr), 3 * s / 16);
  // A parameter split's output sliced along the features is what a reduction split's input needs (Megatron).
  EXPECT_EQ(at(all_param, all_red), 0.0);
  // A parameter split needs its input whole on every device: each misses three quarters.
  EXPECT_DOUBLE_EQ(at(all_sample, all_param), 3 * s / 4);
  // A reduction split's output is whole on every device after its reduction: nothing moves to any layout.
  for (int32_t to = 0; to < a; ++to) EXPECT_EQ(at(all_red, to), 0.0) << to;
  // Quarters to halves along the same axis: d0 holds [0, 1/4) of its [0, 1/2), d1 none of its [1/2, 1).
  EXPECT_DOUBLE_EQ(at(all_sample, half0_sample), s / 2);
  // Whole on d1 to the halves over d0 and d1: d0 misses its half, d1 has it.
  EXPECT_DOUBLE_EQ(at(1, half0_sample), s / 2);
  for (double v : m) EXPECT_GE(v, 0.0);
}

TEST(DraftCost, GroupEdgeBytesCountEachTensorOncePerConsumerGroup) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    const Graph graph = RandomTrainingGraph(seed, 60);
    auto game = SoapGame(graph, Star());
    ASSERT_NE(game, nullptr);
    // By hand: per (producer op, consumer group) the largest edge, added to the pair of groups.
    const std::vector<int32_t>& group = game->groups().group_of_op;
    std::map<std::pair<OpId, int32_t>, int64_t> tensor;
    for (int32_t e = 0; e < graph.num_edges(); ++e) {
      const Edge& edge = graph.edge(e);
      if (group[edge.src] == group[edge.dst]) continue;
      int64_t& bytes = tensor[{edge.src, group[edge.dst]}];
      bytes = std::max(bytes, edge.bytes);
    }
    std::map<std::pair<int32_t, int32_t>, double> expected;
    for (const auto& [key, bytes] : tensor) expected[{group[key.first], key.second}] += static_cast<double>(bytes);
    const std::vector<double> bytes = GroupEdgeBytes(*game);
    ASSERT_EQ(bytes.size(), game->edge_src().size());
    ASSERT_EQ(bytes.size(), expected.size());
    for (size_t k = 0; k < bytes.size(); ++k)
      EXPECT_EQ(bytes[k], (expected[{game->edge_src()[k], game->edge_dst()[k]}])) << seed << " " << k;
  }
}

}  // namespace
}  // namespace devplace::envtest
