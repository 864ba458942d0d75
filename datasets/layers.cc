#include "datasets/layers.h"

#include <algorithm>
#include <utility>

#include "core/check.h"

namespace devplace {

namespace {

constexpr int64_t kF32Bytes = 4;

PartitionDim Dim(DimKind kind, int32_t output_axis, int32_t input_axis, int64_t size) {
  return PartitionDim{kind, output_axis, input_axis, size};
}

// Every output axis maps to the same input axis (axis 0 is the sample dim), except `skip`.
std::vector<PartitionDim> SameAxes(const std::vector<int64_t>& shape, int skip = -1) {
  std::vector<PartitionDim> dims;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    if (i == skip) continue;
    dims.push_back(Dim(i == 0 ? DimKind::kSample : DimKind::kAttribute, i, i, shape[i]));
  }
  return dims;
}

std::vector<PartitionDim> SampleOnly(const std::vector<int64_t>& shape) {
  return {Dim(DimKind::kSample, 0, 0, shape.at(0))};
}

}  // namespace

int64_t ShapeElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

ConvSpec ConvSpec::Same(int64_t out_channels, int64_t k, int64_t stride, bool bias) {
  return Rect(out_channels, k, k, stride, (k - 1) / 2, (k - 1) / 2, bias);
}

ConvSpec ConvSpec::Rect(int64_t out_channels, int64_t kh, int64_t kw, int64_t stride, int64_t pad_h, int64_t pad_w,
                        bool bias) {
  ConvSpec spec;
  spec.out_channels = out_channels;
  spec.kernel_h = kh;
  spec.kernel_w = kw;
  spec.stride_h = stride;
  spec.stride_w = stride;
  spec.pad_h = pad_h;
  spec.pad_w = pad_w;
  spec.bias = bias;
  return spec;
}

LayerBuilder::LayerBuilder(std::string graph_name) : builder_(std::move(graph_name)) {}

int64_t LayerBuilder::dim(OpId x, int axis) const {
  const auto& s = shape(x);
  const int rank = static_cast<int>(s.size());
  if (axis < 0) axis += rank;
  DEVPLACE_CHECK(axis >= 0 && axis < rank, "axis out of range for op '" + builder_.op(x).name + "'");
  return s[axis];
}

std::string LayerBuilder::UniqueName(std::string_view name) {
  std::string full = scope_.empty() ? std::string(name) : scope_ + "/" + std::string(name);
  if (names_.insert(full).second) return full;
  int32_t& counter = name_counters_[full];
  while (true) {
    std::string candidate = full + "_" + std::to_string(++counter);
    if (names_.insert(candidate).second) return candidate;
  }
}

OpId LayerBuilder::Emit(std::string_view name, std::string type, std::vector<int64_t> shape, double flops,
                        int64_t param_bytes, std::vector<PartitionDim> dims, const std::vector<InputRef>& inputs,
                        std::string_view shared_weights, DType dtype) {
  Op op;
  op.name = UniqueName(name);
  op.type = std::move(type);
  op.layer = scope_;
  op.shape = std::move(shape);
  op.dtype = dtype;
  op.flops = flops;
  op.dims = std::move(dims);
  bool foreign = false;
  if (!shared_weights.empty()) {
    auto [it, inserted] = shared_param_bytes_.emplace(std::string(shared_weights), param_bytes);
    if (!inserted) {
      DEVPLACE_CHECK(it->second == param_bytes, "shared weights '" + it->first + "' used with different sizes");
      param_bytes = 0;
      foreign = true;
    }
    op.colocation = std::string(shared_weights);
  }
  op.param_bytes = param_bytes;
  const OpId id = builder_.add_op(std::move(op));
  for (size_t i = 0; i < inputs.size(); ++i) {
    DEVPLACE_CHECK(inputs[i].op >= 0 && inputs[i].op < id, "input of a new op must be an existing op");
    bool duplicate = false;
    int64_t bytes = inputs[i].bytes;
    for (size_t j = 0; j < inputs.size(); ++j) {
      if (inputs[j].op != inputs[i].op || j == i) continue;
      if (j < i) duplicate = true;
      if (bytes >= 0) bytes = inputs[j].bytes < 0 ? -1 : std::max(bytes, inputs[j].bytes);
    }
    if (!duplicate) builder_.add_edge(inputs[i].op, id, bytes);
  }
  has_inputs_.push_back(inputs.empty() ? 0 : 1);
  shares_foreign_weights_.push_back(foreign ? 1 : 0);
  if (param_bytes > 0) ++ops_with_params_;
  return id;
}

