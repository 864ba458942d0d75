#include "datasets/zoo.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/testing/graph_checks.h"

namespace devplace {
namespace {

using testing::ExpectWellFormedTrainingGraph;
using testing::ForwardFlops;

int64_t ParamCount(const Graph& g) { return g.total_param_bytes() / 4; }

// Forward multiply-adds per example.
double ForwardGmacsPerExample(std::string_view model) {
  return ForwardFlops(BuildZooModel(model, 1).value()) / 2.0 / 1e9;
}

TEST(Zoo, Names) {
  EXPECT_EQ(ZooModelNames(), (std::vector<std::string>{"gnmt2", "gnmt4", "gnmt8", "rnnlm2", "rnnlm4", "transformer_xl2",
                                                      "transformer_xl4", "transformer_xl8", "wavenet2x18", "wavenet4x36",
                                                      "inception_v3", "resnet50", "resnet152", "vgg16", "amoebanet",
                                                      "u_transformer", "gpt1.3b", "gpt2.6b", "gpt_moe8"}));
}

TEST(Zoo, EveryModelBuildsAWellFormedTrainingGraph) {
  for (const std::string& name : ZooModelNames()) {
    SCOPED_TRACE(name);
    Expected<Graph> g = BuildZooModel(name, 2);
    ASSERT_TRUE(g.ok()) << g.error().message;
    EXPECT_EQ(g->name(), name + "-b2");
    ExpectWellFormedTrainingGraph(*g);
    EXPECT_GE(g->count_role(OpRole::kForward), 40);  // VGG-16, the smallest, has 40
    EXPECT_GT(ZooDefaultBatch(name), 0);
  }
}

TEST(Zoo, DefaultBatchAndErrors) {
  EXPECT_EQ(ZooDefaultBatch("gnmt8"), 128);
  EXPECT_EQ(ZooDefaultBatch("no_such_model"), 0);
  EXPECT_EQ(BuildZooModel("resnet50").value().name(), "resnet50-b" + std::to_string(ZooDefaultBatch("resnet50")));
  Expected<Graph> unknown = BuildZooModel("resnet51");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("'resnet51'"), std::string::npos);
  EXPECT_NE(unknown.error().message.find("resnet50"), std::string::npos);  // lists the known names
  Expected<Graph> negative = BuildZooModel("vgg16", -4);
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.error().message.find("batch"), std::string::npos);
}

TEST(Zoo, ForwardModelIsTheForwardPartOfTheTrainingGraph) {
  Graph forward = BuildZooForwardModel("inception_v3", 4).value();
  Graph training = BuildZooModel("inception_v3", 4).value();
  ASSERT_EQ(forward.num_ops(), training.count_role(OpRole::kForward));
  for (OpId i = 0; i < forward.num_ops(); ++i) {
    EXPECT_EQ(forward.op(i).name, training.op(i).name);
    EXPECT_EQ(forward.op(i).flops, training.op(i).flops);
  }
}

// Published forward multiply-adds per 224x224 (299x299 for Inception-v3) image: the "GFLOPS" column of
// torchvision's model table (https://pytorch.org/vision/stable/models.html, which counts multiply-adds):
// ResNet-50 4.09, ResNet-152 11.51, VGG-16 15.47, Inception-v3 5.71. Our counts add the element-wise work
// (batch norm, relu, pooling, adds, loss) of about 1%, so allow 3%.
TEST(Zoo, ForwardFlopsMatchPublishedFigures) {
  EXPECT_NEAR(ForwardGmacsPerExample("resnet50"), 4.09, 0.03 * 4.09);
  EXPECT_NEAR(ForwardGmacsPerExample("resnet152"), 11.51, 0.03 * 11.51);
  EXPECT_NEAR(ForwardGmacsPerExample("vgg16"), 15.47, 0.03 * 15.47);
  EXPECT_NEAR(ForwardGmacsPerExample("inception_v3"), 5.71, 0.03 * 5.71);
}

