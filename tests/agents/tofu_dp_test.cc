#include "agents/tofu_dp.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "core/colocation.h"
#include "core/training_graph.h"
#include "tests/testing/agents_graphs.h"

namespace devplace {
namespace {

// A uniform real in [lo, hi) from 53 random bits (no std::uniform_real_distribution, for portability).
double Uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// A random labelling problem: `units` units with 1..4 schemes, random pairs (not only a chain).
TofuLevelProblem RandomProblem(std::mt19937_64& rng, int32_t units) {
  TofuLevelProblem p;
  for (int32_t u = 0; u < units; ++u) {
    const int32_t m = 1 + static_cast<int32_t>(rng() % 4);
    p.schemes.emplace_back();
    p.unary.emplace_back();
    for (int32_t s = 0; s < m; ++s) {
      p.schemes[u].push_back(s);
      p.unary[u].push_back(Uniform(rng, 0, 10));
    }
  }
  for (int32_t b = 1; b < units; ++b)
    for (int32_t a = 0; a < b; ++a) {
      if (a != b - 1 && rng() % 3 != 0) continue;  // the chain plus about a third of the other pairs
      TofuLevelProblem::Pair pair{a, b, {}};
      for (size_t k = 0; k < p.schemes[a].size() * p.schemes[b].size(); ++k) pair.cost.push_back(Uniform(rng, 0, 10));
      p.pairs.push_back(std::move(pair));
    }
  return p;
}

// The minimum labelling cost over every assignment.
double BruteForce(const TofuLevelProblem& p, std::vector<int32_t>* best_choice = nullptr) {
  std::vector<int32_t> choice(static_cast<size_t>(p.num_units()), 0);
  double best = std::numeric_limits<double>::infinity();
  while (true) {
    const double c = TofuLabellingCost(p, choice);
    if (c < best) {
      best = c;
      if (best_choice) *best_choice = choice;
    }
    int32_t u = 0;
    while (u < p.num_units() && ++choice[u] == static_cast<int32_t>(p.schemes[u].size())) choice[u++] = 0;
    if (u == p.num_units()) return best;
  }
}

TEST(TofuLevel, DpEqualsBruteForceOnRandomProblems) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const TofuLevelProblem p = RandomProblem(rng, 1 + static_cast<int32_t>(rng() % 8));
    const std::optional<TofuLevelSolution> s = SolveTofuLevel(p, 1 << 20);
    ASSERT_TRUE(s.has_value());
    EXPECT_TRUE(s->exact);
    const double best = BruteForce(p);
    EXPECT_NEAR(s->cost, best, 1e-9 * std::max(1.0, best)) << "trial " << trial;
    EXPECT_NEAR(TofuLabellingCost(p, s->choice), s->cost, 1e-9 * std::max(1.0, best));
  }
}

TEST(TofuLevel, BeamIsMarkedInexactAndStillConsistent) {
  std::mt19937_64 rng(11);
  bool some_pruned = false;
  for (int trial = 0; trial < 50; ++trial) {
    const TofuLevelProblem p = RandomProblem(rng, 8);
    const std::optional<TofuLevelSolution> s = SolveTofuLevel(p, 2);
    ASSERT_TRUE(s.has_value());
    some_pruned |= !s->exact;
    EXPECT_NEAR(TofuLabellingCost(p, s->choice), s->cost, 1e-9 * std::max(1.0, s->cost));
    EXPECT_GE(s->cost, BruteForce(p) - 1e-9);
  }
  EXPECT_TRUE(some_pruned);
}

TEST(TofuLevel, StopGivesUp) {
  std::mt19937_64 rng(3);
  const TofuLevelProblem p = RandomProblem(rng, 20);
  EXPECT_FALSE(SolveTofuLevel(p, 64, [] { return true; }).has_value());
}

