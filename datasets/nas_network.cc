#include "datasets/nas_network.h"

#include <string>

#include "core/check.h"

namespace devplace {

namespace {

// relu / conv / batch norm, the basic unit of these networks.
OpId ReluConvBn(LayerBuilder& b, OpId x, const ConvSpec& spec, const std::string& name) {
  OpId y = b.Relu(x, name + "_relu");
  y = b.Conv2d(y, spec, name);
  return b.BatchNorm(y, name + "_bn");
}

// Halves H and W without losing information (two offset strided 1x1 paths), or a 1x1 conv at stride 1.
OpId FactorizedReduction(LayerBuilder& b, OpId x, int64_t filters, int64_t stride) {
  if (stride == 1) return b.BatchNorm(b.Conv2d(x, ConvSpec::Same(filters, 1), "path_conv"), "path_bn");
  // (The reference asserts an even count; an odd one splits as F/2 + (F - F/2) so that F = 190 works.)
  OpId p1 = b.Pool2d(x, PoolKind::kAvg, 1, stride, 0, "path1_pool");
  p1 = b.Conv2d(p1, ConvSpec::Same(filters / 2, 1), "path1_conv");
  // The second path reads the input shifted by one pixel (pad then crop): same cost, offset grid.
  OpId p2 = b.Pool2d(x, PoolKind::kAvg, 1, stride, 0, "path2_pool");
  p2 = b.Conv2d(p2, ConvSpec::Same(filters - filters / 2, 1), "path2_conv");
  return b.BatchNorm(b.Concat({p1, p2}, 1, "path_concat"), "final_path_bn");
}

// A depthwise k x k conv (stride s) followed by a pointwise 1x1 conv to `filters`.
OpId SeparableConv(LayerBuilder& b, OpId x, int64_t filters, int64_t k, int64_t stride, const std::string& name) {
  ConvSpec dw = ConvSpec::Same(b.dim(x, 1), k, stride);
  dw.groups = b.dim(x, 1);
  OpId y = b.Conv2d(x, dw, name + "_depthwise");
  return b.Conv2d(y, ConvSpec::Same(filters, 1), name + "_pointwise");
}

class CellBuilder {
 public:
  CellBuilder(LayerBuilder& b, const CellSpec& spec, int64_t filters) : b_(b), spec_(spec), filters_(filters) {}

  // Runs the cell on `net` (the input) and `prev` (the cell before it, or -1) and returns its output.
  OpId Run(const std::string& scope, OpId net, OpId prev, int64_t stride) {
    b_.SetScope(scope);
    std::vector<OpId> states = Base(net, prev);
    const size_t nodes = spec_.ops.size() / 2;
    DEVPLACE_CHECK(spec_.hidden.size() == 2 * nodes && spec_.used.size() == nodes + 2, "malformed cell spec");
    for (size_t i = 0; i < nodes; ++i) {
      b_.SetScope(scope + "/comb_iter_" + std::to_string(i));
      OpId branches[2];
      for (int side = 0; side < 2; ++side) {
        const int32_t idx = spec_.hidden[2 * i + side];
        DEVPLACE_CHECK(idx >= 0 && idx < static_cast<int32_t>(states.size()), "cell refers to a later state");
        branches[side] = Apply(states[idx], spec_.ops[2 * i + side], idx < 2 ? stride : 1, side == 0 ? "left" : "right");
      }
      states.push_back(b_.Add(branches[0], branches[1], "combine"));
    }
    b_.SetScope(scope + "/cell_output");
    return CombineUnused(states);
  }

 private:
  std::vector<OpId> Base(OpId net, OpId prev) {
    if (prev < 0) {
      prev = net;
    } else if (b_.dim(prev, 2) != b_.dim(net, 2)) {
      prev = FactorizedReduction(b_, b_.Relu(prev, "prev_relu"), filters_, 2);
    } else if (b_.dim(prev, 1) != filters_) {
      prev = ReluConvBn(b_, prev, ConvSpec::Same(filters_, 1), "prev_1x1");
    }
    OpId x = ReluConvBn(b_, net, ConvSpec::Same(filters_, 1), "1x1");
    return {x, prev};
  }

