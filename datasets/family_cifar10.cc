// cifar10: ENAS micro search space (Pham et al. 2018, after NASNet): a normal and a reduction cell, each a
// random DAG of B nodes; node i adds two ops (chosen from separable 3x3/5x5 convs, 3x3 avg/max pooling and
// identity) applied to two earlier states; the cell outputs the concatenation of its loose ends. Cells are
// stacked N per stack in three stacks separated by two reduction cells, on 32x32 images with 10 classes.
#include "datasets/family_generators.h"
#include "datasets/nas_network.h"

namespace devplace {

namespace {

CellSpec RandomCell(Rng& rng, int32_t nodes) {
  static const std::vector<CellOp> kMenu = {
      {CellOp::Kind::kNone, 1, 1},    {CellOp::Kind::kSeparable, 3, 2}, {CellOp::Kind::kSeparable, 5, 2},
      {CellOp::Kind::kAvgPool, 3, 1}, {CellOp::Kind::kMaxPool, 3, 1},
  };
  CellSpec cell;
  for (int32_t i = 0; i < nodes; ++i) {
    for (int side = 0; side < 2; ++side) {
      cell.hidden.push_back(static_cast<int32_t>(rng.Int(0, i + 1)));
      cell.ops.push_back(rng.Pick(kMenu));
    }
  }
  cell.used = LooseEndsUsage(cell.hidden, nodes);
  return cell;
}

}  // namespace

FamilyGenerator MakeCifar10Generator(Rng& rng) {
  NasNetConfig c;
  c.batch = rng.Pick(std::vector<int64_t>{32, 64, 128});
  c.filters = rng.Pick(std::vector<int64_t>{16, 20, 24, 32, 36});
  const auto nodes = static_cast<int32_t>(rng.Int(3, 5));
  c.normal = RandomCell(rng, nodes);
  c.reduction = RandomCell(rng, nodes);
  c.aux_head = rng.Bernoulli(0.5);
  c.aux_scaling = 1.0;
  c.imagenet_stem = false;
  c.stem_filters = 3 * c.filters;
  c.image_size = 32;
  c.num_classes = 10;
  c.num_reduction_layers = 2;
  FamilyGenerator gen;
  // Scaled by the number of normal cells in all stacks (N per stack when it is 3N; the reduction cells sit
  // after the first and second thirds, as in the reference's calc_reduction_layers).
  gen.natural_scale = 3 * rng.Int(1, 4);
  gen.min_scale = 3;
  gen.build = [c](LayerBuilder& b, int64_t normal_cells) {
    NasNetConfig scaled = c;
    scaled.num_cells = static_cast<int32_t>(normal_cells);
    BuildNasNet(b, scaled);
  };
  return gen;
}

}  // namespace devplace
