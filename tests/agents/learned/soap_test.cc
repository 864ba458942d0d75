// The SOAP action space in the learning library: the Transformer's candidate head, Tofu-DP demonstrations
// projected onto the candidates (learn_test.cc's SplitActions trains a tiny SOAP run).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "agents/learned/demonstration.h"
#include "agents/learned/learner.h"
#include "agents/learned/learning.h"
#include "env/candidates.h"
#include "core/topology_yaml.h"
#include "datasets/graph_source.h"
#include "sim/cost_model.h"
#include "tests/testing/learn_fixtures.h"

namespace devplace {
namespace {

using learntest::TinyPolicy;

std::shared_ptr<const PlacementGame> SoapGame(Graph graph, Topology topology) {
  EnvConfig config;
  config.kind = MdpKind::kOneShot;
  config.action_space = ActionSpace::kSoap;
  auto game = PlacementGame::Create(std::make_shared<const Graph>(std::move(graph)),
                                    std::make_shared<const Topology>(std::move(topology)), MakeAnalyticCostModel(),
                                    config);
  EXPECT_TRUE(game.ok()) << game.error().message;
  return std::move(game).value();
}

PolicyConfig SoapPolicy() {
  PolicyConfig config = TinyPolicy("transformer");
  config.soap = true;
  return config;
}

// A small member of `family` on the DGX-1 (candidates over all GPUs and each half).
std::shared_ptr<const PlacementGame> OnDgx1(const std::string& family) {
  Expected<Graph> g = BuildGraph(GraphSource{.family = family, .seed = 1, .target_ops = 120});
  EXPECT_TRUE(g.ok());
  Expected<Topology> t = ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml");
  EXPECT_TRUE(t.ok());
  return SoapGame(std::move(g).value(), std::move(t).value());
}

TEST(SoapPolicy, ScoresEveryCandidateAndSamplesOnlyLegalActions) {
  auto game = OnDgx1("ptb");
  ASSERT_EQ(game->num_candidates(), 12);  // {all, half 0, half 1} x 4 kinds
  PolicyConfig config = SoapPolicy();
  config.max_devices = 8;
  PolicyNet net(config, 4);
  PpoLearner learner(&net, PpoConfig{}, 1);
  GameEntry entry = MakeGameEntry(game, "ptb");
  OneShotOutput out = net.transformer()->forward(entry.tensors);
  ASSERT_EQ(out.logits.size(0), game->num_groups());
  ASSERT_EQ(out.logits.size(1), game->num_actions());
  EXPECT_TRUE(torch::isfinite(out.logits).all().item<bool>());
  std::mt19937_64 rng(3);
  GameRollout r = learner.Collect(entry, 8, false, rng);
  const torch::Tensor taken = r.actions.reshape({-1});
  const torch::Tensor masks = r.masks.reshape({taken.size(0), game->num_actions()});
  std::vector<int64_t> kinds(4, 0);
  for (int64_t i = 0; i < taken.size(0); ++i) {
    const int64_t a = taken[i].item<int64_t>();
    ASSERT_TRUE(masks[i][a].item<bool>());
    if (game->is_split(static_cast<int32_t>(a))) ++kinds[(a - game->num_devices()) % 4];
  }
  EXPECT_GT(kinds[0], 0) << "a near-uniform policy samples sample splits";
  EXPECT_GT(kinds[2] + kinds[3], 0) << "and parameter or reduction splits";
  EXPECT_TRUE(torch::isfinite(r.old_logp).all().item<bool>());
}

// A policy reads the candidate columns its config names: one trained on the first 14 ignores the uniform and star
// columns, one trained on 19 the star columns, one trained on all 22 reads them.
TEST(SoapPolicy, ReadsOnlyTheCandidateColumnsItWasTrainedOn) {
  auto game = OnDgx1("transformer");
  GameEntry entry = MakeGameEntry(game, "transformer");
  for (int32_t columns : {kCandidateFeatureDimV1, kCandidateFeatureDimV2, static_cast<int32_t>(kCandidateFeatureDim)}) {
    GameTensors changed = entry.tensors;
    changed.candidate_x = entry.tensors.candidate_x.clone();
    // Every column past the ones this policy reads (past the first two sets for the full policy).
    changed.candidate_x.slice(2, std::min<int32_t>(columns, kCandidateFeatureDimV2)).add_(0.5);
    PolicyConfig config = SoapPolicy();
    config.max_devices = 8;
    config.candidate_features = columns;
    PolicyNet net(config, 4);
    torch::NoGradGuard no_grad;
    const torch::Tensor before = net.transformer()->forward(entry.tensors).logits;
    const torch::Tensor after = net.transformer()->forward(changed).logits;
    EXPECT_EQ(torch::equal(before, after), columns != kCandidateFeatureDim) << columns << " columns";
  }
}

// Tofu-DP splits every op of a small transformer member over the eight GPUs.
TEST(SoapDemonstration, TofuDpIsProjectedOntoLegalCandidates) {
  auto game = OnDgx1("transformer");
  Demonstration d = MakeDemonstration(*game, {"tofu-dp"}, 1).value();
  ASSERT_EQ(static_cast<int32_t>(d.device_per_group.size()), game->num_groups());
  int32_t splits = 0;
  for (int32_t g = 0; g < game->num_groups(); ++g) {
    const int32_t a = d.device_per_group[g];
    ASSERT_TRUE(a >= 0 && a < game->num_actions());
    if (game->is_split(a)) {
      EXPECT_TRUE(game->can_split(g, a)) << "group " << g;
      ++splits;
    }
  }
  EXPECT_GT(splits, 0) << "Tofu-DP partitions ops";
  EXPECT_LE(d.projected_groups, splits + game->num_groups());
  // Here Tofu-DP's splits are data parallelism over the DGX-1's NVLink ring (0 1 2 3 7 5 6 4): a candidate lists
  // its devices in that order (env/candidates.h), so no group has to be projected and the demonstration keeps
  // Tofu-DP's ring.
  EXPECT_EQ(d.projected_groups, 0);
  EXPECT_EQ(d.penalised_time, game->PenalisedTime(CostOf(*game->Evaluate(d.device_per_group), game->topology())));
}

// Coordinate descent from the expert's placement of a small transformer member on the DGX-1: never worse, legal,
// priced exactly, a local optimum of the refined groups (no single action of one of them is faster) and
// deterministic; with no groups it only prices the demonstration.
TEST(SoapDemonstration, RefineReachesALocalOptimumOfTheHeaviestGroups) {
  auto game = OnDgx1("transformer");
  const Demonstration expert = MakeDemonstration(*game, {"expert"}, 1).value();
  Demonstration unchanged = expert;
  EXPECT_EQ(RefineDemonstration(*game, 0, 2, &unchanged).value(), 1);
  EXPECT_EQ(unchanged.device_per_group, expert.device_per_group);
  EXPECT_EQ(unchanged.algorithm, "expert");

  constexpr int32_t kGroups = 4;
  Demonstration d = expert;
  const int64_t evaluations = RefineDemonstration(*game, kGroups, 20, &d).value();
  EXPECT_GT(evaluations, kGroups);
  EXPECT_LT(d.penalised_time, expert.penalised_time) << "the expert leaves seven GPUs idle on this member";
  EXPECT_EQ(d.algorithm, "expert+refine");
  auto time_of = [&](const std::vector<int32_t>& actions) {
    return game->PenalisedTime(CostOf(*game->Evaluate(actions), game->topology()));
  };
  EXPECT_EQ(d.penalised_time, time_of(d.device_per_group));
  std::vector<int32_t> order(game->num_groups());
  for (int32_t g = 0; g < game->num_groups(); ++g) order[g] = g;
  const DeviceId reference = game->reference_device();
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return game->group_seconds(a, reference) > game->group_seconds(b, reference);
  });
  for (int32_t g = 0; g < game->num_groups(); ++g) {
    const int32_t a = d.device_per_group[g];
    if (game->is_split(a)) {
      EXPECT_TRUE(game->can_split(g, a)) << "group " << g;
    }
    if (a != expert.device_per_group[g]) {
      EXPECT_NE(std::find(order.begin(), order.begin() + kGroups, g), order.begin() + kGroups) << "group " << g;
    }
  }
  for (int32_t k = 0; k < kGroups; ++k) {
    const int32_t g = order[k];
    std::vector<int32_t> moved = d.device_per_group;
    for (int32_t a = 0; a < game->num_actions(); ++a) {
      if (game->is_split(a) && !game->can_split(g, a)) continue;
      moved[g] = a;
      EXPECT_GE(time_of(moved), d.penalised_time) << "group " << g << " action " << a;
    }
  }
  Demonstration again = expert;
  EXPECT_EQ(RefineDemonstration(*game, kGroups, 20, &again).value(), evaluations);
  EXPECT_EQ(again.device_per_group, d.device_per_group);

