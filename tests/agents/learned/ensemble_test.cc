// Ensembles of policies: PpoLearner::set_ensemble decodes from the members' mean log-probability, and
// LearnedPolicy::Load reads an ensemble.json naming checkpoints.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "agents/learned/learner.h"
#include "agents/learned/learning.h"
#include "core/check.h"
#include "core/topology_yaml.h"
#include "datasets/graph_source.h"
#include "sim/cost_model.h"
#include "sim/simulator.h"
#include "tests/testing/learn_fixtures.h"

namespace devplace {
namespace {

using learntest::TinyPolicy;

// A SOAP game of a small ptb graph on the DGX-1 (splits over device subsets, some illegal for some groups).
std::shared_ptr<const PlacementGame> SoapGame() {
  auto g = std::make_shared<const Graph>(BuildGraph(GraphSource{.family = "ptb", .seed = 9, .target_ops = 120}).value());
  auto t = std::make_shared<const Topology>(
      ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml").value());
  EnvConfig env;
  env.kind = MdpKind::kOneShot;
  env.action_space = ActionSpace::kSoap;
  Expected<std::shared_ptr<const PlacementGame>> game = PlacementGame::Create(g, t, MakeAnalyticCostModel(), env);
  DEVPLACE_CHECK(game.ok(), game.ok() ? "" : game.error().message);
  return *game;
}

// Greedy decoding with two members, by hand from their forward passes: each member's log-softmax over the legal
// actions (every device, the splits a group can take), averaged, then the argmax per group; with coherence the
// second pass of each member reads the first pass's shared actions.
TEST(Ensemble, DecodesTheMembersMeanLogProbability) {
  for (const bool coherence : {false, true}) {
    SCOPED_TRACE(coherence ? "coherence" : "one pass");
    std::shared_ptr<const PlacementGame> game = SoapGame();
    PolicyConfig config = TinyPolicy("transformer");
    config.max_devices = 8;
    config.soap = true;
    config.coherence = coherence;
    PolicyNet a(config, 1), b(config, 2);
    GameEntry entry = MakeGameEntry(game, "ptb-9");
    const int64_t n = game->num_groups(), d = game->num_actions();
    torch::Tensor illegal = torch::zeros({n, d}, torch::kBool);
    int64_t illegal_count = 0;
    for (int64_t g = 0; g < n; ++g)
      for (int64_t k = game->num_devices(); k < d; ++k)
        if (!game->can_split(static_cast<int32_t>(g), static_cast<int32_t>(k))) {
          illegal[g][k] = true;
          ++illegal_count;
        }
    ASSERT_GT(illegal_count, 0) << "some split is illegal for some group";

    torch::NoGradGuard no_grad;
    const OneShotOutput out_a = a.transformer()->forward(entry.tensors), out_b = b.transformer()->forward(entry.tensors);
    auto mean = [&](const torch::Tensor& x, const torch::Tensor& y) {
      return (x.masked_fill(illegal, -1e9).log_softmax(-1) + y.masked_fill(illegal, -1e9).log_softmax(-1)) / 2;
    };
    torch::Tensor expected = mean(out_a.logits, out_b.logits);
    if (coherence) {
      const torch::Tensor first = expected.argmax(-1).unsqueeze(0);
      expected = mean(a.transformer()->Cohere(out_a.logits.unsqueeze(0), first, out_a, entry.tensors),
                      b.transformer()->Cohere(out_b.logits.unsqueeze(0), first, out_b, entry.tensors))[0];
    }
    const torch::Tensor expected_actions = expected.argmax(-1);

    auto greedy = [&](PolicyNet& lead, std::vector<PolicyNet*> others, int32_t threads = 1) {
      PpoLearner learner(&lead, PpoConfig{}, 1);
      learner.set_ensemble(std::move(others), threads);
      std::mt19937_64 rng(5);
      return learner.Collect(entry, 1, /*greedy=*/true, rng).episodes[0].placement;
    };
    const std::vector<int32_t> together = greedy(a, {&b}), alone_a = greedy(a, {}), alone_b = greedy(b, {});
    ASSERT_EQ(together.size(), static_cast<size_t>(n));
    for (int64_t g = 0; g < n; ++g) EXPECT_EQ(together[g], expected_actions[g].item<int64_t>()) << "group " << g;
    // The test is not vacuous: the ensemble decodes differently from each member alone.
    EXPECT_NE(together, alone_a);
    EXPECT_NE(together, alone_b);
    // The order of the members does not matter (up to rounding of the mean), nor the threads running them.
    EXPECT_EQ(greedy(b, {&a}), together);
    EXPECT_EQ(greedy(a, {&b}, 2), together);
  }
}

TEST(Ensemble, UpdateRefusesAnEnsemblesRollouts) {
  std::shared_ptr<const PlacementGame> game = SoapGame();
  PolicyConfig config = TinyPolicy("transformer");
  config.max_devices = 8;
  config.soap = true;
  PolicyNet a(config, 1), b(config, 2);
  GameEntry entry = MakeGameEntry(game, "ptb-9");
  PpoLearner learner(&a, PpoConfig{}, 1);
  learner.set_ensemble({&b});
  std::mt19937_64 rng(5);
  std::vector<GameRollout> rollouts{learner.Collect(entry, 4, /*greedy=*/false, rng)};
  EXPECT_THROW(learner.Update(rollouts, 0, rng), InternalError);
}

// Writes `dir`/ensemble.json naming `members`.
void WriteEnsemble(const std::string& dir, const std::vector<std::string>& members) {
  std::filesystem::create_directories(dir);
  std::ofstream out(dir + "/ensemble.json");
  out << R"({"format": "devplace.ensemble", "version": 1, "members": [)";
  for (size_t i = 0; i < members.size(); ++i) out << (i ? ", " : "") << '"' << members[i] << '"';
  out << "]}\n";
}

// Trains the tiny experiment for one iteration with `from` replaced by `to` in its text; returns the checkpoint
// directory.
std::string TrainTiny(const std::string& dir, const std::string& from, const std::string& to) {
  const std::string config = learntest::WriteTinyExperiment(dir, 1, {{from, to}});
  Expected<TrainSummary> trained = TrainPolicy({.config_path = config, .run_dir = dir + "/run"});
  DEVPLACE_CHECK(trained.ok(), trained.ok() ? "" : trained.error().message);
  return trained->checkpoint_dir;
}

TEST(Ensemble, LoadsFromAFolderAndPlaces) {
  const std::string dir = learntest::TempDir("ensemble");
  const std::string seed3 = TrainTiny(dir + "/a", "seed: 3", "seed: 3");
  const std::string seed4 = TrainTiny(dir + "/b", "seed: 3", "seed: 4");
  const std::string other = TrainTiny(dir + "/c", "segment: 8}", "segment: 8, coherence: true}");
  Graph g = BuildGraph(GraphSource{.family = "ptb", .seed = 9, .target_ops = 120}).value();
  Topology t = ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml").value();
  auto place = [&](const std::string& policy_dir) {
    Expected<std::unique_ptr<LearnedPolicy>> policy = LearnedPolicy::Load(policy_dir);
    DEVPLACE_CHECK(policy.ok(), policy.ok() ? "" : policy.error().message);
    Expected<PlaceResult> placed = (*policy)->Place(g, t, MakeAnalyticCostModel(), {}, {});
    DEVPLACE_CHECK(placed.ok(), placed.ok() ? "" : placed.error().message);
    return std::make_pair((*policy)->ensemble_size(), *placed);
  };

  // A policy with itself decodes as the policy alone (relative paths are the ensemble folder's).
  WriteEnsemble(dir + "/self", {"../a/run/ckpt", seed3});
  const auto [self_size, self] = place(dir + "/self");
  const auto [one_size, alone] = place(seed3);
  EXPECT_EQ(self_size, 2);
  EXPECT_EQ(one_size, 1);
  EXPECT_EQ(self.strategy.configs, alone.strategy.configs);
  EXPECT_EQ(self.step_time, alone.step_time);

  // Two seeds: one greedy placement, one evaluation, its simulated time.
  WriteEnsemble(dir + "/pair", {seed3, seed4});
  const auto [pair_size, pair] = place(dir + "/pair");
  EXPECT_EQ(pair_size, 2);
  EXPECT_EQ(pair.evaluations, 1);
  EXPECT_DOUBLE_EQ(Simulate(g, t, pair.strategy, MakeAnalyticCostModel())->step_time, pair.step_time);

  // Sampling draws from the members' mean (one evaluation each, the same seed the same placement); fine-tuning
  // trains a copy of the first member within the budget and keeps the best placement seen, the ensemble's greedy
  // one included.
  Expected<std::unique_ptr<LearnedPolicy>> ensemble = LearnedPolicy::Load(dir + "/pair");
  ASSERT_TRUE(ensemble.ok()) << ensemble.error().message;
  PlaceOptions options;
  options.samples = 4;
  options.seed = 7;
  Expected<PlaceResult> sampled = (*ensemble)->Place(g, t, MakeAnalyticCostModel(), {}, options);
  Expected<PlaceResult> again = (*ensemble)->Place(g, t, MakeAnalyticCostModel(), {}, options);
  ASSERT_TRUE(sampled.ok() && again.ok());
  EXPECT_EQ(sampled->evaluations, 5);
  EXPECT_LE(sampled->step_time, pair.step_time);
  EXPECT_EQ(sampled->strategy.configs, again->strategy.configs);
  options = PlaceOptions{};
  options.finetune_evaluations = 24;
  Expected<PlaceResult> tuned = (*ensemble)->Place(g, t, MakeAnalyticCostModel(), {}, options);
  ASSERT_TRUE(tuned.ok()) << tuned.error().message;
  EXPECT_LE(tuned->evaluations, 24);
  EXPECT_GT(tuned->evaluations, 2);
  EXPECT_DOUBLE_EQ(tuned->zero_shot_step_time, pair.step_time);
  EXPECT_LE(tuned->step_time, pair.step_time);

  // Errors name the file and the member.
  const std::string file = dir + "/mixed/ensemble.json";
  WriteEnsemble(dir + "/mixed", {seed3, other});
  Expected<std::unique_ptr<LearnedPolicy>> mixed = LearnedPolicy::Load(dir + "/mixed");
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.error().message, file + ": members[1]: its policy, env or ppo.temperature differ from "
                                          "members[0]'s (an ensemble's members must read the same inputs)");
  WriteEnsemble(dir + "/mixed", {seed3, "missing"});
  mixed = LearnedPolicy::Load(dir + "/mixed");
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.error().message.rfind(file + ": members[1]: ", 0), 0u) << mixed.error().message;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace devplace
