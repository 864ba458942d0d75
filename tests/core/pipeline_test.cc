#include "core/pipeline.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "core/pipeline_json.h"
#include "core/training_graph.h"

namespace devplace {
namespace {

// A training chain a -> b -> c -> d (layers "in", "mid", "mid", "out"; sample dimension 8) on four devices.
class PipelinePlanTest : public ::testing::Test {
 protected:
  PipelinePlanTest() {
    TopologyBuilder t("four");
    for (int i = 0; i < 4; ++i)
      t.add_device(Device{.name = "gpu" + std::to_string(i), .kind = "gpu", .peak_flops_f32 = 1e12,
                          .memory_bandwidth = 1e11, .memory_bytes = 1 << 30});
    for (int i = 0; i < 4; ++i)
      for (int j = i + 1; j < 4; ++j) t.add_bidirectional_link(i, j, 1e10, 1e-6, "nvlink");
    GraphBuilder g("chain");
    const char* layers[] = {"in", "mid", "mid", "out"};
    OpId prev = -1;
    for (int i = 0; i < 4; ++i) {
      Op op{.name = std::string(1, static_cast<char>('a' + i)), .type = "matmul", .layer = layers[i],
            .shape = {8, 4}, .param_bytes = 64, .flops = 100};
      op.dims = {PartitionDim{DimKind::kSample, 0, 0, 8}};
      const OpId id = g.add_op(op);
      if (prev >= 0) g.add_edge(prev, id);
      prev = id;
    }
    graph_ = DeriveTrainingGraph(std::move(g).Build().value()).value();
    topology_ = std::move(t).Build().value();
  }

  // ValidatePipelinePlan's message ("" when valid).
  std::string Validate(const PipelinePlan& plan) const {
    const Status s = ValidatePipelinePlan(plan, graph_, topology_);
    return s.ok() ? "" : s.error().message;
  }