int64_t LayerBuilder::training_op_count() const {
  int64_t with_grad = 0;
  for (OpId i = 0; i < builder_.num_ops(); ++i)
    if (has_inputs_[i] || builder_.op(i).param_bytes > 0) ++with_grad;
  return builder_.num_ops() + with_grad + ops_with_params_;
}

OpId LayerBuilder::Input(std::string_view name, std::vector<int64_t> shape, DType dtype) {
  std::vector<PartitionDim> dims;
  if (!shape.empty()) dims.push_back(Dim(DimKind::kSample, 0, -1, shape[0]));
  return Emit(name, "input", std::move(shape), 0.0, 0, std::move(dims), {}, {}, dtype);
}

OpId LayerBuilder::Conv2d(OpId x, const ConvSpec& spec, std::string_view name) {
  const auto& s = shape(x);
  DEVPLACE_CHECK(s.size() == 4, "conv2d expects an NCHW input");
  const int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  const int64_t g = spec.groups;
  DEVPLACE_CHECK(g >= 1 && c % g == 0 && spec.out_channels % g == 0, "conv2d: channels not divisible by groups");
  const int64_t ho = (h + 2 * spec.pad_h - spec.dilation * (spec.kernel_h - 1) - 1) / spec.stride_h + 1;
  const int64_t wo = (w + 2 * spec.pad_w - spec.dilation * (spec.kernel_w - 1) - 1) / spec.stride_w + 1;
  DEVPLACE_CHECK(ho > 0 && wo > 0, "conv2d: empty output");
  const int64_t o = spec.out_channels;
  const int64_t fan_in = (c / g) * spec.kernel_h * spec.kernel_w;
  const int64_t outputs = n * o * ho * wo;
  const double flops = 2.0 * static_cast<double>(outputs) * static_cast<double>(fan_in) +
                       (spec.bias ? static_cast<double>(outputs) : 0.0);
  const int64_t params = o * fan_in + (spec.bias ? o : 0);
  std::vector<PartitionDim> dims = {Dim(DimKind::kSample, 0, 0, n), Dim(DimKind::kParameter, 1, g > 1 ? 1 : -1, o),
                                    Dim(DimKind::kAttribute, 2, 2, ho), Dim(DimKind::kAttribute, 3, 3, wo)};
  if (g == 1 && c > 1) dims.push_back(Dim(DimKind::kReduction, -1, 1, c));
  std::string type = g == 1 ? "conv2d" : (g == c && o == c ? "depthwise_conv2d" : "group_conv2d");
  return Emit(name, std::move(type), {n, o, ho, wo}, flops, params * kF32Bytes, std::move(dims), {{x, -1}});
}

OpId LayerBuilder::Pool2d(OpId x, PoolKind kind, int64_t kernel, int64_t stride, int64_t pad, std::string_view name) {
  const auto& s = shape(x);
  DEVPLACE_CHECK(s.size() == 4, "pool2d expects an NCHW input");
  const int64_t ho = (s[2] + 2 * pad - kernel) / stride + 1;
  const int64_t wo = (s[3] + 2 * pad - kernel) / stride + 1;
  DEVPLACE_CHECK(ho > 0 && wo > 0, "pool2d: empty output");
  std::vector<int64_t> out = {s[0], s[1], ho, wo};
  const double flops = static_cast<double>(kernel * kernel) * static_cast<double>(ShapeElements(out));
  std::vector<PartitionDim> dims = SameAxes(out);
  return Emit(name, kind == PoolKind::kMax ? "max_pool2d" : "avg_pool2d", std::move(out), flops, 0, std::move(dims),
              {{x, -1}});
}

OpId LayerBuilder::GlobalAvgPool(OpId x, std::string_view name) {
  const auto& s = shape(x);
  DEVPLACE_CHECK(s.size() == 4, "global_avg_pool expects an NCHW input");
  std::vector<int64_t> out = {s[0], s[1]};
  std::vector<PartitionDim> dims = SameAxes(out);
  return Emit(name, "global_avg_pool", std::move(out), static_cast<double>(ShapeElements(s)), 0, std::move(dims),
              {{x, -1}});
}

