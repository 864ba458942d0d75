// AmoebaNet-A (Real et al., "Regularized Evolution for Image Classifier Architecture Search", 2019) with the
// cells of TensorFlow's reference implementation (tensorflow/tpu models/official/amoeba_net, model_specs.py,
// 'amoeba_net_a') on its ImageNet setup: 299x299 images, 1001 classes, ImageNet stem with two reduction cells,
// N = 6 normal cells per stack (18 in all), two reduction cells between the stacks, auxiliary head.
// F = 190 filters, the paper's AmoebaNet-A (N=6, F=190).
#include "datasets/nas_network.h"
#include "datasets/zoo_models.h"

namespace devplace {

namespace {

CellOp Sep(int32_t k) { return {CellOp::Kind::kSeparable, k, 2}; }
CellOp Avg() { return {CellOp::Kind::kAvgPool, 3, 1}; }
CellOp Max() { return {CellOp::Kind::kMaxPool, 3, 1}; }
CellOp None() { return {CellOp::Kind::kNone, 1, 1}; }
CellOp Conv1x7() { return {CellOp::Kind::kConv1x7_7x1, 7, 1}; }

}  // namespace

void BuildAmoebaNet(LayerBuilder& b, int64_t batch) {
  NasNetConfig c;
  c.normal.ops = {Avg(), Max(), Sep(3), None(), None(), Avg(), Sep(3), Sep(5), Avg(), Sep(3)};
  c.normal.hidden = {0, 0, 1, 1, 0, 1, 0, 2, 5, 0};
  c.normal.used = {1, 0, 1, 0, 0, 1, 0};
  c.reduction.ops = {Sep(3), Avg(), Max(), Sep(7), Max(), Max(), Sep(3), Conv1x7(), Avg(), Sep(7)};
  c.reduction.hidden = {1, 0, 0, 2, 1, 0, 4, 0, 1, 0};
  c.reduction.used = {1, 1, 0, 0, 0, 0, 0};
  c.num_cells = 18;
  c.num_reduction_layers = 2;
  c.filters = 190;
  c.imagenet_stem = true;
  c.num_stem_cells = 2;
  c.stem_filters = 32;
  c.image_size = 299;
  c.num_classes = 1001;
  c.batch = batch;
  c.aux_head = true;
  c.aux_scaling = 0.4;
  BuildNasNet(b, c);
}

}  // namespace devplace