// input -> a -> b -> c -> d, plus a -> c (a skip), all matmuls [batch x width] with weights; the forward graph
// of a non-chain training graph with one op per layer.
Graph SkipGraph(int64_t batch, int64_t width) {
  GraphBuilder b("skip");
  Op in{.name = "in", .type = "input", .layer = "input", .shape = {batch, width}};
  in.dims = {PartitionDim{DimKind::kSample, 0, -1, batch}};
  const OpId input = b.add_op(in);
  std::vector<OpId> ids;
  for (const char* name : {"a", "b", "c", "d"}) {
    Op op{.name = name, .type = "matmul", .layer = name, .shape = {batch, width}};
    op.flops = 2.0 * static_cast<double>(batch * width * width);
    op.param_bytes = width * width * 4;
    op.dims = {PartitionDim{DimKind::kSample, 0, 0, batch}, PartitionDim{DimKind::kParameter, 1, -1, width},
               PartitionDim{DimKind::kReduction, -1, 1, width}};
    ids.push_back(b.add_op(op));
  }
  b.add_edge(input, ids[0]);
  b.add_edge(ids[0], ids[1]);
  b.add_edge(ids[1], ids[2]);
  b.add_edge(ids[0], ids[2]);
  b.add_edge(ids[2], ids[3]);
  return DeriveTrainingGraph(std::move(b).Build().value()).value();
}

SearchProblem Problem(const Graph& g, const Topology& t) { return SearchProblem{&g, &t, MakeAnalyticCostModel(), {}}; }

Expected<SearchResult> RunTofu(const Graph& g, const Topology& t, TofuOptions options = {}, SearchBudget budget = {}) {
  SearchRequest request;
  request.budget = budget;
  return TofuDpSearch(options).Search(Problem(g, t), request);
}

// Options that return the strategy after all levels (no comparison with fewer levels).
TofuOptions AllLevels() {
  TofuOptions options;
  options.try_fewer_levels = false;
  return options;
}

bool IsPowerOfTwo(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

TEST(TofuDp, TwoDevicesEqualsExhaustiveSearchOnATinyGraph) {
  for (int64_t batch : {64, 4096}) {
    const Graph g = SkipGraph(batch, 512);
    const Topology t = testing::Gpus(2);
    TofuPlanner planner(Problem(g, t), TofuOptions{});
    ASSERT_EQ(planner.num_levels(), 1);
    ASSERT_EQ(planner.num_units(), 5);  // the input and four layers, each with its backward and update ops
    const TofuLevelProblem level = planner.NextLevel();
    std::vector<int32_t> best_choice;
    const double best = BruteForce(level, &best_choice);
    const std::optional<TofuLevelSolution> dp = SolveTofuLevel(level, TofuOptions{}.max_states);
    ASSERT_TRUE(dp.has_value());
    EXPECT_NEAR(dp->cost, best, 1e-12 * best);
    EXPECT_NEAR(TofuLabellingCost(level, dp->choice), best, 1e-12 * best);

    // The search returns the strategy of the exhaustive optimum.
    planner.Apply(level, best_choice);
    const Expected<SearchResult> r = RunTofu(g, t, AllLevels());
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->strategy, planner.ToStrategy()) << "batch " << batch;
    EXPECT_EQ(r->evaluations, 1);
  }
}

TEST(TofuDp, ExhaustiveOnUncoarsenedGroupsToo) {
  // Without layer grouping the units are the colocation groups; still 5 units here, the skip makes a frontier.
  const Graph g = SkipGraph(256, 256);
  const Topology t = testing::Gpus(2);
  TofuOptions options;
  options.group_layers = false;
  options.merge_elementwise = false;
  TofuPlanner planner(Problem(g, t), options);
  const TofuLevelProblem level = planner.NextLevel();
  EXPECT_EQ(level.num_units(), ColocationGroups(g).num_groups());
  const std::optional<TofuLevelSolution> dp = SolveTofuLevel(level, options.max_states);
  ASSERT_TRUE(dp.has_value());
  const double best = BruteForce(level);
  EXPECT_NEAR(dp->cost, best, 1e-12 * best);
}

TEST(TofuDp, PicksModelParallelForBigWeightsAndDataParallelForBigActivations) {
  const Topology t = testing::Gpus(2);
  auto split_of = [&](const Graph& g) {
    const Expected<SearchResult> r = RunTofu(g, t, AllLevels());
    EXPECT_TRUE(r.ok());
    const OpId b = g.find("b");
    return r->strategy.configs[b].degrees;
  };
  // 64 MiB of weights per layer, 128 KiB of activations: splitting the weights is far cheaper than
  // all-reducing their gradients.
  std::vector<int32_t> big_weights = split_of(SkipGraph(8, 4096));
  ASSERT_EQ(big_weights.size(), 3u);
  EXPECT_EQ(big_weights[0], 1);
  // 64 KiB of weights, 16 MiB of activations: data parallelism.
  EXPECT_EQ(split_of(SkipGraph(16384, 128)), (std::vector<int32_t>{2, 1, 1}));
}

