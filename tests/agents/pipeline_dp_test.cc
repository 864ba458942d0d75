// pipeline-dp: the plan it finds covers the machine with contiguous stages and beats one data-parallel stage where
// weights make data parallelism costly; its stages ring over fast links; inputs it cannot plan for are rejected with
// a reason.
#include "agents/pipeline_dp.h"

#include <gtest/gtest.h>

#include "core/topology_yaml.h"
#include "core/training_graph.h"
#include "sim/pipeline.h"
#include "tests/testing/agents_graphs.h"

namespace devplace {
namespace {

using testing::Gpus;
using testing::IndependentChains;

constexpr double kSmallGib = 0.45;  // GPUs of the memory test (PrefersPlansThatFitInMemory): 460.8 MiB

Expected<SearchResult> SearchPipeline(const Graph& graph, const Topology& topology, PipelineDpOptions options) {
  const SearchProblem problem{&graph, &topology, MakeAnalyticCostModel(), SimOptions{}};
  return PipelineDpSearch(options).Search(problem, SearchRequest{});
}

double PipelineStep(const Graph& graph, const Topology& topology, const PipelinePlan& plan) {
  Expected<PipelineResult> r = SimulatePipeline(graph, topology, plan, MakeAnalyticCostModel());
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? r->sim.step_time : 0.0;
}

// A chain of four 4096-wide matmuls (64 MiB of weights each, 2 GFLOP forward) on four GPUs behind one PCIe switch:
// all-reducing the weights over PCIe costs far more than the compute, so the DP pipelines the layers one per GPU.
TEST(PipelineDp, PipelinesLayersWhoseWeightsMakeDataParallelismCostly) {
  const Graph graph = IndependentChains(1, 4, 4096);
  const Topology machine = Gpus(4);
  PipelineDpOptions options;
  options.microbatches = 8;
  options.schedule = PipelineSchedule::kEagerOneFOneB;
  const Expected<SearchResult> r = SearchPipeline(graph, machine, options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->pipeline.has_value());
  const PipelinePlan& plan = *r->pipeline;
  EXPECT_EQ(plan.microbatches, 8);
  EXPECT_EQ(plan.schedule, PipelineSchedule::kEagerOneFOneB);
  ASSERT_EQ(plan.stages.size(), 4u);
  std::vector<int> used(4, 0);
  for (size_t s = 0; s < 4; ++s) {
    EXPECT_EQ(plan.stages[s].ops.first_layer, "c0/l" + std::to_string(s));
    EXPECT_EQ(plan.stages[s].ops.last_layer, "c0/l" + std::to_string(s));
    for (DeviceId d : plan.stages[s].devices) ++used[d];
  }
  EXPECT_EQ(used, (std::vector<int>{1, 1, 1, 1}));
  EXPECT_TRUE(ValidateStrategy(r->strategy, graph, machine).ok());
  EXPECT_GT(r->evaluations, 0);
  // The one-stage data-parallel pipeline the DP also priced is slower when simulated.
  PipelinePlan one = plan;
  one.stages = {{"all", {StageOps::Kind::kLayerRange, -1, -1, "c0/l0", "c0/l3"}, {0, 1, 2, 3}, {}, ""}};
  EXPECT_LT(PipelineStep(graph, machine, plan), PipelineStep(graph, machine, one));
  // Same inputs, same plan.
  EXPECT_EQ(SearchPipeline(graph, machine, options)->pipeline, r->pipeline);
}

// Two layers whose outputs (1 GiB at the batch of 64) stay inside the layer while 1 MiB passes on, with 16 MiB of
// weights each, on two GPUs behind PCIe. One layer per GPU (two stages) is fastest: data parallelism all-reduces the
// weight gradients over PCIe. But the first of two stages keeps 2 of the M = 4 micro-batches' activations in flight
// (1F1B), one data-parallel stage 1 of 4 at half the batch: on GPUs too small for the two stages the DP prefers the
// one stage that fits, as the objective ranks fitting steps first (simulated: two stages 6.98 ms with 576 MiB on the
// first GPU, one stage 11.39 ms with 384 MiB on each).
Graph ActivationHeavyPair() {
  GraphBuilder b("activations");
  OpId prev = -1;
  for (int i = 0; i < 2; ++i) {
    const int64_t width = int64_t{1} << 22;  // [64 x width] f32: 1 GiB
    Op op{.name = testing::Label("a", i), .type = "matmul", .layer = testing::Label("l", i), .shape = {64, width}};
    op.flops = 1e9;
    op.param_bytes = int64_t{16} << 20;
    op.dims = {PartitionDim{DimKind::kSample, 0, 0, 64}, PartitionDim{DimKind::kParameter, 1, -1, width}};
    const OpId id = b.add_op(op);
    if (prev >= 0) b.add_edge(prev, id, int64_t{1} << 20);
    prev = id;
  }
  return DeriveTrainingGraph(std::move(b).Build().value()).value();
}

TEST(PipelineDp, PrefersPlansThatFitInMemory) {
  const Graph graph = ActivationHeavyPair();
  PipelineDpOptions options;
  options.microbatches = 4;
  const Topology ample = Gpus(2);
  const Expected<SearchResult> fast = SearchPipeline(graph, ample, options);
  ASSERT_TRUE(fast.ok()) << fast.error().message;
  ASSERT_EQ(fast->pipeline->stages.size(), 2u);  // with memory to spare: a layer per GPU
  const Topology small = Gpus(2, kSmallGib);
  Expected<PipelineResult> two = SimulatePipeline(graph, small, *fast->pipeline, MakeAnalyticCostModel());
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_TRUE(two->sim.oom);
  const Expected<SearchResult> r = SearchPipeline(graph, small, options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->pipeline->stages.size(), 1u);
  Expected<PipelineResult> fits = SimulatePipeline(graph, small, *r->pipeline, MakeAnalyticCostModel());
  ASSERT_TRUE(fits.ok()) << fits.error().message;
  EXPECT_FALSE(fits->sim.oom);
  EXPECT_GT(fits->sim.step_time, two->sim.step_time);  // slower, but it fits
}

// Four compute-heavy layers (1 TFLOP forward each, 16 MiB of weights) on a DGX-1 with one micro-batch: one
// data-parallel stage over all eight GPUs is the plan, its devices in the NVLink ring order 0 1 2 3 7 5 6 4
// (FastRingOrder) that the stage was priced on, which is faster than the same stage in id order.
TEST(PipelineDp, StagesRingOverFastLinks) {
  GraphBuilder b("heavy");
  OpId prev = -1;
  for (int i = 0; i < 4; ++i) {
    Op op{.name = testing::Label("m", i), .type = "matmul", .layer = testing::Label("l", i), .shape = {64, 2048}};
    op.flops = 1e12;
    op.param_bytes = int64_t{2048} * 2048 * 4;
    op.dims = {PartitionDim{DimKind::kSample, 0, 0, 64}};
    const OpId id = b.add_op(op);
    if (prev >= 0) b.add_edge(prev, id);
    prev = id;
  }
  const Graph graph = DeriveTrainingGraph(std::move(b).Build().value()).value();
  const Topology dgx1 = ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/dgx1-v100.yaml").value();
  PipelineDpOptions options;
  options.microbatches = 1;
  const Expected<SearchResult> r = SearchPipeline(graph, dgx1, options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->pipeline.has_value());
  const PipelinePlan& plan = *r->pipeline;
  ASSERT_EQ(plan.stages.size(), 1u);
  EXPECT_EQ(plan.stages[0].devices, (std::vector<DeviceId>{0, 1, 2, 3, 7, 5, 6, 4}));
  PipelinePlan id_order = plan;
  id_order.stages[0].devices = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_LT(PipelineStep(graph, dgx1, plan), PipelineStep(graph, dgx1, id_order));
}

TEST(PipelineDp, RejectsWhatItCannotPlan) {
  const Graph graph = IndependentChains(1, 4, 256);
  PipelineDpOptions options;
  options.microbatches = 65;  // more than the batch of 64 even on one device per stage
  Expected<SearchResult> r = SearchPipeline(graph, Gpus(4), options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no pipeline of 65 micro-batches covers the 4 devices"), std::string::npos)
      << r.error().message;

  TopologyBuilder b("uneven");
  for (int d = 0; d < 3; ++d)
    b.add_device(Device{.name = "gpu" + std::to_string(d), .kind = "v100", .host = d < 2 ? "a" : "b",
                        .peak_flops_f32 = 15.7e12, .memory_bandwidth = 900e9, .memory_bytes = int64_t{1} << 34});
  const NodeId sw = b.add_switch(Switch{"net", "net"});
  for (int d = 0; d < 3; ++d) b.add_bidirectional_link(d, sw, 12e9, 1.5e-6, "pcie");
  Expected<Topology> built = std::move(b).Build();
  ASSERT_TRUE(built.ok()) << built.error().message;
  const Topology uneven = std::move(*built);
  r = SearchPipeline(graph, uneven, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "pipeline-dp: hosts of different sizes ('a' has 2 devices, 'b' 1): submeshes are whole hosts or a share "
            "of one");
}

}  // namespace
}  // namespace devplace