OpId LayerBuilder::CausalConv1d(OpId x, int64_t out_channels, int64_t kernel, int64_t dilation, bool bias,
                                std::string_view name) {
  const auto& s = shape(x);
  DEVPLACE_CHECK(s.size() == 3, "conv1d expects an [N, C, T] input");
  const int64_t n = s[0], c = s[1], t = s[2];
  const int64_t outputs = n * out_channels * t;
  const double flops = 2.0 * static_cast<double>(outputs) * static_cast<double>(c * kernel) +
                       (bias ? static_cast<double>(outputs) : 0.0);
  const int64_t params = out_channels * c * kernel + (bias ? out_channels : 0);
  (void)dilation;  // dilation changes which inputs are read, not the cost or the shape
  std::vector<PartitionDim> dims = {Dim(DimKind::kSample, 0, 0, n), Dim(DimKind::kParameter, 1, -1, out_channels),
                                    Dim(DimKind::kAttribute, 2, 2, t)};
  if (c > 1) dims.push_back(Dim(DimKind::kReduction, -1, 1, c));
  return Emit(name, "conv1d", {n, out_channels, t}, flops, params * kF32Bytes, std::move(dims), {{x, -1}});
}

OpId LayerBuilder::BatchNorm(OpId x, std::string_view name) {
  const auto& s = shape(x);
  DEVPLACE_CHECK(s.size() >= 2, "batch_norm expects channels on axis 1");
  std::vector<int64_t> out = s;
  const double flops = kBatchNormFlops * static_cast<double>(ShapeElements(out));
  std::vector<PartitionDim> dims = SameAxes(out);
  const int64_t params = 2 * s[1];
  return Emit(name, "batch_norm", std::move(out), flops, params * kF32Bytes, std::move(dims), {{x, -1}});
}

OpId LayerBuilder::LayerNorm(OpId x, std::string_view name) {
  std::vector<int64_t> out = shape(x);
  DEVPLACE_CHECK(out.size() >= 2, "layer_norm expects [N, ..., D]");
  const double flops = kLayerNormFlops * static_cast<double>(ShapeElements(out));
  const int64_t params = 2 * out.back();
  std::vector<PartitionDim> dims = SameAxes(out, static_cast<int>(out.size()) - 1);
  return Emit(name, "layer_norm", std::move(out), flops, params * kF32Bytes, std::move(dims), {{x, -1}});
}

OpId LayerBuilder::Unary(OpId x, std::string type, double flops_per_element, std::string_view name) {
  std::vector<int64_t> out = shape(x);
  const double flops = flops_per_element * static_cast<double>(ShapeElements(out));
  std::vector<PartitionDim> dims = SameAxes(out);
  return Emit(name, std::move(type), std::move(out), flops, 0, std::move(dims), {{x, -1}});
}

OpId LayerBuilder::Binary(OpId a, OpId b, std::string type, double flops_per_element, std::string_view name) {
  DEVPLACE_CHECK(shape(a) == shape(b), "element-wise '" + type + "' of different shapes: '" + builder_.op(a).name +
                                           "' and '" + builder_.op(b).name + "'");
  std::vector<int64_t> out = shape(a);
  const double flops = flops_per_element * static_cast<double>(ShapeElements(out));
  std::vector<PartitionDim> dims = SameAxes(out);
  return Emit(name, std::move(type), std::move(out), flops, 0, std::move(dims), {{a, -1}, {b, -1}});
}

OpId LayerBuilder::Relu(OpId x, std::string_view name) { return Unary(x, "relu", kReluFlops, name); }
OpId LayerBuilder::Tanh(OpId x, std::string_view name) { return Unary(x, "tanh", kTanhFlops, name); }
OpId LayerBuilder::Sigmoid(OpId x, std::string_view name) { return Unary(x, "sigmoid", kSigmoidFlops, name); }
OpId LayerBuilder::Gelu(OpId x, std::string_view name) { return Unary(x, "gelu", kGeluFlops, name); }
OpId LayerBuilder::Add(OpId a, OpId b, std::string_view name) { return Binary(a, b, "add", kAddFlops, name); }
OpId LayerBuilder::Mul(OpId a, OpId b, std::string_view name) { return Binary(a, b, "mul", kMulFlops, name); }

