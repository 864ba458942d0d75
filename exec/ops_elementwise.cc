// Element-wise and shape ops: activations, arithmetic, sums, softmax, concatenation, stacking, reshapes, and the
// fused cell arithmetic of LSTM and ENAS highway cells.
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

enum class Act { kRelu, kTanh, kSigmoid, kGelu, kIdentity };

bool ParseAct(const std::string& name, Act* act) {
  if (name == "relu") *act = Act::kRelu;
  else if (name == "tanh") *act = Act::kTanh;
  else if (name == "sigmoid") *act = Act::kSigmoid;
  else if (name == "gelu") *act = Act::kGelu;
  else if (name == "identity") *act = Act::kIdentity;
  else return false;
  return true;
}

at::Tensor Apply(Act act, const at::Tensor& x) {
  switch (act) {
    case Act::kRelu: return at::relu(x);
    case Act::kTanh: return at::tanh(x);
    case Act::kSigmoid: return at::sigmoid(x);
    case Act::kGelu: return at::gelu(x);
    case Act::kIdentity: return x;
  }
  return x;
}

// Gradient of act at input x with output y.
at::Tensor ApplyBackward(Act act, const at::Tensor& grad, const at::Tensor& x, const at::Tensor& y) {
  switch (act) {
    case Act::kRelu: return at::threshold_backward(grad, y, 0);
    case Act::kTanh: return at::tanh_backward(grad, y);
    case Act::kSigmoid: return at::sigmoid_backward(grad, y);
    case Act::kGelu: return at::gelu_backward(grad, x);
    case Act::kIdentity: return grad;
  }
  return grad;
}

class UnaryImpl : public OpImpl {
 public:
  UnaryImpl(Act act, Shape out) : act_(act), out_(std::move(out)) {}
  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor&) const override {
    at::Tensor y = Apply(act_, in[0].reshape(out_));
    return act_ == Act::kIdentity ? y.clone() : y;
  }
  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor& out, const at::Tensor& grad, const at::Tensor&,
                 const std::vector<char>& need) const override {
    if (!need[0]) return Grads{{at::Tensor()}, {}};
    return Grads{{ApplyBackward(act_, grad, in[0].reshape(out_), out).reshape(in[0].sizes())}, {}};
  }

 private:
  Act act_;
  Shape out_;
};

// a + b, a - b or a * b with broadcasting; a single input (x op x, whose duplicate edge was merged) is used twice.
class BinaryImpl : public OpImpl {
 public:
  explicit BinaryImpl(char op) : op_(op) {}
  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor&) const override {
    const at::Tensor& a = in[0];
    const at::Tensor& b = in.size() > 1 ? in[1] : in[0];
    if (op_ == '+') return a + b;
    if (op_ == '-') return a - b;
    return a * b;
  }
  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor& grad, const at::Tensor&,
                 const std::vector<char>& need) const override {
    Grads g;
    g.inputs.resize(in.size());
    if (in.size() == 1) {
      if (need[0]) g.inputs[0] = op_ == '*' ? grad * in[0] * 2.0 : (op_ == '+' ? grad * 2.0 : at::zeros_like(in[0]));
      return g;
    }
    const at::Tensor& a = in[0];
    const at::Tensor& b = in[1];
    if (need[0]) g.inputs[0] = (op_ == '*' ? grad * b : grad).sum_to_size(a.sizes());
    if (need[1]) {
      at::Tensor gb = op_ == '*' ? grad * a : (op_ == '-' ? -grad : grad);
      g.inputs[1] = gb.sum_to_size(b.sizes());
    }
    return g;
  }

 private:
  char op_;
};

// Sum (or mean) of tensors of equal shape.
class SumImpl : public OpImpl {
 public:
  explicit SumImpl(bool mean) : mean_(mean) {}
  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor&) const override {
    at::Tensor y = in.size() == 1 ? in[0].clone() : in[0] + in[1];
    for (size_t i = 2; i < in.size(); ++i) y.add_(in[i]);
    if (mean_) y.div_(static_cast<double>(in.size()));
    return y;
  }
  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor& grad, const at::Tensor&,
                 const std::vector<char>& need) const override {
    at::Tensor g = mean_ ? grad / static_cast<double>(in.size()) : grad;
    Grads out;
    for (size_t i = 0; i < in.size(); ++i) out.inputs.push_back(need[i] ? g : at::Tensor());
    return out;
  }

 private:
  bool mean_;
};

class SoftmaxImpl : public OpImpl {
 public:
  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor&) const override {
    return at::_softmax(in[0], -1, false);
  }
  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor& out, const at::Tensor& grad, const at::Tensor&,
                 const std::vector<char>& need) const override {
    if (!need[0]) return Grads{{at::Tensor()}, {}};
    return Grads{{at::_softmax_backward_data(grad.contiguous(), out, -1, in[0].scalar_type())}, {}};
  }
};