TEST(TofuDp, StrategyValidatesSimulatesAndUsesPowersOfTwo) {
  const Graph g = testing::IndependentChains(2, 4, 512);
  for (int devices : {1, 2, 4, 6, 8}) {
    const Topology t = testing::Gpus(devices);
    const Expected<SearchResult> r = RunTofu(g, t, AllLevels());
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_TRUE(ValidateStrategy(r->strategy, g, t).ok());
    const Expected<SimResult> sim = Simulate(g, t, r->strategy, MakeAnalyticCostModel());
    ASSERT_TRUE(sim.ok()) << sim.error().message;
    EXPECT_GT(sim->step_time, 0);
    const int used = std::bit_floor(static_cast<unsigned>(devices));
    std::set<DeviceId> all;
    for (OpId o = 0; o < g.num_ops(); ++o) {
      const OpConfig& c = r->strategy.configs[o];
      EXPECT_EQ(c.num_parts(), used) << g.op(o).name;  // every op here can be split that far
      for (int32_t d : c.degrees) EXPECT_TRUE(IsPowerOfTwo(d));
      all.insert(c.devices.begin(), c.devices.end());
    }
    EXPECT_EQ(static_cast<int>(all.size()), used);
    EXPECT_LT(*all.rbegin(), used);  // equal devices: the lowest ids
  }
}

TEST(TofuDp, OpsThatCannotBeSplitStayWhole) {
  GraphBuilder b("pinned");
  Op in{.name = "in", .type = "input", .layer = "in", .shape = {2, 64}};
  in.dims = {PartitionDim{DimKind::kSample, 0, -1, 2}};
  const OpId input = b.add_op(in);
  Op fc{.name = "fc", .type = "matmul", .layer = "fc", .shape = {2, 64}, .param_bytes = 64 * 64 * 4,
        .flops = 2.0 * 2 * 64 * 64};
  fc.dims = {PartitionDim{DimKind::kSample, 0, 0, 2}, PartitionDim{DimKind::kParameter, 1, -1, 64}};
  const OpId f = b.add_op(fc);
  Op loss{.name = "loss", .type = "loss", .layer = "loss", .shape = {}, .flops = 128};
  const OpId l = b.add_op(loss);  // no partitionable dimension
  b.add_edge(input, f);
  b.add_edge(f, l);
  const Graph g = DeriveTrainingGraph(std::move(b).Build().value()).value();
  const Topology t = testing::Gpus(8);
  const Expected<SearchResult> r = RunTofu(g, t, AllLevels());
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(ValidateStrategy(r->strategy, g, t).ok());
  EXPECT_EQ(r->strategy.configs[l].num_parts(), 1);
  EXPECT_TRUE(r->strategy.configs[l].degrees.empty());
  // The input's batch of 2 allows one split; fc can go 8 ways only with its parameter dim.
  EXPECT_EQ(r->strategy.configs[input].num_parts(), 2);
  EXPECT_EQ(r->strategy.configs[f].num_parts(), 8);
  EXPECT_TRUE(Simulate(g, t, r->strategy, MakeAnalyticCostModel()).ok());
}

TEST(TofuDp, DeterministicAndWithinBudget) {
  const Graph g = SkipGraph(512, 1024);
  const Topology t = testing::Gpus(8);
  const Expected<SearchResult> a = RunTofu(g, t);
  const Expected<SearchResult> b = RunTofu(g, t);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->strategy, b->strategy);

  // A spent time budget still gives a valid strategy, and no simulation.
  SearchBudget spent;
  spent.max_seconds = 1e-12;
  const Expected<SearchResult> c = RunTofu(g, t, {}, spent);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->evaluations, 0);
  EXPECT_TRUE(ValidateStrategy(c->strategy, g, t).ok());
}

