// Dense ops with weights or windows: convolutions, pooling, normalisation, matmul (dense layers and products of
// two activations), embedding lookups and LSTM gate matmuls.
#include <cmath>

#include "exec/op_impl.h"
#include "exec/tensor_util.h"

namespace devplace::exec {

namespace {

using Shape = std::vector<int64_t>;

int64_t Numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

bool Near(double a, double b) { return std::abs(a - b) <= 1e-6 * std::max(1.0, std::abs(b)); }

// Flat indices of columns [lo, hi) of a row-major [rows, cols] matrix, row by row.
at::Tensor Columns(int64_t rows, int64_t cols, int64_t lo, int64_t hi) {
  return (at::arange(rows, at::kLong).unsqueeze(1) * cols + at::arange(lo, hi, at::kLong).unsqueeze(0)).reshape({-1});
}

// The weight count of a layer with `fan_in` inputs per output channel: solves params = O * fan_in (+ O bias)
// together with flops = 2 * outputs * fan_in (+ outputs bias). Returns fan_in and sets *bias, or 0.
int64_t SolveFanIn(int64_t params, int64_t out_channels, double flops, double outputs, bool* bias) {
  for (int with_bias = 0; with_bias < 2; ++with_bias) {
    const int64_t weights = params - (with_bias ? out_channels : 0);
    if (weights <= 0 || weights % out_channels != 0) continue;
    const int64_t fan_in = weights / out_channels;
    if (Near(flops, 2.0 * outputs * static_cast<double>(fan_in) + (with_bias ? outputs : 0.0))) {
      *bias = with_bias != 0;
      return fan_in;
    }
  }
  return 0;
}

// Window geometry along one axis: out = (in + 2 pad - dilation (k - 1) - 1) / stride + 1.
struct Window {
  int64_t stride = 1, pad = 0, dilation = 1;
};

c10::optional<Window> SolveWindow(int64_t in, int64_t out, int64_t k, bool allow_dilation) {
  for (int64_t dilation = 1; dilation <= (allow_dilation ? 4 : 1); ++dilation) {
    const int64_t span = dilation * (k - 1);
    for (int64_t stride = 1; stride <= 4; ++stride)
      for (int64_t pad = 0; pad <= span; ++pad)
        if ((in + 2 * pad - span - 1) >= 0 && (in + 2 * pad - span - 1) / stride + 1 == out)
          return Window{stride, pad, dilation};
  }
  return c10::nullopt;
}

// 2-D convolution, grouped or depthwise.
class Conv2dImpl : public OpImpl {
 public:
  Conv2dImpl(int64_t out_channels, int64_t in_per_group, int64_t kh, int64_t kw, Window wh, Window ww,
             int64_t groups, bool bias)
      : o_(out_channels), cg_(in_per_group), kh_(kh), kw_(kw), wh_(wh), ww_(ww), groups_(groups), bias_(bias) {}

  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor& w) const override {
    return at::convolution(in[0], Weight(w), Bias(w), Stride(), Pad(), Dilation(), false, {0, 0}, groups_);
  }

  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor& grad, const at::Tensor& w,
                 const std::vector<char>& need) const override {
    const std::vector<int64_t> bias_shape = {o_};
    const at::OptionalIntArrayRef bias_sizes = bias_ ? at::OptionalIntArrayRef(bias_shape) : c10::nullopt;
    auto [gx, gw, gb] = at::convolution_backward(grad.contiguous(), in[0], Weight(w), bias_sizes, Stride(), Pad(),
                                                 Dilation(), false, {0, 0}, groups_, {need[0] != 0, true, bias_});
    return Grads{{gx}, FlatConcat({gw, gb})};
  }

  double FanIn() const override { return static_cast<double>(cg_ * kh_ * kw_); }

  // Output channels [lo, hi): those rows of the [O, C/g, kh, kw] kernel, then those biases.
  at::Tensor WeightShard(int32_t axis, int64_t lo, int64_t hi) const override {
    if (axis != 1) return {};
    const int64_t row = cg_ * kh_ * kw_;
    at::Tensor rows = at::arange(lo * row, hi * row, at::kLong);
    return bias_ ? at::cat({rows, at::arange(o_ * row + lo, o_ * row + hi, at::kLong)}) : rows;
  }

