#include "exec/kernels.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <utility>

#include "core/check.h"
#include "exec/backend.h"
#include "exec/op_impl.h"
#include "exec/tensor_util.h"

namespace devplace::exec {

namespace {

// Adam (Kingma and Ba) with its usual settings.
constexpr double kLearningRate = 1e-3, kBeta1 = 0.9, kBeta2 = 0.999, kAdamEps = 1e-8;

using Shape = std::vector<int64_t>;

at::TensorOptions FloatOn(const at::Device& device) { return at::TensorOptions().dtype(at::kFloat).device(device); }

std::vector<EdgeTensor> OutEdges(const Graph& graph, const Plan& plan, OpId op) {
  std::vector<EdgeTensor> out;
  for (int32_t e : graph.out_edges(op)) out.push_back(plan.edges[e]);
  return out;
}

// A graph input or constant: seeded data made once.
class InputKernel : public Kernel {
 public:
  InputKernel(at::Tensor data, std::vector<EdgeTensor> out) : data_(std::move(data)), out_(std::move(out)) {
    expected_ = {data_.sizes().vec()};
  }
  void Run(KernelIo& io) override {
    for (size_t j = 0; j < out_.size(); ++j) io.outputs[j] = ForEdge(data_, out_[j]);
    io.produced = {data_};
  }

 private:
  at::Tensor data_;
  std::vector<EdgeTensor> out_;
};

class ForwardKernel : public Kernel {
 public:
  ForwardKernel(std::shared_ptr<const OpImpl> impl, ParamSlot* slot, const Op& op, std::vector<EdgeTensor> out,
                bool stand_in)
      : impl_(std::move(impl)), slot_(slot), out_(std::move(out)) {
    expected_ = {op.shape};
    stand_in_ = stand_in;
  }
  void Run(KernelIo& io) override {
    at::Tensor y = impl_->Forward(io.inputs, slot_ ? slot_->weights : at::Tensor());
    for (size_t j = 0; j < out_.size(); ++j) io.outputs[j] = ForEdge(y, out_[j]);
    io.produced = {y};
  }

 private:
  std::shared_ptr<const OpImpl> impl_;
  ParamSlot* slot_;
  std::vector<EdgeTensor> out_;
};

// The backward op of forward op f. Its in-edges carry f's saved output, f's saved inputs and the gradients of f's
// output from the backward ops of f's consumers (summed in in-edge order, so the sum does not depend on arrival
// order); its out-edges carry the gradients of f's inputs and f's weight gradient.
class BackwardKernel : public Kernel {
 public:
  enum class In { kSavedOutput, kSavedInput, kGradient };
  enum class Out { kInputGrad, kWeightGrad, kPlaceholder };

  BackwardKernel(std::shared_ptr<const OpImpl> impl, ParamSlot* slot, const Graph& graph, const Plan& plan,
                 OpId backward, OpId forward, const at::Device& device, bool stand_in)
      : impl_(std::move(impl)), slot_(slot) {
    stand_in_ = stand_in;
    const Op& f = graph.op(forward);
    out_shape_ = f.shape;
    std::vector<OpId> slot_src;
    for (int32_t e : graph.in_edges(forward)) {
      slot_src.push_back(graph.edge(e).src);
      placeholders_.push_back(at::zeros(plan.edges[e].shape, at::TensorOptions().dtype(plan.edges[e].type).device(device)));
      expected_.push_back(plan.edges[e].shape);
    }
    auto slot_of = [&](OpId src) {
      auto it = std::find(slot_src.begin(), slot_src.end(), src);
      return it == slot_src.end() ? -1 : static_cast<int>(it - slot_src.begin());
    };
    saved_output_ = at::zeros(f.shape, at::TensorOptions().dtype(TorchType(f.dtype, device)).device(device));
    seed_grad_ = at::ones(f.shape, FloatOn(device));
    for (int32_t e : graph.in_edges(backward)) {
      const OpId src = graph.edge(e).src;
      const Op& s = graph.op(src);
      if (src == forward) {
        in_.push_back({In::kSavedOutput, -1});
      } else if (s.role == OpRole::kForward && slot_of(src) >= 0) {
        in_.push_back({In::kSavedInput, slot_of(src)});
      } else {
        in_.push_back({In::kGradient, -1});
      }
    }
    need_.assign(slot_src.size(), 0);
    for (int32_t e : graph.out_edges(backward)) {
      const Op& dst = graph.op(graph.edge(e).dst);
      const OpId u = dst.role == OpRole::kBackward ? graph.forward_op_of(graph.edge(e).dst) : -1;
      const int s = u >= 0 ? slot_of(u) : -1;
      if (s >= 0) {
        out_.push_back({Out::kInputGrad, s});
        need_[s] = 1;
      } else if (dst.role == OpRole::kUpdate && slot_) {
        out_.push_back({Out::kWeightGrad, -1});
      } else {
        out_.push_back({Out::kPlaceholder, -1});
      }
      out_edges_.push_back(plan.edges[e]);
      out_placeholders_.push_back(
          at::zeros(plan.edges[e].shape, at::TensorOptions().dtype(plan.edges[e].type).device(device)));
    }
    if (slot_) expected_.push_back({slot_->weights.numel()});
  }

