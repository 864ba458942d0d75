#include "datasets/layers.h"

#include <gtest/gtest.h>

namespace devplace {
namespace {

TEST(LayerBuilder, Conv2dShapeFlopsParamsAndDims) {
  LayerBuilder b("g");
  b.SetScope("block1");
  const OpId x = b.Input("x", {8, 3, 224, 224});
  const OpId y = b.Conv2d(x, ConvSpec::Same(64, 7, 2), "conv1");
  const Graph g = std::move(b).BuildForward().value();
  const Op& op = g.op(y);
  EXPECT_EQ(op.name, "block1/conv1");
  EXPECT_EQ(op.layer, "block1");
  EXPECT_EQ(op.type, "conv2d");
  EXPECT_EQ(op.shape, (std::vector<int64_t>{8, 64, 112, 112}));
  // 2 FLOPs per multiply-add: N * O * H * W * C * kh * kw.
  EXPECT_DOUBLE_EQ(op.flops, 2.0 * 8 * 64 * 112 * 112 * 3 * 7 * 7);
  EXPECT_EQ(op.param_bytes, 64 * 3 * 7 * 7 * 4);
  ASSERT_EQ(op.dims.size(), 5u);
  EXPECT_EQ(op.dims[0].kind, DimKind::kSample);
  EXPECT_EQ(op.dims[1].kind, DimKind::kParameter);
  EXPECT_EQ(op.dims[1].input_axis, -1);
  EXPECT_EQ(op.dims[4].kind, DimKind::kReduction);
  EXPECT_EQ(op.dims[4].input_axis, 1);
  EXPECT_EQ(op.dims[4].size, 3);
  EXPECT_EQ(g.num_edges(), 1);
  EXPECT_EQ(g.edge(0).bytes, 8 * 3 * 224 * 224 * 4);
}

TEST(LayerBuilder, DepthwiseConvHasNoReductionDim) {
  LayerBuilder b("g");
  const OpId x = b.Input("x", {2, 16, 32, 32});
  ConvSpec dw = ConvSpec::Same(16, 3, 2);
  dw.groups = 16;
  const OpId y = b.Conv2d(x, dw, "dw");
  const Graph g = std::move(b).BuildForward().value();
  EXPECT_EQ(g.op(y).type, "depthwise_conv2d");
  EXPECT_EQ(g.op(y).shape, (std::vector<int64_t>{2, 16, 16, 16}));
  EXPECT_DOUBLE_EQ(g.op(y).flops, 2.0 * 2 * 16 * 16 * 16 * 9);
  for (const PartitionDim& d : g.op(y).dims) EXPECT_NE(d.kind, DimKind::kReduction);
}

TEST(LayerBuilder, LinearOverConcatenatedInputs) {
  LayerBuilder b("g");
  const OpId x = b.Input("x", {4, 10, 32});
  const OpId h = b.Input("h", {4, 10, 16});
  const OpId y = b.Linear({x, h}, 8, true, "fc");
  const Graph g = std::move(b).BuildForward().value();
  EXPECT_EQ(g.op(y).shape, (std::vector<int64_t>{4, 10, 8}));
  EXPECT_DOUBLE_EQ(g.op(y).flops, 2.0 * 40 * 48 * 8 + 40 * 8);
  EXPECT_EQ(g.op(y).param_bytes, (48 * 8 + 8) * 4);
  EXPECT_EQ(g.in_edges(y).size(), 2u);
}

TEST(LayerBuilder, DuplicateNamesGetSuffixes) {
  LayerBuilder b("g");
  b.SetScope("s");
  const OpId x = b.Input("x", {2, 4});
  const OpId r1 = b.Relu(x);
  const OpId r2 = b.Relu(r1);
  const OpId r3 = b.Relu(r2);
  const Graph g = std::move(b).BuildForward().value();
  EXPECT_EQ(g.op(r1).name, "s/relu");
  EXPECT_EQ(g.op(r2).name, "s/relu_1");
  EXPECT_EQ(g.op(r3).name, "s/relu_2");
}

TEST(LayerBuilder, SameInputTwiceMakesOneEdge) {
  LayerBuilder b("g");
  const OpId x = b.Input("x", {2, 8, 16});
  const OpId qkv = b.Linear({x}, 48, false, "qkv");
  const OpId s = b.MultiHeadScores(qkv, qkv, 4, 16, "scores");
  const Graph g = std::move(b).BuildForward().value();
  EXPECT_EQ(g.in_edges(s).size(), 1u);
  EXPECT_EQ(g.op(s).shape, (std::vector<int64_t>{2, 4, 8, 8}));
  EXPECT_DOUBLE_EQ(g.op(s).flops, 2.0 * 2 * 8 * 8 * 16);
}

TEST(LayerBuilder, UnrolledLstmSharesWeightsAcrossSteps) {
  LayerBuilder b("g");
  b.SetScope("encoder/layer0");
  const OpId ids = b.Input("ids", {16, 3}, DType::kI32);
  LstmState s;
  std::vector<OpId> gates;
  for (int64_t t = 0; t < 3; ++t) {
    const OpId x = b.Embedding(ids, 1000, 32, "emb_t" + std::to_string(t), "encoder/embedding", t);
    s = b.LstmStep({x}, s, 64, "encoder/layer0", "lstm_t" + std::to_string(t));
    gates.push_back(b.num_ops() - 3);
  }
  const int64_t expected_ops = b.training_op_count();
  const Graph fwd = LayerBuilder(b).BuildForward().value();
  const Graph g = std::move(b).BuildTraining().value();
  EXPECT_EQ(g.num_ops(), expected_ops);
  // The first step owns (in + h) x 4h weights plus bias; later steps own none but share the colocation group.
  EXPECT_EQ(fwd.op(gates[0]).param_bytes, ((32 + 64) * 256 + 256) * 4);
  EXPECT_EQ(fwd.op(gates[1]).param_bytes, 0);
  EXPECT_EQ(fwd.op(gates[2]).colocation, "encoder/layer0");
  EXPECT_EQ(fwd.op(gates[0]).colocation, "encoder/layer0");
  EXPECT_DOUBLE_EQ(fwd.op(gates[1]).flops, 2.0 * 16 * 96 * 256 + 16 * 256);
  // Each embedding step reads one column of the ids.
  EXPECT_EQ(fwd.edge(fwd.in_edges(fwd.find("encoder/layer0/emb_t1"))[0]).bytes, 16 * 4);
  // Every user of the shared weights computes a weight gradient: its backward op costs 2x, not 1x.
  for (OpId gid : gates) {
    const OpId grad = g.find(fwd.op(gid).name + "/grad");
    ASSERT_GE(grad, 0);
    EXPECT_DOUBLE_EQ(g.op(grad).flops, 2.0 * fwd.op(gid).flops);
  }
  EXPECT_EQ(g.count_role(OpRole::kUpdate), 2);  // the embedding and the LSTM weights
}

TEST(LayerBuilder, TrainingOpCountIsExact) {
  LayerBuilder b("g");
  const OpId x = b.Input("x", {4, 3, 8, 8});
  const OpId labels = b.Input("labels", {4}, DType::kI32);
  OpId y = b.Relu(b.BatchNorm(b.Conv2d(x, ConvSpec::Same(8, 3))));
  y = b.Linear({b.GlobalAvgPool(y)}, 10, true, "fc");
  b.SoftmaxCrossEntropy(y, labels);
  const int64_t expected = b.training_op_count();
  const Graph g = std::move(b).BuildTraining().value();
  EXPECT_EQ(g.num_ops(), expected);
  EXPECT_EQ(g.count_role(OpRole::kForward), 8);
  EXPECT_EQ(g.count_role(OpRole::kUpdate), 3);  // conv, batch norm, fc
}

}  // namespace
}  // namespace devplace
