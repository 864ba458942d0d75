// The ONNX operator table: which devplace op type each ONNX operator becomes, its FLOPs (2 per multiply-add,
// element-wise costs from datasets/layers.h) and its partitionable dimensions. docs/importers.md lists it.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "datasets/import/onnx_internal.h"
#include "datasets/layers.h"

namespace devplace::onnx_import {

namespace {

using Dims = std::vector<int64_t>;

double Elements(const Dims& d) {
  double n = 1;
  for (int64_t x : d) n *= static_cast<double>(x);
  return n;
}

PartitionDim Dim(DimKind kind, int32_t out_axis, int32_t in_axis, int64_t size) {
  return PartitionDim{kind, out_axis, in_axis, size};
}

// Every output axis splits the same input axis (axis 0 is the sample dim), except those in `skip`.
std::vector<PartitionDim> SameAxes(const Dims& shape, const std::set<int64_t>& skip = {}) {
  std::vector<PartitionDim> dims;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i)
    if (!skip.count(i) && shape[i] > 0)
      dims.push_back(Dim(i == 0 ? DimKind::kSample : DimKind::kAttribute, i, i, shape[i]));
  return dims;
}

// Axis 0 splits axis 0 of the inputs, when both have it with the same extent.
std::vector<PartitionDim> SampleIfKept(const Dims& out, const Dims* in) {
  if (out.empty() || !in || in->empty() || (*in)[0] != out[0] || out[0] <= 0) return {};
  return {Dim(DimKind::kSample, 0, 0, out[0])};
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// FLOPs per output element of element-wise operators.
const std::map<std::string, double>& ElementwiseTable() {
  static const std::map<std::string, double> table = {
      {"Relu", kReluFlops}, {"LeakyRelu", 2}, {"PRelu", 2}, {"ThresholdedRelu", 2}, {"Elu", 4}, {"Selu", 4},
      {"Celu", 4}, {"Sigmoid", kSigmoidFlops}, {"HardSigmoid", 3}, {"HardSwish", 4}, {"Tanh", kTanhFlops},
      {"Softplus", 4}, {"Softsign", 3}, {"Gelu", kGeluFlops}, {"Mish", 8}, {"Erf", 4}, {"Exp", 4}, {"Log", 4},
      {"Sqrt", 1}, {"Reciprocal", 1}, {"Neg", 1}, {"Abs", 1}, {"Sign", 1}, {"Floor", 1}, {"Ceil", 1},
      {"Round", 1}, {"Sin", 4}, {"Cos", 4}, {"Tan", 4}, {"Clip", 2}, {"Not", 1}, {"IsNaN", 1}, {"IsInf", 1},
      {"Cast", 1}, {"CastLike", 1}, {"Add", kAddFlops}, {"Sub", kAddFlops}, {"Mul", kMulFlops}, {"Div", 1},
      {"Pow", 4}, {"Mod", 1}, {"BitShift", 1}, {"Equal", 1}, {"Less", 1}, {"Greater", 1}, {"LessOrEqual", 1},
      {"GreaterOrEqual", 1}, {"And", 1}, {"Or", 1}, {"Xor", 1}, {"Where", 1}, {"Max", 1}, {"Min", 1},
      {"Sum", 1}, {"Mean", 1}};
  return table;
}

// Pure data movement (no FLOPs): devplace type for each.
const std::map<std::string, std::string>& MovementTable() {
  static const std::map<std::string, std::string> table = {
      {"Reshape", "reshape"}, {"Flatten", "reshape"}, {"Squeeze", "reshape"}, {"Unsqueeze", "reshape"},
      {"Concat", "concat"}, {"Split", "split"}, {"Transpose", "transpose"}, {"Slice", "slice"},
      {"Expand", "expand"}, {"Tile", "tile"}, {"Pad", "pad"}, {"GatherElements", "gather"}, {"GatherND", "gather"},
      {"ScatterElements", "scatter"}, {"ScatterND", "scatter"}, {"DepthToSpace", "reshape"},
      {"SpaceToDepth", "reshape"}, {"Trilu", "slice"}};
  return table;
}

// Reductions: FLOPs per input element.
const std::map<std::string, double>& ReductionTable() {
  static const std::map<std::string, double> table = {
      {"ReduceMean", 1}, {"ReduceSum", 1}, {"ReduceMax", 1}, {"ReduceMin", 1}, {"ReduceProd", 1}, {"ReduceL1", 2},
      {"ReduceL2", 2}, {"ReduceSumSquare", 2}, {"ReduceLogSum", 2}, {"ReduceLogSumExp", 5}, {"ArgMax", 1},
      {"ArgMin", 1}, {"CumSum", 1}, {"TopK", 1}};
  return table;
}

// Einsum FLOPs: 2 x the product of all index extents when an index is contracted, else the product.
bool EinsumFlops(const std::string& equation, const std::vector<const TensorInfo*>& inputs, double* flops) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  if (eq.find('.') != std::string::npos) return false;  // ellipsis: not handled
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::map<char, int64_t> extent;
  std::map<char, int> uses;
  size_t term = 0, pos = 0;
  while (pos <= lhs.size()) {
    const size_t comma = std::min(lhs.find(',', pos), lhs.size());
    const std::string letters = lhs.substr(pos, comma - pos);
    if (term >= inputs.size() || !inputs[term] || letters.size() != inputs[term]->dims.size()) return false;
    for (size_t i = 0; i < letters.size(); ++i) {
      const char c = letters[i];
      if (!std::isalpha(static_cast<unsigned char>(c))) return false;
      auto [it, fresh] = extent.emplace(c, inputs[term]->dims[i]);
      if (!fresh && it->second != inputs[term]->dims[i] && it->second != 1 && inputs[term]->dims[i] != 1) return false;
      it->second = std::max(it->second, inputs[term]->dims[i]);
      ++uses[c];
    }
    ++term;
    pos = comma + 1;
  }
  if (term != inputs.size()) return false;
  std::set<char> out;
  if (arrow != std::string::npos) {
    for (char c : eq.substr(arrow + 2)) {
      if (!extent.count(c)) return false;
      out.insert(c);
    }
  } else {
    for (auto& [c, n] : uses)
      if (n == 1) out.insert(c);
  }
  double product = 1;
  bool contracted = false;
  for (auto& [c, e] : extent) {
    product *= static_cast<double>(e);
    if (!out.count(c)) contracted = true;
  }
  *flops = contracted ? 2.0 * product : product;
  return true;
}

Error NodeError(const std::string& source, const onnx::NodeProto& node, const std::string& what) {
  return Error{source + ": " + Describe(node) + ": " + what};
}

}  // namespace

