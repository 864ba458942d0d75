#include "core/sharding_propagation.h"

#include <gtest/gtest.h>

#include "core/strategy.h"
#include "tests/core/sharding_graphs.h"

namespace devplace {
namespace {

using testing::D;
using testing::Gpus;
using testing::MiniNet;
using testing::MlpBlock;

ShardingAnnotation Ann(std::string pattern, std::vector<std::vector<int32_t>> dims, std::vector<int32_t> partial = {}) {
  ShardingAnnotation a;
  a.origin = "s.yaml: annotations[" + pattern + "]";
  a.pattern = std::move(pattern);
  a.spec = ShardingSpec{std::move(dims), std::move(partial)};
  return a;
}

std::string Formatted(const Graph& g, const ShardingPlan& plan, const Mesh& m, const std::string& op) {
  return FormatSpec(plan.specs[g.find(op)], m);
}

TEST(ShardingPropagation, GlobPatterns) {
  EXPECT_TRUE(GlobMatch("*", "a/b"));
  EXPECT_TRUE(GlobMatch("*/ffn1", "decoder/layer3/ffn1"));
  EXPECT_FALSE(GlobMatch("*/ffn1", "decoder/layer3/ffn1/grad"));
  EXPECT_TRUE(GlobMatch("layer?/*", "layer7/x"));
  EXPECT_FALSE(GlobMatch("layer?/*", "layer10/x"));
  EXPECT_TRUE(GlobMatch("a*b*c", "aXbYbZc"));
  EXPECT_FALSE(GlobMatch("a*b*c", "aXbYbZ"));
}

// Megatron-LM's MLP on a 2 x 4 (data, model) mesh: annotate the input's batch and ffn1's output columns; the rest
// follows, and the only partial sums are ffn2's (and its gradient op's, which shares its layout).
TEST(ShardingPropagation, MegatronMlpIsPartialExactlyAfterTheRowParallelMatmul) {
  const Graph g = MlpBlock(true);
  const Mesh m = MeshFromShorthand("2x4", {}, Gpus(8)).value();
  Expected<ShardingPlan> plan = PropagateSharding(g, m, {Ann("x", {{0}, {}, {}}), Ann("ffn1", {{0}, {}, {1}})});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(Formatted(g, *plan, m, "ln"), "[data, -, -]");
  EXPECT_EQ(Formatted(g, *plan, m, "ffn1"), "[data, -, model]");
  EXPECT_EQ(Formatted(g, *plan, m, "act"), "[data, -, model]");
  EXPECT_EQ(Formatted(g, *plan, m, "ffn2"), "[data, -, -] partial(model)");
  EXPECT_EQ(Formatted(g, *plan, m, "res"), "[data, -, -]");
  EXPECT_EQ(Formatted(g, *plan, m, "loss"), "[data]");
  EXPECT_EQ(Formatted(g, *plan, m, "labels"), "[data, -]");  // backward, from the loss
  EXPECT_EQ(Formatted(g, *plan, m, "ffn1/grad"), "[data, -, model]");
  EXPECT_EQ(Formatted(g, *plan, m, "ffn2/update"), "[model]");  // its data replicas update it alike (copies)
  EXPECT_EQ(Formatted(g, *plan, m, "ln/update"), "[-]");
  std::vector<std::string> partial;
  for (OpId o = 0; o < g.num_ops(); ++o)
    if (!plan->specs[o].partial.empty()) partial.push_back(g.op(o).name);
  EXPECT_EQ(partial, (std::vector<std::string>{"ffn2", "ffn2/grad"}));
  EXPECT_TRUE(plan->replicated.empty());
  EXPECT_TRUE(plan->unknown_ops.empty());
  EXPECT_EQ(plan->ops_per_annotation, (std::vector<int32_t>{1, 1}));
  Expected<Strategy> s = LowerSpecs(g, plan->specs, m);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_TRUE(ValidateStrategy(*s, g, Gpus(8)).ok());
  EXPECT_EQ(s->configs[g.find("ffn2")], (OpConfig{{0, 1, 2, 3, 4, 5, 6, 7}, {2, 1, 1, 4}}));
  EXPECT_EQ(s->configs[g.find("ln/update")], (OpConfig{{0, 1, 2, 3, 4, 5, 6, 7}, {}}));
  EXPECT_EQ(s->configs[g.find("ffn2/update")], (OpConfig{{0, 1, 2, 3, 4, 5, 6, 7}, {4}}));
  // ZeRO over the data axis shards the updates (and so the optimizer state) over it too.
  Expected<ShardingPlan> zero =
      PropagateSharding(g, m, {Ann("x", {{0}, {}, {}}), Ann("ffn1", {{0}, {}, {1}})}, /*zero_axis=*/0);
  ASSERT_TRUE(zero.ok()) << zero.error().message;
  EXPECT_EQ(Formatted(g, *zero, m, "ffn2/update"), "[(data, model)]");
  EXPECT_EQ(Formatted(g, *zero, m, "ln/update"), "[data]");
  // ZeRO-3 also shards the weights and gradients over the data axis: the ops holding weights (forward ops with
  // parameters and their backward ops, split over the data axis) get shard_weights; no other op does.
  Expected<Strategy> stage1 = LowerSpecs(g, zero->specs, m);
  Expected<Strategy> stage3 = LowerSpecs(g, zero->specs, m, /*weight_shard_axis=*/0);
  ASSERT_TRUE(stage3.ok()) << stage3.error().message;
  EXPECT_TRUE(ValidateStrategy(*stage3, g, Gpus(8)).ok());
  std::vector<std::string> sharded;
  for (OpId o = 0; o < g.num_ops(); ++o) {
    EXPECT_FALSE(stage1->configs[o].shard_weights);
    OpConfig without = stage3->configs[o];
    without.shard_weights = false;
    EXPECT_EQ(without, stage1->configs[o]);  // otherwise the same lowering
    if (stage3->configs[o].shard_weights) sharded.push_back(g.op(o).name);
  }
  EXPECT_EQ(sharded, (std::vector<std::string>{"ln", "ffn1", "ffn2", "ffn2/grad", "ffn1/grad", "ln/grad"}));
}

TEST(ShardingPropagation, NamesTheAnnotationsThatAreNeeded) {
  const Graph g = MlpBlock(true);
  const Mesh m = MeshFromShorthand("2x4", {}, Gpus(8)).value();
  // ffn1 column-parallel without a batch split: x's annotation is the only source of the data axis, ffn1's the only
  // source of the model axis; both are needed.
  const std::vector<ShardingAnnotation> two = {Ann("x", {{0}, {}, {}}), Ann("ffn1", {{}, {}, {1}})};
  EXPECT_EQ(NeededAnnotations(g, m, two, PropagateSharding(g, m, two).value()), (std::vector<char>{1, 1}));
  // Adding ffn2's row-parallel spec, which propagation derives anyway, makes it the redundant one, and x's batch
  // split now also arrives through ffn2's; ffn1's stays needed (without it, ffn1 would take the batch split too).
  std::vector<ShardingAnnotation> three = two;
  three.push_back(Ann("ffn2", {{0}, {}, {}}, {1}));
  const ShardingPlan plan = PropagateSharding(g, m, three).value();
  EXPECT_EQ(plan.specs, PropagateSharding(g, m, two).value().specs);
  EXPECT_EQ(NeededAnnotations(g, m, three, plan), (std::vector<char>{0, 1, 0}));
}

TEST(ShardingPropagation, OneAnnotationGivesDataParallelism) {
  const Graph g = MlpBlock(true);
  const Mesh m = MeshFromShorthand("8", {}, Gpus(8)).value();
  Expected<ShardingPlan> plan = PropagateSharding(g, m, {Ann("x", {{0}, {}, {}})});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const Op& op = g.op(o);
    if (op.role == OpRole::kUpdate) continue;
    EXPECT_EQ(plan->specs[o].dims[0], (std::vector<int32_t>{0})) << op.name;
    EXPECT_TRUE(plan->specs[o].partial.empty()) << op.name;
  }
}

// Propagation is idempotent: annotating every op with what propagation gave it (or any subset of ops) gives the
// same plan back.
TEST(ShardingPropagation, IsIdempotent) {
  const Graph g = MlpBlock(true);
  const Mesh m = MeshFromShorthand("2x4", {}, Gpus(8)).value();
  const std::vector<ShardingAnnotation> base = {Ann("x", {{0}, {}, {}}), Ann("ffn1", {{0}, {}, {1}})};
  const ShardingPlan first = PropagateSharding(g, m, base).value();
  std::vector<ShardingAnnotation> all;
  for (OpId o = 0; o < g.num_ops(); ++o) {
    if (g.op(o).role != OpRole::kForward) continue;
    all.push_back(Ann(g.op(o).name, first.specs[o].dims, first.specs[o].partial));
    std::vector<ShardingAnnotation> more = base;
    if (g.op(o).name != "x" && g.op(o).name != "ffn1") more.push_back(all.back());
    Expected<ShardingPlan> again = PropagateSharding(g, m, more);
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(again->specs, first.specs) << "with " << g.op(o).name << " annotated too";
  }
  Expected<ShardingPlan> fixed = PropagateSharding(g, m, all);
  ASSERT_TRUE(fixed.ok()) << fixed.error().message;
  EXPECT_EQ(fixed->specs, first.specs);
  EXPECT_EQ(fixed->iterations, 2);  // one sweep per phase, changing nothing
}

TEST(ShardingPropagation, UnknownTypesStayReplicatedAndAreNamed) {
  MiniNet n("odd");
  const OpId x = n.Input("x", {8, 16});
  const OpId y = n.Add("y", "fft", {8, 16}, 0, {D(DimKind::kSample, 0, 0, 8), D(DimKind::kAttribute, 1, 1, 16)}, {x});
  n.Unary("z", "relu", y);
  const Graph g = std::move(n).Forward();
  const Mesh m = MeshFromShorthand("4", {}, Gpus(4)).value();
  Expected<ShardingPlan> plan = PropagateSharding(g, m, {Ann("x", {{0}, {}})});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->unknown_types, (std::vector<std::string>{"fft"}));
  EXPECT_EQ(plan->unknown_ops, (std::vector<OpId>{g.find("y")}));
  EXPECT_EQ(plan->replicated, (std::vector<OpId>{g.find("y"), g.find("z")}));
  EXPECT_FALSE(HasShardingRule("fft"));
  EXPECT_TRUE(HasShardingRule("matmul"));
  EXPECT_TRUE(HasShardingRule("highway_tanh"));
}