 private:
  at::Tensor Weight(const at::Tensor& w) const { return w.narrow(0, 0, o_ * cg_ * kh_ * kw_).view({o_, cg_, kh_, kw_}); }
  c10::optional<at::Tensor> Bias(const at::Tensor& w) const {
    if (!bias_) return c10::nullopt;
    return w.narrow(0, o_ * cg_ * kh_ * kw_, o_);
  }
  std::vector<int64_t> Stride() const { return {wh_.stride, ww_.stride}; }
  std::vector<int64_t> Pad() const { return {wh_.pad, ww_.pad}; }
  std::vector<int64_t> Dilation() const { return {wh_.dilation, ww_.dilation}; }

  int64_t o_, cg_, kh_, kw_;
  Window wh_, ww_;
  int64_t groups_;
  bool bias_;
};

std::unique_ptr<OpImpl> MakeConv2d(const OpDesc& d) {
  const Op& op = *d.op;
  if (d.input_shapes.size() != 1 || d.input_shapes[0].size() != 4 || op.shape.size() != 4) return nullptr;
  const Shape& x = d.input_shapes[0];
  const int64_t c = x[1], o = op.shape[1];
  if (x[0] != op.shape[0]) return nullptr;
  bool bias = false;
  const int64_t fan_in =
      SolveFanIn(d.param_elements, o, op.flops, static_cast<double>(Numel(op.shape)), &bias);
  if (fan_in == 0) return nullptr;
  std::vector<int64_t> group_options;
  if (op.type == "conv2d") group_options = {1};
  if (op.type == "depthwise_conv2d") group_options = {c};
  if (op.type == "group_conv2d")
    for (int64_t g = 2; g <= c; ++g)
      if (c % g == 0 && o % g == 0) group_options.push_back(g);
  for (int64_t g : group_options) {
    if (c % g != 0 || o % g != 0 || fan_in % (c / g) != 0) continue;
    const int64_t kk = fan_in / (c / g);
    // Square kernels first, then rectangles (1x7, 7x1, ...).
    std::vector<std::pair<int64_t, int64_t>> kernels;
    const auto root = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(kk))));
    if (root * root == kk) kernels.push_back({root, root});
    for (int64_t kh = 1; kh <= kk; ++kh)
      if (kk % kh == 0 && kh != kk / kh) kernels.push_back({kh, kk / kh});
    for (auto [kh, kw] : kernels) {
      auto wh = SolveWindow(x[2], op.shape[2], kh, true);
      auto ww = SolveWindow(x[3], op.shape[3], kw, true);
      if (wh && ww) return std::make_unique<Conv2dImpl>(o, c / g, kh, kw, *wh, *ww, g, bias);
    }
  }
  return nullptr;
}

// Causal 1-D convolution over [N, C, T] keeping the length (left zero padding of k - 1).
class CausalConv1dImpl : public OpImpl {
 public:
  CausalConv1dImpl(int64_t out_channels, int64_t in_channels, int64_t k, bool bias)
      : o_(out_channels), c_(in_channels), k_(k), bias_(bias) {}

  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor& w) const override {
    return at::convolution(Padded(in[0]), Weight(w), Bias(w), {1}, {0}, {1}, false, {0}, 1);
  }

  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor& grad, const at::Tensor& w,
                 const std::vector<char>& need) const override {
    const std::vector<int64_t> bias_shape = {o_};
    const at::OptionalIntArrayRef bias_sizes = bias_ ? at::OptionalIntArrayRef(bias_shape) : c10::nullopt;
    auto [gx, gw, gb] = at::convolution_backward(grad.contiguous(), Padded(in[0]), Weight(w), bias_sizes, {1}, {0},
                                                 {1}, false, {0}, 1, {need[0] != 0, true, bias_});
    if (gx.defined()) gx = gx.narrow(2, k_ - 1, in[0].size(2));
    return Grads{{gx}, FlatConcat({gw, gb})};
  }

  double FanIn() const override { return static_cast<double>(c_ * k_); }

 private:
  at::Tensor Padded(const at::Tensor& x) const { return k_ > 1 ? at::constant_pad_nd(x, {k_ - 1, 0}) : x; }
  at::Tensor Weight(const at::Tensor& w) const { return w.narrow(0, 0, o_ * c_ * k_).view({o_, c_, k_}); }
  c10::optional<at::Tensor> Bias(const at::Tensor& w) const {
    if (!bias_) return c10::nullopt;
    return w.narrow(0, o_ * c_ * k_, o_);
  }

  int64_t o_, c_, k_;
  bool bias_;
};

