// The reconstructed kernels: each op type is recognised from (type, shapes, FLOPs, parameters), produces the op's
// output shape, and its backward computes the true gradient (checked against central finite differences in
// double precision along random directions).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

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

struct Case {
  std::string type;
  Shape out;
  double flops = 0.0;
  int64_t params = 0;
  std::vector<Shape> inputs;
  std::vector<at::ScalarType> types;  // default: all double
  int64_t index_bound = 2;
};

at::TensorOptions Double() { return at::TensorOptions().dtype(at::kDouble); }

double Loss(const OpImpl& impl, const std::vector<at::Tensor>& in, const at::Tensor& w, const at::Tensor& r) {
  return (impl.Forward(in, w) * r).sum().item<double>();
}

void CheckCase(const Case& c) {
  SCOPED_TRACE(c.type);
  Op op;
  op.name = c.type;
  op.type = c.type;
  op.shape = c.out;
  op.flops = c.flops;
  OpDesc desc;
  desc.op = &op;
  desc.input_shapes = c.inputs;
  desc.input_types = c.types.empty() ? std::vector<at::ScalarType>(c.inputs.size(), at::kDouble) : c.types;
  desc.param_elements = c.params;
  desc.options = Double();
  std::unique_ptr<OpImpl> impl = MakeOpImpl(desc);
  ASSERT_NE(impl, nullptr) << "not recognised";

  std::vector<at::Tensor> in;
  std::vector<char> need;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const bool real = at::isFloatingType(desc.input_types[i]);
    const int64_t bound = std::max<int64_t>(c.index_bound, impl->IndexBound(static_cast<int>(i)));
    in.push_back(SeededTensor(c.inputs[i], desc.input_types[i], at::kCPU, 10 + i, 1.0, bound));
    need.push_back(real ? 1 : 0);
  }
  at::Tensor w;
  if (c.params > 0) {
    w = at::empty({c.params}, Double());
    impl->InitWeights(w, 3);
    w = w + SeededTensor({c.params}, at::kDouble, at::kCPU, 4, 0.1, 1);
  }
  const at::Tensor out = impl->Forward(in, w);
  ASSERT_EQ(out.sizes().vec(), c.out);
  const at::Tensor r = SeededTensor(c.out, at::kDouble, at::kCPU, 5, 1.0, 1);
  const Grads g = impl->Backward(in, out, r, w, need);

  const double eps = 1e-6;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!need[i]) continue;
    ASSERT_TRUE(g.inputs.at(i).defined()) << "input " << i;
    ASSERT_EQ(g.inputs[i].sizes().vec(), c.inputs[i]) << "input " << i;
    const at::Tensor v = SeededTensor(c.inputs[i], at::kDouble, at::kCPU, 20 + i, 1.0, 1);
    std::vector<at::Tensor> plus = in, minus = in;
    plus[i] = in[i] + eps * v;
    minus[i] = in[i] - eps * v;
    const double numeric = (Loss(*impl, plus, w, r) - Loss(*impl, minus, w, r)) / (2 * eps);
    const double analytic = (g.inputs[i] * v).sum().item<double>();
    EXPECT_NEAR(analytic, numeric, 1e-5 * std::max(1.0, std::abs(numeric))) << "input " << i;
  }
  if (c.params > 0) {
    ASSERT_TRUE(g.weights.defined());
    ASSERT_EQ(g.weights.numel(), c.params);
    const at::Tensor v = SeededTensor({c.params}, at::kDouble, at::kCPU, 30, 1.0, 1);
    const double numeric = (Loss(*impl, in, w + eps * v, r) - Loss(*impl, in, w - eps * v, r)) / (2 * eps);
    const double analytic = (g.weights.reshape({-1}) * v).sum().item<double>();
    EXPECT_NEAR(analytic, numeric, 1e-5 * std::max(1.0, std::abs(numeric))) << "weights";
  }
}