  OpId Apply(OpId x, const CellOp& op, int64_t stride, const std::string& name) {
    const int64_t in_filters = b_.dim(x, 1);
    switch (op.kind) {
      case CellOp::Kind::kSeparable:
        for (int32_t l = 0; l < op.layers; ++l) {
          const std::string layer = name + "_separable_" + std::to_string(op.kernel) + "x" +
                                    std::to_string(op.kernel) + "_" + std::to_string(l + 1);
          x = SeparableConv(b_, b_.Relu(x, layer + "_relu"), filters_, op.kernel, l == 0 ? stride : 1, layer);
          x = b_.BatchNorm(x, layer + "_bn");
        }
        return x;
      case CellOp::Kind::kAvgPool:
      case CellOp::Kind::kMaxPool:
        x = b_.Pool2d(x, op.kind == CellOp::Kind::kAvgPool ? PoolKind::kAvg : PoolKind::kMax, op.kernel, stride,
                      (op.kernel - 1) / 2, name + "_pool");
        if (in_filters != filters_) x = b_.BatchNorm(b_.Conv2d(x, ConvSpec::Same(filters_, 1), name + "_1x1"), name + "_bn");
        return x;
      case CellOp::Kind::kNone:
        if (stride == 1 && in_filters == filters_) return x;
        return ReluConvBn(b_, x, ConvSpec::Same(filters_, 1, stride), name + "_1x1");
      case CellOp::Kind::kConv1x1:
        return ReluConvBn(b_, x, ConvSpec::Same(filters_, 1, stride), name + "_1x1");
      case CellOp::Kind::kConv3x3:
      case CellOp::Kind::kConv1x7_7x1: {
        const int64_t reduced = filters_ / 4;
        if (reduced < 1) return ReluConvBn(b_, x, ConvSpec::Same(filters_, 3, stride), name + "_conv");
        x = ReluConvBn(b_, x, ConvSpec::Same(reduced, 1), name + "_pre_1x1");
        x = b_.Relu(x, name + "_relu");
        if (op.kind == CellOp::Kind::kConv3x3) {
          x = b_.Conv2d(x, ConvSpec::Same(reduced, 3, stride), name + "_3x3");
        } else {
          ConvSpec c17 = ConvSpec::Rect(reduced, 1, 7, 1, 0, 3);
          c17.stride_w = stride;
          x = b_.Conv2d(x, c17, name + "_1x7");
          x = b_.Relu(b_.BatchNorm(x, name + "_bn_1x7_7x1"), name + "_relu_1x7");
          ConvSpec c71 = ConvSpec::Rect(reduced, 7, 1, 1, 3, 0);
          c71.stride_h = stride;
          x = b_.Conv2d(x, c71, name + "_7x1");
        }
        x = b_.BatchNorm(x, name + "_bn");
        return ReluConvBn(b_, x, ConvSpec::Same(filters_, 1), name + "_post_1x1");
      }
    }
    return x;
  }

  OpId CombineUnused(std::vector<OpId>& states) {
    const int64_t final_height = b_.dim(states.back(), 2);
    const int64_t final_filters = b_.dim(states.back(), 1);
    std::vector<OpId> outputs;
    for (size_t i = 0; i < states.size(); ++i) {
      if (spec_.used[i]) continue;
      const bool other_height = b_.dim(states[i], 2) != final_height;
      if (other_height || b_.dim(states[i], 1) != final_filters)
        states[i] = FactorizedReduction(b_, states[i], final_filters, other_height ? 2 : 1);
      outputs.push_back(states[i]);
    }
    DEVPLACE_CHECK(!outputs.empty(), "a cell without outputs");
    return b_.Concat(outputs, 1, "concat");
  }

