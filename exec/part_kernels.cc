// The part kernels of partitioned execution, the assembly of their inputs, and the weights' life between steps.
#include <algorithm>

#include "exec/op_impl.h"
#include "exec/part_need.h"
#include "exec/part_plan.h"
#include "exec/tensor_util.h"

namespace devplace::exec {

namespace {

class InputPart : public PartKernel {
 public:
  explicit InputPart(at::Tensor data) : data_(std::move(data)) {}
  void Run(const std::vector<at::Tensor>&, std::vector<at::Tensor>& out) override { out[0] = data_; }

 private:
  at::Tensor data_;
};

class ForwardPart : public PartKernel {
 public:
  ForwardPart(std::shared_ptr<const OpImpl> impl, const PartWeights* w) : impl_(std::move(impl)), w_(w) {}
  void Run(const std::vector<at::Tensor>& in, std::vector<at::Tensor>& out) override {
    out[0] = impl_->Forward(in, w_ ? w_->w : at::Tensor());
  }

 private:
  std::shared_ptr<const OpImpl> impl_;
  const PartWeights* w_;
};

class BackwardPart : public PartKernel {
 public:
  BackwardPart(std::shared_ptr<const OpImpl> impl, const PartWeights* w, BackwardRoles roles, const at::Device& device)
      : impl_(std::move(impl)), w_(w), r_(std::move(roles)) {
    for (size_t s = 0; s < r_.slot_shapes.size(); ++s)
      placeholders_.push_back(at::zeros(r_.slot_shapes[s], at::TensorOptions().dtype(r_.slot_types[s]).device(device)));
    seed_ = at::ones(r_.out_shape, at::TensorOptions().dtype(at::kFloat).device(device));
    saved_output_ = at::zeros(r_.out_shape, at::TensorOptions().dtype(at::kFloat).device(device));
  }

  void Run(const std::vector<at::Tensor>& in, std::vector<at::Tensor>& out) override {
    std::vector<at::Tensor> saved = placeholders_;
    at::Tensor y = saved_output_, grad;
    for (size_t i = 0; i < in.size(); ++i) {
      const int role = r_.role[i];
      if (role == BackwardRoles::kSavedOutput) y = in[i];
      else if (role == BackwardRoles::kGradient) grad = grad.defined() ? grad + FitTo(in[i], r_.out_shape) : FitTo(in[i], r_.out_shape);
      else saved[role] = in[i];
    }
    if (!grad.defined()) grad = seed_;  // a part of an op nothing consumes: the gradient of a summed output
    Grads g = impl_->Backward(saved, y, grad, w_ ? w_->w : at::Tensor(), r_.need);
    g.inputs.resize(placeholders_.size());
    for (size_t s = 0; s < placeholders_.size(); ++s)
      out[s] = r_.need[s] && g.inputs[s].defined() ? g.inputs[s] : placeholders_[s];
    if (out.size() > placeholders_.size() && g.weights.defined()) out.back() = g.weights.contiguous().clone();
    else if (out.size() > placeholders_.size() && w_) out.back() = at::zeros_like(w_->w);
  }

 private:
  std::shared_ptr<const OpImpl> impl_;
  const PartWeights* w_;
  BackwardRoles r_;
  std::vector<at::Tensor> placeholders_;
  at::Tensor seed_, saved_output_;
};

class UpdatePart : public PartKernel {
 public:
  explicit UpdatePart(UpdateRange* range) : r_(range) {}
  void Run(const std::vector<at::Tensor>& in, std::vector<at::Tensor>& out) override {
    at::Tensor g = in.empty() ? at::zeros_like(r_->w) : in[0].reshape({-1});
    AdamStep(g, r_->w, r_->m, r_->v, r_->step, &r_->next_w, &r_->next_m, &r_->next_v);
    out[0] = r_->next_w;
  }