// FLOPs and parameters of a convolution as datasets/layers.cc counts them.
Case Conv(std::string type, Shape x, Shape out, int64_t fan_in, bool bias) {
  const double outputs = static_cast<double>(Numel(out));
  return Case{type, out, 2.0 * outputs * static_cast<double>(fan_in) + (bias ? outputs : 0.0),
              out[1] * fan_in + (bias ? out[1] : 0), {x}};
}

TEST(OpKernels, Convolutions) {
  CheckCase(Conv("conv2d", {2, 3, 6, 6}, {2, 4, 6, 6}, 3 * 9, true));         // 3x3, pad 1
  CheckCase(Conv("conv2d", {2, 3, 7, 7}, {2, 4, 4, 4}, 3 * 9, false));        // 3x3, stride 2
  CheckCase(Conv("conv2d", {1, 2, 5, 7}, {1, 3, 5, 7}, 2 * 7, false));        // 1x7
  CheckCase(Conv("depthwise_conv2d", {2, 4, 6, 6}, {2, 4, 3, 3}, 9, false));  // 3x3 depthwise, stride 2
  CheckCase(Conv("group_conv2d", {1, 4, 5, 5}, {1, 6, 5, 5}, 2, false));      // 1x1, 2 groups
  CheckCase(Conv("conv1d", {2, 3, 9}, {2, 4, 9}, 3 * 2, true));               // causal, kernel 2
}

TEST(OpKernels, PoolingAndNormalisation) {
  CheckCase({"max_pool2d", {2, 3, 3, 3}, 9.0 * 54, 0, {{2, 3, 6, 6}}});  // 3x3 stride 2 pad 1
  CheckCase({"avg_pool2d", {2, 3, 3, 3}, 4.0 * 54, 0, {{2, 3, 6, 6}}});  // 2x2 stride 2
  CheckCase({"global_avg_pool", {2, 3}, 2.0 * 3 * 16, 0, {{2, 3, 4, 4}}});
  CheckCase({"batch_norm", {3, 4, 2, 2}, 6.0 * 48, 8, {{3, 4, 2, 2}}});
  CheckCase({"layer_norm", {2, 3, 5}, 8.0 * 30, 10, {{2, 3, 5}}});
}

TEST(OpKernels, DenseLayers) {
  // Two inputs concatenated (K = 3 + 4), 5 outputs with bias, over [2, 3] rows.
  CheckCase({"matmul", {2, 3, 5}, 2.0 * 6 * 7 * 5 + 6 * 5, 7 * 5 + 5, {{2, 3, 3}, {2, 3, 4}}});
  CheckCase({"matmul", {2, 4, 6}, 2.0 * 2 * 4 * 3 * 6, 0, {{2, 4, 3}, {1, 3, 6}}});  // two activations
  // LSTM gates with a zero initial state of width 5: K = 4 + 5, 4H = 12.
  CheckCase({"lstm_gates", {2, 12}, 2.0 * 2 * 9 * 12 + 2 * 12, 9 * 12 + 12, {{2, 4}}});
  CheckCase({"embedding", {2, 3, 4}, 24, 7 * 4, {{2, 3}}, {at::kInt}, 7});
}

TEST(OpKernels, ElementWise) {
  for (const char* t : {"relu", "tanh", "sigmoid", "gelu"}) CheckCase({t, {3, 4}, 12, 0, {{3, 4}}});
  CheckCase({"add", {3, 4}, 12, 0, {{3, 4}, {3, 4}}});
  CheckCase({"mul", {3, 4}, 12, 0, {{3, 4}, {3, 4}}});
  CheckCase({"mul", {3, 4}, 12, 0, {{3, 4}}});  // x * x, duplicate edge merged
  CheckCase({"add_n", {3, 4}, 24, 0, {{3, 4}, {3, 4}, {3, 4}}});
  CheckCase({"mean_n", {3, 4}, 24, 0, {{3, 4}, {3, 4}}});
  CheckCase({"softmax", {3, 4}, 60, 0, {{3, 4}}});
  CheckCase({"concat", {2, 7, 3}, 0, 0, {{2, 3, 3}, {2, 4, 3}}});
  CheckCase({"stack", {2, 3, 4}, 0, 0, {{2, 4}, {2, 4}, {2, 4}}});
  CheckCase({"reshape", {2, 12}, 0, 0, {{2, 3, 4}}});
}