std::unique_ptr<OpImpl> MakeConv1d(const OpDesc& d) {
  const Op& op = *d.op;
  if (d.input_shapes.size() != 1 || d.input_shapes[0].size() != 3 || op.shape.size() != 3) return nullptr;
  const Shape& x = d.input_shapes[0];
  if (x[0] != op.shape[0] || x[2] != op.shape[2]) return nullptr;
  bool bias = false;
  const int64_t fan_in = SolveFanIn(d.param_elements, op.shape[1], op.flops, static_cast<double>(Numel(op.shape)), &bias);
  if (fan_in == 0 || fan_in % x[1] != 0) return nullptr;
  return std::make_unique<CausalConv1dImpl>(op.shape[1], x[1], fan_in / x[1], bias);
}

// Max or average pooling over NCHW with a square window.
class Pool2dImpl : public OpImpl {
 public:
  Pool2dImpl(bool max, int64_t k, Window wh, Window ww) : max_(max), k_(k), wh_(wh), ww_(ww) {}

  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor&) const override {
    if (max_) return at::max_pool2d(in[0], {k_, k_}, Stride(), Pad());
    return at::avg_pool2d(in[0], {k_, k_}, Stride(), Pad());
  }

  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor& grad, const at::Tensor&,
                 const std::vector<char>& need) const override {
    if (!need[0]) return Grads{{at::Tensor()}, {}};
    if (max_) {
      // The argmax positions are recomputed from the saved input (the backward op receives tensors, not indices).
      auto [out, indices] = at::max_pool2d_with_indices(in[0], {k_, k_}, Stride(), Pad());
      return Grads{{at::max_pool2d_with_indices_backward(grad, in[0], {k_, k_}, Stride(), Pad(), {1, 1}, false,
                                                          indices)},
                   {}};
    }
    return Grads{{at::avg_pool2d_backward(grad, in[0], {k_, k_}, Stride(), Pad(), false, true, c10::nullopt)}, {}};
  }

 private:
  std::vector<int64_t> Stride() const { return {wh_.stride, ww_.stride}; }
  std::vector<int64_t> Pad() const { return {wh_.pad, ww_.pad}; }
  bool max_;
  int64_t k_;
  Window wh_, ww_;
};

std::unique_ptr<OpImpl> MakePool2d(const OpDesc& d) {
  const Op& op = *d.op;
  if (d.input_shapes.size() != 1 || d.input_shapes[0].size() != 4 || op.shape.size() != 4) return nullptr;
  const Shape& x = d.input_shapes[0];
  if (x[0] != op.shape[0] || x[1] != op.shape[1]) return nullptr;
  const double kk = op.flops / static_cast<double>(Numel(op.shape));
  const auto k = static_cast<int64_t>(std::llround(std::sqrt(kk)));
  if (k < 1 || !Near(static_cast<double>(k * k), kk)) return nullptr;
  auto wh = SolveWindow(x[2], op.shape[2], k, false);
  auto ww = SolveWindow(x[3], op.shape[3], k, false);
  if (!wh || !ww || wh->pad * 2 > k || ww->pad * 2 > k) return nullptr;  // ATen: padding at most half the window
  return std::make_unique<Pool2dImpl>(op.type == "max_pool2d", k, *wh, *ww);
}

