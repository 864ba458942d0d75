// The learning side: masking, PPO arithmetic, policies, training, checkpoints and placement.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "agents/learned/checkpoint.h"
#include "agents/learned/learned_search.h"
#include "agents/learned/learner.h"
#include "agents/learned/learning.h"
#include "agents/learned/policy.h"
#include "agents/learned/ppo.h"
#include "core/atomic_file.h"
#include "config/experiment_config.h"
#include "tests/agents/learned/same_runs.h"
#include "tests/testing/learn_fixtures.h"

namespace devplace {
namespace {

using learntest::MakeGame;
using learntest::MlpTrainingGraph;
using learntest::TinyPolicy;
using learntest::ExpectSameRuns;
using learntest::TwoDevices;

TEST(Ppo, GaeMatchesHandComputation) {
  // rewards 1, 0, 2; values .5, .4, .3; step 1 ends an episode; bootstrap 1; gamma .9, lambda .8.
  GaeResult g = ComputeGae(std::vector<double>{1, 0, 2}, std::vector<double>{0.5, 0.4, 0.3},
                           std::vector<uint8_t>{0, 1, 0}, 1.0, 0.9, 0.8);
  // A2 = 2 + .9 * 1 - .3 = 2.6; A1 = 0 - .4 = -.4 (episode end); A0 = (1 + .9 * .4 - .5) + .72 * (-.4) = .572.
  EXPECT_NEAR(g.advantages[2], 2.6, 1e-12);
  EXPECT_NEAR(g.advantages[1], -0.4, 1e-12);
  EXPECT_NEAR(g.advantages[0], 0.572, 1e-12);
  EXPECT_NEAR(g.returns[0], 1.072, 1e-12);
  EXPECT_NEAR(g.returns[1], 0.0, 1e-12);
  EXPECT_NEAR(g.returns[2], 2.9, 1e-12);
}

TEST(Ppo, ClippedLossMatchesHandComputation) {
  PpoConfig c;
  c.clip = 0.2;
  c.value_coef = 0.5;
  c.entropy_coef = 0.01;
  torch::Tensor new_logp = torch::log(torch::tensor({0.5, 0.2}, torch::kFloat64));
  torch::Tensor old_logp = torch::log(torch::tensor({0.4, 0.4}, torch::kFloat64));
  torch::Tensor adv = torch::tensor({1.0, -1.0}, torch::kFloat64);
  torch::Tensor entropy = torch::tensor({0.6, 0.4}, torch::kFloat64);
  torch::Tensor values = torch::tensor({0.5, -1.0}, torch::kFloat64);
  torch::Tensor returns = torch::tensor({1.0, 0.0}, torch::kFloat64);
  PpoLoss loss = ComputePpoLoss(new_logp, old_logp, adv, entropy, values, returns, c);
  // ratios 1.25 and 0.5: min(1.25, 1.2) * 1 = 1.2; min(-0.5, -0.8) = -0.8; policy = -(1.2 - 0.8) / 2 = -0.2.
  EXPECT_NEAR(loss.policy.item<double>(), -0.2, 1e-12);
  // value = ((0.5 - 1)^2 + (-1 - 0)^2) / 2 = 0.625; entropy = 0.5.
  EXPECT_NEAR(loss.value.item<double>(), 0.625, 1e-12);
  EXPECT_NEAR(loss.entropy.item<double>(), 0.5, 1e-12);
  EXPECT_NEAR(loss.total.item<double>(), -0.2 + 0.5 * 0.625 - 0.01 * 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(loss.clip_fraction, 1.0);
}

TEST(Ppo, AdvantageNormalisation) {
  std::vector<double> a = {1, 2, 3, 4};
  NormaliseAdvantages(&a);
  EXPECT_NEAR(a[0] + a[1] + a[2] + a[3], 0.0, 1e-12);
  EXPECT_NEAR(a[3], 1.5 / std::sqrt(1.25), 1e-12);
}

TEST(Masking, ChooseDeviceNeverPicksAnIllegalDevice) {
  std::mt19937_64 rng(1);
  for (int trial = 0; trial < 2000; ++trial) {
    const int32_t d = 1 + static_cast<int32_t>(rng() % 8);
    std::vector<float> logits(d);
    std::vector<uint8_t> mask(d);
    for (int32_t k = 0; k < d; ++k) {
      logits[k] = static_cast<float>((UniformUnit(rng) - 0.5) * 40.0);
      mask[k] = rng() % 3 != 0;
    }
    mask[rng() % d] = 1;  // at least one legal device, as the environment guarantees
    for (bool greedy : {false, true}) {
      const double u = trial % 7 == 0 ? 0.9999999999 : UniformUnit(rng);
      const int32_t a = ChooseDevice(logits.data(), mask.data(), d, greedy, u);
      ASSERT_TRUE(a >= 0 && a < d && mask[a]) << "trial " << trial;
    }
  }
}

TEST(Masking, MaskedDistributionGivesIllegalDevicesNoMass) {
  torch::Tensor logits = torch::tensor({{5.f, 1.f, -2.f}, {0.f, 30.f, 0.f}});
  torch::Tensor mask = torch::tensor({{true, false, true}, {true, false, false}});
  torch::Tensor logp = MaskedLogProbs(logits, mask);
  torch::Tensor p = logp.exp();
  EXPECT_EQ(p[0][1].item<float>(), 0.f);
  EXPECT_EQ(p[1][1].item<float>(), 0.f);
  EXPECT_NEAR(p[1][0].item<float>(), 1.f, 1e-6);
  EXPECT_NEAR(p[0][0].item<float>(), std::exp(5.0) / (std::exp(5.0) + std::exp(-2.0)), 1e-6);
  torch::Tensor h = MaskedEntropy(logp);
  EXPECT_TRUE(torch::isfinite(h).all().item<bool>());
  EXPECT_NEAR(h[1].item<float>(), 0.f, 1e-6);
}

TEST(Masking, SampledFrequenciesFollowTheSoftmax) {
  const float logits[3] = {0.f, std::log(2.f), std::log(5.f)};
  const uint8_t mask[3] = {1, 0, 1};  // legal: 0 and 2 with probabilities 1/6 and 5/6
  std::mt19937_64 rng(2);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 6000; ++i) ++counts[ChooseDevice(logits, mask, 3, false, UniformUnit(rng))];
  EXPECT_EQ(counts[1], 0);
  EXPECT_NEAR(counts[0] / 6000.0, 1.0 / 6.0, 0.02);
}

// Memory so tight that the memory-aware mask removes devices mid-episode: every action the policy takes is legal
// under the mask recorded for it (the environment would reject an illegal one).
TEST(Masking, PolicyRolloutsRespectTheEnvironmentMask) {
  Graph g = MlpTrainingGraph(6);
  auto game = MakeGame(g, TwoDevices(1.0, int64_t{6} << 20), MdpKind::kOneShot);
  PolicyNet net(TinyPolicy("transformer"), 4);
  PpoLearner learner(&net, PpoConfig{}, 1);
  GameEntry entry = MakeGameEntry(game, "mlp");
  std::mt19937_64 rng(3);
  GameRollout r = learner.Collect(entry, 16, false, rng);
  bool some_masked = false;
  const int64_t s = r.actions.size(0), n = r.actions.size(1);
  for (int64_t i = 0; i < s; ++i)
    for (int64_t k = 0; k < n; ++k) {
      const int64_t a = r.actions[i][k].item<int64_t>();
      ASSERT_TRUE(r.masks[i][k][a].item<bool>());
      some_masked = some_masked || !r.masks[i][k].all().item<bool>();
    }
  EXPECT_TRUE(some_masked) << "the test needs a memory limit that makes the mask bite";
  EXPECT_TRUE(torch::isfinite(r.old_logp).all().item<bool>());
}

// With ppo.temperature the learner samples from, and records the log-probabilities of, softmax(logits / T).
TEST(Ppo, TemperatureSoftensTheSampledPolicy) {
  auto game = MakeGame(MlpTrainingGraph(3), TwoDevices(1.0), MdpKind::kOneShot);
  PolicyNet net(TinyPolicy("transformer"), 4);
  GameEntry entry = MakeGameEntry(game, "mlp");
  {
    // Output layers 2000x larger: a nearly deterministic policy, like one at the end of training.
    torch::NoGradGuard no_grad;
    for (auto& p : net.module().named_parameters(true))
      if (p.key().rfind("device_head.", 0) == 0 || p.key().rfind("query.", 0) == 0 ||
          p.key().rfind("split_head.", 0) == 0)
        p.value().mul_(2000.0);
  }
  for (double temperature : {1.0, 2000.0}) {
    PpoConfig ppo;
    ppo.temperature = temperature;
    PpoLearner learner(&net, ppo, 1);
    std::mt19937_64 rng(3);
    GameRollout r = learner.Collect(entry, 32, false, rng);
    torch::NoGradGuard no_grad;
    torch::Tensor current = net.transformer()->forward(entry.tensors).logits / temperature;
    const int64_t s = r.actions.size(0), n = r.actions.size(1);
    torch::Tensor expected = MaskedLogProbs(current.unsqueeze(0).expand({s, n, current.size(1)}), r.masks)
                                 .gather(2, r.actions.unsqueeze(2))
                                 .squeeze(2);
    EXPECT_TRUE(torch::allclose(r.old_logp, expected, 1e-5, 1e-6)) << temperature;
    const double entropy = MaskedEntropy(MaskedLogProbs(current, torch::ones_like(current, torch::kBool)))
                               .mean()
                               .item<double>();
    if (temperature == 1.0) {
      EXPECT_LT(entropy, 0.2) << "the scaled heads make the policy nearly deterministic";
    } else {
      EXPECT_GT(entropy, 0.4) << "a high temperature restores exploration";
    }
  }
}

TEST(TransformerPlacer, MemoryLayerAttendsOverThePreviousSegment) {
  XlLayer layer(8, 2, 16);
  std::mt19937_64 rng(5);
  InitParameters(*layer, rng);
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::linspace(-1, 1, 4 * 8).reshape({4, 1, 8});
  torch::Tensor m1 = torch::linspace(0, 2, 3 * 8).reshape({3, 1, 8}), m2 = -m1;
  torch::Tensor none = layer->forward(x, {}), with1 = layer->forward(x, m1), with2 = layer->forward(x, m2);
  EXPECT_EQ(with1.sizes(), x.sizes());
  EXPECT_FALSE(torch::allclose(with1, with2));
  EXPECT_FALSE(torch::allclose(with1, none));
  // Attending over an empty memory is attending over the segment alone.
  EXPECT_TRUE(torch::allclose(layer->forward(x, torch::empty({0, 1, 8})), none, 1e-5, 1e-6));
}

TEST(TransformerPlacer, PlacesGraphsLongerThanASegment) {
  Graph g = MlpTrainingGraph(8);
  auto game = MakeGame(g, TwoDevices(2.0), MdpKind::kOneShot);
  PolicyNet net(TinyPolicy("transformer", 4), 5);
  GameTensors t = MakeGameTensors(*game);
  torch::NoGradGuard no_grad;
  OneShotOutput a = net.transformer()->forward(t);
  const int64_t n = game->num_groups();
  ASSERT_GT(n, 8);  // at least three segments
  EXPECT_EQ(a.logits.sizes(), (std::vector<int64_t>{n, 2}));
  EXPECT_EQ(a.value.dim(), 0);
  EXPECT_TRUE(torch::isfinite(a.logits).all().item<bool>());
  // The freshly initialised policy is close to uniform (it explores).
  EXPECT_LT(a.logits.abs().max().item<double>(), 0.5);
}

// A tiny training run: on two devices where device 1 is 4x faster, the policy learns to use it.
TEST(Training, TinyOneShotRunImprovesReward) {
  auto game = MakeGame(MlpTrainingGraph(3), TwoDevices(4.0), MdpKind::kOneShot);
  GameEntry entry = MakeGameEntry(game, "mlp");
  PolicyNet net(TinyPolicy("transformer"), 7);
  PpoConfig ppo;
  ppo.lr = ppo.lr_final = 3e-3;
  ppo.epochs = 4;
  ppo.minibatches = 1;
  PpoLearner learner(&net, ppo, 30);
  std::mt19937_64 rng(8);
  auto mean_return = [](const GameRollout& r) {
    double sum = 0;
    for (const EpisodeResult& e : r.episodes) sum += e.episode_return;
    return sum / r.episodes.size();
  };
  double first = 0, last = 0;
  for (int it = 0; it < 30; ++it) {
    std::vector<GameRollout> rollouts;
    rollouts.push_back(learner.Collect(entry, 16, false, rng));
    if (it == 0) first = mean_return(rollouts[0]);
    last = mean_return(rollouts[0]);
    learner.Update(rollouts, it, rng);
  }
  EXPECT_GT(last, first + 0.05) << "first " << first << " last " << last;
  GameRollout greedy = learner.Collect(entry, 1, true, rng);
  EXPECT_LT(greedy.episodes[0].penalised_time / game->reference_time(), 1.1);
}

// With ppo.baseline greedy a sample's advantage is its return above the greedy placement's (one more simulation).
TEST(Ppo, GreedyBaselineAdvantageIsTheReturnAboveTheGreedyPlacement) {
  auto game = MakeGame(MlpTrainingGraph(4), TwoDevices(2.0), MdpKind::kOneShot);
  GameEntry entry = MakeGameEntry(game, "mlp");
  PolicyNet net(TinyPolicy("transformer"), 5);
  std::mt19937_64 rng(6);
  const double greedy_return = PpoLearner(&net, PpoConfig{}, 1).Collect(entry, 1, true, rng).episodes[0].episode_return;
  PpoConfig ppo;
  ppo.baseline = PpoConfig::Baseline::kGreedy;
  PpoLearner learner(&net, ppo, 1);
  GameRollout r = learner.Collect(entry, 16, false, rng);
  EXPECT_EQ(r.evaluations, 17);
  ASSERT_EQ(r.advantages.size(), 16u);
  bool above = false, below = false;
  for (size_t s = 0; s < 16; ++s) {
    EXPECT_DOUBLE_EQ(r.advantages[s], r.episodes[s].episode_return - greedy_return) << s;
    above = above || r.advantages[s] > 0;
    below = below || r.advantages[s] < 0;
  }
  EXPECT_TRUE(above && below) << "an untrained policy's samples fall on both sides of its greedy placement";
  // The value head still learns the returns.
  EXPECT_EQ(r.returns.size(), 16u);
}

// TinyOneShotRunImprovesReward with the greedy baseline, from a policy whose greedy placement is slow at first.
TEST(Training, TinyOneShotRunWithTheGreedyBaselineImprovesTheGreedyPlacement) {
  auto game = MakeGame(MlpTrainingGraph(3), TwoDevices(4.0), MdpKind::kOneShot);
  GameEntry entry = MakeGameEntry(game, "mlp");
  PolicyNet net(TinyPolicy("transformer"), 5);  // its greedy placement starts on the slow device
  PpoConfig ppo;
  ppo.lr = ppo.lr_final = 3e-3;
  ppo.epochs = 4;
  ppo.minibatches = 1;
  ppo.baseline = PpoConfig::Baseline::kGreedy;
  PpoLearner learner(&net, ppo, 30);
  std::mt19937_64 rng(8);
  const double before = learner.Collect(entry, 1, true, rng).episodes[0].penalised_time;
  for (int it = 0; it < 30; ++it) {
    std::vector<GameRollout> rollouts;
    rollouts.push_back(learner.Collect(entry, 16, false, rng));
    learner.Update(rollouts, it, rng);
  }
  const double after = learner.Collect(entry, 1, true, rng).episodes[0].penalised_time;
  EXPECT_LT(after / game->reference_time(), 1.1) << "before " << before / game->reference_time();
  EXPECT_LT(after, before) << "before " << before / game->reference_time();
}

// Both policies score the data-parallel action: logits over devices + 1, sampled only where the mask allows.
TEST(DataParallelAction, BothPoliciesScoreItAndRespectItsMask) {
  for (const std::string kind : {"transformer", "placeto"}) {
    const MdpKind mdp = kind == "transformer" ? MdpKind::kOneShot : MdpKind::kIterative;
    auto game = MakeGame(MlpTrainingGraph(3), TwoDevices(1.0), mdp, true, /*data_parallel_action=*/true);
    ASSERT_EQ(game->num_actions(), 3);
    PolicyConfig config = TinyPolicy(kind);
    config.data_parallel_action = true;
    PolicyNet net(config, 4);
    PpoLearner learner(&net, PpoConfig{}, 1);
    GameEntry entry = MakeGameEntry(game, "mlp");
    std::mt19937_64 rng(3);
    GameRollout r = learner.Collect(entry, 8, false, rng);
    EXPECT_EQ(r.masks.size(-1), 3) << kind;
    const torch::Tensor taken = r.actions.reshape({-1});
    const torch::Tensor masks = r.masks.reshape({taken.size(0), 3});
    int64_t parallel = 0;
    for (int64_t i = 0; i < taken.size(0); ++i) {
      const int64_t a = taken[i].item<int64_t>();
      ASSERT_TRUE(masks[i][a].item<bool>()) << kind;
      parallel += a == 2 ? 1 : 0;
    }
    EXPECT_GT(parallel, 0) << kind << ": a near-uniform policy samples the data-parallel action";
    EXPECT_TRUE(torch::isfinite(r.old_logp).all().item<bool>()) << kind;
  }
}

// On two equal devices and compute-bound matmuls, splitting the batch beats any placement of whole groups: a
// tiny run learns to split them, with the data-parallel action and among the SOAP candidates alike.
TEST(SplitActions, TinyOneShotRunLearnsToSplitTheBatch) {
  for (const bool soap : {false, true}) {
    EnvConfig env;
    env.kind = MdpKind::kOneShot;
    env.data_parallel_action = !soap;
    env.action_space = soap ? ActionSpace::kSoap : ActionSpace::kDevices;
    auto game = PlacementGame::Create(std::make_shared<const Graph>(MlpTrainingGraph(3)),
                                      std::make_shared<const Topology>(TwoDevices(1.0)), MakeAnalyticCostModel(), env)
                    .value();
    GameEntry entry = MakeGameEntry(game, "mlp");
    PolicyConfig config = TinyPolicy("transformer");
    config.data_parallel_action = !soap;
    config.soap = soap;
    PolicyNet net(config, 7);
    PpoConfig ppo;
    ppo.lr = ppo.lr_final = 3e-3;
    ppo.minibatches = 1;
    PpoLearner learner(&net, ppo, 30);
    std::mt19937_64 rng(8);
    for (int it = 0; it < 30; ++it) {
      std::vector<GameRollout> rollouts;
      rollouts.push_back(learner.Collect(entry, 16, false, rng));
      learner.Update(rollouts, it, rng);
    }
    GameRollout greedy = learner.Collect(entry, 1, true, rng);
    const std::vector<int32_t>& placement = greedy.episodes[0].placement;
    const int64_t split = std::count(placement.begin(), placement.end(), game->data_parallel_action());
    EXPECT_GE(split, 3) << "soap " << soap << ": the three matmul groups at least";
    EXPECT_LT(greedy.episodes[0].penalised_time / game->reference_time(), 0.75) << "soap " << soap;
  }
}

TEST(Training, TinyIterativeRunImprovesReward) {
  auto game = MakeGame(MlpTrainingGraph(2), TwoDevices(4.0), MdpKind::kIterative);
  GameEntry entry = MakeGameEntry(game, "mlp");
  PolicyConfig config = TinyPolicy("placeto");
  PolicyNet net(config, 9);
  PpoConfig ppo;
  ppo.lr = ppo.lr_final = 3e-3;
  ppo.gamma = 0.99;
  PpoLearner learner(&net, ppo, 25);
  std::mt19937_64 rng(10);
  double first = 0, last = 0;
  for (int it = 0; it < 25; ++it) {
    std::vector<GameRollout> rollouts;
    rollouts.push_back(learner.Collect(entry, 8, false, rng));
    double sum = 0;
    for (const EpisodeResult& e : rollouts[0].episodes) sum += e.episode_return;
    (it == 0 ? first : last) = sum / rollouts[0].episodes.size();
    learner.Update(rollouts, it, rng);
  }
  // The initial placement is the fastest single device, so an episode's return is <= 0 and 0 is optimal:
  // learning means fewer harmful moves.
  EXPECT_GT(last, first) << "first " << first << " last " << last;
}

TEST(Checkpoint, ResumeReproducesAnUninterruptedRunExactly) {
  const std::string dir = learntest::TempDir("resume");
  const std::string config = learntest::WriteTinyExperiment(dir, 4);
  TrainOptions straight{.config_path = config, .run_dir = dir + "/a"};
  Expected<TrainSummary> a = TrainPolicy(straight);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->iterations, 4);
  TrainOptions first{.config_path = config, .run_dir = dir + "/b", .max_iterations = 2};
  ASSERT_TRUE(TrainPolicy(first).ok());
  TrainOptions rest{.config_path = "", .run_dir = dir + "/b", .resume = true};
  Expected<TrainSummary> b = TrainPolicy(rest);
  ASSERT_TRUE(b.ok()) << b.error().message;
  ExpectSameRuns(*a, *b, config);
  // Only the latest checkpoint's tensor files are kept.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(a->checkpoint_dir)) files += e.path().extension() == ".pt";
  EXPECT_EQ(files, 2);
  std::filesystem::remove_all(dir);
}

// The tiny experiment with 4 games per iteration in one minibatch (so the update has games to spread), two
// held-out games, `rollout_threads` worker threads and, if `iterative`, the Placeto policy on the iterative MDP.
std::string WriteThreadedExperiment(const std::string& dir, int32_t rollout_threads, bool iterative) {
  const std::string path = learntest::WriteTinyExperiment(dir, 2);
  Expected<std::string> text = ReadFile(path);
  EXPECT_TRUE(text.ok());
  std::string yaml = *text;
  auto replace = [&](const std::string& from, const std::string& to) {
    const size_t at = yaml.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    yaml.replace(at, from.size(), to);
  };
  replace("graphs_per_iteration: 2", "graphs_per_iteration: 4");
  replace("minibatches: 2", "minibatches: 1");
  replace("eval: [{family: ptb, seed: 9,", "eval: [{family: ptb, seeds: [9, 10],");
  if (iterative) {
    replace("policy: {", "env: {kind: iterative}\npolicy: {kind: placeto, ");
    replace("transformer_layers: 1, heads: 2, feedforward: 16, segment: 8", "max_devices: 8");
    replace("samples_per_graph: 4", "samples_per_graph: 2");
  }
  yaml += "rollout_threads: ";
  yaml += std::to_string(rollout_threads) + "\n";
  EXPECT_TRUE(WriteFileAtomic(path, yaml).ok());
  return path;
}

TEST(Training, ResultsDoNotDependOnTheRolloutThreads) {
  for (bool iterative : {false, true}) {
    SCOPED_TRACE(iterative ? "iterative" : "one-shot");
    const std::string dir = learntest::TempDir("threads");
    std::filesystem::create_directories(dir + "/one");
    std::filesystem::create_directories(dir + "/two");
    const std::string one = WriteThreadedExperiment(dir + "/one", 1, iterative);
    const std::string two = WriteThreadedExperiment(dir + "/two", 2, iterative);
    Expected<TrainSummary> a = TrainPolicy({.config_path = one, .run_dir = dir + "/one/run"});
    ASSERT_TRUE(a.ok()) << a.error().message;
    Expected<TrainSummary> b = TrainPolicy({.config_path = two, .run_dir = dir + "/two/run"});
    ASSERT_TRUE(b.ok()) << b.error().message;
    EXPECT_EQ(a->iterations, 2);
    ExpectSameRuns(*a, *b, one);
    std::filesystem::remove_all(dir);
  }
}

TEST(Placement, ZeroShotAndFineTunedPlacementsFromACheckpoint) {
  const std::string dir = learntest::TempDir("place");
  const std::string config = learntest::WriteTinyExperiment(dir, 2);
  Expected<TrainSummary> trained = TrainPolicy({.config_path = config, .run_dir = dir + "/run"});
  ASSERT_TRUE(trained.ok()) << trained.error().message;
  Expected<std::unique_ptr<LearnedPolicy>> policy = LearnedPolicy::Load(trained->checkpoint_dir);
  ASSERT_TRUE(policy.ok()) << policy.error().message;
  Graph g = MlpTrainingGraph(4);
  Topology t = TwoDevices(4.0);
  Expected<PlaceResult> zero = (*policy)->Place(g, t, MakeAnalyticCostModel(), {}, {});
  ASSERT_TRUE(zero.ok()) << zero.error().message;
  EXPECT_EQ(zero->evaluations, 1);
  EXPECT_TRUE(ValidateStrategy(zero->strategy, g, t).ok());
  EXPECT_DOUBLE_EQ(zero->step_time, zero->zero_shot_step_time);
  EXPECT_EQ(zero->sampled_step_time, 0.0);

  // Best of k sampled placements: k + 1 evaluations, never worse than the greedy one (kept as zero_shot), the
  // returned strategy is the best one's, and the same seed gives the same placement.
  PlaceOptions sample;
  sample.samples = 12;
  sample.sample_temperature = 4.0;
  sample.seed = 3;
  Expected<PlaceResult> sampled = (*policy)->Place(g, t, MakeAnalyticCostModel(), {}, sample);
  ASSERT_TRUE(sampled.ok()) << sampled.error().message;
  EXPECT_EQ(sampled->evaluations, 13);
  EXPECT_DOUBLE_EQ(sampled->zero_shot_step_time, zero->step_time);
  EXPECT_LE(sampled->step_time, zero->step_time);
  EXPECT_DOUBLE_EQ(sampled->sampled_step_time, sampled->step_time);
  Expected<SimResult> sampled_sim = Simulate(g, t, sampled->strategy, MakeAnalyticCostModel());
  ASSERT_TRUE(sampled_sim.ok());
  EXPECT_DOUBLE_EQ(sampled_sim->step_time, sampled->step_time);
  Expected<PlaceResult> again = (*policy)->Place(g, t, MakeAnalyticCostModel(), {}, sample);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->strategy, sampled->strategy);