OpId LayerBuilder::AddN(const std::vector<OpId>& xs, bool average, std::string_view name) {
  DEVPLACE_CHECK(!xs.empty(), "add_n of nothing");
  std::vector<InputRef> inputs;
  for (OpId x : xs) {
    DEVPLACE_CHECK(shape(x) == shape(xs[0]), "add_n of different shapes");
    inputs.push_back({x, -1});
  }
  std::vector<int64_t> out = shape(xs[0]);
  const double per_element = std::max<double>(1.0, static_cast<double>(xs.size()) - 1.0 + (average ? 1.0 : 0.0));
  const double flops = per_element * static_cast<double>(ShapeElements(out));
  std::vector<PartitionDim> dims = SameAxes(out);
  return Emit(name, average ? "mean_n" : "add_n", std::move(out), flops, 0, std::move(dims), inputs);
}

OpId LayerBuilder::Pointwise(std::string type, const std::vector<OpId>& xs, std::vector<int64_t> out_shape,
                             double flops_per_element, std::string_view name) {
  std::vector<InputRef> inputs;
  for (OpId x : xs) {
    DEVPLACE_CHECK(dim(x, 0) == out_shape.at(0), "pointwise inputs must share the batch extent");
    inputs.push_back({x, -1});
  }
  const double flops = flops_per_element * static_cast<double>(ShapeElements(out_shape));
  std::vector<PartitionDim> dims = SameAxes(out_shape);
  return Emit(name, std::move(type), std::move(out_shape), flops, 0, std::move(dims), inputs);
}

OpId LayerBuilder::Softmax(OpId x, std::string_view name) {
  std::vector<int64_t> out = shape(x);
  const double flops = kSoftmaxFlops * static_cast<double>(ShapeElements(out));
  std::vector<PartitionDim> dims = SameAxes(out, static_cast<int>(out.size()) - 1);
  return Emit(name, "softmax", std::move(out), flops, 0, std::move(dims), {{x, -1}});
}

OpId LayerBuilder::Concat(const std::vector<OpId>& xs, int axis, std::string_view name) {
  DEVPLACE_CHECK(!xs.empty(), "concat of nothing");
  std::vector<int64_t> out = shape(xs[0]);
  const int rank = static_cast<int>(out.size());
  if (axis < 0) axis += rank;
  DEVPLACE_CHECK(axis >= 0 && axis < rank, "concat axis out of range");
  out[axis] = 0;
  std::vector<InputRef> inputs;
  for (OpId x : xs) {
    const auto& s = shape(x);
    DEVPLACE_CHECK(static_cast<int>(s.size()) == rank, "concat of different ranks");
    for (int i = 0; i < rank; ++i)
      DEVPLACE_CHECK(i == axis || s[i] == out[i], "concat of tensors whose extents differ off the concat axis");
    out[axis] += s[axis];
    inputs.push_back({x, -1});
  }
  std::vector<PartitionDim> dims = SameAxes(out, axis);
  return Emit(name, "concat", std::move(out), 0.0, 0, std::move(dims), inputs);
}

OpId LayerBuilder::Stack(const std::vector<OpId>& xs, std::string_view name) {
  DEVPLACE_CHECK(!xs.empty(), "stack of nothing");
  std::vector<InputRef> inputs;
  for (OpId x : xs) {
    DEVPLACE_CHECK(shape(x) == shape(xs[0]), "stack of different shapes");
    inputs.push_back({x, -1});
  }
  std::vector<int64_t> out = shape(xs[0]);
  out.insert(out.begin() + 1, static_cast<int64_t>(xs.size()));
  std::vector<PartitionDim> dims = {Dim(DimKind::kSample, 0, 0, out[0])};
  for (int i = 2; i < static_cast<int>(out.size()); ++i) dims.push_back(Dim(DimKind::kAttribute, i, i - 1, out[i]));
  return Emit(name, "stack", std::move(out), 0.0, 0, std::move(dims), inputs);
}

OpId LayerBuilder::Flatten(OpId x, std::string_view name) {
  const auto& s = shape(x);
  std::vector<int64_t> out = {s.at(0), ShapeElements(s) / s.at(0)};
  std::vector<PartitionDim> dims = SampleOnly(out);
  return Emit(name, "reshape", std::move(out), 0.0, 0, std::move(dims), {{x, -1}});
}

