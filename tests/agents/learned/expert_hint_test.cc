// PolicyConfig::expert_hint: the expert heuristic's action per group (AddExpertHint) and the weight the
// Transformer adds at it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <string>

#include "agents/expert_placer.h"
#include "agents/learned/learner.h"
#include "agents/learned/learning.h"
#include "core/check.h"
#include "core/topology_yaml.h"
#include "datasets/graph_source.h"
#include "env/observation.h"
#include "sim/cost_model.h"
#include "sim/objective.h"
#include "sim/simulator.h"
#include "tests/testing/learn_fixtures.h"

namespace devplace {
namespace {

using learntest::MakeGame;
using learntest::MlpTrainingGraph;
using learntest::TinyPolicy;
using learntest::TwoDevices;

TEST(ExpertHint, IsTheExpertSearchsDevicePerGroup) {
  Expected<Graph> g = BuildGraph(GraphSource{.family = "lstmlm", .seed = 2, .target_ops = 300});
  ASSERT_TRUE(g.ok()) << g.error().message;
  Expected<Topology> t = ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml");
  ASSERT_TRUE(t.ok());
  auto game = MakeGame(std::move(g).value(), std::move(t).value(), MdpKind::kOneShot);
  GameTensors tensors = MakeGameTensors(*game);
  EXPECT_FALSE(tensors.expert_action.defined());
  Status hinted = AddExpertHint(*game, &tensors);
  ASSERT_TRUE(hinted.ok()) << hinted.error().message;
  ASSERT_EQ(tensors.expert_action.sizes(), (std::vector<int64_t>{game->num_groups()}));

  // The expert search on the same problem, run directly: every group's members sit on its hinted device.
  SearchProblem problem{.graph = &game->graph(), .topology = &game->topology(), .cost = game->cost()};
  Expected<SearchResult> expert = PlaceLikeAnExpert(problem, SearchRequest{});
  ASSERT_TRUE(expert.ok()) << expert.error().message;
  std::set<int64_t> devices;
  for (int32_t group = 0; group < game->num_groups(); ++group) {
    const int64_t hinted = tensors.expert_action[group].item<int64_t>();
    devices.insert(hinted);
    for (OpId op : game->groups().members[group])
      EXPECT_EQ(expert->strategy.configs[op].devices, std::vector<DeviceId>{static_cast<DeviceId>(hinted)})
          << game->graph().op(op).name;
  }
  EXPECT_GT(devices.size(), 1u) << "the expert spreads this language model's layers over devices";

  // The expert load, by hand from the expert search's strategy: per device the compute share of the groups it
  // holds; a device action's load leaves out the group itself.
  const int32_t n = game->num_groups(), d_count = game->num_devices();
  ASSERT_EQ(tensors.expert_load.sizes(), (std::vector<int64_t>{n, game->num_actions()}));
  std::vector<double> share(n), on_device(d_count, 0.0);
  double total = 0.0;
  for (int32_t group = 0; group < n; ++group) {
    share[group] = game->static_node_features()[static_cast<size_t>(group) * kNodeFeatureDim + kNodeComputeShare];
    on_device[expert->strategy.configs[game->groups().members[group].front()].devices[0]] += share[group];
    total += share[group];
  }
  for (int32_t group = 0; group < n; ++group) {
    const int64_t own = tensors.expert_action[group].item<int64_t>();
    for (int32_t d = 0; d < d_count; ++d)
      EXPECT_NEAR(tensors.expert_load[group][d].item<float>(),
                  d_count * (on_device[d] - (d == own ? share[group] : 0.0)), 1e-4)
          << "group " << group << ", device " << d;
  }
  // A device the expert leaves idle carries no load (this model's four LSTM layers leave some idle).
  ASSERT_LT(devices.size(), static_cast<size_t>(d_count));
  for (int32_t d = 0; d < d_count; ++d) {
    if (!devices.count(d)) {
      EXPECT_EQ(tensors.expert_load[0][d].item<float>(), 0.0f) << "device " << d;
    }
  }
  EXPECT_NEAR(total, 1.0, 1e-3);
}

TEST(ExpertHint, AddsTheHeadsWeightAtTheExpertsActionOnly) {
  auto game = MakeGame(MlpTrainingGraph(5), TwoDevices(2.0), MdpKind::kOneShot, true, /*data_parallel_action=*/true);
  PolicyConfig config = TinyPolicy("transformer");
  config.data_parallel_action = true;
  config.expert_hint = true;
  PolicyNet net(config, 3);
  GameEntry entry = MakeGameEntry(game, "mlp");
  // Without the expert's actions the policy refuses to score the game.
  EXPECT_THROW(net.transformer()->forward(entry.tensors), InternalError);
  ASSERT_TRUE(AddExpertHint(*game, &entry.tensors).ok());
  ASSERT_EQ(entry.tensors.expert_action.size(0), game->num_groups());
  // A fresh policy's hint weights are zero.
  const torch::Tensor fresh = net.transformer()->forward(entry.tensors).logits;
  {
    torch::NoGradGuard no_grad;
    for (auto& p : net.module().named_parameters(true)) {
      if (p.key().rfind("hint_head.", 0) == 0) {
        EXPECT_TRUE(torch::equal(p.value(), torch::zeros_like(p.value()))) << p.key();
      }
      if (p.key() == "hint_head.bias") p.value()[0] = 1.5f;
    }
  }
  const torch::Tensor added = net.transformer()->forward(entry.tensors).logits - fresh;
  for (int64_t group = 0; group < game->num_groups(); ++group) {
    for (int64_t action = 0; action < game->num_actions(); ++action) {
      EXPECT_NEAR(added[group][action].item<float>(),
                  action == entry.tensors.expert_action[group].item<int64_t>() ? 1.5f : 0.0f, 1e-5)
          << "group " << group << ", action " << action;
    }
  }
  // The second weight multiplies each action's expert load.
  {
    torch::NoGradGuard no_grad;
    for (auto& p : net.module().named_parameters(true)) {
      if (p.key() == "hint_head.bias") p.value()[0] = 0.0f, p.value()[1] = -2.0f;
    }
  }
  const torch::Tensor loaded = net.transformer()->forward(entry.tensors).logits - fresh;
  EXPECT_TRUE(torch::allclose(loaded, -2.0f * entry.tensors.expert_load, 1e-5, 1e-5));
  EXPECT_GT(entry.tensors.expert_load.abs().sum().item<float>(), 0.0f);
}

// PolicyConfig::strategy_context: the expert's and the best uniform split's speedups over the reference device, by
// hand, and a policy that reads them refuses a game without them.
TEST(ExpertHint, StrategyContextIsTheExpertsAndTheBestSplitsSpeedup) {
  auto game = MakeGame(MlpTrainingGraph(5), TwoDevices(2.0), MdpKind::kOneShot, true, /*data_parallel_action=*/true);
  PolicyConfig config = TinyPolicy("transformer");
  config.data_parallel_action = true;
  config.expert_hint = true;
  config.strategy_context = true;
  PolicyNet net(config, 3);
  GameEntry entry = MakeGameEntry(game, "mlp");
  ASSERT_TRUE(AddExpertHint(*game, &entry.tensors).ok());
  EXPECT_THROW(net.transformer()->forward(entry.tensors), InternalError);
  ASSERT_TRUE(AddStrategyContext(*game, &entry.tensors).ok());
  ASSERT_EQ(entry.tensors.strategy_context.sizes(), (std::vector<int64_t>{2}));

  SearchProblem problem{.graph = &game->graph(), .topology = &game->topology(), .cost = game->cost()};
  Expected<SearchResult> expert = PlaceLikeAnExpert(problem, SearchRequest{});
  ASSERT_TRUE(expert.ok()) << expert.error().message;
  Expected<SimResult> simulated = Simulate(game->graph(), game->topology(), expert->strategy, game->cost());
  ASSERT_TRUE(simulated.ok());
  const double expert_time = game->PenalisedTime(CostOf(*simulated, game->topology()));
  const double split_time = game->uniform_step_time(game->data_parallel_action() - game->num_devices());
  ASSERT_GT(split_time, 0.0);
  auto speedup = [&](double t) { return std::clamp(std::log(game->reference_time() / t) / std::log(2.0), -1.0, 1.0); };
  EXPECT_NEAR(entry.tensors.strategy_context[0].item<float>(), speedup(expert_time), 1e-6);
  EXPECT_NEAR(entry.tensors.strategy_context[1].item<float>(), speedup(split_time), 1e-6);
  EXPECT_NE(speedup(expert_time), speedup(split_time));
  // The context enters the policy: a different context, different logits.
  const torch::Tensor logits = net.transformer()->forward(entry.tensors).logits;
  entry.tensors.strategy_context = torch::tensor({-1.0f, 1.0f});
  EXPECT_FALSE(torch::allclose(net.transformer()->forward(entry.tensors).logits, logits));
}

// Each optional input end to end: train a tiny policy with it, load the checkpoint, place an unseen graph.
TEST(ExpertHint, TrainsAndPlacesEndToEnd) {
  for (const std::string flags : {"expert_hint: true", "expert_hint: true, coherence: true, draft_cost: true, "
                                                       "strategy_context: true"}) {
    const std::string dir = learntest::TempDir("expert-hint");
    const std::string config = learntest::WriteTinyExperiment(dir, 1, {{"segment: 8}", "segment: 8, " + flags + "}"}});
    Expected<TrainSummary> trained = TrainPolicy({.config_path = config, .run_dir = dir + "/run"});
    ASSERT_TRUE(trained.ok()) << trained.error().message;
    Expected<std::unique_ptr<LearnedPolicy>> policy = LearnedPolicy::Load(trained->checkpoint_dir);
    ASSERT_TRUE(policy.ok()) << policy.error().message;
    Graph g = BuildGraph(GraphSource{.family = "ptb", .seed = 9, .target_ops = 120}).value();
    Topology t = ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml").value();
    Expected<PlaceResult> placed = (*policy)->Place(g, t, MakeAnalyticCostModel(), {}, {});
    ASSERT_TRUE(placed.ok()) << placed.error().message;
    // The greedy placement's evaluation only: the expert's simulations build the policy's input.
    EXPECT_EQ(placed->evaluations, 1);
    EXPECT_DOUBLE_EQ(Simulate(g, t, placed->strategy, MakeAnalyticCostModel())->step_time, placed->step_time);
    // PlaceOptions::coherence_passes: only for a policy with the coherence pass.
    PlaceOptions two_passes;
    two_passes.coherence_passes = 2;
    Expected<PlaceResult> again = (*policy)->Place(g, t, MakeAnalyticCostModel(), {}, two_passes);
    if (flags.find("coherence") == std::string::npos) {
      ASSERT_FALSE(again.ok());
      EXPECT_EQ(again.error().message, "coherence passes: this policy has no coherence pass (policy.coherence)");
    } else {
      ASSERT_TRUE(again.ok()) << again.error().message;
      EXPECT_EQ(again->evaluations, 1);
    }
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace devplace