  PlaceOptions tune;
  tune.finetune_evaluations = 40;
  tune.finetune_samples = 8;
  Expected<PlaceResult> tuned = (*policy)->Place(g, t, MakeAnalyticCostModel(), {}, tune);
  ASSERT_TRUE(tuned.ok());
  EXPECT_LE(tuned->evaluations, 40);
  EXPECT_GT(tuned->evaluations, 8);
  EXPECT_LE(tuned->step_time, zero->step_time);
  Expected<SimResult> check = Simulate(g, t, tuned->strategy, MakeAnalyticCostModel());
  ASSERT_TRUE(check.ok());
  EXPECT_DOUBLE_EQ(check->step_time, tuned->step_time);

  // The SearchAlgorithm adapter gives the same zero-shot placement.
  Expected<std::unique_ptr<SearchAlgorithm>> algo = MakeLearnedSearchAlgorithm("placer-zeroshot", trained->checkpoint_dir);
  ASSERT_TRUE(algo.ok());
  SearchProblem problem{.graph = &g, .topology = &t, .cost = MakeAnalyticCostModel()};
  Expected<SearchResult> searched = (*algo)->Search(problem, {});
  ASSERT_TRUE(searched.ok()) << searched.error().message;
  EXPECT_EQ(searched->strategy, zero->strategy);
  EXPECT_FALSE(MakeAnySearchAlgorithm("no-such").ok());
  EXPECT_TRUE(MakeAnySearchAlgorithm("placer-finetune").ok());

  // Too many devices for the policy is a user error, not a crash.
  TopologyBuilder big("nine");
  for (int i = 0; i < 9; ++i) {
    std::string name = "g";
    name += static_cast<char>('0' + i);
    big.add_device(Device{.name = name, .kind = "test", .host = "h0", .peak_flops_f32 = 1e12,
                          .peak_flops_f16 = 1e12, .memory_bandwidth = 1e11, .memory_bytes = int64_t{1} << 34});
  }
  for (int i = 0; i < 9; ++i)
    for (int j = i + 1; j < 9; ++j) big.add_bidirectional_link(i, j, 1e10, 1e-5, "nvlink");
  Expected<Topology> nine = std::move(big).Build();
  ASSERT_TRUE(nine.ok()) << nine.error().message;
  Expected<PlaceResult> refused = (*policy)->Place(g, *nine, MakeAnalyticCostModel(), {}, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("at most 8"), std::string::npos) << refused.error().message;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace devplace