  Demonstration wrong = expert;
  wrong.device_per_group.pop_back();
  EXPECT_FALSE(RefineDemonstration(*game, kGroups, 1, &wrong).ok());
}

// `devplace place` with a SOAP policy: a mesh over the target machine adds its axes' device lines to the
// candidates the policy scores (as training does with its topologies' meshes), and a devices policy refuses one.
TEST(SoapPlacement, MeshesOfTheTargetTopologyReachTheCandidates) {
  const std::string dir = learntest::TempDir("soap-place");
  const std::string config = learntest::WriteTinyExperiment(dir, 1);
  std::ofstream(config, std::ios::app) << "env: {action_space: soap}\n";
  Expected<TrainSummary> trained = TrainPolicy({.config_path = config, .run_dir = dir + "/run"});
  ASSERT_TRUE(trained.ok()) << trained.error().message;
  Expected<std::unique_ptr<LearnedPolicy>> policy = LearnedPolicy::Load(trained->checkpoint_dir);
  ASSERT_TRUE(policy.ok()) << policy.error().message;
  Graph g = BuildGraph(GraphSource{.family = "transformer", .seed = 1, .target_ops = 120}).value();
  Topology t = ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml").value();
  PlaceOptions policy_only;
  policy_only.uniform = false;
  Expected<PlaceResult> plain = (*policy)->Place(g, t, MakeAnalyticCostModel(), {}, policy_only);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(plain->num_actions, 8 + 12);  // {all, half 0, half 1} x 4 kinds
  PlaceOptions options;
  options.meshes.push_back(MeshFromShorthand("4x2", {}, t).value());
  const size_t subsets = MachineSubsets(t, options.meshes).size();
  ASSERT_GT(subsets, 3u) << "the 4 x 2 mesh's lines are new subsets";
  Expected<PlaceResult> meshed = (*policy)->Place(g, t, MakeAnalyticCostModel(), {}, options);
  ASSERT_TRUE(meshed.ok()) << meshed.error().message;
  EXPECT_EQ(meshed->num_actions, 8 + 4 * static_cast<int32_t>(subsets));
  EXPECT_TRUE(ValidateStrategy(meshed->strategy, g, t).ok());
  // The default (PlaceOptions::uniform): the fastest uniform sample split, simulated while the game was built (no
  // further evaluation), kept only when it beats the greedy placement.
  EXPECT_EQ(plain->uniform_step_time, 0.0);
  Expected<PlaceResult> both = (*policy)->Place(g, t, MakeAnalyticCostModel(), {}, {});
  ASSERT_TRUE(both.ok()) << both.error().message;
  EXPECT_EQ(both->evaluations, plain->evaluations);
  EXPECT_GT(both->uniform_step_time, 0.0);
  EXPECT_EQ(both->zero_shot_step_time, plain->step_time);
  EXPECT_EQ(both->step_time, std::min(plain->step_time, both->uniform_step_time));
  EXPECT_DOUBLE_EQ(Simulate(g, t, both->strategy, MakeAnalyticCostModel())->step_time, both->step_time);

  std::filesystem::create_directories(dir + "/devices");
  Expected<TrainSummary> devices =
      TrainPolicy({.config_path = learntest::WriteTinyExperiment(dir + "/devices", 1), .run_dir = dir + "/devices/run"});
  ASSERT_TRUE(devices.ok()) << devices.error().message;
  Expected<PlaceResult> refused = LearnedPolicy::Load(devices->checkpoint_dir).value()->Place(
      g, t, MakeAnalyticCostModel(), {}, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("only a soap policy"), std::string::npos) << refused.error().message;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace devplace