// Concatenation along one axis; stacking along a new axis 1; reshapes (views forward, materialised backward).
class ShapeOpImpl : public OpImpl {
 public:
  enum Kind { kConcat, kStack, kReshape };
  ShapeOpImpl(Kind kind, int64_t axis, Shape out) : kind_(kind), axis_(axis), out_(std::move(out)) {}

  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor&) const override {
    if (kind_ == kConcat) return in.size() == 1 ? in[0].clone() : at::cat(in, axis_);
    if (kind_ == kStack) return at::stack(in, 1);
    return in[0].reshape(out_);
  }

  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor& grad, const at::Tensor&,
                 const std::vector<char>& need) const override {
    Grads g;
    g.inputs.resize(in.size());
    if (kind_ == kReshape) {
      if (need[0]) g.inputs[0] = grad.reshape(in[0].sizes());
      return g;
    }
    std::vector<at::Tensor> parts;
    if (kind_ == kStack) {
      parts = grad.unbind(1);
    } else {
      std::vector<int64_t> sizes;
      for (const at::Tensor& t : in) sizes.push_back(t.size(axis_));
      parts = grad.split_with_sizes(sizes, axis_);
    }
    for (size_t i = 0; i < in.size(); ++i)
      if (need[i]) g.inputs[i] = parts[i].contiguous();
    return g;
  }

 private:
  Kind kind_;
  int64_t axis_;
  Shape out_;
};

std::unique_ptr<OpImpl> MakeConcat(const OpDesc& d) {
  const Shape& out = d.op->shape;
  const auto rank = static_cast<int64_t>(out.size());
  for (int64_t axis = 0; axis < rank; ++axis) {
    int64_t total = 0;
    bool ok = !d.input_shapes.empty();
    for (const Shape& s : d.input_shapes) {
      if (static_cast<int64_t>(s.size()) != rank) return nullptr;
      for (int64_t i = 0; i < rank; ++i) ok = ok && (i == axis || s[i] == out[i]);
      total += s[axis];
    }
    if (ok && total == out[axis]) return std::make_unique<ShapeOpImpl>(ShapeOpImpl::kConcat, axis, out);
  }
  return nullptr;
}

std::unique_ptr<OpImpl> MakeStack(const OpDesc& d) {
  const Shape& out = d.op->shape;
  if (d.input_shapes.empty() || out.size() < 2) return nullptr;
  Shape expected = d.input_shapes[0];
  expected.insert(expected.begin() + 1, static_cast<int64_t>(d.input_shapes.size()));
  for (const Shape& s : d.input_shapes)
    if (s != d.input_shapes[0]) return nullptr;
  if (expected != out) return nullptr;
  return std::make_unique<ShapeOpImpl>(ShapeOpImpl::kStack, 1, out);
}

// One LSTM step's arithmetic on the gates [N, 4H] (i, f, g, o): the new cell state c = s(f) c' + s(i) tanh(g),
// or the new output h = s(o) tanh(c).
class LstmArithmeticImpl : public OpImpl {
 public:
  LstmArithmeticImpl(bool cell_state, int gates_slot, int state_slot)
      : cell_state_(cell_state), gates_slot_(gates_slot), state_slot_(state_slot) {}

  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor&) const override {
    std::vector<at::Tensor> gates = in[gates_slot_].chunk(4, 1);
    if (!cell_state_) return at::sigmoid(gates[3]) * at::tanh(in[state_slot_]);
    at::Tensor c = at::sigmoid(gates[0]) * at::tanh(gates[2]);
    if (state_slot_ >= 0) c.addcmul_(at::sigmoid(gates[1]), in[state_slot_]);
    return c;
  }

  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor& grad, const at::Tensor&,
                 const std::vector<char>& need) const override {
    std::vector<at::Tensor> gates = in[gates_slot_].chunk(4, 1);
    Grads g;
    g.inputs.resize(in.size());
    if (!cell_state_) {
      at::Tensor so = at::sigmoid(gates[3]), tc = at::tanh(in[state_slot_]);
      if (need[gates_slot_]) {
        at::Tensor zeros = at::zeros_like(gates[0]);
        g.inputs[gates_slot_] = at::cat({zeros, zeros, zeros, at::sigmoid_backward(grad * tc, so)}, 1);
      }
      if (need[state_slot_]) g.inputs[state_slot_] = at::tanh_backward(grad * so, tc);
      return g;
    }
    at::Tensor si = at::sigmoid(gates[0]), tg = at::tanh(gates[2]);
    at::Tensor sf = state_slot_ >= 0 ? at::sigmoid(gates[1]) : at::Tensor();
    if (need[gates_slot_]) {
      at::Tensor zeros = at::zeros_like(gates[0]);
      at::Tensor df = state_slot_ >= 0 ? at::sigmoid_backward(grad * in[state_slot_], sf) : zeros;
      g.inputs[gates_slot_] =
          at::cat({at::sigmoid_backward(grad * tg, si), df, at::tanh_backward(grad * si, tg), zeros}, 1);
    }
    if (state_slot_ >= 0 && need[state_slot_]) g.inputs[state_slot_] = grad * sf;
    return g;
  }

 private:
  bool cell_state_;
  int gates_slot_, state_slot_;
};

