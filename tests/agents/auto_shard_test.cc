// auto-shard (agents/auto_shard.h) on a small GPT over dgx-h100's 8 GPUs: never worse than the shipped spec it
// refines nor than data parallelism, the same result for the same seed, and one-line errors for meshes that do not
// fit the machine; on a DGX-1 its 1-D mesh rings over NVLink.
#include "agents/auto_shard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/atomic_file.h"
#include "core/sharding_io.h"
#include "core/topology_yaml.h"
#include "datasets/gpt.h"
#include "datasets/layers.h"
#include "sim/objective.h"

namespace devplace {
namespace {

class AutoShard : public ::testing::Test {
 protected:
  static Graph Gpt() {
    LayerBuilder b("gpt-tiny");
    BuildGpt(b, GptConfig{2, 64, 8, 16, 256, 8});
    return std::move(b).BuildTraining().value();
  }

  // The strategy a shipped spec file propagates to.
  Strategy Shipped(const std::string& file) const {
    const ShardingRequest req =
        ReadShardingRequestFile(DEVPLACE_SOURCE_DIR "/configs/sharding/" + file, topology_, {}).value();
    const ShardingPlan plan = PropagateSharding(graph_, req.mesh, req.annotations, req.zero_axis).value();
    return LowerSpecs(graph_, plan.specs, req.mesh, req.weight_shard_axis()).value();
  }

  StepCost Cost(const Strategy& s) const {
    return CostOf(Simulate(graph_, topology_, s, problem_.cost, problem_.sim).value(), topology_);
  }

  SearchResult Run(const AutoShardOptions& options, const Strategy* initial, uint64_t seed, int64_t evals) const {
    SearchRequest request;
    request.budget.max_evaluations = evals;
    request.seed = seed;
    request.initial = initial;
    Expected<SearchResult> r = AutoShardSearch(options).Search(problem_, request);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? std::move(*r) : SearchResult{};
  }

