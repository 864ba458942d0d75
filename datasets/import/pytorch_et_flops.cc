// FLOP formulas of ATen operators for the PyTorch execution-trace importer (2 FLOPs per multiply-add; the
// per-element constants follow the ONNX importer's table in docs/importers.md, backward kernels count twice their
// forward).
#include "datasets/import/pytorch_et_flops.h"

#include <set>
#include <unordered_map>

namespace devplace::import_detail {

namespace {

double Elements(const std::vector<int64_t>& shape) {
  double n = 1;
  for (int64_t d : shape) n *= static_cast<double>(d);
  return n;
}

// The i-th argument if it is a tensor.
const EtArg* TensorArg(const std::vector<EtArg>& args, size_t i) {
  return i < args.size() && args[i].is_tensor ? &args[i] : nullptr;
}

// 2 * out * K with K the last extent of the left operand `left`; nullopt without the shapes.
std::optional<double> MatMul(const std::vector<EtArg>& in, const std::vector<EtArg>& out, size_t left, bool bias) {
  const EtArg* a = TensorArg(in, left);
  const EtArg* o = TensorArg(out, 0);
  if (!a || !o || a->shape.empty()) return std::nullopt;
  const double n = Elements(o->shape);
  return 2 * n * static_cast<double>(a->shape.back()) + (bias ? n : 0);
}

// Forward convolution: 2 * out * (C/g * kernel) = 2 * out * numel(W) / W[0] (+ out for a bias); a transposed
// convolution spreads every input element over numel(W) / W[0] outputs instead.
std::optional<double> Conv(const std::vector<EtArg>& in, const std::vector<EtArg>& out, bool transposed) {
  const EtArg* x = TensorArg(in, 0);
  const EtArg* w = TensorArg(in, 1);
  const EtArg* o = TensorArg(out, 0);
  if (!x || !w || !o || w->shape.empty() || w->shape[0] <= 0) return std::nullopt;
  const double per = Elements(w->shape) / static_cast<double>(w->shape[0]);
  const double macs = transposed ? Elements(x->shape) * per : Elements(o->shape) * per;
  return 2 * macs + (TensorArg(in, 2) ? Elements(o->shape) : 0);
}

// convolution_backward(grad_out, input, weight, ..., output_mask): the forward cost for each of grad_input and
// grad_weight that output_mask asks for, plus grad_out's size for the bias gradient.
std::optional<double> ConvBackward(const std::vector<EtArg>& in) {
  const EtArg* g = TensorArg(in, 0);
  const EtArg* w = TensorArg(in, 2);
  if (!g || !w || w->shape.empty() || w->shape[0] <= 0) return std::nullopt;
  bool mask[3] = {true, true, false};
  if (!in.empty() && in.back().value && in.back().value->is_array() && in.back().value->size() == 3)
    for (size_t i = 0; i < 3; ++i) mask[i] = (*in.back().value)[i].is_boolean() && (*in.back().value)[i].get<bool>();
  const bool transposed = in.size() > 6 && in[6].value && in[6].value->is_boolean() && in[6].value->get<bool>();
  const EtArg* x = TensorArg(in, 1);
  const double per = Elements(w->shape) / static_cast<double>(w->shape[0]);
  const double fwd = 2 * per * (transposed && x ? Elements(x->shape) : Elements(g->shape));
  return fwd * (mask[0] + mask[1]) + (mask[2] ? Elements(g->shape) : 0);
}

// Operators that do no arithmetic: views, copies, allocations, gathers.
const std::set<std::string>& NoArithmetic() {
  static const std::set<std::string> kOps = {
      "view", "reshape", "_reshape_alias", "_unsafe_view", "empty", "empty_like", "empty_strided", "new_empty",
      "new_empty_strided", "as_strided", "t", "transpose", "permute", "detach", "to", "_to_copy", "copy",
      "slice", "select", "narrow", "expand", "expand_as", "contiguous", "clone", "zeros", "zeros_like", "ones",
      "ones_like", "full", "full_like", "fill", "zero", "unsqueeze", "squeeze", "flatten", "unflatten", "split",
      "split_with_sizes", "chunk", "cat", "stack", "index_select", "index", "gather", "embedding",
      "embedding_backward", "embedding_dense_backward", "result_type", "resize", "set", "lift_fresh", "alias",
      "item", "_local_scalar_dense", "is_nonzero", "unbind", "flatten_dense_tensors", "unflatten_dense_tensors",
      "arange", "scalar_tensor", "_has_compatible_shallow_copy_type", "numpy_t", "record_stream", "pin_memory",
      "_pin_memory", "is_pinned", "random", "uniform", "normal", "bernoulli", "randperm", "masked_fill",
      "constant_pad_nd", "pad", "repeat", "roll", "_unsafe_index", "is_same_size", "new_zeros", "new_ones",
      "new_full", "resolve_conj", "resolve_neg", "numpy_T", "concat", "slice_backward", "select_backward",
      "index_put", "scatter", "scatter_add", "_reshape_copy", "view_as", "reshape_as", "split_backward"};
  return kOps;
}

// FLOPs per output element of element-wise and normalisation operators.
const std::unordered_map<std::string, double>& PerElement() {
  static const std::unordered_map<std::string, double> kOps = {
      {"add", 1}, {"sub", 1}, {"rsub", 1}, {"mul", 1}, {"div", 1}, {"neg", 1}, {"abs", 1}, {"relu", 1},
      {"clamp", 2}, {"clamp_min", 1}, {"clamp_max", 1}, {"threshold", 1}, {"threshold_backward", 1},
      {"maximum", 1}, {"minimum", 1}, {"where", 1}, {"addcmul", 2}, {"addcdiv", 2}, {"lerp", 2}, {"sign", 1},
      {"hardtanh", 2}, {"leaky_relu", 2}, {"sigmoid", 4}, {"tanh", 4}, {"silu", 5}, {"gelu", 8}, {"exp", 4},
      {"log", 4}, {"sqrt", 4}, {"rsqrt", 4}, {"pow", 4}, {"reciprocal", 1}, {"erf", 4}, {"sigmoid_backward", 2},
      {"tanh_backward", 2}, {"gelu_backward", 16}, {"silu_backward", 10}, {"hardtanh_backward", 2},
      {"softmax", 5}, {"_softmax", 5}, {"log_softmax", 5}, {"_log_softmax", 5}, {"_softmax_backward_data", 10},
      {"_log_softmax_backward_data", 10}, {"batch_norm", 6}, {"native_batch_norm", 6}, {"cudnn_batch_norm", 6},
      {"_batch_norm_impl_index", 6}, {"native_batch_norm_backward", 12}, {"cudnn_batch_norm_backward", 12},
      {"layer_norm", 8}, {"native_layer_norm", 8}, {"native_layer_norm_backward", 16}, {"group_norm", 8},
      {"native_group_norm", 8}, {"dropout", 2}, {"native_dropout", 2}, {"native_dropout_backward", 1},
      {"mse_loss", 3}, {"nll_loss", 1}, {"nll_loss_forward", 1}, {"nll_loss_backward", 1}, {"cross_entropy_loss", 6},
      {"_foreach_add", 1}, {"_foreach_mul", 1}, {"_foreach_addcmul", 2}, {"_foreach_addcdiv", 2}, {"_foreach_sqrt", 4},
      {"_foreach_div", 1}, {"_foreach_lerp", 2}};
  return kOps;
}

// Reductions: FLOPs per input element.
const std::set<std::string>& Reductions() {
  static const std::set<std::string> kOps = {"sum", "mean", "amax", "amin", "max", "min", "norm", "linalg_vector_norm",
                                             "var", "std", "argmax", "argmin", "cumsum", "logsumexp"};
  return kOps;
}

// Sum of the elements of every tensor argument (lists of tensors count each element).
double TensorElements(const std::vector<EtArg>& args) {
  double n = 0;
  for (const EtArg& a : args)
    if (a.is_tensor) n += Elements(a.shape);
  return n;
}

}  // namespace

std::optional<double> AtenFlops(const std::string& op, const std::vector<EtArg>& in, const std::vector<EtArg>& out) {
  if (op == "mm" || op == "bmm" || op == "matmul") return MatMul(in, out, 0, false);
  if (op == "addmm" || op == "baddbmm") return MatMul(in, out, 1, true);
  if (op == "linear") return MatMul(in, out, 0, TensorArg(in, 2) != nullptr);
  if (op == "conv1d" || op == "conv2d" || op == "conv3d" || op == "cudnn_convolution" || op == "mkldnn_convolution" ||
      op == "_convolution_mode" || op == "thnn_conv2d" || op == "_slow_conv2d_forward" || op == "miopen_convolution")
    return Conv(in, out, false);
  if (op == "convolution" || op == "_convolution")
    return Conv(in, out, in.size() > 6 && in[6].value && in[6].value->is_boolean() && in[6].value->get<bool>());
  if (op.rfind("conv_transpose", 0) == 0 || op == "cudnn_convolution_transpose") return Conv(in, out, true);
  if (op == "convolution_backward") return ConvBackward(in);
  if (op == "_scaled_dot_product_efficient_attention" || op == "_scaled_dot_product_flash_attention" ||
      op == "scaled_dot_product_attention" || op == "_scaled_dot_product_cudnn_attention") {
    const EtArg* q = TensorArg(in, 0);
    const EtArg* k = TensorArg(in, 1);
    if (!q || !k || k->shape.size() < 2) return std::nullopt;
    return 4 * Elements(q->shape) * static_cast<double>(k->shape[k->shape.size() - 2]);
  }
  if (op == "max_pool1d" || op == "max_pool2d" || op == "max_pool3d" || op == "max_pool2d_with_indices" ||
      op == "avg_pool2d" || op == "avg_pool3d" || op == "max_pool3d_with_indices") {  // kernel reads per output
    const EtArg* o = TensorArg(out, 0);
    if (!o || in.size() < 2 || !in[1].value || !in[1].value->is_array()) return std::nullopt;
    double kernel = 1;
    for (const auto& k : *in[1].value) kernel *= k.is_number() ? k.get<double>() : 1.0;
    return Elements(o->shape) * kernel;
  }
  if (op == "max_pool2d_with_indices_backward" || op == "avg_pool2d_backward" || op == "adaptive_avg_pool2d" ||
      op == "_adaptive_avg_pool2d" || op == "_adaptive_avg_pool2d_backward" || op == "adaptive_max_pool2d")
    return TensorArg(in, 0) ? Elements(in[0].shape) : 0.0;
  if (NoArithmetic().count(op)) return 0.0;
  if (auto it = PerElement().find(op); it != PerElement().end()) {
    const EtArg* first = TensorArg(in, 0);  // in-place kernels (add_, _foreach_mul_) may record no output
    const double n = TensorElements(out) > 0 ? TensorElements(out) : first ? Elements(first->shape) : 0.0;
    return it->second * n;
  }
  if (Reductions().count(op)) {
    const EtArg* x = TensorArg(in, 0);
    return x ? Elements(x->shape) : 0.0;
  }
  return std::nullopt;
}

}  // namespace devplace::import_detail