  LayerBuilder& b_;
  const CellSpec& spec_;
  int64_t filters_;
};

void AuxHead(LayerBuilder& b, OpId net, OpId labels, const NasNetConfig& c, const std::string& scope) {
  b.SetScope(scope);
  OpId x = b.Relu(net, "relu");
  x = b.Pool2d(x, PoolKind::kAvg, 5, 3, 0, "avg_pool");
  x = b.BatchNorm(b.Conv2d(x, ConvSpec::Same(static_cast<int64_t>(128 * c.aux_scaling), 1), "proj"), "aux_bn0");
  x = b.Relu(x, "aux_relu0");
  ConvSpec full = ConvSpec::Rect(static_cast<int64_t>(768 * c.aux_scaling), b.dim(x, 2), b.dim(x, 3), 1, 0, 0);
  x = b.BatchNorm(b.Conv2d(x, full, "conv"), "aux_bn1");
  x = b.Flatten(b.Relu(x, "aux_relu1"), "flatten");
  x = b.Linear({x}, c.num_classes, true, "fc");
  b.SoftmaxCrossEntropy(x, labels, "aux_loss");
}

}  // namespace

std::vector<char> LooseEndsUsage(const std::vector<int32_t>& hidden, int32_t num_nodes) {
  std::vector<char> used(num_nodes + 2, 0);
  used[0] = used[1] = 1;
  for (int32_t idx : hidden) used[idx] = 1;
  return used;
}

void BuildNasNet(LayerBuilder& b, const NasNetConfig& c) {
  b.SetScope("input");
  const OpId images = b.Input("images", {c.batch, 3, c.image_size, c.image_size});
  const OpId labels = b.Input("labels", {c.batch}, DType::kI32);

  std::vector<OpId> outputs;  // cell outputs, -1 for "none"
  OpId net;
  b.SetScope("stem");
  if (c.imagenet_stem) {
    net = b.BatchNorm(b.Conv2d(images, ConvSpec::Rect(c.stem_filters, 3, 3, 2, 0, 0), "conv0"), "conv0_bn");
    outputs = {-1, net};
    double scaling = 1.0 / static_cast<double>(1 << c.num_stem_cells);
    for (int32_t i = 0; i < c.num_stem_cells; ++i) {
      CellBuilder cell(b, c.reduction, static_cast<int64_t>(static_cast<double>(c.filters) * scaling));
      net = cell.Run("cell_stem_" + std::to_string(i), net, outputs[outputs.size() - 2], 2);
      outputs.push_back(net);
      scaling *= 2;
    }
  } else {
    net = b.BatchNorm(b.Conv2d(images, ConvSpec::Same(c.stem_filters, 3), "conv0"), "conv0_bn");
    outputs = {-1, net};
  }

  std::vector<int32_t> reduction_at;
  for (int32_t p = 1; p <= c.num_reduction_layers; ++p)
    reduction_at.push_back(static_cast<int32_t>(static_cast<double>(p) / (c.num_reduction_layers + 1) * c.num_cells));
  const int32_t aux_at = reduction_at.size() >= 2 ? reduction_at[1] - 1 : -1;

  int64_t filters = c.filters;
  for (int32_t cell_num = 0; cell_num < c.num_cells; ++cell_num) {
    for (size_t r = 0; r < reduction_at.size(); ++r) {
      if (reduction_at[r] != cell_num) continue;
      filters *= 2;
      CellBuilder cell(b, c.reduction, filters);
      net = cell.Run("reduction_cell_" + std::to_string(r), net, outputs[outputs.size() - 2], 2);
      outputs.push_back(net);
    }
    CellBuilder cell(b, c.normal, filters);
    net = cell.Run("cell_" + std::to_string(cell_num), net, outputs[outputs.size() - 2], 1);
    if (c.aux_head && cell_num == aux_at) AuxHead(b, net, labels, c, "aux_" + std::to_string(cell_num));
    outputs.push_back(net);
  }

  b.SetScope("final_layer");
  OpId x = b.GlobalAvgPool(b.Relu(net, "relu"), "global_pool");
  x = b.Linear({x}, c.num_classes, true, "fc");
  b.SoftmaxCrossEntropy(x, labels, "loss");
}

}  // namespace devplace