bool IsWeightSlot(const std::string& op, int i) {
  if (op == "Conv" || op == "ConvTranspose" || op == "Gemm") return i == 1 || i == 2;
  if (op == "MatMul" || op == "PRelu") return i == 1;
  if (op == "BatchNormalization") return i >= 1 && i <= 4;
  if (op == "InstanceNormalization" || op == "LayerNormalization") return i == 1 || i == 2;
  if (op == "LSTM" || op == "GRU" || op == "RNN") return i >= 1 && i <= 3;
  if (op == "Gather") return i == 0;
  return false;
}

bool IsBufferSlot(const std::string& op, int i) { return op == "BatchNormalization" && (i == 3 || i == 4); }

Expected<OpRule> MapNode(const NodeView& v, const std::string& source) {
  const onnx::NodeProto& node = *v.node;
  const std::string& op = node.op_type();
  const TensorInfo* primary = nullptr;
  for (const TensorInfo* t : v.outputs)
    if (t && !primary) primary = t;
  if (!primary) return NodeError(source, node, "has no output");
  auto in = [&](size_t i) -> const Dims* { return i < v.inputs.size() && v.inputs[i] ? &v.inputs[i]->dims : nullptr; };
  const Dims& out = primary->dims;
  const double n_out = Elements(out);
  const auto rank = static_cast<int64_t>(out.size());
  OpRule r;
  r.shape = out;
  const bool custom_domain = !node.domain().empty() && node.domain() != "ai.onnx";

  if (custom_domain) {
    r.known = false;
    r.type = Lower(node.domain() + ":" + op);
  } else if (auto it = ElementwiseTable().find(op); it != ElementwiseTable().end()) {
    const auto present = static_cast<double>(std::count_if(v.inputs.begin(), v.inputs.end(), [](auto* t) { return t; }));
    const bool variadic = op == "Sum" || op == "Mean" || op == "Max" || op == "Min";
    r.type = Lower(op);
    r.flops = it->second * n_out * (variadic ? std::max(1.0, present - 1.0) : 1.0);
    r.dims = SameAxes(out);
    for (size_t i = 0; i < v.inputs.size(); ++i)  // a data input broadcast from a lower rank: not partitionable
      if (v.inputs[i] && i < v.input_is_data.size() && v.input_is_data[i] && v.inputs[i]->dims.size() != out.size())
        r.dims.clear();
  } else if (auto mv = MovementTable().find(op); mv != MovementTable().end()) {
    r.type = mv->second;
    const Dims* x = in(0);
    if (op == "Split" && x) r.shape = *x;
    if (op == "Concat" || op == "Split") {
      int64_t axis = AttrInt(node, "axis", 0);
      if (axis < 0) axis += rank;
      r.dims = SameAxes(r.shape, {axis});
    } else if (op == "Transpose" && x && x->size() == out.size()) {
      std::vector<int64_t> perm = AttrInts(node, "perm");
      if (perm.empty())
        for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
      if (static_cast<int64_t>(perm.size()) == rank) {
        for (int i = 0; i < rank; ++i)
          if (perm[i] >= 0 && perm[i] < rank && out[i] > 0)
            r.dims.push_back(Dim(perm[i] == 0 ? DimKind::kSample : DimKind::kAttribute, i,
                                 static_cast<int32_t>(perm[i]), out[i]));
      }
    } else if (op == "Slice" && x && x->size() == out.size()) {
      std::set<int64_t> changed;
      for (int64_t d = 0; d < rank; ++d)
        if ((*x)[d] != out[d]) changed.insert(d);
      r.dims = SameAxes(out, changed);
    } else if (op != "GatherElements" && op != "GatherND" && op != "ScatterElements" && op != "ScatterND") {
      r.dims = SampleIfKept(r.shape, x);
    }
  } else if (auto red = ReductionTable().find(op); red != ReductionTable().end()) {
    r.type = op == "TopK" || op == "CumSum" || op == "ArgMax" || op == "ArgMin" ? Lower(op) : "reduce_" + Lower(op.substr(6));
    const Dims* x = in(0);
    r.flops = red->second * (x ? Elements(*x) : n_out);
    r.dims = SampleIfKept(out, x);
  } else if (op == "MatMul") {
    const Dims* a = in(0);
    if (!a || a->empty()) return NodeError(source, node, "input A has no dimensions");
    const double k = static_cast<double>(a->back());
    r.flops = 2.0 * n_out * k;
    const bool weight = v.input_is_data.size() > 1 && !(v.input_is_data[0] && v.input_is_data[1]);
    if (weight) {
      r.type = "matmul";
      if (a->size() == out.size() && rank >= 1) {
        std::set<int64_t> last = {rank - 1};
        r.dims = SameAxes(out, last);
        if (out.back() > 0) r.dims.push_back(Dim(DimKind::kParameter, static_cast<int32_t>(rank - 1), -1, out.back()));
        if (a->back() > 0) r.dims.push_back(Dim(DimKind::kReduction, -1, static_cast<int32_t>(rank - 1), a->back()));
      }
    } else {
      r.type = v.feeds_softmax ? "attention_scores" : v.input0_from_softmax ? "attention_context" : "batched_matmul";
      if (a->size() == out.size()) r.dims = SampleIfKept(out, a);
    }
  } else if (op == "Gemm") {
    const Dims* a = in(0);
    if (!a || a->size() != 2 || out.size() != 2) return NodeError(source, node, "expects 2-D A and output");
    const bool trans_a = AttrInt(node, "transA", 0) != 0;
    const int64_t k = trans_a ? (*a)[0] : (*a)[1];
    const bool bias = in(2) != nullptr;
    r.type = "matmul";
    r.flops = 2.0 * n_out * static_cast<double>(k) + (bias ? n_out : 0.0);
    if (out[0] > 0) r.dims.push_back(Dim(DimKind::kSample, 0, trans_a ? -1 : 0, out[0]));
    if (out[1] > 0) r.dims.push_back(Dim(DimKind::kParameter, 1, -1, out[1]));
    if (k > 0) r.dims.push_back(Dim(DimKind::kReduction, -1, trans_a ? 0 : 1, k));
  } else if (op == "Conv" || op == "ConvTranspose") {
    const Dims* x = in(0);
    const Dims* w = in(1);
    if (!x || !w || w->size() != out.size() || x->size() != out.size() || rank < 3)
      return NodeError(source, node, "weight and input ranks must match the output rank (>= 3)");
    const int64_t g = std::max<int64_t>(1, AttrInt(node, "group", 1));
    const double kernel = Elements(Dims(w->begin() + 2, w->end()));
    const bool bias = in(2) != nullptr;
    const std::string nd = std::to_string(rank - 2) + "d";
    if (op == "Conv") {
      const int64_t c = (*x)[1];
      r.flops = 2.0 * n_out * static_cast<double>((*w)[1]) * kernel + (bias ? n_out : 0.0);
      r.type = g == 1 ? "conv" + nd : (g == c && out[1] == c ? "depthwise_conv" + nd : "group_conv" + nd);
      r.dims = {Dim(DimKind::kSample, 0, 0, out[0]), Dim(DimKind::kParameter, 1, g > 1 ? 1 : -1, out[1])};
      for (int i = 2; i < rank; ++i) r.dims.push_back(Dim(DimKind::kAttribute, i, i, out[i]));
      if (g == 1 && c > 1) r.dims.push_back(Dim(DimKind::kReduction, -1, 1, c));
      std::erase_if(r.dims, [](const PartitionDim& d) { return d.size <= 0; });
    } else {
      r.flops = 2.0 * Elements(*x) * static_cast<double>((*w)[1]) * kernel + (bias ? n_out : 0.0);
      r.type = "conv_transpose" + nd;
      r.dims = SampleIfKept(out, x);
    }
  } else if (op == "MaxPool" || op == "AveragePool" || op == "LpPool") {
    const std::vector<int64_t> kernel = AttrInts(node, "kernel_shape");
    r.type = (op == "MaxPool" ? "max_pool" : op == "AveragePool" ? "avg_pool" : "lp_pool") +
             std::to_string(std::max<int64_t>(rank - 2, 1)) + "d";
    r.flops = Elements(kernel) * n_out;
    r.dims = SameAxes(out);
  } else if (op == "GlobalAveragePool" || op == "GlobalMaxPool" || op == "GlobalLpPool") {
    r.type = op == "GlobalAveragePool" ? "global_avg_pool" : op == "GlobalMaxPool" ? "global_max_pool" : "global_lp_pool";
    r.flops = in(0) ? Elements(*in(0)) : n_out;
    r.dims = SameAxes(Dims(out.begin(), out.begin() + std::min<int64_t>(rank, 2)));
  } else if (op == "BatchNormalization") {
    r.type = "batch_norm";
    r.flops = kBatchNormFlops * n_out;
    r.dims = SameAxes(out);
  } else if (op == "InstanceNormalization" || op == "LayerNormalization" || op == "LRN" ||
             op == "MeanVarianceNormalization" || op == "LpNormalization") {
    r.type = op == "LayerNormalization" ? "layer_norm" : op == "LRN" ? "lrn" : op == "InstanceNormalization" ? "instance_norm" : Lower(op);
    r.flops = (op == "LRN" ? 2.0 * static_cast<double>(AttrInt(node, "size", 1)) + 4.0 : kLayerNormFlops) * n_out;
    int64_t axis = op == "LayerNormalization" ? AttrInt(node, "axis", -1) : 2;
    if (axis < 0) axis += rank;
    std::set<int64_t> normalised;
    for (int64_t d = std::max<int64_t>(axis, op == "LRN" ? 1 : 0); d < rank; ++d) normalised.insert(d);
    r.dims = SameAxes(out, normalised);
  } else if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") {
    r.type = op == "Softmax" ? "softmax" : Lower(op);
    r.flops = kSoftmaxFlops * n_out;
    int64_t axis = AttrInt(node, "axis", -1);
    if (axis < 0) axis += rank;
    std::set<int64_t> reduced;
    for (int64_t d = std::max<int64_t>(axis, 0); d < rank; ++d) reduced.insert(d);
    r.dims = SameAxes(out, reduced);
  } else if (op == "Dropout") {
    r.type = "dropout";
    r.flops = 2.0 * n_out;  // mask and scale
    r.dims = SameAxes(out);
  } else if (op == "Gather") {
    const bool embedding = !v.input_is_data.empty() && !v.input_is_data[0];
    const Dims* indices = in(1);
    r.type = embedding ? "embedding" : "gather";
    r.flops = embedding ? n_out : 0.0;  // an embedding lookup copies each element (as LayerBuilder::Embedding)
    if (embedding && AttrInt(node, "axis", 0) == 0 && indices && !indices->empty() && rank >= 1) {
      r.dims = SampleIfKept(out, indices);
      if (out.back() > 0) r.dims.push_back(Dim(DimKind::kParameter, static_cast<int32_t>(rank - 1), -1, out.back()));
    }
  } else if (op == "LSTM" || op == "GRU" || op == "RNN") {
    const Dims* x = in(0);
    const Dims* w = in(1);
    if (!x || !w || x->size() != 3 || w->size() != 3) return NodeError(source, node, "expects 3-D X and W");
    const bool batch_major = AttrInt(node, "layout", 0) != 0;
    const double t = static_cast<double>(batch_major ? (*x)[1] : (*x)[0]);
    const double n = static_cast<double>(batch_major ? (*x)[0] : (*x)[1]);
    const double in_size = static_cast<double>((*x)[2]);
    const double gates = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
    const double hidden = static_cast<double>((*w)[1]) / gates;
    const double directions = static_cast<double>((*w)[0]);
    // Per step and example: the gate matmuls over [x, h], the two biases, the gate non-linearities and the
    // state update (LSTM as LayerBuilder::LstmStep: 15 + 9 per unit; GRU 17; RNN one tanh).
    const double elementwise = op == "LSTM" ? 24 : op == "GRU" ? 17 : kTanhFlops;
    const double bias = in(3) ? 2.0 * gates * hidden : 0.0;
    r.type = Lower(op);
    r.flops = directions * t * n * (2.0 * (in_size + hidden) * gates * hidden + bias + elementwise * hidden);
    if (primary == v.outputs[0] && rank == 4) {  // Y: [T, D, N, H] or [N, T, D, H]
      const int32_t out_axis = batch_major ? 0 : 2;
      const int32_t in_axis = batch_major ? 0 : 1;
      if (out[out_axis] > 0) r.dims = {Dim(DimKind::kSample, out_axis, in_axis, out[out_axis])};
    }
  } else if (op == "Einsum") {
    r.type = "einsum";
    if (!EinsumFlops(AttrString(node, "equation", ""), v.inputs, &r.flops)) {
      r.known = false;
      r.flops = 0;
    }
  } else if (op == "Resize" || op == "Upsample") {
    const std::string mode = AttrString(node, "mode", "nearest");
    r.type = "resize";
    r.flops = (mode == "nearest" ? 0.0 : mode == "cubic" ? 32.0 : 8.0) * n_out;
    r.dims = SampleIfKept(out, in(0));
  } else {
    r.known = false;
    r.type = Lower(op);
  }
  return r;
}

}  // namespace devplace::onnx_import