TEST(OpKernels, RecurrentCells) {
  CheckCase({"lstm_cell_state", {2, 3}, 90, 0, {{2, 12}, {2, 3}}});
  CheckCase({"lstm_cell_state", {2, 3}, 90, 0, {{2, 12}}});  // the first step: zero state
  CheckCase({"lstm_output", {2, 3}, 54, 0, {{2, 3}, {2, 12}}});
  for (const char* t : {"highway_tanh", "highway_relu", "highway_identity", "highway_sigmoid"})
    CheckCase({t, {2, 3}, 66, 0, {{2, 6}, {2, 3}}});
}

TEST(OpKernels, AttentionAndLosses) {
  CheckCase({"attention_scores", {2, 5}, 2.0 * 2 * 5 * 3, 0, {{2, 5, 3}, {2, 3}}});
  CheckCase({"additive_attention_scores", {2, 5}, 7.0 * 30, 3, {{2, 3}, {2, 5, 3}}});
  CheckCase({"attention_context", {2, 3}, 2.0 * 30, 0, {{2, 5}, {2, 5, 3}}});
  // Multi-head: a fused qkv tensor used as q and k; keys broadcast over the batch.
  CheckCase({"attention_scores", {2, 2, 3, 3}, 2.0 * 2 * 3 * 3 * 4, 0, {{2, 3, 12}}});
  CheckCase({"attention_scores", {2, 2, 3, 5}, 2.0 * 2 * 3 * 5 * 4, 0, {{2, 3, 12}, {1, 5, 4}}});
  CheckCase({"attention_context", {2, 3, 4}, 2.0 * 2 * 3 * 5 * 4, 0, {{2, 2, 3, 5}, {2, 5, 8}}});
  CheckCase({"softmax_cross_entropy", {2}, 6.0 * 2 * 3 * 5, 0, {{2, 3, 5}, {2, 3}}, {at::kDouble, at::kLong}, 5});
  // Sampled softmax: vocab 9, D 4, 3 sampled classes plus the true one.
  CheckCase({"sampled_softmax_loss", {2}, 2.0 * 3 * 4 * (2 * 4 + 6), 9 * 4 + 9, {{2, 3, 4}, {2, 3}},
             {at::kDouble, at::kInt}, 9});
}

TEST(OpKernels, UnreconstructableOpsAreRecognisedAsSuch) {
  Op op;
  op.type = "conv2d";
  op.shape = {1, 4, 5, 5};
  op.flops = 12345;  // inconsistent with the shapes and parameters
  OpDesc desc{&op, {{1, 3, 5, 5}}, {at::kDouble}, 4 * 27, Double()};
  EXPECT_EQ(MakeOpImpl(desc), nullptr);
  op.type = "frobnicate";
  EXPECT_EQ(MakeOpImpl(desc), nullptr);
  // The stand-in still produces the op's output shape and gradients of the inputs' shapes.
  std::unique_ptr<OpImpl> stand_in = MakeStandIn(desc, 1e5, 2e5);
  const at::Tensor x = SeededTensor({1, 3, 5, 5}, at::kDouble, at::kCPU, 1, 1.0, 1);
  const at::Tensor w = at::zeros({4 * 27}, Double());
  const at::Tensor y = stand_in->Forward({x}, w);
  EXPECT_EQ(y.sizes().vec(), op.shape);
  const Grads g = stand_in->Backward({x}, y, y, w, {1});
  EXPECT_EQ(g.inputs[0].sizes(), x.sizes());
  EXPECT_EQ(g.weights.numel(), 4 * 27);
}

}  // namespace
}  // namespace devplace::exec