// Mean over H and W.
class GlobalAvgPoolImpl : public OpImpl {
 public:
  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor&) const override {
    return in[0].mean({2, 3});
  }
  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor& grad, const at::Tensor&,
                 const std::vector<char>& need) const override {
    if (!need[0]) return Grads{{at::Tensor()}, {}};
    const double area = static_cast<double>(in[0].size(2) * in[0].size(3));
    return Grads{{(grad / area).unsqueeze(-1).unsqueeze(-1).expand(in[0].sizes()).contiguous()}, {}};
  }
};

// Batch normalisation (training mode: batch statistics) over axis 1, or layer normalisation over the last axis.
class NormImpl : public OpImpl {
 public:
  NormImpl(bool batch, int64_t features) : batch_(batch), features_(features) {}

  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor& w) const override {
    if (batch_)
      return std::get<0>(at::native_batch_norm(in[0], Gamma(w), Beta(w), {}, {}, true, 0.1, kEps));
    return std::get<0>(at::native_layer_norm(in[0], {features_}, Gamma(w), Beta(w), kEps));
  }

  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor& grad, const at::Tensor& w,
                 const std::vector<char>& need) const override {
    const at::Tensor& x = in[0];
    // The statistics are recomputed from the saved input (one pass), as a backward op receives only tensors.
    if (batch_) {
      std::vector<int64_t> dims = {0};
      for (int64_t i = 2; i < x.dim(); ++i) dims.push_back(i);
      auto [var, mean] = at::var_mean(x, dims, /*unbiased=*/false);
      at::Tensor invstd = (var + kEps).rsqrt();
      auto [gx, gg, gb] = at::native_batch_norm_backward(grad.contiguous(), x, Gamma(w), {}, {}, mean, invstd, true,
                                                         kEps, {need[0] != 0, true, true});
      return Grads{{gx}, FlatConcat({gg, gb})};
    }
    auto [var, mean] = at::var_mean(x, {-1}, /*unbiased=*/false, /*keepdim=*/true);
    at::Tensor rstd = (var + kEps).rsqrt();
    auto [gx, gg, gb] = at::native_layer_norm_backward(grad.contiguous(), x, {features_}, mean, rstd, Gamma(w),
                                                       Beta(w), {need[0] != 0, true, true});
    return Grads{{gx}, FlatConcat({gg, gb})};
  }

  void InitWeights(at::Tensor& flat, uint64_t) const override {
    flat.narrow(0, 0, features_).fill_(1.0);
    flat.narrow(0, features_, features_).zero_();
  }

 private:
  static constexpr double kEps = 1e-5;
  at::Tensor Gamma(const at::Tensor& w) const { return w.narrow(0, 0, features_); }
  at::Tensor Beta(const at::Tensor& w) const { return w.narrow(0, features_, features_); }
  bool batch_;
  int64_t features_;
};

std::unique_ptr<OpImpl> MakeNorm(const OpDesc& d) {
  const Op& op = *d.op;
  if (d.input_shapes.size() != 1 || d.input_shapes[0] != op.shape || op.shape.size() < 2) return nullptr;
  const bool batch = op.type == "batch_norm";
  const int64_t features = batch ? op.shape[1] : op.shape.back();
  if (d.param_elements != 2 * features) return nullptr;
  return std::make_unique<NormImpl>(batch, features);
}