// Four GPUs with fast links only in the ring 0-2-1-3-0, and a slow switch joining all of them.
Topology CrossedRing() {
  TopologyBuilder b("crossed");
  for (int d = 0; d < 4; ++d)
    b.add_device(Device{.name = "gpu" + std::to_string(d), .kind = "v100", .peak_flops_f32 = 15.7e12,
                        .memory_bandwidth = 900e9, .memory_bytes = int64_t{16} << 30});
  const NodeId sw = b.add_switch(Switch{"pcie", "h"});
  for (int d = 0; d < 4; ++d) b.add_bidirectional_link(d, sw, 2e9, 5e-6, "pcie");
  for (auto [x, y] : {std::pair{0, 2}, {2, 1}, {1, 3}, {3, 0}}) b.add_bidirectional_link(x, y, 50e9, 2e-6, "nvlink");
  return std::move(b).Build().value();
}

TEST(TofuDp, DeviceOrderFollowsTheFastRing) {
  const Topology t = CrossedRing();
  const std::vector<DeviceId> order = TofuDeviceOrder(t, {3, 2, 1, 0});
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(std::set<DeviceId>(order.begin(), order.end()), (std::set<DeviceId>{0, 1, 2, 3}));
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(t.route(order[i], order[(i + 1) % 4]).size(), 1u) << i;  // direct links
  EXPECT_EQ(TofuDeviceOrder(t, {0, 1, 2, 3}), order);
  // On a uniform machine the ascending order already is best.
  EXPECT_EQ(TofuDeviceOrder(testing::Gpus(8), {7, 6, 5, 4, 3, 2, 1, 0}), (std::vector<DeviceId>{0, 1, 2, 3, 4, 5, 6, 7}));

  // A data-parallel op's parts then sit along that ring.
  const Graph g = SkipGraph(16384, 128);
  const Expected<SearchResult> r = RunTofu(g, t, AllLevels());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->strategy.configs[g.find("b")].devices, order);
}

TEST(TofuDp, FewerLevelsWinOnASlowNetwork) {
  // 64 MiB of weights per layer and little compute, on GPUs joined by 1 GB/s: splitting costs more than it saves.
  const Graph g = SkipGraph(8, 4096);
  TopologyBuilder b("slow");
  for (int d = 0; d < 8; ++d)
    b.add_device(Device{.name = "gpu" + std::to_string(d), .kind = "v100", .peak_flops_f32 = 15.7e12,
                        .memory_bandwidth = 900e9, .memory_bytes = int64_t{16} << 30});
  const NodeId sw = b.add_switch(Switch{"eth", "h"});
  for (int d = 0; d < 8; ++d) b.add_bidirectional_link(d, sw, 1e9, 20e-6, "ethernet");
  const Topology t = std::move(b).Build().value();

  const Expected<SearchResult> all = RunTofu(g, t, AllLevels());
  const Expected<SearchResult> best = RunTofu(g, t);
  ASSERT_TRUE(all.ok() && best.ok());
  EXPECT_EQ(all->evaluations, 1);
  EXPECT_EQ(best->evaluations, 4);  // after 3, 2, 1 and 0 levels
  const OpId b_op = g.find("b");
  EXPECT_EQ(all->strategy.configs[b_op].num_parts(), 8);
  EXPECT_LT(best->strategy.configs[b_op].num_parts(), 8);
  const CostModel cost = MakeAnalyticCostModel();
  EXPECT_LT(Simulate(g, t, best->strategy, cost)->step_time, Simulate(g, t, all->strategy, cost)->step_time);

  // With one evaluation allowed, only the most split strategy is simulated, and returned.
  SearchBudget one;
  one.max_evaluations = 1;
  const Expected<SearchResult> first = RunTofu(g, t, {}, one);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->evaluations, 1);
  EXPECT_EQ(first->strategy, all->strategy);
}

TEST(TofuDp, RegisteredAsTofuDp) {
  const Expected<std::unique_ptr<SearchAlgorithm>> algo = MakeSearchAlgorithm("tofu-dp");
  ASSERT_TRUE(algo.ok()) << algo.error().message;
  EXPECT_EQ((*algo)->name(), "tofu-dp");
}

}  // namespace
}  // namespace devplace