  void Run(KernelIo& io) override {
    std::vector<at::Tensor> saved = placeholders_;
    at::Tensor out = saved_output_, grad;
    for (size_t i = 0; i < io.inputs.size(); ++i) {
      const at::Tensor& x = io.inputs[i];
      switch (in_[i].first) {
        case In::kSavedOutput: out = x; break;
        case In::kSavedInput: saved[in_[i].second] = x; break;
        case In::kGradient: grad = grad.defined() ? grad + FitTo(x, out_shape_) : FitTo(x, out_shape_); break;
      }
    }
    if (!grad.defined()) grad = seed_grad_;  // an op nothing consumes: the gradient of a summed output
    Grads g = impl_->Backward(saved, out, grad, slot_ ? slot_->weights : at::Tensor(), need_);
    g.inputs.resize(need_.size());
    for (size_t s = 0; s < need_.size(); ++s)
      if (!need_[s]) g.inputs[s] = at::Tensor();
    for (size_t j = 0; j < out_.size(); ++j) {
      at::Tensor t;
      if (out_[j].first == Out::kInputGrad) t = g.inputs[out_[j].second];
      if (out_[j].first == Out::kWeightGrad) t = g.weights;
      io.outputs[j] = t.defined() ? ForEdge(t, out_edges_[j]) : out_placeholders_[j];
    }
    io.produced = std::move(g.inputs);
    if (slot_) io.produced.push_back(g.weights);
  }

 private:
  std::shared_ptr<const OpImpl> impl_;
  ParamSlot* slot_;
  Shape out_shape_;
  std::vector<std::pair<In, int>> in_;
  std::vector<std::pair<Out, int>> out_;
  std::vector<EdgeTensor> out_edges_;
  std::vector<char> need_;
  std::vector<at::Tensor> placeholders_, out_placeholders_;
  at::Tensor saved_output_, seed_grad_;
};

// Adam on the owner's flat weights: m' = b1 m + (1 - b1) g, v' = b2 v + (1 - b2) g^2,
// w' = w - lr_t m' / (sqrt(v') + eps) with the bias-corrected step size lr_t.
class UpdateKernel : public Kernel {
 public:
  UpdateKernel(ParamSlot* slot, std::vector<EdgeTensor> out) : slot_(slot), out_(std::move(out)) {
    expected_ = {{slot_->weights.numel()}};
  }
  void Run(KernelIo& io) override {
    const int64_t n = slot_->weights.numel();
    at::Tensor g;
    for (const at::Tensor& x : io.inputs) g = g.defined() ? g + FitTo(x, {n}) : FitTo(x, {n});
    if (!g.defined()) g = at::zeros_like(slot_->weights);
    AdamStep(g, slot_->weights, slot_->m, slot_->v, slot_->step, &slot_->next_weights, &slot_->next_m,
             &slot_->next_v);
    for (size_t j = 0; j < out_.size(); ++j) io.outputs[j] = ForEdge(slot_->next_weights, out_[j]);
    io.produced = {slot_->next_weights};
  }