// A dense layer over the concatenation of its inputs' last axes: y = [x1, x2, ..., zeros] W (+ b). `zero_width`
// extra zero columns stand for an LSTM's zero initial state, which costs the same as a real one.
class LinearImpl : public OpImpl {
 public:
  LinearImpl(std::vector<int64_t> widths, int64_t zero_width, int64_t out_features, bool bias, Shape out_shape,
             const at::TensorOptions& options)
      : widths_(std::move(widths)), n_(out_features), bias_(bias), out_shape_(std::move(out_shape)) {
    k_ = zero_width;
    for (int64_t w : widths_) k_ += w;
    rows_ = Rows(out_shape_);
    if (zero_width > 0) zeros_ = at::zeros({rows_, zero_width}, options);
  }

  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor& w) const override {
    at::Tensor x = Input(in);
    at::Tensor y = bias_ ? at::addmm(w.narrow(0, k_ * n_, n_), x, Weight(w)) : at::mm(x, Weight(w));
    return y.view(out_shape_);
  }

  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor& grad, const at::Tensor& w,
                 const std::vector<char>& need) const override {
    at::Tensor g = grad.reshape({rows_, n_});
    Grads out;
    out.inputs.resize(in.size());
    bool any = false;
    for (char c : need) any = any || c;
    if (any) {
      at::Tensor gx = at::mm(g, Weight(w).t());
      int64_t offset = 0;
      for (size_t i = 0; i < in.size(); ++i) {
        if (need[i]) out.inputs[i] = gx.narrow(1, offset, widths_[i]).reshape(in[i].sizes());
        offset += widths_[i];
      }
    }
    at::Tensor gw = at::mm(Input(in).t(), g);
    out.weights = FlatConcat({gw, bias_ ? g.sum(0) : at::Tensor()});
    return out;
  }

  double FanIn() const override { return static_cast<double>(k_); }

  // Output features [lo, hi): those columns of the [K, N] matrix (row by row), then those biases.
  at::Tensor WeightShard(int32_t axis, int64_t lo, int64_t hi) const override {
    if (axis != static_cast<int32_t>(out_shape_.size()) - 1) return {};
    at::Tensor cols = Columns(k_, n_, lo, hi);
    return bias_ ? at::cat({cols, at::arange(k_ * n_ + lo, k_ * n_ + hi, at::kLong)}) : cols;
  }

 private:
  at::Tensor Weight(const at::Tensor& w) const { return w.narrow(0, 0, k_ * n_).view({k_, n_}); }
  at::Tensor Input(const std::vector<at::Tensor>& in) const {
    if (in.size() == 1 && !zeros_.defined()) return in[0].reshape({rows_, k_});
    std::vector<at::Tensor> parts;
    for (size_t i = 0; i < in.size(); ++i) parts.push_back(in[i].reshape({rows_, widths_[i]}));
    if (zeros_.defined()) parts.push_back(zeros_);
    return at::cat(parts, 1);
  }

  std::vector<int64_t> widths_;
  int64_t k_ = 0, n_, rows_ = 0;
  bool bias_;
  Shape out_shape_;
  at::Tensor zeros_;
};

std::unique_ptr<OpImpl> MakeLinear(const OpDesc& d, bool lstm_gates) {
  const Op& op = *d.op;
  if (d.input_shapes.empty() || op.shape.size() < 2) return nullptr;
  Shape lead(op.shape.begin(), op.shape.end() - 1);
  const int64_t n = op.shape.back();
  const double rows = static_cast<double>(Numel(lead));
  std::vector<int64_t> widths;
  int64_t k_in = 0;
  for (const Shape& s : d.input_shapes) {
    if (s.size() != op.shape.size() || !std::equal(lead.begin(), lead.end(), s.begin())) return nullptr;
    widths.push_back(s.back());
    k_in += s.back();
  }
  for (int with_bias = 0; with_bias < 2; ++with_bias) {
    const int64_t weights = d.param_elements - (with_bias ? n : 0);
    if (weights <= 0 || weights % n != 0) continue;
    const int64_t k = weights / n;
    if (k < k_in || (k > k_in && !lstm_gates)) continue;
    if (!Near(op.flops, 2.0 * rows * static_cast<double>(k) * static_cast<double>(n) +
                            (with_bias ? rows * static_cast<double>(n) : 0.0)))
      continue;
    return std::make_unique<LinearImpl>(widths, k - k_in, n, with_bias != 0, op.shape, d.options);
  }
  return nullptr;
}

// A product of two activations (an imported MatMul without weights), with broadcasting over batch axes.
class ProductImpl : public OpImpl {
 public:
  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor&) const override {
    return at::matmul(in[0], in[1]);
  }
  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor& grad, const at::Tensor&,
                 const std::vector<char>& need) const override {
    Grads out;
    out.inputs.resize(2);
    if (need[0]) out.inputs[0] = at::matmul(grad, in[1].transpose(-1, -2)).sum_to_size(in[0].sizes()).contiguous();
    if (need[1]) out.inputs[1] = at::matmul(in[0].transpose(-1, -2), grad).sum_to_size(in[1].sizes()).contiguous();
    return out;
  }
};

