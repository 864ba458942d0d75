// The U-Transformer of the zoo: its U-shaped skip connections, parameter count and FLOPs.
#include <gtest/gtest.h>

#include <string>

#include "datasets/zoo.h"
#include "tests/testing/graph_checks.h"

namespace devplace {
namespace {

constexpr int64_t kWidth = 1024, kVocab = 32000, kSequence = 1024, kHalf = 12;

TEST(UTransformer, DecoderLayersReadTheirMirroredEncoderLayers) {
  const Graph g = BuildZooModel("u_transformer", 2).value();
  testing::ExpectWellFormedTrainingGraph(g);
  for (int j = 1; j < kHalf; ++j) {
    SCOPED_TRACE(j);
    const OpId merge = g.find("decoder/layer" + std::to_string(j) + "/skip_merge");
    const OpId mirror = g.find("encoder/layer" + std::to_string(kHalf - 1 - j) + "/ffn_residual");
    ASSERT_GE(merge, 0);
    ASSERT_GE(mirror, 0);
    bool linked = false;
    for (int32_t e : g.in_edges(merge)) linked = linked || g.edge(e).src == mirror;
    EXPECT_TRUE(linked);
    EXPECT_EQ(g.op(merge).shape, (std::vector<int64_t>{2, kSequence, kWidth}));
  }
  EXPECT_LT(g.find("decoder/layer0/skip_merge"), 0);  // the bottom of the U has no skip
}

TEST(UTransformer, ParametersAndFlopsFollowTheConfiguration) {
  const Graph one = BuildZooModel("u_transformer", 1).value();
  const Graph four = BuildZooModel("u_transformer", 4).value();
  const int64_t d = kWidth;
  const int64_t layer = 12 * d * d + 13 * d;  // qkv, output, two FFN matrices with biases, two layer norms
  const int64_t skips = (kHalf - 1) * (2 * d * d + d);
  const int64_t embeddings = kVocab * d + kSequence * d, head = 2 * d + d * kVocab + kVocab;
  EXPECT_EQ(one.total_param_bytes() / 4, 2 * kHalf * layer + skips + embeddings + head);
  EXPECT_EQ(ZooDefaultBatch("u_transformer"), 8);
  // Every op's work scales with the batch (no batch-independent ops).
  EXPECT_NEAR(testing::ForwardFlops(four) / testing::ForwardFlops(one), 4.0, 1e-9);
}

}  // namespace
}  // namespace devplace