TEST(ShardingPropagation, BadAnnotationsAreOneLineErrorsNamingTheAnnotation) {
  const Graph g = MlpBlock(true);
  const Mesh m = MeshFromShorthand("2x4", {}, Gpus(8)).value();
  auto error = [&](std::vector<ShardingAnnotation> anns) {
    Expected<ShardingPlan> plan = PropagateSharding(g, m, anns);
    return plan.ok() ? std::string("accepted") : plan.error().message;
  };
  EXPECT_EQ(error({Ann("nothing*", {{0}})}), "s.yaml: annotations[nothing*]: pattern 'nothing*' matches no forward op");
  EXPECT_EQ(error({Ann("ffn?", {{0}, {}, {}}), Ann("ffn1", {{0}, {}, {1}})}),
            "s.yaml: annotations[ffn1]: conflicts with s.yaml: annotations[ffn?] on op 'ffn1' ([data, -, model] vs "
            "[data, -, -])");
  EXPECT_EQ(error({Ann("ln", {{0}, {}, {1}})}),
            "s.yaml: annotations[ln]: op 'ln' (layer_norm) cannot split its output axis 2 (no partitionable dimension "
            "slices it)");
  EXPECT_EQ(error({Ann("x", {{1}, {0}, {}})}),
            "s.yaml: annotations[x]: op 'x' (input) cannot split its output axis 1 (no partitionable dimension slices it)");
  const Mesh m3 = MeshFromShorthand("3", {}, Gpus(8)).value();
  Expected<ShardingPlan> uneven = PropagateSharding(g, m3, {Ann("x", {{0}, {}, {}})});
  ASSERT_FALSE(uneven.ok());
  EXPECT_EQ(uneven.error().message,
            "s.yaml: annotations[x]: op 'x': axis 0 (extent 8) is not divisible by 3 shards (set pad: true to allow "
            "uneven shards)");
}

