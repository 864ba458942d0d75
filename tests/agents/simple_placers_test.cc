#include "agents/simple_placers.h"

#include <gtest/gtest.h>

#include <set>

#include "core/colocation.h"
#include "core/topology_yaml.h"
#include "core/training_graph.h"
#include "tests/testing/agents_graphs.h"

namespace devplace {
namespace {

// Two independent chains of matmuls, derived into a training graph.
Graph TwoChains(int length) {
  GraphBuilder b("two-chains");
  for (int c = 0; c < 2; ++c) {
    OpId prev = -1;
    for (int i = 0; i < length; ++i) {
      Op op{.name = testing::Label(testing::Label("c", c) + "_", i), .type = "matmul", .shape = {64, 256}};
      op.flops = 2.0 * 64 * 256 * 256;
      op.param_bytes = 256 * 256 * 4;
      OpId id = b.add_op(op);
      if (prev >= 0) b.add_edge(prev, id);
      prev = id;
    }
  }
  return DeriveTrainingGraph(std::move(b).Build().value()).value();
}

Topology Machine(int devices, double fast_device_peak = 0) {
  TopologyBuilder b("m");
  for (int d = 0; d < devices; ++d)
    b.add_device(Device{.name = testing::Label("d", d), .kind = "gpu", .peak_flops_f32 = 1e13,
                        .memory_bandwidth = 1e12, .memory_bytes = int64_t{16} << 30});
  if (fast_device_peak > 0) {
    Device fast{.name = "fast", .kind = "gpu", .peak_flops_f32 = fast_device_peak, .memory_bandwidth = 1e12,
                .memory_bytes = int64_t{16} << 30};
    b.add_device(fast);
  }
  NodeId sw = b.add_switch(Switch{"sw", "h"});
  for (int d = 0; d < devices + (fast_device_peak > 0); ++d) b.add_bidirectional_link(d, sw, 10e9, 1e-6, "pcie");
  return std::move(b).Build().value();
}

SearchResult RunAlgo(const std::string& name, const Graph& g, const Topology& t, SearchBudget budget = {},
                 uint64_t seed = 0) {
  std::unique_ptr<SearchAlgorithm> algo = MakeSearchAlgorithm(name).value();
  SearchProblem problem{&g, &t, MakeAnalyticCostModel(), SimOptions{}};
  SearchRequest request;
  request.budget = budget;
  request.seed = seed;
  Expected<SearchResult> r = algo->Search(problem, request);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  EXPECT_TRUE(ValidateStrategy(r->strategy, g, t).ok());
  return std::move(r).value();
}

TEST(SimplePlacers, SinglePicksTheFastestDevice) {
  Graph g = TwoChains(3);
  Topology t = Machine(2, 5e13);
  SearchResult r = RunAlgo("single", g, t);
  for (const OpConfig& c : r.strategy.configs) EXPECT_EQ(c.devices, std::vector<DeviceId>{2});
  EXPECT_EQ(r.evaluations, 0);
}

TEST(SimplePlacers, DataParallelSplitsEveryGroupThatCanBeSplit) {
  // Chains of matmuls with a batch of 64 split four ways, plus one op with a batch of 2 that cannot be: its
  // group (forward, backward and update) runs whole on the fastest device.
  GraphBuilder b("dp");
  OpId prev = -1;
  for (int i = 0; i < 3; ++i) {
    Op op{.name = testing::Label("m", i), .type = "matmul", .shape = {i == 1 ? 2 : 64, 256}};
    op.dims = {PartitionDim{DimKind::kSample, 0, 0, op.shape[0]}};
    op.flops = 1e11;  // 10 ms at 1e13 FLOP/s: far more than the all-reduce of 256 kB of weights
    op.param_bytes = 256 * 256 * 4;
    OpId id = b.add_op(op);
    if (prev >= 0) b.add_edge(prev, id);
    prev = id;
  }
  Graph g = DeriveTrainingGraph(std::move(b).Build().value()).value();
  Topology t = Machine(4);
  SearchResult r = RunAlgo("data-parallel", g, t);
  EXPECT_EQ(r.evaluations, 0);
  const std::vector<DeviceId> all = {0, 1, 2, 3};
  for (OpId op = 0; op < g.num_ops(); ++op) {
    const Op& o = g.op(op);
    const OpConfig& c = r.strategy.configs[op];
    if (o.name == "m1" || o.forward_op == "m1") {
      EXPECT_EQ(c, (OpConfig{{0}, {}})) << o.name;
    } else if (o.role == OpRole::kUpdate) {
      EXPECT_EQ(c, (OpConfig{all, {4}})) << o.name;  // a parameter dimension: the update is sharded
      EXPECT_EQ(o.dims[0].kind, DimKind::kParameter);
    } else {
      EXPECT_EQ(c, (OpConfig{all, {4}})) << o.name;  // the batch dimension
      EXPECT_EQ(o.dims[0].kind, DimKind::kSample);
    }
  }
  // Data parallelism over four devices beats one device on this compute-bound graph.
  const double one = Simulate(g, t, RunAlgo("single", g, t).strategy, MakeAnalyticCostModel())->step_time;
  const double dp = Simulate(g, t, r.strategy, MakeAnalyticCostModel())->step_time;
  EXPECT_LT(dp, one);
}

// On a DGX-1 the data-parallel ring is the all-NVLink one (0 1 2 3 7 5 6 4, FastRingOrder) that NCCL and Tofu-DP
// use, not id order (whose steps 3 -> 4 and 7 -> 0 take two links each). On a chain of matmuls whose only
// dimension is a batch large enough that Tofu-DP splits every op along it, the two step times are equal.
TEST(SimplePlacers, DataParallelRingsOverNvlinkOnDgx1) {
  GraphBuilder b("chain");
  OpId prev = -1;
  for (int i = 0; i < 4; ++i) {
    Op op{.name = testing::Label("m", i), .type = "matmul", .shape = {1024, 2048}};
    op.dims = {PartitionDim{DimKind::kSample, 0, 0, op.shape[0]}};
    op.flops = 2.0 * 1024 * 2048 * 2048;
    op.param_bytes = int64_t{2048} * 2048 * 4;
    OpId id = b.add_op(op);
    if (prev >= 0) b.add_edge(prev, id);
    prev = id;
  }
  Graph g = DeriveTrainingGraph(std::move(b).Build().value()).value();
  const Topology t = ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/dgx1-v100.yaml").value();
  const Strategy dp = RunAlgo("data-parallel", g, t).strategy;
  const std::vector<DeviceId> ring = {0, 1, 2, 3, 7, 5, 6, 4};
  for (OpId op = 0; op < g.num_ops(); ++op) EXPECT_EQ(dp.configs[op], (OpConfig{ring, {8}})) << g.op(op).name;
  const Strategy tofu = RunAlgo("tofu-dp", g, t).strategy;
  for (OpId op = 0; op < g.num_ops(); ++op) EXPECT_EQ(tofu.configs[op].num_parts(), 8) << g.op(op).name;
  const CostModel cost = MakeAnalyticCostModel();
  const double dp_time = Simulate(g, t, dp, cost)->step_time;
  EXPECT_EQ(dp_time, Simulate(g, t, tofu, cost)->step_time);
  // The same splits along id order are 2.6x slower: the two two-link steps carry the gradient all-reduce.
  Strategy id_order = dp;
  for (OpConfig& c : id_order.configs) c.devices = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_GT(Simulate(g, t, id_order, cost)->step_time, dp_time * 2);  // 14.6 vs 5.6 ms
}

TEST(SimplePlacers, RoundRobinDealsGroupsInOrder) {
  Graph g = TwoChains(3);
  Topology t = Machine(4);
  SearchResult r = RunAlgo("round-robin", g, t);
  OpGroups groups = ColocationGroups(g);
  for (OpId op = 0; op < g.num_ops(); ++op)
    EXPECT_EQ(r.strategy.configs[op].devices[0], groups.group_of_op[op] % 4) << g.op(op).name;
  std::set<DeviceId> used;
  for (const OpConfig& c : r.strategy.configs) used.insert(c.devices[0]);
  EXPECT_EQ(used.size(), 4u);
}

TEST(SimplePlacers, RandomIsSeededAndRandomSearchKeepsTheBest) {
  Graph g = TwoChains(6);
  Topology t = Machine(2);
  EXPECT_EQ(RunAlgo("random", g, t, {}, 7).strategy, RunAlgo("random", g, t, {}, 7).strategy);
  EXPECT_NE(RunAlgo("random", g, t, {}, 7).strategy, RunAlgo("random", g, t, {}, 8).strategy);
  SearchResult one = RunAlgo("random", g, t, {}, 3);
  EXPECT_EQ(one.evaluations, 0);
  SearchResult best_of_50 = RunAlgo("random", g, t, SearchBudget{50, 0}, 3);
  EXPECT_EQ(best_of_50.evaluations, 50);
  CostModel cost = MakeAnalyticCostModel();
  double first = Simulate(g, t, one.strategy, cost).value().step_time;
  double best = Simulate(g, t, best_of_50.strategy, cost).value().step_time;
  EXPECT_LE(best, first);  // the first draw is among the 50 evaluated
}

TEST(SimplePlacers, UnknownAlgorithmListsTheKnownOnes) {
  Expected<std::unique_ptr<SearchAlgorithm>> a = MakeSearchAlgorithm("annealing");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().message, "unknown algorithm 'annealing' (known: single, data-parallel, round-robin, random, expert, scotch, metis, m-topo, m-etf, mcmc, mcmc-chains, tofu-dp, "
            "auto-shard, pipeline-dp)");
}

}  // namespace
}  // namespace devplace
