// PolicyConfig::coherence: the Transformer's second decoding pass (TransformerPlacer::Cohere) and the learner's
// two-pass episodes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "agents/learned/learner.h"
#include "agents/learned/learning.h"
#include "env/draft_cost.h"
#include "tests/testing/learn_fixtures.h"

namespace devplace {
namespace {

using learntest::MakeGame;
using learntest::MlpTrainingGraph;
using learntest::TinyPolicy;
using learntest::TwoDevices;

// Two devices and the data-parallel action (a split action), so both of Cohere's weight columns are used.
std::shared_ptr<const PlacementGame> CoherenceGame() {
  return MakeGame(MlpTrainingGraph(5), TwoDevices(2.0), MdpKind::kOneShot, true, /*data_parallel_action=*/true);
}

PolicyConfig CoherentPolicy() {
  PolicyConfig config = TinyPolicy("transformer");
  config.data_parallel_action = true;
  config.coherence = true;
  return config;
}

// Sets the coherence head to constant weights: `device` for device actions, `split` for split actions.
void SetCoherenceWeights(PolicyNet& net, float device, float split) {
  torch::NoGradGuard no_grad;
  for (auto& p : net.module().named_parameters(true)) {
    if (p.key() == "coherence_head.weight") p.value().zero_();
    if (p.key() == "coherence_head.bias") {
      p.value()[0] = device;
      p.value()[1] = split;
    }
  }
}

// By hand: each group's neighbours over the group edges in both directions, with multiplicity.
std::vector<std::vector<int32_t>> Neighbours(const PlacementGame& game) {
  std::vector<std::vector<int32_t>> neighbours(static_cast<size_t>(game.num_groups()));
  for (size_t e = 0; e < game.edge_src().size(); ++e) {
    neighbours[game.edge_dst()[e]].push_back(game.edge_src()[e]);
    neighbours[game.edge_src()[e]].push_back(game.edge_dst()[e]);
  }
  return neighbours;
}

TEST(Coherence, AddsEachGroupsWeightTimesItsNeighboursVotes) {
  auto game = CoherenceGame();
  PolicyNet net(CoherentPolicy(), 3);
  GameEntry entry = MakeGameEntry(game, "mlp");
  const int64_t n = game->num_groups(), a = game->num_actions(), devices = game->num_devices();
  ASSERT_EQ(a, 3);
  // Two rows of first actions, drawn at random over every action.
  std::mt19937_64 rng(11);
  torch::Tensor first = torch::empty({2, n}, torch::kInt64);
  for (int64_t i = 0; i < 2 * n; ++i) first.view({-1})[i] = static_cast<int64_t>(rng() % a);
  {
    // A fresh policy's weights are zero: the second pass changes nothing.
    OneShotOutput out = net.transformer()->forward(entry.tensors);
    torch::Tensor logits = out.logits.unsqueeze(0).expand({2, n, a});
    EXPECT_TRUE(torch::equal(net.transformer()->Cohere(logits, first, out, entry.tensors), logits));
  }
  SetCoherenceWeights(net, 2.0f, 3.0f);
  OneShotOutput out = net.transformer()->forward(entry.tensors);
  torch::Tensor logits = out.logits.unsqueeze(0).expand({2, n, a});
  torch::Tensor added = net.transformer()->Cohere(logits, first, out, entry.tensors) - logits;
  const std::vector<std::vector<int32_t>> neighbours = Neighbours(*game);
  bool some_vote = false;
  for (int64_t row = 0; row < 2; ++row)
    for (int64_t g = 0; g < n; ++g)
      for (int64_t k = 0; k < a; ++k) {
        double votes = 0;
        for (int32_t v : neighbours[g]) votes += first[row][v].item<int64_t>() == k ? 1.0 : 0.0;
        const double share = neighbours[g].empty() ? 0.0 : votes / static_cast<double>(neighbours[g].size());
        const double expected = (k < devices ? 2.0 : 3.0) * share;
        EXPECT_NEAR(added[row][g][k].item<float>(), expected, 1e-5) << row << " " << g << " " << k;
        some_vote = some_vote || share > 0;
      }
  EXPECT_TRUE(some_vote);
}

// PolicyConfig::draft_cost: the second pass adds each group's draft weight x log1p of the action's resharding
// against its neighbours' first actions, computed here by hand from the env's per-byte table and edge bytes.
TEST(Coherence, DraftCostAddsEachGroupsWeightTimesTheActionsResharding) {
  auto game = CoherenceGame();
  PolicyConfig config = CoherentPolicy();
  config.draft_cost = true;
  PolicyNet net(config, 3);
  GameEntry entry = MakeGameEntry(game, "mlp");
  ASSERT_TRUE(AddPolicyInputs(config, *game, &entry.tensors).ok());
  const int64_t n = game->num_groups(), a = game->num_actions();
  std::mt19937_64 rng(12);
  torch::Tensor first = torch::empty({2, n}, torch::kInt64);
  for (int64_t i = 0; i < 2 * n; ++i) first.view({-1})[i] = static_cast<int64_t>(rng() % a);
  SetCoherenceWeights(net, 0.0f, 0.0f);
  {
    // A fresh policy's draft weights are zero too.
    OneShotOutput out = net.transformer()->forward(entry.tensors);
    torch::Tensor logits = out.logits.unsqueeze(0).expand({2, n, a});
    EXPECT_TRUE(torch::equal(net.transformer()->Cohere(logits, first, out, entry.tensors), logits));
  }
  {
    torch::NoGradGuard no_grad;
    for (auto& p : net.module().named_parameters(true))
      if (p.key() == "draft_head.bias") p.value().fill_(-1.5);
  }
  OneShotOutput out = net.transformer()->forward(entry.tensors);
  torch::Tensor logits = out.logits.unsqueeze(0).expand({2, n, a});
  torch::Tensor added = net.transformer()->Cohere(logits, first, out, entry.tensors) - logits;
  const std::vector<double> per_byte = ActionReshardSecondsPerByte(*game);
  const std::vector<double> bytes = GroupEdgeBytes(*game);
  const double scale = static_cast<double>(n) / game->total_reference_seconds();
  bool some_cost = false;
  for (int64_t row = 0; row < 2; ++row)
    for (int64_t g = 0; g < n; ++g)
      for (int64_t k = 0; k < a; ++k) {
        double cost = 0.0;
        for (size_t e = 0; e < bytes.size(); ++e) {
          const int32_t src = game->edge_src()[e], dst = game->edge_dst()[e];
          if (dst == g) cost += bytes[e] * scale * per_byte[first[row][src].item<int64_t>() * a + k];
          if (src == g) cost += bytes[e] * scale * per_byte[k * a + first[row][dst].item<int64_t>()];
        }
        EXPECT_NEAR(added[row][g][k].item<float>(), -1.5 * std::log1p(cost), 1e-4 * (1 + std::log1p(cost)))
            << row << " " << g << " " << k;
        some_cost = some_cost || cost > 1e-3;
      }
  EXPECT_TRUE(some_cost);
}

// The learner's episodes decode twice: the log-probabilities it records are those the update recomputes (the
// first update's ratio is exactly 1), and strong weights make each group follow its neighbours' first actions.
TEST(Coherence, CollectedLogProbabilitiesAreTheUpdatesOnes) {
  auto game = CoherenceGame();
  PolicyNet net(CoherentPolicy(), 4);
  SetCoherenceWeights(net, 0.7f, -0.4f);
  GameEntry entry = MakeGameEntry(game, "mlp");
  PpoConfig ppo;
  ppo.epochs = 1;
  ppo.minibatches = 1;
  ppo.temperature = 1.5;
  PpoLearner learner(&net, ppo, 1);
  std::mt19937_64 rng(5);
  std::vector<GameRollout> rollouts;
  rollouts.push_back(learner.Collect(entry, 8, false, rng));
  ASSERT_TRUE(rollouts[0].first_actions.defined());
  ASSERT_EQ(rollouts[0].first_actions.size(0), 8);
  const UpdateStats stats = learner.Update(rollouts, 0, rng);
  EXPECT_NEAR(stats.approx_kl, 0.0, 1e-6);
  EXPECT_EQ(stats.clip_fraction, 0.0);

  SetCoherenceWeights(net, 50.0f, 50.0f);
  GameRollout greedy = learner.Collect(entry, 1, true, rng);
  ASSERT_TRUE(greedy.first_actions.defined());
  // Every group whose neighbours' first actions have one most frequent action takes it.
  const std::vector<std::vector<int32_t>> neighbours = Neighbours(*game);
  int checked = 0;
  for (int64_t g = 0; g < game->num_groups(); ++g) {
    if (neighbours[g].empty()) continue;
    std::vector<int> count(static_cast<size_t>(game->num_actions()), 0);
    for (int32_t v : neighbours[g]) ++count[greedy.first_actions[0][v].item<int64_t>()];
    int best = 0;
    for (int k = 1; k < game->num_actions(); ++k)
      if (count[k] > count[best]) best = k;
    if (std::count(count.begin(), count.end(), count[best]) > 1) continue;  // a tie: the first pass's logits decide
    if (!greedy.masks[0][g][best].item<bool>()) continue;                   // the environment's mask rules it out
    ++checked;
    EXPECT_EQ(greedy.actions[0][g].item<int64_t>(), best) << g;
  }
  EXPECT_GT(checked, 2);
}

// PolicyConfig::coherence_passes: a greedy episode's draft is the previous pass's greedy actions (two passes: the
// greedy second pass on the first pass's greedy actions), and the update still scores what was collected.
TEST(Coherence, FurtherPassesDecodeOnThePreviousPasssActions) {
  auto game = CoherenceGame();
  PolicyConfig config = CoherentPolicy();
  config.coherence_passes = 2;
  PolicyNet net(config, 4);
  SetCoherenceWeights(net, -50.0f, 50.0f);  // away from the neighbours' devices, towards their splits
  GameEntry entry = MakeGameEntry(game, "mlp");
  PpoConfig ppo;
  ppo.epochs = 1;
  ppo.minibatches = 1;
  PpoLearner learner(&net, ppo, 1);
  std::mt19937_64 rng(6);
  GameRollout greedy = learner.Collect(entry, 1, true, rng);
  // By hand: the first pass's most likely action per group over every device and the splits it can take, then the
  // second pass's on those.
  {
    torch::NoGradGuard no_grad;
    OneShotOutput out = net.transformer()->forward(entry.tensors);
    const int64_t n = game->num_groups(), a = game->num_actions();
    torch::Tensor legal = torch::ones({n, a}, torch::kBool);
    for (int64_t g = 0; g < n; ++g)
      for (int64_t k = game->num_devices(); k < a; ++k)
        legal[g][k] = game->can_split(static_cast<int32_t>(g), static_cast<int32_t>(k));
    auto best = [&](const torch::Tensor& logits) { return logits.masked_fill(legal.logical_not(), -1e9).argmax(-1); };
    torch::Tensor first = best(out.logits).unsqueeze(0);
    torch::Tensor second = best(net.transformer()->Cohere(out.logits.unsqueeze(0), first, out, entry.tensors)[0]);
    EXPECT_TRUE(torch::equal(greedy.first_actions[0], second));
    EXPECT_FALSE(torch::equal(second, first[0])) << "the weights are strong enough that the second pass moves groups";
  }

  // A one-pass policy whose learner is told to run two passes decodes the same.
  PolicyConfig one_pass = config;
  one_pass.coherence_passes = 1;
  PolicyNet same(one_pass, 4);
  SetCoherenceWeights(same, -50.0f, 50.0f);
  PpoLearner told(&same, ppo, 1);
  told.set_coherence_passes(2);
  std::mt19937_64 rng2(6);
  EXPECT_TRUE(torch::equal(told.Collect(entry, 1, true, rng2).first_actions, greedy.first_actions));

  std::vector<GameRollout> rollouts;
  rollouts.push_back(learner.Collect(entry, 8, false, rng));
  const UpdateStats stats = learner.Update(rollouts, 0, rng);
  EXPECT_NEAR(stats.approx_kl, 0.0, 1e-6);
}

}  // namespace
}  // namespace devplace