std::unique_ptr<OpImpl> MakeLstmArithmetic(const OpDesc& d, bool cell_state) {
  const Shape& out = d.op->shape;
  if (out.size() != 2) return nullptr;
  const Shape gates = {out[0], 4 * out[1]};
  int gates_slot = -1, state_slot = -1;
  for (int i = 0; i < static_cast<int>(d.input_shapes.size()); ++i) {
    if (d.input_shapes[i] == gates && gates_slot < 0) gates_slot = i;
    else if (d.input_shapes[i] == out && state_slot < 0) state_slot = i;
    else return nullptr;
  }
  if (gates_slot < 0 || (!cell_state && state_slot < 0)) return nullptr;
  return std::make_unique<LstmArithmeticImpl>(cell_state, gates_slot, state_slot);
}

// An ENAS highway node: c = sigmoid(pre[:, :h]), s = c * act(pre[:, h:]) + (1 - c) * x.
class HighwayImpl : public OpImpl {
 public:
  HighwayImpl(Act act, int64_t h, int pre_slot, int x_slot) : act_(act), h_(h), pre_slot_(pre_slot), x_slot_(x_slot) {}

  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor&) const override {
    const at::Tensor& x = in[x_slot_];
    at::Tensor c = at::sigmoid(in[pre_slot_].narrow(1, 0, h_));
    at::Tensor a = Apply(act_, in[pre_slot_].narrow(1, h_, h_));
    return x + c * (a - x);
  }

  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor& grad, const at::Tensor&,
                 const std::vector<char>& need) const override {
    const at::Tensor& x = in[x_slot_];
    at::Tensor pre_a = in[pre_slot_].narrow(1, h_, h_);
    at::Tensor c = at::sigmoid(in[pre_slot_].narrow(1, 0, h_));
    at::Tensor a = Apply(act_, pre_a);
    Grads g;
    g.inputs.resize(in.size());
    if (need[pre_slot_])
      g.inputs[pre_slot_] = at::cat({at::sigmoid_backward(grad * (a - x), c), ApplyBackward(act_, grad * c, pre_a, a)}, 1);
    if (need[x_slot_]) g.inputs[x_slot_] = grad * (1.0 - c);
    return g;
  }

 private:
  Act act_;
  int64_t h_;
  int pre_slot_, x_slot_;
};

std::unique_ptr<OpImpl> MakeHighway(const OpDesc& d, Act act) {
  const Shape& out = d.op->shape;
  if (out.size() != 2 || d.input_shapes.size() != 2) return nullptr;
  const Shape pre = {out[0], 2 * out[1]};
  for (int p = 0; p < 2; ++p)
    if (d.input_shapes[p] == pre && d.input_shapes[1 - p] == out)
      return std::make_unique<HighwayImpl>(act, out[1], p, 1 - p);
  return nullptr;
}

bool SameShapes(const OpDesc& d) {
  for (const Shape& s : d.input_shapes)
    if (s != d.op->shape) return false;
  return !d.input_shapes.empty();
}

}  // namespace

std::unique_ptr<OpImpl> MakeElementwiseImpl(const OpDesc& d) {
  const std::string& t = d.op->type;
  const Shape& out = d.op->shape;
  Act act;
  if (ParseAct(t, &act)) {
    if (d.input_shapes.size() != 1 || Numel(d.input_shapes[0]) != Numel(out)) return nullptr;
    return std::make_unique<UnaryImpl>(act, out);
  }
  if (t == "add" || t == "sub" || t == "mul") {
    if (d.input_shapes.empty() || d.input_shapes.size() > 2) return nullptr;
    try {
      const Shape& b = d.input_shapes.size() > 1 ? d.input_shapes[1] : d.input_shapes[0];
      if (at::infer_size(d.input_shapes[0], b) != out) return nullptr;
    } catch (const c10::Error&) {
      return nullptr;
    }
    return std::make_unique<BinaryImpl>(t == "add" ? '+' : (t == "sub" ? '-' : '*'));
  }
  if (t == "add_n" || t == "mean_n") return SameShapes(d) ? std::make_unique<SumImpl>(t == "mean_n") : nullptr;
  if (t == "softmax") return SameShapes(d) && d.input_shapes.size() == 1 ? std::make_unique<SoftmaxImpl>() : nullptr;
  if (t == "concat") return MakeConcat(d);
  if (t == "stack") return MakeStack(d);
  if (t == "reshape" || t == "flatten") {
    if (d.input_shapes.size() != 1 || Numel(d.input_shapes[0]) != Numel(out)) return nullptr;
    return std::make_unique<ShapeOpImpl>(ShapeOpImpl::kReshape, 0, out);
  }
  if (t == "lstm_cell_state") return MakeLstmArithmetic(d, true);
  if (t == "lstm_output") return MakeLstmArithmetic(d, false);
  if (t.rfind("highway_", 0) == 0 && ParseAct(t.substr(8), &act)) return MakeHighway(d, act);
  return nullptr;
}

}  // namespace devplace::exec