  Graph graph_;
  Topology topology_;
};

// Two stages: ops a..b on gpu0 and gpu1, ops c..d on gpu2.
PipelinePlan TwoStages(const Graph& graph) {
  PipelinePlan plan;
  plan.microbatches = 4;
  plan.schedule = PipelineSchedule::kEagerOneFOneB;
  plan.stages.push_back({"front", {StageOps::Kind::kOpRange, graph.find("a"), graph.find("b"), "", ""}, {0, 1}, {2}});
  plan.stages.push_back({"back", {StageOps::Kind::kOpRange, graph.find("c"), graph.find("d"), "", ""}, {2}, {}});
  return plan;
}

TEST_F(PipelinePlanTest, AssignsForwardOpsByRangeAndTheRestByTheirForwardOp) {
  const PipelinePlan plan = TwoStages(graph_);
  EXPECT_EQ(Validate(plan), "");
  const std::vector<int32_t> stage_of = AssignStages(plan, graph_).value();
  for (const char* name : {"a", "b", "b/grad", "b/update"}) EXPECT_EQ(stage_of[graph_.find(name)], 0) << name;
  for (const char* name : {"c", "d", "c/grad", "d/update"}) EXPECT_EQ(stage_of[graph_.find(name)], 1) << name;
  PipelinePlan by_layers = plan;
  by_layers.stages[0].ops = {StageOps::Kind::kLayerRange, -1, -1, "in", "mid"};
  by_layers.stages[1].ops = {StageOps::Kind::kLayerRange, -1, -1, "out", "out"};
  EXPECT_EQ(ForwardLayerOrder(graph_), (std::vector<std::string>{"in", "mid", "out"}));
  const std::vector<int32_t> by_layer = AssignStages(by_layers, graph_).value();
  EXPECT_EQ(by_layer[graph_.find("c")], 0);
  EXPECT_EQ(by_layer[graph_.find("d")], 1);
}

TEST_F(PipelinePlanTest, ValidationErrorsNameTheStage) {
  PipelinePlan plan = TwoStages(graph_);
  plan.stages[1].devices = {1};
  EXPECT_EQ(Validate(plan), "stage 'back': device 'gpu1' is already used by stage 'front'");
  plan = TwoStages(graph_);
  plan.stages[0].shape = {3};
  EXPECT_EQ(Validate(plan), "stage 'front': shape has 3 places but 2 devices are given");
  plan = TwoStages(graph_);
  plan.stages[1].ops.first_op = graph_.find("b");
  EXPECT_EQ(Validate(plan), "stage 'back': op 'b' is also in stage 'front'");
  plan = TwoStages(graph_);
  plan.stages[1].ops.first_op = graph_.find("d");
  EXPECT_EQ(Validate(plan), "op 'c': is in no pipeline stage");
  plan = TwoStages(graph_);
  std::swap(plan.stages[0].ops, plan.stages[1].ops);
  EXPECT_EQ(Validate(plan), "stage 'front': op 'c' reads 'b' of stage 'back' (stages must follow the data flow)");
  plan = TwoStages(graph_);
  plan.stages[0].ops.last_op = graph_.find("b/grad");
  EXPECT_EQ(Validate(plan), "stage 'front': op range ends at 'b/grad', which is not a forward op");
  plan = TwoStages(graph_);
  plan.microbatches = 8;  // 8 micro-batches x 2 devices > the batch of 8
  EXPECT_EQ(Validate(plan),
            "stage 'front': 8 micro-batches x 2 devices exceed the batch (8, the graph's largest sample dimension)");
  plan.microbatches = 0;
  EXPECT_EQ(Validate(plan), "microbatches: must be in [1, 65536], got 0");
  plan = TwoStages(graph_);
  plan.stages[1].ops = {StageOps::Kind::kLayerRange, -1, -1, "out", "head"};
  EXPECT_EQ(Validate(plan), "stage 'back': no forward op has layer 'head' in graph 'chain'");
  plan = TwoStages(graph_);
  plan.stages[0].spec = "S0";
  EXPECT_EQ(Validate(plan), "stage 'front': spec 'S0' has 1 entries; expected 2 (samples, features)");
  plan.stages[0].spec = "S1,R";
  EXPECT_EQ(Validate(plan),
            "stage 'front': spec 'S1,R': entry 0 'S1': mesh axis 1 is not one of the mesh's 1 axes");
  plan.stages[0].spec = "S0,S0";
  EXPECT_EQ(Validate(plan), "stage 'front': spec 'S0,S0' uses mesh axis 0 twice");
  plan.stages[0].spec = "R,S0";
  EXPECT_EQ(Validate(plan), "");
  plan.reshard.chunks = 0;
  EXPECT_EQ(Validate(plan), "reshard.chunks: must be in [1, 4096], got 0");
}

TEST_F(PipelinePlanTest, StageLayoutsDefaultToSamplesSplitOverEveryAxis) {
  PipelineStage stage{"s", {}, {0, 1, 2, 3}, {2, 2}, ""};
  EXPECT_EQ(StageMesh(stage).shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(StageMesh(stage).devices, stage.devices);
  EXPECT_EQ(AlpaSpecText(StageSpec(stage).value()), "S01,R");
  stage.spec = "S0,R";
  EXPECT_EQ(StageSpec(stage).value().dims, (std::vector<std::vector<int32_t>>{{0}, {}}));
  stage.shape.clear();
  EXPECT_EQ(StageMesh(stage).shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(StageSpec(stage).value().dims, (std::vector<std::vector<int32_t>>{{0}, {}}));
}

TEST_F(PipelinePlanTest, JsonRoundTripsAndIsDetectedAsThePipelineForm) {
  PipelinePlan plan = TwoStages(graph_);
  plan.delay_weight_gradients = true;
  plan.stages[1].ops = {StageOps::Kind::kLayerRange, -1, -1, "out", "out"};
  plan.stages[0].ops.last_op = graph_.find("c");
  plan.stages[0].spec = "R,S0";
  plan.stages[0].sharding = {{"a", ShardingSpec{{{0}, {}}, {}}, false, ""}, {"b", ShardingSpec{{{0}}, {}}, true, ""}};
  plan.reshard = {ReshardMethod::kBroadcast, ReshardBalance::kOurs, 16, true};
  const std::string text = PipelinePlanToJson(plan, graph_, topology_);
  EXPECT_EQ(DetectStrategyForm(text, "p.json").value(), StrategyForm::kPipeline);
  EXPECT_EQ(DetectStrategyForm(R"({"format": "devplace.strategy", "ops": []})", "p.json").value(),
            StrategyForm::kOps);
  EXPECT_FALSE(DetectStrategyForm("[1]", "p.json").ok());
  const Expected<PipelinePlan> back = PipelinePlanFromJson(text, "p.json", graph_, topology_);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, plan);
  const std::string path = ::testing::TempDir() + "devplace_pipeline_test.json";
  ASSERT_TRUE(WritePipelinePlanFile(plan, graph_, topology_, path).ok());
  EXPECT_EQ(DetectStrategyFileForm(path).value(), StrategyForm::kPipeline);
  EXPECT_EQ(ReadPipelinePlanFile(path, graph_, topology_).value(), plan);
  std::remove(path.c_str());
}

TEST_F(PipelinePlanTest, JsonErrorsNameTheFileAndField) {
  auto error = [&](const std::string& pipeline) {
    const std::string text = R"({"format": "devplace.strategy", "version": 1, "pipeline": )" + pipeline + "}";
    const Expected<PipelinePlan> p = PipelinePlanFromJson(text, "p.json", graph_, topology_);
    return p.ok() ? std::string() : p.error().message;
  };
  const std::string stage0 = R"({"name": "s", "ops": {"first": "a", "last": "d"}, "devices": ["gpu0"]})";
  EXPECT_EQ(error(R"({"microbatches": 2, "stages": [)" + stage0 + "]}"), "");
  EXPECT_EQ(error(R"({"microbatches": 2, "schedule": "zb", "stages": [)" + stage0 + "]}"),
            "p.json: pipeline.schedule: unknown schedule 'zb' (expected gpipe, 1f1b or eager-1f1b)");
  EXPECT_EQ(error(R"({"microbatches": 2, "stages": [{"name": "s", "ops": {"first": "a", "last": "z"},
                    "devices": ["gpu0"]}]})"),
            "p.json: pipeline.stages[0].ops.last: no op named 'z' in graph 'chain'");
  EXPECT_EQ(error(R"({"microbatches": 2, "stages": [{"name": "s", "ops": {"first": "a", "last": "d"},
                    "devices": ["gpu9"]}]})"),
            "p.json: pipeline.stages[0].devices[0]: unknown device 'gpu9' (topology 'four')");
  EXPECT_EQ(error(R"({"microbatches": 2, "stages": [{"name": "s", "devices": ["gpu0"]}]})"),
            "p.json: pipeline.stages[0].ops: give exactly one of \"ops\" and \"layers\"");
  EXPECT_EQ(error(R"({"microbatches": 2, "stages": [{"name": "s", "ops": {"first": "a", "last": "c"},
                    "devices": ["gpu0"]}]})"),
            "p.json: op 'd': is in no pipeline stage");
  EXPECT_NE(error(R"({"microbatches": 2, "stages": [], "extra": 1})").find("unknown field"), std::string::npos);
  EXPECT_EQ(error(R"({"microbatches": 2, "reshard": {"method": "broadcast", "balance": "ours", "chunks": 8},
                    "stages": [)" + stage0 + "]}"),
            "");
  EXPECT_EQ(error(R"({"microbatches": 2, "reshard": {"method": "pigeon"}, "stages": [)" + stage0 + "]}")
                .rfind("p.json: pipeline.reshard.method: ", 0),
            0u);
  EXPECT_EQ(error(R"({"microbatches": 2, "reshard": {"chunks": 0}, "stages": [)" + stage0 + "]}")
                .rfind("p.json: pipeline.reshard.chunks: ", 0),
            0u);
  EXPECT_EQ(error(R"({"microbatches": 2, "stages": [{"name": "s", "ops": {"first": "a", "last": "d"},
                    "devices": ["gpu0"], "spec": "S0,R,R"}]})"),
            "p.json: stage 's': spec 'S0,R,R' has 3 entries; expected 2 (samples, features)");
  const std::string sharded = R"({"microbatches": 2, "stages": [{"name": "s", "ops": {"first": "a", "last": "d"},
                    "devices": ["gpu0", "gpu1"], "sharding": [{"ops": ")";
  EXPECT_EQ(error(sharded + R"(a", "spec": ["a0"]}]}]})"), "");
  EXPECT_EQ(error(sharded + R"(zz", "spec": ["a0"]}]}]})").rfind("p.json: stage 's': sharding: p.json: pipeline.stages[0].sharding[0]", 0),
            0u)
      << error(sharded + R"(zz", "spec": ["a0"]}]}]})");
  EXPECT_EQ(error(sharded + R"(a", "spec": ["b7"]}]}]})").rfind("p.json: pipeline.stages[0].sharding[0].spec", 0), 0u)
      << error(sharded + R"(a", "spec": ["b7"]}]}]})");
  // 3 micro-batches do not divide the batch of 8 a sharded stage runs at micro-batch size.
  EXPECT_EQ(error(R"({"microbatches": 3, "stages": [{"name": "s", "ops": {"first": "a", "last": "d"},
                    "devices": ["gpu0"], "sharding": [{"ops": "a", "spec": ["a0"]}]}]})"),
            "p.json: stage 's': 3 micro-batches do not divide a sample dimension of op 'a'");
}

}  // namespace
}  // namespace devplace