OpId LayerBuilder::Linear(const std::vector<OpId>& xs, int64_t out_features, bool bias, std::string_view name,
                          std::string_view shared_weights) {
  DEVPLACE_CHECK(!xs.empty(), "linear of nothing");
  std::vector<int64_t> lead = shape(xs[0]);
  DEVPLACE_CHECK(lead.size() >= 2, "linear expects [N, ..., K]");
  lead.pop_back();
  int64_t k = 0;
  std::vector<InputRef> inputs;
  for (OpId x : xs) {
    std::vector<int64_t> s = shape(x);
    k += s.back();
    s.pop_back();
    DEVPLACE_CHECK(s == lead, "linear over inputs with different leading extents");
    inputs.push_back({x, -1});
  }
  const int64_t rows = ShapeElements(lead);
  std::vector<int64_t> out = lead;
  out.push_back(out_features);
  const int r = static_cast<int>(out.size());
  const double flops = 2.0 * static_cast<double>(rows) * static_cast<double>(k) * static_cast<double>(out_features) +
                       (bias ? static_cast<double>(rows * out_features) : 0.0);
  const int64_t params = k * out_features + (bias ? out_features : 0);
  std::vector<PartitionDim> dims = SameAxes(out, r - 1);
  dims.push_back(Dim(DimKind::kParameter, r - 1, -1, out_features));
  dims.push_back(Dim(DimKind::kReduction, -1, r - 1, k));
  return Emit(name, "matmul", std::move(out), flops, params * kF32Bytes, std::move(dims), inputs, shared_weights);
}

OpId LayerBuilder::Embedding(OpId ids, int64_t vocab, int64_t dim, std::string_view name,
                             std::string_view shared_weights, int64_t time_step) {
  const auto& s = shape(ids);
  std::vector<int64_t> out;
  int64_t read_bytes = -1;
  if (time_step >= 0) {
    DEVPLACE_CHECK(s.size() == 2 && time_step < s[1], "embedding step outside the [N, T] ids");
    out = {s[0], dim};
    read_bytes = s[0] * DTypeBytes(builder_.op(ids).dtype);
  } else {
    DEVPLACE_CHECK(s.size() == 1 || s.size() == 2, "embedding expects ids [N] or [N, T]");
    out = s;
    out.push_back(dim);
  }
  const int r = static_cast<int>(out.size());
  std::vector<PartitionDim> dims = SameAxes(out, r - 1);
  dims.push_back(Dim(DimKind::kParameter, r - 1, -1, dim));
  const double flops = static_cast<double>(ShapeElements(out));  // a gather: one copy per element
  return Emit(name, "embedding", std::move(out), flops, vocab * dim * kF32Bytes, std::move(dims), {{ids, read_bytes}},
              shared_weights);
}

LstmState LayerBuilder::LstmStep(const std::vector<OpId>& xs, LstmState prev, int64_t hidden,
                                 std::string_view shared_weights, std::string_view name, int64_t recurrent_width) {
  DEVPLACE_CHECK(!xs.empty(), "lstm step without inputs");
  const int64_t n = dim(xs[0], 0);
  int64_t k = prev.h >= 0 ? dim(prev.h, 1) : (recurrent_width > 0 ? recurrent_width : hidden);
  std::vector<InputRef> inputs;
  for (OpId x : xs) {
    DEVPLACE_CHECK(shape(x).size() == 2 && dim(x, 0) == n, "lstm inputs must be [N, features]");
    k += dim(x, 1);
    inputs.push_back({x, -1});
  }
  if (prev.h >= 0) inputs.push_back({prev.h, -1});
  const std::string base(name);
  const double gate_flops = 2.0 * static_cast<double>(n * k) * static_cast<double>(4 * hidden) +
                            static_cast<double>(n * 4 * hidden);
  const int64_t gate_params = k * 4 * hidden + 4 * hidden;
  std::vector<PartitionDim> gate_dims = {Dim(DimKind::kSample, 0, 0, n), Dim(DimKind::kParameter, 1, -1, 4 * hidden),
                                         Dim(DimKind::kReduction, -1, 1, k)};
  const OpId gates = Emit(base + "/gates", "lstm_gates", {n, 4 * hidden}, gate_flops, gate_params * kF32Bytes,
                          std::move(gate_dims), inputs, shared_weights);
  const std::vector<int64_t> state_shape = {n, hidden};
  const double elements = static_cast<double>(n * hidden);
  std::vector<InputRef> c_inputs = {{gates, -1}};
  if (prev.c >= 0) c_inputs.push_back({prev.c, -1});
  // c = sigmoid(f) * c + sigmoid(i) * tanh(g): three activations (12) and three arithmetic ops.
  const OpId c = Emit(base + "/c", "lstm_cell_state", state_shape, 15.0 * elements, 0, SameAxes(state_shape), c_inputs);
  // h = sigmoid(o) * tanh(c).
  const OpId h = Emit(base + "/h", "lstm_output", state_shape, 9.0 * elements, 0, SameAxes(state_shape),
                      {{gates, -1}, {c, -1}});
  return LstmState{h, c};
}

