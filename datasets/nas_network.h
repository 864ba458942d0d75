// NASNet-style image networks built from two cell types, as in TensorFlow's AmoebaNet reference
// (tensorflow/tpu models/official/amoeba_net, network_utils.BaseCell): the ENAS micro search space of the
// cifar10 family and the zoo's AmoebaNet share this builder.
#pragma once

#include <cstdint>
#include <vector>

#include "datasets/layers.h"

namespace devplace {

// One operation applied to a hidden state inside a cell.
struct CellOp {
  enum class Kind : uint8_t {
    kNone,       // identity (a strided 1x1 conv when the shape must change)
    kSeparable,  // `layers` stacked relu / separable k x k conv / batch norm
    kAvgPool,    // k x k average pool (SAME)
    kMaxPool,    // k x k max pool (SAME)
    kConv1x1,    // relu / 1x1 conv / batch norm
    kConv3x3,    // bottlenecked 3x3 conv
    kConv1x7_7x1,  // bottlenecked 1x7 then 7x1 conv
  };
  Kind kind = Kind::kNone;
  int32_t kernel = 3;
  int32_t layers = 1;
};

// A cell: node i (0-based) adds op[2i] applied to state hidden[2i] and op[2i+1] applied to state hidden[2i+1];
// state 0 is the cell's input, state 1 the previous cell's output, state 2 + i the output of node i.
// The cell output concatenates every state whose `used` flag is 0.
struct CellSpec {
  std::vector<CellOp> ops;
  std::vector<int32_t> hidden;
  std::vector<char> used;  // one per state: 2 + number of nodes
};

// Marks as used both inputs and every node that feeds another node (ENAS: the output averages loose ends).
std::vector<char> LooseEndsUsage(const std::vector<int32_t>& hidden, int32_t num_nodes);

struct NasNetConfig {
  CellSpec normal;
  CellSpec reduction;
  int32_t num_cells = 18;            // normal cells in all stacks together
  int32_t num_reduction_layers = 2;  // reduction cells between the stacks
  int64_t filters = 256;             // F: filters of the first stack (doubled at each reduction)
  bool imagenet_stem = true;         // 3x3/2 conv + two reduction cells; else one 3x3 conv with stem_filters
  int32_t num_stem_cells = 2;
  int64_t stem_filters = 32;
  int64_t image_size = 299;
  int64_t num_classes = 1001;
  int64_t batch = 32;
  bool aux_head = true;
  double aux_scaling = 0.4;
};

// Adds the whole model (input, stem, cells, aux head, classifier and loss) to `b`.
void BuildNasNet(LayerBuilder& b, const NasNetConfig& config);

}  // namespace devplace
