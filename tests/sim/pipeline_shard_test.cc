// Sharded pipeline stages (PipelineStage::sharding): a stage's micro-batches run its lowering with the collectives
// the sharded single-stage simulation has, so one stage of one micro-batch prices that simulation's step, and a
// Megatron stage all-reduces in every micro-batch.
#include <gtest/gtest.h>

#include <string>

#include "core/topology_yaml.h"
#include "datasets/gpt.h"
#include "datasets/layers.h"
#include "sim/pipeline.h"

namespace devplace {
namespace {

Topology DgxH100() { return ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/dgx-h100.yaml").value(); }

Graph SmallGpt() {
  LayerBuilder b("gpt");
  BuildGpt(b, GptConfig{2, 64, 8, 16, 256, 8});
  return std::move(b).BuildTraining().value();
}

// One stage holding every layer on devices 0..k-1, Megatron-sharded over them (configs/sharding/megatron.yaml's
// annotations on the stage's axis a0).
PipelinePlan MegatronStage(const Graph& graph, int32_t k, int32_t microbatches) {
  PipelinePlan plan;
  plan.microbatches = microbatches;
  PipelineStage& stage = plan.stages.emplace_back();
  stage.name = "tp";
  const std::vector<std::string> layers = ForwardLayerOrder(graph);
  stage.ops = {StageOps::Kind::kLayerRange, -1, -1, layers.front(), layers.back()};
  for (DeviceId d = 0; d < k; ++d) stage.devices.push_back(d);
  for (const char* pattern : {"*/attention_q", "*/attention_k", "*/attention_v", "*/ffn1"})
    stage.sharding.push_back({pattern, ShardingSpec{{{}, {}, {0}}, {}}, false, "test"});
  return plan;
}

StageGraph Lowering(const Graph& graph, const PipelinePlan& plan) {
  const std::vector<int32_t> stage_of = AssignStages(plan, graph).value();
  Expected<StageGraph> sg = ShardedStageGraph(plan, 0, graph, stage_of);
  EXPECT_TRUE(sg.ok()) << sg.error().message;
  return std::move(sg).value();
}

TEST(PipelineShard, OneStageOfOneMicrobatchPricesTheShardedSimulation) {
  const Graph graph = SmallGpt();
  const Topology machine = DgxH100();
  const PipelinePlan plan = MegatronStage(graph, 8, 1);
  const StageGraph sg = Lowering(graph, plan);
  ASSERT_EQ(sg.graph.num_ops(), graph.num_ops());  // one stage of one micro-batch: the whole graph
  const SimResult plain = Simulate(graph, machine, sg.strategy, MakeAnalyticCostModel()).value();
  const Expected<PipelineResult> piped = SimulatePipeline(graph, machine, plan, MakeAnalyticCostModel());
  ASSERT_TRUE(piped.ok()) << piped.error().message;
  // The same tasks; the pipeline adds a 1-tick (1 ps) marker opening and closing the forward and the backward on
  // each device (measured: 558.851816 us against 558.851812 us, the four markers on the critical path).
  EXPECT_GE(piped->sim.step_time, plain.step_time);
  EXPECT_NEAR(piped->sim.step_time, plain.step_time, 1e-9);
  for (DeviceId d = 0; d < 8; ++d) {
    EXPECT_EQ(piped->sim.devices[d].static_bytes, plain.devices[d].static_bytes) << d;
    EXPECT_NEAR(static_cast<double>(piped->sim.devices[d].peak_bytes), static_cast<double>(plain.devices[d].peak_bytes),
                0.01 * static_cast<double>(plain.devices[d].peak_bytes))
        << d;
  }
  EXPECT_EQ(piped->sim.bytes_moved, plain.bytes_moved);
}

TEST(PipelineShard, MegatronStageAllReducesInEveryMicrobatch) {
  const Graph graph = SmallGpt();
  const Topology machine = DgxH100();
  const PipelinePlan plan = MegatronStage(graph, 4, 2);
  const StageGraph sg = Lowering(graph, plan);
  SimOptions options;
  options.keep_timeline = true;
  // The lowering at micro-batch size (4 samples) simulated alone: its collective steps and transfer hops.
  const SimResult alone = Simulate(sg.graph, machine, sg.strategy, MakeAnalyticCostModel(), options).value();
  int64_t comm = 0;
  for (const TimelineTask& t : alone.timeline) comm += t.kind != TimelineTask::Kind::kCompute;
  ASSERT_GT(comm, 0);
  const Expected<PipelineResult> r = SimulatePipeline(graph, machine, plan, MakeAnalyticCostModel(), options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  int64_t per_mb[2] = {0, 0}, other = 0;
  for (const PipelineTimelineTask& t : r->timeline) {
    if (t.kind != PipelineTaskKind::kShardComm) continue;
    if (t.microbatch >= 0) ++per_mb[t.microbatch];
    else ++other;
  }
  // Every micro-batch carries all of them (Megatron's weights are sharded or copied, so no gradient rings).
  EXPECT_EQ(per_mb[0], comm);
  EXPECT_EQ(per_mb[1], comm);
  EXPECT_EQ(other, 0);
  const std::string trace = PipelineChromeTraceJson(*r, plan, machine).value();
  EXPECT_NE(trace.find("\"comm 0 tp\""), std::string::npos);
  EXPECT_NE(trace.find("\"comm 1 tp\""), std::string::npos);
  // Two micro-batches of half the batch each take longer than one of the whole batch (their collectives and
  // launches twice), but less than twice as long.
  const double one = SimulatePipeline(graph, machine, MegatronStage(graph, 4, 1), MakeAnalyticCostModel())->sim.step_time;
  EXPECT_GT(r->sim.step_time, one);
  EXPECT_LT(r->sim.step_time, 2 * one);
}

}  // namespace
}  // namespace devplace