OpId LayerBuilder::DotScores(OpId query, OpId keys, std::string_view name) {
  const auto& q = shape(query);
  const auto& k = shape(keys);
  DEVPLACE_CHECK(q.size() == 2 && k.size() == 3 && q[0] == k[0] && q[1] == k[2], "dot scores: expected [N,H], [N,S,H]");
  std::vector<int64_t> out = {k[0], k[1]};
  const double flops = 2.0 * static_cast<double>(ShapeElements(k));
  return Emit(name, "attention_scores", out, flops, 0, SampleOnly(out), {{query, -1}, {keys, -1}});
}

OpId LayerBuilder::AdditiveScores(OpId query, OpId keys, std::string_view name, std::string_view shared_weights) {
  const auto& q = shape(query);
  const auto& k = shape(keys);
  DEVPLACE_CHECK(q.size() == 2 && k.size() == 3 && q[0] == k[0] && q[1] == k[2],
                 "additive scores: expected [N,A], [N,S,A]");
  std::vector<int64_t> out = {k[0], k[1]};
  // Per (example, position, unit): add the query, tanh, multiply-add with v.
  const double flops = (kAddFlops + kTanhFlops + 2.0) * static_cast<double>(ShapeElements(k));
  return Emit(name, "additive_attention_scores", out, flops, k[2] * kF32Bytes, SampleOnly(out),
              {{query, -1}, {keys, -1}}, shared_weights);
}

OpId LayerBuilder::AttentionContext(OpId weights, OpId values, std::string_view name) {
  const auto& w = shape(weights);
  const auto& v = shape(values);
  DEVPLACE_CHECK(w.size() == 2 && v.size() == 3 && w[0] == v[0] && w[1] == v[1],
                 "attention context: expected [N,S], [N,S,H]");
  std::vector<int64_t> out = {v[0], v[2]};
  const double flops = 2.0 * static_cast<double>(ShapeElements(v));
  std::vector<PartitionDim> dims = {Dim(DimKind::kSample, 0, 0, v[0]), Dim(DimKind::kAttribute, 1, -1, v[2])};
  return Emit(name, "attention_context", out, flops, 0, std::move(dims), {{weights, -1}, {values, -1}});
}

OpId LayerBuilder::MultiHeadScores(OpId q, OpId k, int64_t heads, int64_t width, std::string_view name) {
  const auto& qs = shape(q);
  const auto& ks = shape(k);
  DEVPLACE_CHECK(qs.size() == 3 && ks.size() == 3 && (qs[0] == ks[0] || ks[0] == 1) && width % heads == 0,
                 "multi-head scores: expected [N,S,*], [N,M,*] and width divisible by heads");
  std::vector<int64_t> out = {qs[0], heads, qs[1], ks[1]};
  const double flops = 2.0 * static_cast<double>(qs[0] * qs[1] * ks[1]) * static_cast<double>(width);
  std::vector<PartitionDim> dims = {Dim(DimKind::kSample, 0, 0, qs[0]), Dim(DimKind::kAttribute, 1, -1, heads)};
  return Emit(name, "attention_scores", std::move(out), flops, 0, std::move(dims), {{q, -1}, {k, -1}});
}

OpId LayerBuilder::MultiHeadContext(OpId probs, OpId v, int64_t width, std::string_view name) {
  const auto& p = shape(probs);
  const auto& vs = shape(v);
  DEVPLACE_CHECK(p.size() == 4 && vs.size() == 3 && p[0] == vs[0] && p[3] == vs[1],
                 "multi-head context: expected [N,h,S,M], [N,M,*]");
  std::vector<int64_t> out = {p[0], p[2], width};
  const double flops = 2.0 * static_cast<double>(p[0] * p[2] * p[3]) * static_cast<double>(width);
  return Emit(name, "attention_context", out, flops, 0, SampleOnly(out), {{probs, -1}, {v, -1}});
}