 private:
  UpdateRange* r_;
};

at::Tensor Assemble(const Assembly& a, const std::vector<at::Tensor>& slots, const at::Device& device) {
  at::Tensor t;
  if (!a.scatter.empty()) {
    // One gradient already in the flat weights' order (a replicated weight's) that covers the range: the range
    // itself, a view, rather than a pass over all the weights for each update part.
    if (a.scatter.size() == 1 && !a.scatter[0].second.defined()) {
      const at::Tensor g = slots[a.scatter[0].first].reshape({-1});
      if (a.lo + a.len <= g.numel()) return g.narrow(0, a.lo, a.len);
    }
    at::Tensor full = at::zeros({a.full}, at::TensorOptions().dtype(at::kFloat).device(device));
    for (const auto& [slot, index] : a.scatter) {
      const at::Tensor g = slots[slot].reshape({-1});
      if (index.defined()) full.index_copy_(0, index, g);
      else full.narrow(0, 0, g.numel()).copy_(g);
    }
    return full.narrow(0, a.lo, a.len);
  }
  const bool whole = a.pieces.size() == 1 && !a.sum && a.pieces[0].size == a.shape;
  if (whole) {
    t = NarrowBox(slots[a.pieces[0].slot], a.pieces[0].src_lo, a.pieces[0].size).contiguous();
  } else {
    t = at::zeros(a.shape, at::TensorOptions().dtype(a.type).device(device));
    for (const Piece& p : a.pieces) {
      at::Tensor into = NarrowBox(t, p.dst_lo, p.size);
      const at::Tensor from = NarrowBox(slots[p.slot], p.src_lo, p.size);
      if (a.sum) into.add_(from);
      else into.copy_(from);
    }
  }
  if (!a.cut) return t;
  const at::Tensor cut = ForEdge(t, *a.cut);
  return a.cut_len < 0 ? cut : cut.narrow(0, a.cut_lo, a.cut_len);
}

}  // namespace

std::unique_ptr<PartKernel> MakePartInput(at::Tensor data) { return std::make_unique<InputPart>(std::move(data)); }

std::unique_ptr<PartKernel> MakePartForward(std::shared_ptr<const OpImpl> impl, const PartWeights* weights) {
  return std::make_unique<ForwardPart>(std::move(impl), weights);
}

std::unique_ptr<PartKernel> MakePartBackward(std::shared_ptr<const OpImpl> impl, const PartWeights* weights,
                                             BackwardRoles roles, const at::Device& device) {
  return std::make_unique<BackwardPart>(std::move(impl), weights, std::move(roles), device);
}

std::unique_ptr<PartKernel> MakePartUpdate(UpdateRange* range) { return std::make_unique<UpdatePart>(range); }

void PartPlan::RunUnit(int32_t unit, std::vector<at::Tensor>& slots) const {
  const Unit& u = units[unit];
  std::vector<at::Tensor> in;
  in.reserve(u.inputs.size());
  for (const Assembly& a : u.inputs) in.push_back(Assemble(a, slots, u.torch_device));
  std::vector<at::Tensor> out(u.out_slots.size());
  u.kernel->Run(in, out);
  for (size_t j = 0; j < out.size(); ++j) slots[u.out_slots[j]] = std::move(out[j]);
}

std::vector<at::Tensor> PartPlan::SyntheticInputs(int32_t unit, uint64_t seed) const {
  const Unit& u = units[unit];
  std::vector<at::Tensor> in;
  for (size_t i = 0; i < u.inputs.size(); ++i) {
    const Assembly& a = u.inputs[i];
    const std::vector<int64_t> shape = !a.scatter.empty() ? std::vector<int64_t>{a.len} : (a.cut ? CutShape(*a.cut, a.cut_len) : a.shape);
    in.push_back(SeededTensor(shape, a.scatter.empty() ? a.type : at::kFloat, u.torch_device,
                              MixSeed(seed, std::to_string(unit) + "/" + std::to_string(i)), 1.0, a.index_bound));
  }
  return in;
}

void PartPlan::CommitUpdates() {
  bool any = false;
  for (auto& r : updates) {
    if (!r->next_w.defined()) continue;
    full_weights[r->owner].narrow(0, r->lo, r->len).copy_(r->next_w);
    r->w = std::move(r->next_w);
    r->m = std::move(r->next_m);
    r->v = std::move(r->next_v);
    r->next_w = r->next_m = r->next_v = at::Tensor();
    ++r->step;
    any = true;
  }
  if (!any) return;
  for (auto& p : weights) {
    const at::Tensor& full = full_weights[p->owner];
    p->w.copy_(p->index.defined() ? full.index_select(0, p->index) : full);
    p->KeepPiece();
  }
}

void PartWeights::KeepPiece() {
  if (piece_len < 0) return;
  const at::Tensor flat = w.view({-1});
  flat.narrow(0, 0, piece_lo).zero_();
  flat.narrow(0, piece_lo + piece_len, flat.numel() - piece_lo - piece_len).zero_();
}

std::vector<float> PartPlan::Value(const Graph& graph, const Strategy& strategy, OpId op,
                                   const std::vector<at::Tensor>& slots) const {
  const Op& o = graph.op(op);
  const int32_t parts = strategy.configs[op].num_parts();
  at::Tensor value;
  if (o.role == OpRole::kForward) {
    value = at::zeros(o.shape, at::kFloat);
    for (int32_t p = 0; p < parts; ++p) {
      const Unit& u = units[unit_of[op][p]];
      std::vector<int64_t> lo, dst, size;
      for (int32_t a = 0; a < u.owned.rank; ++a) {
        lo.push_back(u.owned.lo[a] - u.out_box.lo[a]);
        dst.push_back(u.owned.lo[a]);
        size.push_back(u.owned.hi[a] - u.owned.lo[a]);
      }
      NarrowBox(value, dst, size).copy_(NarrowBox(slots[u.out_slots[0]].to(at::kCPU).to(at::kFloat), lo, size));
    }
  } else if (o.role == OpRole::kBackward) {
    const Unit& first = units[unit_of[op][0]];
    if (first.weight_port < 0 || !UpdateReads(graph, op)) return {};
    int64_t total = 0;
    for (int32_t p = 0; p < parts; ++p) {
      const Unit& u = units[unit_of[op][p]];
      total = std::max(total, u.grad_index.defined() ? u.grad_index.max().item<int64_t>() + 1
                                                     : slots[u.out_slots[u.weight_port]].numel());
    }
    value = at::zeros({total}, at::kFloat);
    const PartLayout layout = Layout(o, strategy.configs[op]);
    for (int32_t p = parts - 1; p >= 0; --p) {  // the lowest part's last: a pipeline accumulates micro-batches there
      const Unit& u = units[unit_of[op][p]];
      const at::Tensor g = slots[u.out_slots[u.weight_port]].to(at::kCPU).reshape({-1});
      if (scattered_gradient[op]) {  // ZeRO-3: replica i holds the sum of chunk i
        const int64_t n = g.numel(), i = ReplicaIndex(o, strategy.configs[op], p), r = layout.replicas;
        const int64_t lo = n * i / r, len = n * (i + 1) / r - lo;
        value.narrow(0, lo, len).copy_(g.narrow(0, lo, len));
        continue;
      }
      if (u.grad_index.defined()) value.index_copy_(0, u.grad_index.to(at::kCPU), g);
      else value.copy_(g);
    }
  } else {
    const OpId owner = graph.forward_op_of(op);
    if (owner < 0 || !full_weights[owner].defined()) return {};
    value = full_weights[owner].clone();
    for (const auto& r : updates)
      if (r->owner == owner && r->next_w.defined()) value.narrow(0, r->lo, r->len).copy_(r->next_w);
  }
  value = value.contiguous();
  return std::vector<float>(value.data_ptr<float>(), value.data_ptr<float>() + value.numel());
}

}  // namespace devplace::exec