 private:
  ParamSlot* slot_;
  std::vector<EdgeTensor> out_;
};

// An op outside the forward/backward/update pattern (e.g. a backward op without its forward op): a stand-in
// producing its output, sent on every out-edge (zeros where an edge wants a different size).
class GenericKernel : public Kernel {
 public:
  GenericKernel(std::unique_ptr<OpImpl> impl, const Op& op, std::vector<EdgeTensor> out, const at::Device& device)
      : impl_(std::move(impl)), out_(std::move(out)) {
    expected_ = {op.shape};
    stand_in_ = true;
    for (const EdgeTensor& e : out_)
      placeholders_.push_back(at::zeros(e.shape, at::TensorOptions().dtype(e.type).device(device)));
  }
  void Run(KernelIo& io) override {
    at::Tensor y = impl_->Forward(io.inputs, at::Tensor());
    for (size_t j = 0; j < out_.size(); ++j) {
      int64_t n = 1;
      for (int64_t d : out_[j].shape) n *= d;
      io.outputs[j] = (y.numel() >= n && y.scalar_type() == out_[j].type) ? ForEdge(y, out_[j]) : placeholders_[j];
    }
    io.produced = {y};
  }

 private:
  std::unique_ptr<OpImpl> impl_;
  std::vector<EdgeTensor> out_;
  std::vector<at::Tensor> placeholders_;
};

// The tensor an edge carries before any cut to its byte count: the producer's output, a gradient of the
// consumer's forward op's output, or a weight gradient.
EdgeTensor NaturalEdge(const Graph& graph, const Edge& e, const std::vector<at::Device>& device_of_op,
                       int64_t* element_bytes) {
  const Op& src = graph.op(e.src);
  const Op& dst = graph.op(e.dst);
  const at::Device& device = device_of_op[e.src];
  EdgeTensor t{src.shape, TorchType(src.dtype, device)};
  *element_bytes = DTypeBytes(src.dtype);
  if (src.role == OpRole::kBackward) {
    const OpId u = dst.role == OpRole::kBackward ? graph.forward_op_of(e.dst) : -1;
    const OpId v = graph.forward_op_of(e.src);
    if (u >= 0) {
      t.shape = graph.op(u).shape;
      *element_bytes = DTypeBytes(graph.op(u).dtype);
    } else if (dst.role == OpRole::kUpdate && v >= 0 && graph.op(v).param_bytes > 0) {
      t.shape = {std::max<int64_t>(1, graph.op(v).param_bytes / DTypeBytes(graph.op(v).dtype))};
    }
    if (!at::isFloatingType(t.type)) t.type = at::kFloat;  // gradients are real-valued
  }
  return t;
}

}  // namespace

void AdamStep(const at::Tensor& g, const at::Tensor& w, const at::Tensor& m, const at::Tensor& v, int64_t step,
              at::Tensor* next_w, at::Tensor* next_m, at::Tensor* next_v) {
  const double t = static_cast<double>(step + 1);
  const double lr = kLearningRate * std::sqrt(1.0 - std::pow(kBeta2, t)) / (1.0 - std::pow(kBeta1, t));
  *next_m = at::lerp(g, m, kBeta1);
  *next_v = at::lerp(g * g, v, kBeta2);
  *next_w = at::addcdiv(w, *next_m, next_v->sqrt().add_(kAdamEps), -lr);
}

void ParamSlot::Commit() {
  if (!next_weights.defined()) return;
  weights = std::move(next_weights);
  m = std::move(next_m);
  v = std::move(next_v);
  next_weights = next_m = next_v = at::Tensor();
  ++step;
}

void Plan::CommitUpdates() {
  for (auto& slot : params)
    if (slot) slot->Commit();
}

at::Tensor ForEdge(const at::Tensor& t, const EdgeTensor& edge) {
  int64_t n = 1;
  for (int64_t d : edge.shape) n *= d;
  if (t.numel() == n) return t;
  return t.reshape({-1}).narrow(0, 0, std::min(n, t.numel()));
}

Expected<Plan> BuildPlan(const Graph& graph, const std::vector<at::Device>& device_of_op, uint64_t seed) {
  const int32_t n = graph.num_ops();
  DEVPLACE_CHECK(static_cast<int32_t>(device_of_op.size()) == n, "one device per op");
  Plan plan;
  plan.kernels.resize(n);
  plan.params.resize(n);

  // What every edge carries.
  for (const Edge& e : graph.edges()) {
    int64_t element_bytes = 4;
    EdgeTensor t = NaturalEdge(graph, e, device_of_op, &element_bytes);
    int64_t natural = element_bytes;
    for (int64_t d : t.shape) natural *= d;
    if (e.bytes < natural) t.shape = {std::max<int64_t>(1, e.bytes / element_bytes)};
    t.index_bound = 0;
    plan.edges.push_back(std::move(t));
  }

  // Weight owners: an op with parameters owns them; an op with none that shares a colocation group with an op of
  // its type that has some uses that op's weights (LayerBuilder's shared weights, e.g. an unrolled RNN's steps).
  std::vector<OpId> owner(n, -1), grad_of(n, -1);
  std::unordered_map<std::string, std::vector<OpId>> holders;
  for (OpId i = 0; i < n; ++i) {
    const Op& op = graph.op(i);
    if (op.role == OpRole::kForward && op.param_bytes > 0) {
      owner[i] = i;
      if (!op.colocation.empty()) holders[op.colocation].push_back(i);
    }
    if (op.role == OpRole::kBackward) {
      const OpId f = graph.forward_op_of(i);
      if (f >= 0 && graph.op(f).role == OpRole::kForward && grad_of[f] < 0) grad_of[f] = i;
    }
  }
  for (OpId i = 0; i < n; ++i) {
    const Op& op = graph.op(i);
    if (op.role != OpRole::kForward || op.param_bytes > 0 || op.colocation.empty()) continue;
    auto it = holders.find(op.colocation);
    if (it == holders.end()) continue;
    for (OpId h : it->second)
      if (graph.op(h).type == op.type) {
        owner[i] = h;
        break;
      }
    if (owner[i] >= 0 && device_of_op[owner[i]] != device_of_op[i])
      return Error{"op '" + op.name + "' shares the weights of '" + graph.op(owner[i]).name +
                   "' but runs on another device (colocated ops must share a device)"};
  }
  auto param_elements = [&](OpId f) {
    if (owner[f] < 0) return int64_t{0};
    const Op& o = graph.op(owner[f]);
    return std::max<int64_t>(1, o.param_bytes / DTypeBytes(o.dtype));
  };

  // The reconstructed computation of every forward op that has inputs or weights.
  std::vector<std::shared_ptr<const OpImpl>> impl(n);
  std::vector<char> stand_in(n, 0);
  for (OpId i = 0; i < n; ++i) {
    const Op& op = graph.op(i);
    if (op.role != OpRole::kForward || (graph.in_edges(i).empty() && op.param_bytes == 0)) continue;
    OpDesc desc;
    desc.op = &op;
    for (int32_t e : graph.in_edges(i)) {
      desc.input_shapes.push_back(plan.edges[e].shape);
      desc.input_types.push_back(plan.edges[e].type);
    }
    desc.param_elements = param_elements(i);
    desc.options = FloatOn(device_of_op[i]);
    std::unique_ptr<OpImpl> made = MakeOpImpl(desc);
    if (!made) {
      made = MakeStandIn(desc, op.flops, grad_of[i] >= 0 ? graph.op(grad_of[i]).flops : 0.0);
      stand_in[i] = 1;
    }
    impl[i] = std::move(made);
  }

  // Integer inputs get values every consumer accepts (token ids below the vocabulary, labels below the classes).
  for (int32_t id = 0; id < graph.num_edges(); ++id) {
    const Edge& e = graph.edge(id);
    const Op& dst = graph.op(e.dst);
    const OpId f = dst.role == OpRole::kForward ? e.dst : (dst.role == OpRole::kBackward ? graph.forward_op_of(e.dst) : -1);
    if (f < 0 || !impl[f]) continue;
    const auto in = graph.in_edges(f);
    for (size_t s = 0; s < in.size(); ++s) {
      if (graph.edge(in[s]).src != e.src) continue;
      const int64_t bound = impl[f]->IndexBound(static_cast<int>(s));
      if (bound > 0) plan.edges[id].index_bound = plan.edges[id].index_bound > 0 ? std::min(plan.edges[id].index_bound, bound) : bound;
    }
  }
  for (EdgeTensor& t : plan.edges)
    if (t.index_bound <= 0) t.index_bound = 2;

  plan.owner = owner;
  plan.impls = impl;
  plan.stand_in = stand_in;

  // Weights, initialised by their owner's computation.
  for (OpId i = 0; i < n; ++i) {
    if (owner[i] != i) continue;
    auto slot = std::make_unique<ParamSlot>();
    const at::TensorOptions options = FloatOn(device_of_op[i]);
    slot->weights = at::empty({param_elements(i)}, options);
    if (impl[i]) impl[i]->InitWeights(slot->weights, MixSeed(seed, graph.op(i).name + "/weights"));
    else slot->weights.copy_(SeededTensor({param_elements(i)}, at::kFloat, device_of_op[i], MixSeed(seed, graph.op(i).name), 0.1, 1));
    slot->m = at::zeros_like(slot->weights);
    slot->v = at::zeros_like(slot->weights);
    plan.params[i] = std::move(slot);
  }

  for (OpId i = 0; i < n; ++i) {
    const Op& op = graph.op(i);
    const at::Device& device = device_of_op[i];
    std::vector<EdgeTensor> out = OutEdges(graph, plan, i);
    ParamSlot* slot = nullptr;
    if (op.role == OpRole::kForward) {
      if (owner[i] >= 0) slot = plan.params[owner[i]].get();
      if (impl[i]) {
        plan.kernels[i] = std::make_unique<ForwardKernel>(impl[i], slot, op, std::move(out), stand_in[i] != 0);
        continue;
      }
      int64_t bound = 0;
      for (int32_t e : graph.out_edges(i))
        if (!at::isFloatingType(plan.edges[e].type)) bound = bound > 0 ? std::min(bound, plan.edges[e].index_bound) : plan.edges[e].index_bound;
      at::Tensor data = SeededTensor(op.shape, TorchType(op.dtype, device), device, MixSeed(seed, op.name), 1.0,
                                     bound > 0 ? bound : 2);
      plan.kernels[i] = std::make_unique<InputKernel>(std::move(data), std::move(out));
      continue;
    }
    const OpId f = graph.forward_op_of(i);
    const bool has_forward = f >= 0 && graph.op(f).role == OpRole::kForward;
    if (op.role == OpRole::kBackward && has_forward && impl[f]) {
      if (owner[f] >= 0) slot = plan.params[owner[f]].get();
      if (slot && slot->weights.device() != device)
        return Error{"op '" + op.name + "' runs on another device than the weights of '" + graph.op(owner[f]).name +
                     "' (colocated ops must share a device)"};
      plan.kernels[i] =
          std::make_unique<BackwardKernel>(impl[f], slot, graph, plan, i, f, device, stand_in[f] != 0);
      continue;
    }
    if (op.role == OpRole::kUpdate && has_forward && owner[f] == f) {
      slot = plan.params[f].get();
      if (slot->weights.device() != device)
        return Error{"op '" + op.name + "' runs on another device than the weights of '" + graph.op(f).name +
                     "' (colocated ops must share a device)"};
      plan.kernels[i] = std::make_unique<UpdateKernel>(slot, std::move(out));
      continue;
    }
    OpDesc desc;
    desc.op = &op;
    for (int32_t e : graph.in_edges(i)) {
      desc.input_shapes.push_back(plan.edges[e].shape);
      desc.input_types.push_back(plan.edges[e].type);
    }
    desc.options = FloatOn(device);
    plan.kernels[i] = std::make_unique<GenericKernel>(MakeStandIn(desc, op.flops, 0.0), op, std::move(out), device);
  }
  return plan;
}

std::vector<at::Tensor> SyntheticInputs(const Graph& graph, const Plan& plan, OpId op, const at::Device& device,
                                        uint64_t seed) {
  std::vector<at::Tensor> inputs;
  for (int32_t e : graph.in_edges(op)) {
    const EdgeTensor& t = plan.edges[e];
    inputs.push_back(SeededTensor(t.shape, t.type, device, MixSeed(seed, std::to_string(e)), 1.0, t.index_bound));
  }
  return inputs;
}

}  // namespace devplace::exec