  const Graph graph_ = Gpt();
  const Topology topology_ = ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/dgx-h100.yaml").value();
  const SearchProblem problem_{&graph_, &topology_, MakeAnalyticCostModel(), SimOptions{}};
};

TEST_F(AutoShard, NeverWorseThanTheShippedSpecItRefinesOrDataParallelism) {
  AutoShardOptions options;
  options.mesh = "2x4";
  for (const char* file : {"megatron.yaml", "data-model-2x4.yaml", "data-parallel.yaml"}) {
    SCOPED_TRACE(file);
    const Strategy start = Shipped(file);
    const SearchResult r = Run(options, &start, 7, 40);
    EXPECT_TRUE(ValidateStrategy(r.strategy, graph_, topology_).ok());
    EXPECT_FALSE(Cost(start) < Cost(r.strategy));
    EXPECT_FALSE(Cost(Shipped("data-parallel.yaml")) < Cost(r.strategy));
    EXPECT_LE(r.evaluations, 40);
    EXPECT_GT(r.evaluations, 10);  // most proposals lower and are priced
  }
}

TEST_F(AutoShard, SameSeedSameStrategyOnEveryMeshShape) {
  const SearchResult a = Run({}, nullptr, 3, 30);
  const SearchResult b = Run({}, nullptr, 3, 30);
  EXPECT_EQ(a.strategy, b.strategy);
  EXPECT_EQ(a.evaluations, b.evaluations);
}

// Delta simulation prices a proposal exactly as a full simulation does: pricing every proposal by delta or (nearly)
// every one by a full simulation walks the same chain to the same strategy.
TEST_F(AutoShard, DeltaAndFullPricingWalkTheSameChain) {
  AutoShardOptions all_delta, all_full;
  all_delta.delta_fraction = 1.0;
  all_full.delta_fraction = 0.0;  // only proposals changing a single op go by delta
  const SearchResult a = Run(all_delta, nullptr, 11, 30);
  const SearchResult b = Run(all_full, nullptr, 11, 30);
  EXPECT_EQ(a.strategy, b.strategy);
  EXPECT_EQ(a.evaluations, b.evaluations);
}

// With GPUs whose memory lies between ZeRO-3's and ZeRO-1's peak (so data parallelism and ZeRO-1 are out of memory),
// the chain, started from data parallelism, ends at a strategy that fits with weights sharded (ZeRO-3). Without
// stage 3 in its space it ends (seed 5) at another layout that fits, without sharded weights.
TEST_F(AutoShard, ReachesZero3WhereDataParallelismAndZero1DoNotFit) {
  auto peak = [&](const Strategy& s) {
    int64_t most = 0;
    const Expected<SimResult> result = Simulate(graph_, topology_, s, problem_.cost, problem_.sim);
    for (const DeviceStats& d : result->devices) most = std::max(most, d.peak_bytes);
    return most;
  };
  const Strategy zero1 = Shipped("zero.yaml"), zero3 = Shipped("zero3.yaml");
  const int64_t z1 = peak(zero1), z3 = peak(zero3);
  ASSERT_LT(z3, z1);
  std::string yaml = ReadFile(DEVPLACE_SOURCE_DIR "/configs/topologies/dgx-h100.yaml").value();
  const std::string gib = "memory_gib: 74.5";
  ASSERT_NE(yaml.find(gib), std::string::npos);
  yaml.replace(yaml.find(gib), gib.size(),
               "memory_gib: " + std::to_string(static_cast<double>(z1 + z3) / 2 / (int64_t{1} << 30)));
  const Topology small = TopologyFromYaml(yaml, "small.yaml").value();
  const SearchProblem problem{&graph_, &small, MakeAnalyticCostModel(), SimOptions{}};
  auto fits = [&](const Strategy& s) { return !Simulate(graph_, small, s, problem.cost, problem.sim)->oom; };
  ASSERT_FALSE(fits(zero1));
  ASSERT_TRUE(fits(zero3));
  SearchRequest request;
  request.budget.max_evaluations = 60;
  request.seed = 5;
  AutoShardOptions options;
  options.mesh = "8";
  Expected<SearchResult> r = AutoShardSearch(options).Search(problem, request);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(fits(r->strategy));
  EXPECT_TRUE(std::any_of(r->strategy.configs.begin(), r->strategy.configs.end(),
                          [](const OpConfig& c) { return c.shard_weights; }));
}

TEST_F(AutoShard, MeshesThatDoNotFitAreErrors) {
  SearchRequest request;
  request.budget.max_evaluations = 5;
  AutoShardOptions options;
  options.mesh = "3x4";
  Expected<SearchResult> r = AutoShardSearch(options).Search(problem_, request);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "auto-shard: mesh '3x4': needs 12 devices but topology 'dgx-h100' has 8");
  options.mesh = "2x2x2";
  r = AutoShardSearch(options).Search(problem_, request);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "auto-shard: mesh '2x2x2': at most two axes (data and model)");
}

// On a DGX-1 the 1-D mesh lists the GPUs in the NVLink ring order (FastRingOrder), so the chain's start, data
// parallelism over it, all-reduces over NVLink only: every op split eight ways runs on 0 1 2 3 7 5 6 4.
TEST(AutoShardMesh, OneDimensionalMeshRingsOverNvlink) {
  LayerBuilder b("gpt-tiny");
  BuildGpt(b, GptConfig{2, 64, 8, 16, 256, 8});
  const Graph graph = std::move(b).BuildTraining().value();
  const Topology dgx1 = ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/dgx1-v100.yaml").value();
  AutoShardOptions options;
  options.mesh = "8";
  SearchRequest request;
  request.budget.max_evaluations = 1;  // the start only
  Expected<SearchResult> r =
      AutoShardSearch(options).Search(SearchProblem{&graph, &dgx1, MakeAnalyticCostModel(), SimOptions{}}, request);
  ASSERT_TRUE(r.ok()) << r.error().message;
  int split = 0;
  for (const OpConfig& c : r->strategy.configs)
    if (c.num_parts() == 8) {
      ++split;
      EXPECT_EQ(c.devices, (std::vector<DeviceId>{0, 1, 2, 3, 7, 5, 6, 4}));
    }
  EXPECT_GT(split, graph.num_ops() / 2);
}

}  // namespace
}  // namespace devplace
