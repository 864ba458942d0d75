// The layer split head (PolicyConfig::layer_split): the groups' position in the layer sequence and a policy that
// places contiguous runs of layers on devices where unrolling interleaves the layers in topological order.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "agents/learned/policy.h"
#include "core/colocation.h"
#include "core/topology_yaml.h"
#include "datasets/graph_source.h"
#include "tests/testing/learn_fixtures.h"

namespace devplace {
namespace {

using learntest::MakeGame;
using learntest::TinyPolicy;

// A 3-layer stacked-LSTM language model unrolled over a few steps on the DGX-1 (one-shot, device actions).
std::shared_ptr<const PlacementGame> LstmLmOnDgx1() {
  Expected<Graph> g = BuildGraph(GraphSource{.family = "lstmlm", .seed = 2, .target_ops = 300});
  EXPECT_TRUE(g.ok()) << g.error().message;
  Expected<Topology> t = ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml");
  EXPECT_TRUE(t.ok());
  return MakeGame(std::move(g).value(), std::move(t).value(), MdpKind::kOneShot);
}

// The layer of each group's first member (the expert's units).
std::vector<std::string> GroupLayerNames(const PlacementGame& game) {
  std::vector<std::string> names;
  for (int32_t g = 0; g < game.num_groups(); ++g) names.push_back(game.graph().op(game.groups().members[g][0]).layer);
  return names;
}

TEST(LayerPosition, OneValuePerLayerIncreasingAlongTheLayerSequence) {
  auto game = LstmLmOnDgx1();
  const GameTensors t = MakeGameTensors(*game);
  ASSERT_EQ(t.layer_position.sizes(), (std::vector<int64_t>{game->num_groups(), 1}));
  const std::vector<std::string> names = GroupLayerNames(*game);
  const std::vector<int32_t> index = GroupLayerIndex(game->graph(), game->groups());
  std::map<int32_t, float> position;  // per layer index
  for (int32_t g = 0; g < game->num_groups(); ++g) {
    const float p = t.layer_position[g][0].item<float>();
    EXPECT_GE(p, 0.0f);
    EXPECT_LE(p, 1.0f);
    auto [it, inserted] = position.emplace(index[g], p);
    EXPECT_EQ(it->second, p) << "groups of one layer share a position (" << names[g] << ")";
  }
  float previous = -1.0f;
  for (const auto& [layer, p] : position) {
    EXPECT_GE(p, previous) << "layer " << layer;
    previous = p;
  }
  // The first layer's groups come before layer0's, and the LSTM layers are reached in order.
  std::map<std::string, int32_t> first_index;
  for (int32_t g = 0; g < game->num_groups(); ++g) first_index.emplace(names[g], index[g]);
  EXPECT_LT(first_index.at("embedding"), first_index.at("layer0"));
  EXPECT_LT(first_index.at("layer0"), first_index.at("layer1"));
  EXPECT_LT(first_index.at("layer1"), first_index.at("softmax"));
  // Unrolling interleaves the layers in topological order: a later group of layer0 follows a group of layer1,
  // so the topological cumulative share (the first split head's coordinate) cannot separate the layers.
  int32_t first_layer1 = -1, last_layer0 = -1;
  for (int32_t g = 0; g < game->num_groups(); ++g) {
    if (names[g] == "layer1" && first_layer1 < 0) first_layer1 = g;
    if (names[g] == "layer0") last_layer0 = g;
  }
  EXPECT_LT(first_layer1, last_layer0);
}

// With every parameter 0 but the layer head (tangent lines of K p^2 at four centres) and the gate's bias, the
// greedy placement is a contiguous split of the layer sequence over devices 0-3, whatever the topological order.
TEST(LayerSplitHead, ExpressesAContiguousSplitOfTheLayers) {
  auto game = LstmLmOnDgx1();
  PolicyConfig config = TinyPolicy("transformer");
  config.max_devices = 8;
  config.layer_split = true;
  PolicyNet net(config, 3);
  torch::NoGradGuard no_grad;
  for (auto& item : net.module().named_parameters(true)) item.value().zero_();
  auto params = net.module().named_parameters(true);
  params["layer_gate.bias"].fill_(1.0);
  constexpr float kScale = 100.0f;
  for (int d = 0; d < 8; ++d) {
    const float c = (d + 0.5f) / 4.0f;  // devices 4-7 get centres beyond 1: never the nearest
    params["layer_head.weight"][d][0] = kScale * 2.0f * c;
    params["layer_head.bias"][d] = -kScale * c * c;
  }
  const torch::Tensor logits = net.transformer()->forward(MakeGameTensors(*game)).logits;
  const torch::Tensor device = logits.argmax(1);
  const std::vector<std::string> names = GroupLayerNames(*game);
  const std::vector<int32_t> index = GroupLayerIndex(game->graph(), game->groups());
  std::map<int32_t, int64_t> device_of_layer;
  std::set<int64_t> used;
  for (int32_t g = 0; g < game->num_groups(); ++g) {
    const int64_t d = device[g].item<int64_t>();
    EXPECT_LT(d, 4);
    used.insert(d);
    auto [it, inserted] = device_of_layer.emplace(index[g], d);
    EXPECT_EQ(it->second, d) << "one device per layer (" << names[g] << ")";
  }
  int64_t previous = 0;
  for (const auto& [layer, d] : device_of_layer) {
    EXPECT_GE(d, previous) << "layer " << layer << ": contiguous runs in layer order";
    previous = d;
  }
  EXPECT_GE(used.size(), 3u);
  // Gate 0 switches the head off: every device scores alike.
  params["layer_gate.bias"].fill_(0.0);
  const torch::Tensor off = net.transformer()->forward(MakeGameTensors(*game)).logits;
  EXPECT_EQ(off.abs().max().item<float>(), 0.0f);
}

TEST(LayerSplitHead, OffByDefaultWithoutItsParameters) {
  PolicyNet plain(TinyPolicy("transformer"), 3);
  for (const auto& item : plain.module().named_parameters(true))
    EXPECT_EQ(item.key().find("layer_"), std::string::npos) << item.key();
}

}  // namespace
}  // namespace devplace