// Parameter counts of the same torchvision models (weights and biases, batch-norm scale and shift):
// exact, since the layer shapes are the same. Inception-v3's includes the auxiliary classifier.
TEST(Zoo, ParameterCountsMatchPublishedFigures) {
  EXPECT_EQ(ParamCount(BuildZooModel("resnet50", 1).value()), 25557032);
  EXPECT_EQ(ParamCount(BuildZooModel("resnet152", 1).value()), 60192808);
  EXPECT_EQ(ParamCount(BuildZooModel("vgg16", 1).value()), 138357544);
  EXPECT_EQ(ParamCount(BuildZooModel("inception_v3", 1).value()), 27161264);
  // AmoebaNet-A (N=6, F=190): 86.7M parameters (Real et al. 2019, Table 2).
  EXPECT_NEAR(static_cast<double>(ParamCount(BuildZooModel("amoebanet", 1).value())), 86.7e6, 0.03 * 86.7e6);
  // Transformer-XL enwik8 base: 12 layers, 41M parameters (Dai et al. 2019, Table 2); per-layer parameters
  // from the 4- and 8-layer models extrapolate to 12 layers.
  const int64_t p4 = ParamCount(BuildZooModel("transformer_xl4", 1).value());
  const int64_t p8 = ParamCount(BuildZooModel("transformer_xl8", 1).value());
  EXPECT_NEAR(static_cast<double>(p8 + (p8 - p4)), 41e6, 0.03 * 41e6);
}

TEST(Zoo, UnrolledGnmtCountsSharedWeightsOnce) {
  // GNMT-2: 32k x 1024 source and target embeddings; encoder: bidirectional layer (two LSTMs reading 1024),
  // layer 1 reading 2048; decoder layers reading [input 1024, attention context 1024]; each LSTM with a
  // recurrent input of 1024 and 4 x 1024 gates plus bias; attention keys and query (1024 x 1024), v (1024);
  // softmax 1024 x 32k plus bias.
  const int64_t h = 1024, v = 32000, gates = 4 * h;
  auto lstm = [&](int64_t in) { return (in + h) * gates + gates; };
  const int64_t expected = 2 * v * h + 2 * lstm(h) + lstm(2 * h) + 2 * lstm(2 * h) + 2 * h * h + h + h * v + v;
  Graph g = BuildZooModel("gnmt2", 8).value();
  EXPECT_EQ(ParamCount(g), expected);
  // One update per weight set: 2 embeddings, 5 LSTMs, keys, query, v, softmax.
  EXPECT_EQ(g.count_role(OpRole::kUpdate), 11);
}

TEST(Zoo, ConvNetFlopsScaleLinearlyWithBatch) {
  for (const char* name : {"resnet50", "vgg16", "inception_v3", "amoebanet"}) {
    SCOPED_TRACE(name);
    Graph small = BuildZooModel(name, 2).value();
    Graph big = BuildZooModel(name, 8).value();
    EXPECT_NEAR(ForwardFlops(big), 4.0 * ForwardFlops(small), 1e-9 * ForwardFlops(big));
    EXPECT_EQ(big.total_param_bytes(), small.total_param_bytes());
    EXPECT_EQ(big.num_ops(), small.num_ops());
  }
}

TEST(Zoo, DepthVariantsGrowWithDepth) {
  const char* const families[][3] = {{"gnmt2", "gnmt4", "gnmt8"},
                                     {"transformer_xl2", "transformer_xl4", "transformer_xl8"},
                                     {"rnnlm2", "rnnlm4", "rnnlm4"},
                                     {"wavenet2x18", "wavenet4x36", "wavenet4x36"}};
  for (const auto& names : families) {
    SCOPED_TRACE(names[0]);
    Graph a = BuildZooModel(names[0], 1).value();
    Graph b = BuildZooModel(names[1], 1).value();
    EXPECT_GT(b.num_ops(), a.num_ops());
    EXPECT_GT(ForwardFlops(b), ForwardFlops(a));
    EXPECT_GT(b.total_param_bytes(), a.total_param_bytes());
  }
}

TEST(Zoo, WaveNetHasItsStacksAndLayers) {
  for (auto [name, layers] : {std::pair{"wavenet2x18", 18}, std::pair{"wavenet4x36", 36}}) {
    Graph g = BuildZooModel(name, 1).value();
    int32_t filters = 0;
    for (const Op& op : g.ops())
      if (op.role == OpRole::kForward && op.name.ends_with("/filter")) ++filters;
    EXPECT_EQ(filters, layers) << name;
    // Each stack restarts the dilations at 1: 9 layers per stack with dilations 1..256.
    EXPECT_GE(g.find("stack1/layer8/filter"), 0) << name;
    EXPECT_LT(g.find("stack1/layer9/filter"), 0) << name;
  }
}

}  // namespace
}  // namespace devplace
