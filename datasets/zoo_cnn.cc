// Convolutional zoo models: ResNet, VGG-16 and Inception-v3, layer for layer as torchvision defines them.
#include <string>
#include <vector>

#include "core/check.h"
#include "datasets/zoo_models.h"

namespace devplace {

namespace {

constexpr int64_t kImageNetClasses = 1000;

// conv (no bias) / batch norm / relu: torchvision's BasicConv2d and ResNet's conv-bn-relu.
OpId ConvBnRelu(LayerBuilder& b, OpId x, const ConvSpec& spec, const std::string& name) {
  return b.Relu(b.BatchNorm(b.Conv2d(x, spec, name), name + "_bn"), name + "_relu");
}

void Classifier(LayerBuilder& b, OpId features, OpId labels, int64_t classes) {
  b.SetScope("head");
  const OpId logits = b.Linear({features}, classes, true, "fc");
  b.SoftmaxCrossEntropy(logits, labels, "loss");
}

OpId Bottleneck(LayerBuilder& b, OpId x, int64_t planes, int64_t stride) {
  OpId y = ConvBnRelu(b, x, ConvSpec::Same(planes, 1), "conv1");
  y = ConvBnRelu(b, y, ConvSpec::Same(planes, 3, stride), "conv2");
  y = b.BatchNorm(b.Conv2d(y, ConvSpec::Same(4 * planes, 1), "conv3"), "conv3_bn");
  OpId identity = x;
  if (stride != 1 || b.dim(x, 1) != 4 * planes)
    identity = b.BatchNorm(b.Conv2d(x, ConvSpec::Same(4 * planes, 1, stride), "downsample"), "downsample_bn");
  return b.Relu(b.Add(y, identity, "add"), "relu");
}

}  // namespace

void BuildResNet(LayerBuilder& b, int32_t depth, int64_t batch) {
  std::vector<int32_t> blocks;
  if (depth == 50) blocks = {3, 4, 6, 3};
  if (depth == 101) blocks = {3, 4, 23, 3};
  if (depth == 152) blocks = {3, 8, 36, 3};
  DEVPLACE_CHECK(!blocks.empty(), "unsupported ResNet depth");
  b.SetScope("input");
  const OpId images = b.Input("images", {batch, 3, 224, 224});
  const OpId labels = b.Input("labels", {batch}, DType::kI32);
  b.SetScope("stem");
  OpId x = ConvBnRelu(b, images, ConvSpec::Same(64, 7, 2), "conv1");
  x = b.Pool2d(x, PoolKind::kMax, 3, 2, 1, "maxpool");
  for (int32_t stage = 0; stage < 4; ++stage) {
    for (int32_t i = 0; i < blocks[stage]; ++i) {
      b.SetScope("layer" + std::to_string(stage + 1) + "/block" + std::to_string(i));
      x = Bottleneck(b, x, int64_t{64} << stage, (i == 0 && stage > 0) ? 2 : 1);
    }
  }
  b.SetScope("head");
  Classifier(b, b.GlobalAvgPool(x, "avgpool"), labels, kImageNetClasses);
}

void BuildVgg16(LayerBuilder& b, int64_t batch) {
  const std::vector<std::vector<int64_t>> blocks = {{64, 64}, {128, 128}, {256, 256, 256}, {512, 512, 512},
                                                    {512, 512, 512}};
  b.SetScope("input");
  OpId x = b.Input("images", {batch, 3, 224, 224});
  const OpId labels = b.Input("labels", {batch}, DType::kI32);
  for (size_t i = 0; i < blocks.size(); ++i) {
    b.SetScope("block" + std::to_string(i + 1));
    for (size_t j = 0; j < blocks[i].size(); ++j)
      x = b.Relu(b.Conv2d(x, ConvSpec::Same(blocks[i][j], 3, 1, true), "conv" + std::to_string(j + 1)),
                 "relu" + std::to_string(j + 1));
    x = b.Pool2d(x, PoolKind::kMax, 2, 2, 0, "pool");
  }
  b.SetScope("classifier");
  x = b.Flatten(x, "flatten");
  x = b.Relu(b.Linear({x}, 4096, true, "fc6"), "relu6");
  x = b.Relu(b.Linear({x}, 4096, true, "fc7"), "relu7");
  Classifier(b, x, labels, kImageNetClasses);
}

namespace {

// The Inception-v3 modules (torchvision's InceptionA..E); each returns the concatenation of its branches.
OpId InceptionA(LayerBuilder& b, OpId x, int64_t pool_features) {
  const OpId b1 = ConvBnRelu(b, x, ConvSpec::Same(64, 1), "branch1x1");
  OpId b5 = ConvBnRelu(b, x, ConvSpec::Same(48, 1), "branch5x5_1");
  b5 = ConvBnRelu(b, b5, ConvSpec::Same(64, 5), "branch5x5_2");
  OpId b3 = ConvBnRelu(b, x, ConvSpec::Same(64, 1), "branch3x3dbl_1");
  b3 = ConvBnRelu(b, b3, ConvSpec::Same(96, 3), "branch3x3dbl_2");
  b3 = ConvBnRelu(b, b3, ConvSpec::Same(96, 3), "branch3x3dbl_3");
  OpId bp = b.Pool2d(x, PoolKind::kAvg, 3, 1, 1, "branch_pool_avg");
  bp = ConvBnRelu(b, bp, ConvSpec::Same(pool_features, 1), "branch_pool");
  return b.Concat({b1, b5, b3, bp}, 1, "concat");
}

OpId InceptionB(LayerBuilder& b, OpId x) {
  const OpId b3 = ConvBnRelu(b, x, ConvSpec::Rect(384, 3, 3, 2, 0, 0), "branch3x3");
  OpId bd = ConvBnRelu(b, x, ConvSpec::Same(64, 1), "branch3x3dbl_1");
  bd = ConvBnRelu(b, bd, ConvSpec::Same(96, 3), "branch3x3dbl_2");
  bd = ConvBnRelu(b, bd, ConvSpec::Rect(96, 3, 3, 2, 0, 0), "branch3x3dbl_3");
  const OpId bp = b.Pool2d(x, PoolKind::kMax, 3, 2, 0, "branch_pool");
  return b.Concat({b3, bd, bp}, 1, "concat");
}

OpId InceptionC(LayerBuilder& b, OpId x, int64_t c7) {
  const ConvSpec k17 = ConvSpec::Rect(c7, 1, 7, 1, 0, 3);
  const ConvSpec k71 = ConvSpec::Rect(c7, 7, 1, 1, 3, 0);
  const OpId b1 = ConvBnRelu(b, x, ConvSpec::Same(192, 1), "branch1x1");
  OpId b7 = ConvBnRelu(b, x, ConvSpec::Same(c7, 1), "branch7x7_1");
  b7 = ConvBnRelu(b, b7, k17, "branch7x7_2");
  b7 = ConvBnRelu(b, b7, ConvSpec::Rect(192, 7, 1, 1, 3, 0), "branch7x7_3");
  OpId bd = ConvBnRelu(b, x, ConvSpec::Same(c7, 1), "branch7x7dbl_1");
  bd = ConvBnRelu(b, bd, k71, "branch7x7dbl_2");
  bd = ConvBnRelu(b, bd, k17, "branch7x7dbl_3");
  bd = ConvBnRelu(b, bd, k71, "branch7x7dbl_4");
  bd = ConvBnRelu(b, bd, ConvSpec::Rect(192, 1, 7, 1, 0, 3), "branch7x7dbl_5");
  OpId bp = b.Pool2d(x, PoolKind::kAvg, 3, 1, 1, "branch_pool_avg");
  bp = ConvBnRelu(b, bp, ConvSpec::Same(192, 1), "branch_pool");
  return b.Concat({b1, b7, bd, bp}, 1, "concat");
}

OpId InceptionD(LayerBuilder& b, OpId x) {
  OpId b3 = ConvBnRelu(b, x, ConvSpec::Same(192, 1), "branch3x3_1");
  b3 = ConvBnRelu(b, b3, ConvSpec::Rect(320, 3, 3, 2, 0, 0), "branch3x3_2");
  OpId b7 = ConvBnRelu(b, x, ConvSpec::Same(192, 1), "branch7x7x3_1");
  b7 = ConvBnRelu(b, b7, ConvSpec::Rect(192, 1, 7, 1, 0, 3), "branch7x7x3_2");
  b7 = ConvBnRelu(b, b7, ConvSpec::Rect(192, 7, 1, 1, 3, 0), "branch7x7x3_3");
  b7 = ConvBnRelu(b, b7, ConvSpec::Rect(192, 3, 3, 2, 0, 0), "branch7x7x3_4");
  const OpId bp = b.Pool2d(x, PoolKind::kMax, 3, 2, 0, "branch_pool");
  return b.Concat({b3, b7, bp}, 1, "concat");
}

OpId InceptionE(LayerBuilder& b, OpId x) {
  const OpId b1 = ConvBnRelu(b, x, ConvSpec::Same(320, 1), "branch1x1");
  const OpId b3 = ConvBnRelu(b, x, ConvSpec::Same(384, 1), "branch3x3_1");
  const OpId b3a = ConvBnRelu(b, b3, ConvSpec::Rect(384, 1, 3, 1, 0, 1), "branch3x3_2a");
  const OpId b3b = ConvBnRelu(b, b3, ConvSpec::Rect(384, 3, 1, 1, 1, 0), "branch3x3_2b");
  OpId bd = ConvBnRelu(b, x, ConvSpec::Same(448, 1), "branch3x3dbl_1");
  bd = ConvBnRelu(b, bd, ConvSpec::Same(384, 3), "branch3x3dbl_2");
  const OpId bda = ConvBnRelu(b, bd, ConvSpec::Rect(384, 1, 3, 1, 0, 1), "branch3x3dbl_3a");
  const OpId bdb = ConvBnRelu(b, bd, ConvSpec::Rect(384, 3, 1, 1, 1, 0), "branch3x3dbl_3b");
  OpId bp = b.Pool2d(x, PoolKind::kAvg, 3, 1, 1, "branch_pool_avg");
  bp = ConvBnRelu(b, bp, ConvSpec::Same(192, 1), "branch_pool");
  return b.Concat({b1, b3a, b3b, bda, bdb, bp}, 1, "concat");
}

void InceptionAux(LayerBuilder& b, OpId x, OpId labels) {
  b.SetScope("AuxLogits");
  OpId y = b.Pool2d(x, PoolKind::kAvg, 5, 3, 0, "avg_pool");
  y = ConvBnRelu(b, y, ConvSpec::Same(128, 1), "conv0");
  y = ConvBnRelu(b, y, ConvSpec::Rect(768, 5, 5, 1, 0, 0), "conv1");
  y = b.Linear({b.GlobalAvgPool(y, "avgpool")}, kImageNetClasses, true, "fc");
  b.SoftmaxCrossEntropy(y, labels, "aux_loss");
}

}  // namespace

void BuildInceptionV3(LayerBuilder& b, int64_t batch) {
  b.SetScope("input");
  const OpId images = b.Input("images", {batch, 3, 299, 299});
  const OpId labels = b.Input("labels", {batch}, DType::kI32);
  auto stem = [&](OpId x, const ConvSpec& spec, const std::string& name) {
    b.SetScope(name);
    return ConvBnRelu(b, x, spec, "conv");
  };
  OpId x = stem(images, ConvSpec::Rect(32, 3, 3, 2, 0, 0), "Conv2d_1a_3x3");
  x = stem(x, ConvSpec::Rect(32, 3, 3, 1, 0, 0), "Conv2d_2a_3x3");
  x = stem(x, ConvSpec::Same(64, 3), "Conv2d_2b_3x3");
  x = b.Pool2d(x, PoolKind::kMax, 3, 2, 0, "maxpool1");
  x = stem(x, ConvSpec::Same(80, 1), "Conv2d_3b_1x1");
  x = stem(x, ConvSpec::Rect(192, 3, 3, 1, 0, 0), "Conv2d_4a_3x3");
  x = b.Pool2d(x, PoolKind::kMax, 3, 2, 0, "maxpool2");
  const std::pair<const char*, int64_t> a_modules[] = {{"Mixed_5b", 32}, {"Mixed_5c", 64}, {"Mixed_5d", 64}};
  for (const auto& [name, pool] : a_modules) {
    b.SetScope(name);
    x = InceptionA(b, x, pool);
  }
  b.SetScope("Mixed_6a");
  x = InceptionB(b, x);
  const std::pair<const char*, int64_t> c_modules[] = {
      {"Mixed_6b", 128}, {"Mixed_6c", 160}, {"Mixed_6d", 160}, {"Mixed_6e", 192}};
  for (const auto& [name, c7] : c_modules) {
    b.SetScope(name);
    x = InceptionC(b, x, c7);
  }
  InceptionAux(b, x, labels);
  b.SetScope("Mixed_7a");
  x = InceptionD(b, x);
  b.SetScope("Mixed_7b");
  x = InceptionE(b, x);
  b.SetScope("Mixed_7c");
  x = InceptionE(b, x);
  b.SetScope("head");
  Classifier(b, b.GlobalAvgPool(x, "avgpool"), labels, kImageNetClasses);
}

}  // namespace devplace
