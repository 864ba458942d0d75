#include "datasets/gpt.h"

#include <algorithm>
#include <map>

#include <gtest/gtest.h>

#include "core/sharding_io.h"
#include "core/topology_yaml.h"
#include "datasets/zoo.h"
#include "tests/testing/graph_checks.h"

namespace devplace {
namespace {

int64_t ParamCount(const Graph& g) { return g.total_param_bytes() / 4; }

// Per layer 12 h^2 + 13 h: q, k, v, output (h^2 + h each), feed-forward (4 h^2 + 4 h and 4 h^2 + h), two layer
// norms (2 h each); token (tied with the output layer) and position embeddings; the final layer norm.
int64_t GptParams(int64_t layers, int64_t h, int64_t vocab, int64_t sequence) {
  return layers * (12 * h * h + 13 * h) + (vocab + sequence) * h + 2 * h;
}

TEST(Gpt, ParameterCountsMatchTheFormula) {
  const Graph small = BuildZooModel("gpt1.3b", 1).value();
  const Graph large = BuildZooModel("gpt2.6b", 1).value();
  EXPECT_EQ(ParamCount(small), GptParams(24, 2048, 51200, 1024));
  EXPECT_EQ(ParamCount(large), GptParams(32, 2560, 51200, 1024));
  // The usual estimate 12 L h^2 + embeddings, and the sizes the presets are named for.
  EXPECT_NEAR(static_cast<double>(ParamCount(small)), 12.0 * 24 * 2048 * 2048 + (51200 + 1024) * 2048.0, 1e-3 * 1.3e9);
  EXPECT_NEAR(static_cast<double>(ParamCount(large)), 12.0 * 32 * 2560 * 2560 + (51200 + 1024) * 2560.0, 1e-3 * 2.6e9);
  EXPECT_NEAR(static_cast<double>(ParamCount(small)), 1.3e9, 0.02 * 1.3e9);
  EXPECT_NEAR(static_cast<double>(ParamCount(large)), 2.6e9, 0.04 * 2.6e9);
  testing::ExpectWellFormedTrainingGraph(small);
  // One update per weight set: 8 per layer (q, k, v, out, ffn1, ffn2, two norms), tied tokens, positions, final norm.
  EXPECT_EQ(small.count_role(OpRole::kUpdate), 24 * 8 + 3);
}

TEST(Gpt, HeadMajorAttentionSplitsHeadsAlongTheProjectionColumns) {
  LayerBuilder b("attn");
  const OpId x = b.Input("x", {2, 16, 64});
  const OpId q = b.Linear({x}, 64, false, "q");
  const OpId scores = b.HeadMajorScores(q, q, 8);
  const OpId context = b.HeadMajorContext(b.Softmax(scores), q);
  const Graph g = std::move(b).BuildForward().value();
  EXPECT_EQ(g.op(scores).shape, (std::vector<int64_t>{2, 16, 8, 16}));
  EXPECT_EQ(g.op(context).shape, (std::vector<int64_t>{2, 16, 64}));
  EXPECT_DOUBLE_EQ(g.op(scores).flops, 2.0 * 2 * 16 * 16 * 64);
  ASSERT_EQ(g.op(scores).dims.size(), 2u);
  EXPECT_EQ(g.op(scores).dims[1].output_axis, 2);  // heads
  EXPECT_EQ(g.op(scores).dims[1].input_axis, 2);   // slice the projection's columns
  EXPECT_EQ(g.op(context).dims[1].input_axis, 2);
}

struct Sharded {
  Graph graph;
  Topology topology;
  ShardingRequest request;
  ShardingPlan plan;
  Strategy strategy;
};

Sharded Shard(const std::string& spec_file) {
  LayerBuilder b("gpt-tiny");
  BuildGpt(b, GptConfig{2, 64, 8, 16, 256, 8});
  Sharded s{std::move(b).BuildTraining().value(),
            ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/dgx-h100.yaml").value(), {}, {}, {}};
  Expected<ShardingRequest> req =
      ReadShardingRequestFile(DEVPLACE_SOURCE_DIR "/configs/sharding/" + spec_file, s.topology, {});
  EXPECT_TRUE(req.ok()) << req.error().message;
  s.request = *req;
  Expected<ShardingPlan> plan = PropagateSharding(s.graph, s.request.mesh, s.request.annotations);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  s.plan = *plan;
  s.strategy = LowerSpecs(s.graph, s.plan.specs, s.request.mesh).value();
  Status st = ValidateStrategy(s.strategy, s.graph, s.topology);
  EXPECT_TRUE(st.ok()) << st.error().message;
  return s;
}

// The per-op Megatron-LM strategy written by hand: in each layer the column-parallel projections, the attention
// heads, their softmax and context, and the GELU split the dimension slicing output axis 2 over all n devices; the
// row-parallel matmuls (attention output, ffn2) split their contracted dimension; their gradients alike and their
// updates sharded n ways; every other op replicated: one part copied on all n devices.
Strategy HandWrittenMegatron(const Graph& g, int32_t n) {
  const std::vector<std::string> axis2 = {"attention_q", "attention_k", "attention_v", "attention_scores",
                                          "attention_probs", "attention_context", "ffn1", "ffn_act"};
  const std::vector<std::string> contracted = {"attention_out", "ffn2"};
  std::vector<DeviceId> all;
  for (DeviceId d = 0; d < n; ++d) all.push_back(d);
  Strategy s;
  for (const Op& op : g.ops()) {
    const Op& f = op.role == OpRole::kForward ? op : g.op(g.find(op.forward_op));
    const std::string leaf = f.name.substr(f.name.rfind('/') + 1);
    const bool split_axis2 = std::find(axis2.begin(), axis2.end(), leaf) != axis2.end();
    const bool split_contracted = std::find(contracted.begin(), contracted.end(), leaf) != contracted.end();
    if (!split_axis2 && !split_contracted) {
      s.configs.push_back(OpConfig{all, {}});
    } else if (op.role == OpRole::kUpdate) {
      s.configs.push_back(OpConfig{all, {n}});
    } else {
      OpConfig c{all, std::vector<int32_t>(op.dims.size(), 1)};
      for (size_t k = 0; k < op.dims.size(); ++k)
        if (split_axis2 ? op.dims[k].output_axis == 2 : op.dims[k].kind == DimKind::kReduction) c.degrees[k] = n;
      s.configs.push_back(std::move(c));
    }
  }
  return s;
}

TEST(Gpt, ShippedMegatronSpecPropagatesToTheHandWrittenStrategy) {
  const Sharded s = Shard("megatron.yaml");
  ASSERT_EQ(s.request.annotations.size(), 4u);  // one annotation, four patterns
  const Strategy hand = HandWrittenMegatron(s.graph, 8);
  for (OpId o = 0; o < s.graph.num_ops(); ++o)
    EXPECT_EQ(s.strategy.configs[o], hand.configs[o]) << s.graph.op(o).name << " got "
                                                       << FormatSpec(s.plan.specs[o], s.request.mesh);
  int partial = 0;
  for (OpId o = 0; o < s.graph.num_ops(); ++o) partial += s.plan.specs[o].partial.empty() ? 0 : 1;
  EXPECT_EQ(partial, 2 * 2 * 2);  // attention_out and ffn2 of 2 layers, forward and backward
  // One all-reduce per block (attention, feed-forward) in the forward pass, into the residual adds, and no other
  // conversion: the column-parallel projections read the replicated stream whole, the rest reads what it is given.
  std::map<std::string, int> kinds;
  std::vector<std::string> all_reduced;
  const auto steps = ForwardEdgeResharding(s.graph, s.plan.specs);
  for (int32_t e = 0; e < s.graph.num_edges(); ++e)
    for (const ReshardStep& step : steps[e]) {
      ++kinds[std::string(ToString(step.kind))];
      if (step.kind == ReshardKind::kAllReduce) all_reduced.push_back(s.graph.op(s.graph.edge(e).dst).name);
    }
  EXPECT_EQ(kinds, (std::map<std::string, int>{{"all-reduce", 4}}));
  EXPECT_EQ(all_reduced, (std::vector<std::string>{"decoder/layer0/attention_residual", "decoder/layer0/ffn_residual",
                                                   "decoder/layer1/attention_residual", "decoder/layer1/ffn_residual"}));
}

TEST(Gpt, ShippedTwoDimensionalSpecShardsEveryTensor) {
  const Sharded s = Shard("data-model-2x4.yaml");
  const Mesh& m = s.request.mesh;
  auto spec = [&](const std::string& op) { return FormatSpec(s.plan.specs[s.graph.find(op)], m); };
  EXPECT_EQ(spec("decoder/layer1/ffn2"), "[data, -, -] partial(model)");
  EXPECT_EQ(spec("decoder/layer1/attention_probs"), "[data, -, model, -]");
  EXPECT_EQ(spec("decoder/layer1/attention_norm"), "[data, -, -]");
  EXPECT_EQ(spec("head/logits"), "[data, -, -]");
  EXPECT_EQ(spec("embedding/tokens"), "[data, -, -]");
  EXPECT_EQ(spec("input/positions"), "[data, -]");
  EXPECT_EQ(spec("decoder/layer1/ffn1/update"), "[model]");  // each data replica updates its model shard
  EXPECT_TRUE(s.plan.replicated.empty());
  EXPECT_TRUE(s.plan.unknown_ops.empty());
}

TEST(Gpt, ShippedDataParallelSpecSplitsEveryOpAlongItsBatch) {
  const Sharded s = Shard("data-parallel.yaml");
  for (OpId o = 0; o < s.graph.num_ops(); ++o) {
    if (s.graph.op(o).role == OpRole::kUpdate) continue;
    EXPECT_EQ(s.plan.specs[o].dims[0], (std::vector<int32_t>{0})) << s.graph.op(o).name;
  }
  EXPECT_EQ(s.plan.ops_per_annotation, (std::vector<int32_t>{1}));
}

// Mixture of experts: dense layers as above; an MoE layer has attention (4 h^2 + 4 h), two norms (4 h), the gate
// (h E, no bias) and E experts of 8 h^2 + 5 h (GShard).
TEST(GptMoe, ParameterCountMatchesTheFormula) {
  const int64_t h = 768, e = 8, layers = 8;
  const int64_t dense = 12 * h * h + 13 * h, moe = 4 * h * h + 8 * h + h * e + e * (8 * h * h + 5 * h);
  const Graph g = BuildZooModel("gpt_moe8", 1).value();
  EXPECT_EQ(ParamCount(g), layers / 2 * (dense + moe) + (32000 + 1024) * h + 2 * h);
  testing::ExpectWellFormedTrainingGraph(g);
  EXPECT_EQ(ExpertCapacity(GptMoe8(1)), 256);  // 2 * 1024 / 8 tokens per expert and group
}

GptConfig TinyMoe(double capacity_factor) { return GptConfig{2, 64, 8, 16, 256, 8, 8, capacity_factor}; }

double TrainingFlops(const GptConfig& c) {
  LayerBuilder b("moe");
  BuildGpt(b, c);
  return std::move(b).BuildTraining().value().total_flops();
}

TEST(GptMoe, LargerCapacityCostsMore) {
  EXPECT_EQ(ExpertCapacity(TinyMoe(1.0)), 4);
  EXPECT_EQ(ExpertCapacity(TinyMoe(1.25)), 5);
  EXPECT_EQ(ExpertCapacity(TinyMoe(2.0)), 8);
  EXPECT_LT(TrainingFlops(TinyMoe(1.0)), TrainingFlops(TinyMoe(1.25)));
  EXPECT_LT(TrainingFlops(TinyMoe(1.25)), TrainingFlops(TinyMoe(2.0)));
}

// The shipped expert-parallel spec: experts split over the data axis, dense ops along their batch; the layout
// changes are exactly one all-to-all into the experts and one out of them per MoE layer.
TEST(GptMoe, ShippedExpertParallelSpecAllToAllsAroundTheExperts) {
  LayerBuilder b("moe");
  BuildGpt(b, TinyMoe(1.0));
  const Graph g = std::move(b).BuildTraining().value();
  const Topology t = ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/dgx-h100.yaml").value();
  const ShardingRequest req =
      ReadShardingRequestFile(DEVPLACE_SOURCE_DIR "/configs/sharding/expert-parallel.yaml", t, {}).value();
  const ShardingPlan plan = PropagateSharding(g, req.mesh, req.annotations).value();
  auto spec = [&](const std::string& op) { return FormatSpec(plan.specs[g.find(op)], req.mesh); };
  EXPECT_EQ(spec("decoder/layer1/expert_ffn1"), "[-, data, -, -]");
  EXPECT_EQ(spec("decoder/layer1/expert_act"), "[-, data, -, -]");
  EXPECT_EQ(spec("decoder/layer1/dispatch"), "[data, -, -, -]");
  EXPECT_EQ(spec("decoder/layer1/combine"), "[data, -, -]");
  EXPECT_EQ(spec("decoder/layer0/ffn1"), "[data, -, -]");
  EXPECT_TRUE(plan.replicated.empty());
  const Strategy s = LowerSpecs(g, plan.specs, req.mesh).value();
  EXPECT_TRUE(ValidateStrategy(s, g, t).ok());
  std::vector<std::string> conversions;
  const auto steps = ForwardEdgeResharding(g, plan.specs);
  for (int32_t e = 0; e < g.num_edges(); ++e)
    for (const ReshardStep& step : steps[e])
      conversions.push_back(std::string(ToString(step.kind)) + " " + g.op(g.edge(e).src).name + " -> " +
                            g.op(g.edge(e).dst).name);
  EXPECT_EQ(conversions, (std::vector<std::string>{
                             "all-to-all decoder/layer1/dispatch -> decoder/layer1/expert_ffn1",
                             "all-to-all decoder/layer1/expert_ffn2 -> decoder/layer1/combine"}));
}

// On every op of a real model (attention, MoE dispatch, per-expert matmuls, updates): propagated specs lower to configs
// that lift back to the same specs, and annotating any further op with its propagated spec changes nothing.
TEST(GptMoe, PropagationRoundTripsAndIsIdempotentOnEveryOp) {
  LayerBuilder b("moe");
  BuildGpt(b, TinyMoe(1.0));
  const Graph g = std::move(b).BuildTraining().value();
  const Topology t = ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/dgx-h100.yaml").value();
  for (const char* file : {"expert-parallel.yaml", "megatron.yaml", "data-model-2x4.yaml"}) {
    SCOPED_TRACE(file);
    const ShardingRequest req =
        ReadShardingRequestFile(DEVPLACE_SOURCE_DIR "/configs/sharding/" + std::string(file), t, {}).value();
    const ShardingPlan plan = PropagateSharding(g, req.mesh, req.annotations).value();
    const Strategy s = LowerSpecs(g, plan.specs, req.mesh).value();
    for (OpId o = 0; o < g.num_ops(); ++o) {
      std::optional<ShardingSpec> back = LiftConfig(g.op(o), s.configs[o], req.mesh);
      ASSERT_TRUE(back.has_value()) << g.op(o).name;
      EXPECT_EQ(*back, plan.specs[o]) << g.op(o).name;
    }
    for (OpId o = 0; o < g.num_ops(); o += 7) {
      if (g.op(o).role != OpRole::kForward) continue;
      std::vector<ShardingAnnotation> more = req.annotations;
      more.push_back(ShardingAnnotation{g.op(o).name, plan.specs[o], true, "extra"});
      Expected<ShardingPlan> again = PropagateSharding(g, req.mesh, more);
      ASSERT_TRUE(again.ok()) << again.error().message;
      EXPECT_EQ(again->specs, plan.specs) << "with " << g.op(o).name << " annotated too";
    }
  }
}

}  // namespace
}  // namespace devplace