std::unique_ptr<OpImpl> MakeProduct(const OpDesc& d) {
  const Op& op = *d.op;
  if (d.input_shapes.size() != 2 || d.param_elements != 0) return nullptr;
  const Shape& a = d.input_shapes[0];
  const Shape& b = d.input_shapes[1];
  if (a.size() < 2 || b.size() < 2 || a.back() != b[b.size() - 2]) return nullptr;
  Shape batch_a(a.begin(), a.end() - 2), batch_b(b.begin(), b.end() - 2);
  Shape out;
  try {
    out = at::infer_size(batch_a, batch_b);
  } catch (const c10::Error&) {
    return nullptr;
  }
  const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  out.push_back(m);
  out.push_back(n);
  if (out != op.shape) return nullptr;
  if (!Near(op.flops, 2.0 * static_cast<double>(Numel(out)) * static_cast<double>(k))) return nullptr;
  return std::make_unique<ProductImpl>();
}

// Embedding lookup of integer ids: [...] -> [..., dim].
class EmbeddingImpl : public OpImpl {
 public:
  EmbeddingImpl(int64_t vocab, int64_t dim, int32_t rank) : vocab_(vocab), dim_(dim), rank_(rank) {}

  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor& w) const override {
    return at::embedding(w.view({vocab_, dim_}), in[0]);
  }
  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor& grad, const at::Tensor&,
                 const std::vector<char>&) const override {
    Grads out;
    out.inputs.resize(1);  // integer ids have no gradient
    out.weights = at::embedding_dense_backward(grad.contiguous(), in[0], vocab_, -1, false).view({-1});
    return out;
  }
  int64_t IndexBound(int) const override { return vocab_; }
  // Embedding width [lo, hi): those columns of the [vocab, dim] table.
  at::Tensor WeightShard(int32_t axis, int64_t lo, int64_t hi) const override {
    return axis == rank_ - 1 ? Columns(vocab_, dim_, lo, hi) : at::Tensor();
  }

 private:
  int64_t vocab_, dim_;
  int32_t rank_;  // of the output
};

std::unique_ptr<OpImpl> MakeEmbedding(const OpDesc& d) {
  const Op& op = *d.op;
  if (d.input_shapes.size() != 1 || at::isFloatingType(d.input_types[0]) || op.shape.empty()) return nullptr;
  const int64_t dim = op.shape.back();
  Shape ids(op.shape.begin(), op.shape.end() - 1);
  if (d.input_shapes[0] != ids || d.param_elements <= 0 || d.param_elements % dim != 0) return nullptr;
  return std::make_unique<EmbeddingImpl>(d.param_elements / dim, dim, static_cast<int32_t>(op.shape.size()));
}

}  // namespace

std::unique_ptr<OpImpl> MakeDenseImpl(const OpDesc& d) {
  const std::string& t = d.op->type;
  if (t == "conv2d" || t == "depthwise_conv2d" || t == "group_conv2d") return MakeConv2d(d);
  if (t == "conv1d") return MakeConv1d(d);
  if (t == "max_pool2d" || t == "avg_pool2d") return MakePool2d(d);
  if (t == "global_avg_pool") {
    if (d.input_shapes.size() != 1 || d.input_shapes[0].size() != 4) return nullptr;
    const Shape& x = d.input_shapes[0];
    if (d.op->shape != Shape{x[0], x[1]}) return nullptr;
    return std::make_unique<GlobalAvgPoolImpl>();
  }
  if (t == "batch_norm" || t == "layer_norm") return MakeNorm(d);
  if (t == "matmul") return d.param_elements > 0 ? MakeLinear(d, false) : MakeProduct(d);
  if (t == "lstm_gates") return MakeLinear(d, true);
  if (t == "embedding") return MakeEmbedding(d);
  return nullptr;
}

}  // namespace devplace::exec