OpId LayerBuilder::HeadMajorScores(OpId q, OpId k, int64_t heads, std::string_view name) {
  const auto& qs = shape(q);
  const auto& ks = shape(k);
  DEVPLACE_CHECK(qs.size() == 3 && ks.size() == 3 && qs[0] == ks[0] && qs[2] == ks[2] && qs[2] % heads == 0,
                 "head-major scores: expected [N,S,W], [N,M,W] and W divisible by heads");
  std::vector<int64_t> out = {qs[0], qs[1], heads, ks[1]};
  const double flops = 2.0 * static_cast<double>(qs[0] * qs[1] * ks[1]) * static_cast<double>(qs[2]);
  std::vector<PartitionDim> dims = {Dim(DimKind::kSample, 0, 0, qs[0]), Dim(DimKind::kAttribute, 2, 2, heads)};
  return Emit(name, "attention_scores", std::move(out), flops, 0, std::move(dims), {{q, -1}, {k, -1}});
}

OpId LayerBuilder::HeadMajorContext(OpId probs, OpId v, std::string_view name) {
  const auto& p = shape(probs);
  const auto& vs = shape(v);
  DEVPLACE_CHECK(p.size() == 4 && vs.size() == 3 && p[0] == vs[0] && p[3] == vs[1] && vs[2] % p[2] == 0,
                 "head-major context: expected [N,S,h,M], [N,M,W] with W divisible by h");
  std::vector<int64_t> out = {p[0], p[1], vs[2]};
  const double flops = 2.0 * static_cast<double>(p[0] * p[1] * p[3]) * static_cast<double>(vs[2]);
  std::vector<PartitionDim> dims = {Dim(DimKind::kSample, 0, 0, p[0]), Dim(DimKind::kAttribute, 2, 2, vs[2])};
  return Emit(name, "attention_context", std::move(out), flops, 0, std::move(dims), {{probs, -1}, {v, -1}});
}

OpId LayerBuilder::MoeTop2Gating(OpId gate_probs, int64_t capacity, std::string_view name) {
  const auto& g = shape(gate_probs);
  DEVPLACE_CHECK(g.size() == 3 && capacity >= 1, "top-2 gating expects probabilities [N, S, E] and a capacity >= 1");
  std::vector<int64_t> out = {g[0], g[1], g[2], capacity};
  // Per token: two arg-max passes over E, a running count per expert, and the dense weights it writes.
  const double flops = static_cast<double>(g[0] * g[1]) * static_cast<double>(3 * g[2] + g[2] * capacity);
  std::vector<PartitionDim> dims = {Dim(DimKind::kSample, 0, 0, g[0])};
  return Emit(name, "moe_gating", std::move(out), flops, 0, std::move(dims), {{gate_probs, -1}});
}

OpId LayerBuilder::MoeDispatch(OpId weights, OpId x, std::string_view name) {
  const auto& w = shape(weights);
  const auto& xs = shape(x);
  DEVPLACE_CHECK(w.size() == 4 && xs.size() == 3 && w[0] == xs[0] && w[1] == xs[1],
                 "moe dispatch: expected weights [N,S,E,C] and tokens [N,S,M]");
  std::vector<int64_t> out = {w[0], w[2], w[3], xs[2]};
  const double flops = 2.0 * static_cast<double>(ShapeElements(w)) * static_cast<double>(xs[2]);
  std::vector<PartitionDim> dims = {Dim(DimKind::kSample, 0, 0, w[0]), Dim(DimKind::kAttribute, 1, -1, w[2])};
  return Emit(name, "moe_dispatch", std::move(out), flops, 0, std::move(dims), {{weights, -1}, {x, -1}});
}