TEST(ShardingPropagation, ColocatedOpsLandTogether) {
  MiniNet n("tied");
  const OpId x = n.Input("x", {8, 16});
  const OpId a = n.Add("a", "relu", {8, 16}, 0, {D(DimKind::kSample, 0, 0, 8), D(DimKind::kAttribute, 1, 1, 16)}, {x}, "g");
  n.Add("b", "relu", {8, 16}, 0, {D(DimKind::kSample, 0, 0, 8), D(DimKind::kAttribute, 1, 1, 16)}, {a}, "g");
  const Graph g = std::move(n).Forward();
  const Mesh m = MeshFromShorthand("2x2", {}, Gpus(4)).value();
  // Different specs still cover the same devices (b's parts are copied over the model axis): colocation holds.
  Expected<ShardingPlan> both = PropagateSharding(g, m, {Ann("a", {{0}, {1}}), Ann("b", {{0}, {}})});
  ASSERT_TRUE(both.ok()) << both.error().message;
  Expected<Strategy> lowered = LowerSpecs(g, both->specs, m);
  ASSERT_TRUE(lowered.ok());
  EXPECT_TRUE(ValidateStrategy(*lowered, g, Gpus(4)).ok());
  EXPECT_EQ(lowered->configs[g.find("b")], (OpConfig{{0, 2, 1, 3}, {2, 1}}));
  Expected<ShardingPlan> one = PropagateSharding(g, m, {Ann("x", {{0}, {}})});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->specs[a], one->specs[g.find("b")]);
}

}  // namespace
}  // namespace devplace