OpId LayerBuilder::ExpertLinear(OpId x, int64_t out_features, bool bias, std::string_view name) {
  const auto& s = shape(x);
  DEVPLACE_CHECK(s.size() == 4, "expert layer expects [N, E, C, M]");
  const int64_t n = s[0], e = s[1], c = s[2], m = s[3];
  std::vector<int64_t> out = {n, e, c, out_features};
  const double flops = 2.0 * static_cast<double>(n * e * c) * static_cast<double>(m * out_features) +
                       (bias ? static_cast<double>(n * e * c * out_features) : 0.0);
  const int64_t params = e * (m * out_features + (bias ? out_features : 0));
  std::vector<PartitionDim> dims = {Dim(DimKind::kSample, 0, 0, n), Dim(DimKind::kParameter, 1, 1, e),
                                    Dim(DimKind::kAttribute, 2, 2, c), Dim(DimKind::kParameter, 3, -1, out_features),
                                    Dim(DimKind::kReduction, -1, 3, m)};
  return Emit(name, "moe_expert_matmul", std::move(out), flops, params * kF32Bytes, std::move(dims), {{x, -1}});
}

OpId LayerBuilder::MoeCombine(OpId weights, OpId y, std::string_view name) {
  const auto& w = shape(weights);
  const auto& ys = shape(y);
  DEVPLACE_CHECK(w.size() == 4 && ys.size() == 4 && w[0] == ys[0] && w[2] == ys[1] && w[3] == ys[2],
                 "moe combine: expected weights [N,S,E,C] and expert outputs [N,E,C,M]");
  std::vector<int64_t> out = {w[0], w[1], ys[3]};
  const double flops = 2.0 * static_cast<double>(ShapeElements(w)) * static_cast<double>(ys[3]);
  std::vector<PartitionDim> dims = {Dim(DimKind::kSample, 0, 0, w[0]), Dim(DimKind::kAttribute, 2, -1, ys[3])};
  return Emit(name, "moe_combine", std::move(out), flops, 0, std::move(dims), {{weights, -1}, {y, -1}});
}

OpId LayerBuilder::SoftmaxCrossEntropy(OpId logits, OpId labels, std::string_view name) {
  const auto& s = shape(logits);
  std::vector<int64_t> out = {s.at(0)};
  const double flops = kCrossEntropyFlops * static_cast<double>(ShapeElements(s));
  return Emit(name, "softmax_cross_entropy", out, flops, 0, SampleOnly(out), {{logits, -1}, {labels, -1}});
}

OpId LayerBuilder::SampledSoftmaxLoss(OpId features, OpId labels, int64_t vocab, int64_t samples,
                                      std::string_view name) {
  const auto& s = shape(features);
  DEVPLACE_CHECK(s.size() >= 2, "sampled softmax expects [N, ..., D]");
  const int64_t d = s.back();
  const double rows = static_cast<double>(ShapeElements(s) / d);
  const double classes = static_cast<double>(samples + 1);
  const double flops = rows * classes * (2.0 * static_cast<double>(d) + kCrossEntropyFlops);
  std::vector<int64_t> out = {s[0]};
  return Emit(name, "sampled_softmax_loss", out, flops, (vocab * d + vocab) * kF32Bytes, SampleOnly(out),
              {{features, -1}, {labels, -1}});
}

Expected<Graph> LayerBuilder::BuildForward() && { return std::move(builder_).Build(); }

Expected<Graph> LayerBuilder::BuildTraining(const TrainingOptions& options) && {
  Expected<Graph> forward = std::move(builder_).Build();
  if (!forward.ok()) return forward.error();
  Expected<Graph> training = DeriveTrainingGraph(*forward, options);
  if (!training.ok()) return training.error();
  if (std::find(shares_foreign_weights_.begin(), shares_foreign_weights_.end(), 1) == shares_foreign_weights_.end())
    return training;
  // Rebuild with the weight-gradient work of shared-weight users added to their backward ops.
  const Graph& t = *training;
  GraphBuilder rebuilt(t.name());
  for (const Op& op : t.ops()) {
    Op copy = op;
    if (copy.role == OpRole::kBackward) {
      const OpId f = forward->find(copy.forward_op);
      DEVPLACE_CHECK(f >= 0, "backward op without its forward op");
      if (shares_foreign_weights_[f]) copy.flops = forward->op(f).flops * options.backward_flops_ratio_with_params;
    }
    rebuilt.add_op(std::move(copy));
  }
  for (const Edge& e : t.edges()) rebuilt.add_edge(e.src, e.dst, e.bytes);
  return std::move(rebuilt).Build();
}

}  // namespace devplace
