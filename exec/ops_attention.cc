// Attention (dot-product and additive scores, multi-head scores and context) and the losses (softmax cross-entropy,
// sampled softmax).
#include <cmath>

#include "exec/op_impl.h"
#include "exec/tensor_util.h"

namespace devplace::exec {

namespace {

using Shape = std::vector<int64_t>;

bool Near(double a, double b) { return std::abs(a - b) <= 1e-6 * std::max(1.0, std::abs(b)); }

// `g` [..., width] zero-padded on the last axis to `full` (the gradient of a slice of a fused projection).
at::Tensor PadLast(const at::Tensor& g, int64_t full) {
  const int64_t width = g.size(-1);
  return full > width ? at::constant_pad_nd(g, {0, full - width}) : g.contiguous();
}

// One query per example against S positions: [N, H] . [N, S, H] -> [N, S].
class DotScoresImpl : public OpImpl {
 public:
  DotScoresImpl(int q, int k) : q_(q), k_(k) {}
  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor&) const override {
    return at::bmm(in[k_], in[q_].unsqueeze(2)).squeeze(2);
  }
  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor& grad, const at::Tensor&,
                 const std::vector<char>& need) const override {
    Grads g;
    g.inputs.resize(2);
    if (need[q_]) g.inputs[q_] = at::bmm(grad.unsqueeze(1), in[k_]).squeeze(1);
    if (need[k_]) g.inputs[k_] = grad.unsqueeze(2) * in[q_].unsqueeze(1);
    return g;
  }

 private:
  int q_, k_;
};

// Multi-head scores: q [N, S, >= W] x k [N or 1, M, >= W] -> [N, heads, S, M] over the first W features.
// q and k may be one tensor (a fused projection whose duplicate edge was merged): q = k = in[0].
class MultiHeadScoresImpl : public OpImpl {
 public:
  MultiHeadScoresImpl(int q, int k, int64_t heads, int64_t width) : q_(q), k_(k), heads_(heads), width_(width) {}

  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor&) const override {
    return at::matmul(Heads(in[q_]), Heads(in[k_]).transpose(-1, -2));
  }

  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor& grad, const at::Tensor&,
                 const std::vector<char>& need) const override {
    const at::Tensor qh = Heads(in[q_]), kh = Heads(in[k_]);
    Grads g;
    g.inputs.resize(in.size());
    at::Tensor dq, dk;
    if (need[q_]) dq = Merge(at::matmul(grad, kh), in[q_]);
    if (need[k_]) {
      at::Tensor dkh = at::matmul(grad.transpose(-1, -2), qh);  // [N, heads, M, d]
      if (kh.size(0) == 1 && grad.size(0) > 1) dkh = dkh.sum(0, true);
      dk = Merge(dkh, in[k_]);
    }
    if (q_ == k_) {
      if (need[q_]) g.inputs[q_] = dq + dk;
    } else {
      g.inputs[q_] = dq;
      g.inputs[k_] = dk;
    }
    return g;
  }

 private:
  // [B, L, >= W] -> [B, heads, L, W / heads].
  at::Tensor Heads(const at::Tensor& x) const {
    return x.narrow(2, 0, width_).reshape({x.size(0), x.size(1), heads_, width_ / heads_}).transpose(1, 2);
  }
  // [B, heads, L, d] -> [B, L, full width of like].
  at::Tensor Merge(const at::Tensor& h, const at::Tensor& like) const {
    return PadLast(h.transpose(1, 2).reshape({h.size(0), h.size(2), width_}), like.size(2));
  }

  int q_, k_;
  int64_t heads_, width_;
};

std::unique_ptr<OpImpl> MakeScores(const OpDesc& d) {
  const Shape& out = d.op->shape;
  const auto& s = d.input_shapes;
  if (out.size() == 2 && s.size() == 2) {
    for (int q = 0; q < 2; ++q) {
      const Shape& qs = s[q];
      const Shape& ks = s[1 - q];
      if (qs.size() == 2 && ks.size() == 3 && qs[0] == ks[0] && qs[1] == ks[2] && out == Shape{ks[0], ks[1]})
        return std::make_unique<DotScoresImpl>(q, 1 - q);
    }
    return nullptr;
  }
  if (out.size() != 4 || s.empty() || s.size() > 2) return nullptr;
  const int64_t n = out[0], heads = out[1], sq = out[2], m = out[3];
  const double w = d.op->flops / (2.0 * static_cast<double>(n * sq * m));
  const auto width = static_cast<int64_t>(std::llround(w));
  if (width < heads || width % heads != 0 || !Near(w, static_cast<double>(width))) return nullptr;
  auto fits_q = [&](const Shape& x) { return x.size() == 3 && x[0] == n && x[1] == sq && x[2] >= width; };
  auto fits_k = [&](const Shape& x) { return x.size() == 3 && (x[0] == n || x[0] == 1) && x[1] == m && x[2] >= width; };
  if (s.size() == 1) {
    if (fits_q(s[0]) && fits_k(s[0])) return std::make_unique<MultiHeadScoresImpl>(0, 0, heads, width);
    return nullptr;
  }
  for (int q = 0; q < 2; ++q)
    if (fits_q(s[q]) && fits_k(s[1 - q])) return std::make_unique<MultiHeadScoresImpl>(q, 1 - q, heads, width);
  return nullptr;
}

// Additive (Bahdanau) scores: v . tanh(q + k), q [N, A], k [N, S, A], v [A] (the op's weights).
class AdditiveScoresImpl : public OpImpl {
 public:
  AdditiveScoresImpl(int q, int k) : q_(q), k_(k) {}
  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor& w) const override {
    return at::matmul(at::tanh(in[k_] + in[q_].unsqueeze(1)), w);
  }
  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor& grad, const at::Tensor& w,
                 const std::vector<char>& need) const override {
    at::Tensor t = at::tanh(in[k_] + in[q_].unsqueeze(1));  // [N, S, A]
    at::Tensor dpre = at::tanh_backward(grad.unsqueeze(2) * w, t);
    Grads g;
    g.inputs.resize(2);
    if (need[q_]) g.inputs[q_] = dpre.sum(1);
    if (need[k_]) g.inputs[k_] = dpre;
    g.weights = at::mm(grad.reshape({1, -1}), t.reshape({-1, t.size(2)})).view({-1});
    return g;
  }
  double FanIn() const override { return 1.0; }

 private:
  int q_, k_;
};

std::unique_ptr<OpImpl> MakeAdditiveScores(const OpDesc& d) {
  const Shape& out = d.op->shape;
  const auto& s = d.input_shapes;
  if (out.size() != 2 || s.size() != 2) return nullptr;
  for (int q = 0; q < 2; ++q) {
    const Shape& qs = s[q];
    const Shape& ks = s[1 - q];
    if (qs.size() == 2 && ks.size() == 3 && qs[0] == ks[0] && qs[1] == ks[2] && out == Shape{ks[0], ks[1]} &&
        d.param_elements == ks[2])
      return std::make_unique<AdditiveScoresImpl>(q, 1 - q);
  }
  return nullptr;
}

// Context: weights [N, S] x values [N, S, H] -> [N, H]; or multi-head probs [N, h, S, M] x values [N, M, >= W] ->
// [N, S, W].
class ContextImpl : public OpImpl {
 public:
  ContextImpl(int p, int v, int64_t heads, int64_t width) : p_(p), v_(v), heads_(heads), width_(width) {}

  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor&) const override {
    if (heads_ == 0) return at::bmm(in[p_].unsqueeze(1), in[v_]).squeeze(1);
    at::Tensor ctx = at::matmul(in[p_], Heads(in[v_]));  // [N, h, S, d]
    return ctx.transpose(1, 2).reshape({ctx.size(0), ctx.size(2), width_});
  }

  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor& grad, const at::Tensor&,
                 const std::vector<char>& need) const override {
    Grads g;
    g.inputs.resize(2);
    const at::Tensor& p = in[p_];
    const at::Tensor& v = in[v_];
    if (heads_ == 0) {
      if (need[p_]) g.inputs[p_] = at::bmm(v, grad.unsqueeze(2)).squeeze(2);
      if (need[v_]) g.inputs[v_] = p.unsqueeze(2) * grad.unsqueeze(1);
      return g;
    }
    at::Tensor gh = grad.reshape({grad.size(0), grad.size(1), heads_, width_ / heads_}).transpose(1, 2);
    if (need[p_]) g.inputs[p_] = at::matmul(gh, Heads(v).transpose(-1, -2));
    if (need[v_]) {
      at::Tensor dvh = at::matmul(p.transpose(-1, -2), gh);  // [N, h, M, d]
      g.inputs[v_] = PadLast(dvh.transpose(1, 2).reshape({v.size(0), v.size(1), width_}), v.size(2));
    }
    return g;
  }

 private:
  at::Tensor Heads(const at::Tensor& x) const {
    return x.narrow(2, 0, width_).reshape({x.size(0), x.size(1), heads_, width_ / heads_}).transpose(1, 2);
  }
  int p_, v_;
  int64_t heads_, width_;
};

std::unique_ptr<OpImpl> MakeContext(const OpDesc& d) {
  const Shape& out = d.op->shape;
  const auto& s = d.input_shapes;
  if (s.size() != 2) return nullptr;
  for (int p = 0; p < 2; ++p) {
    const Shape& ps = s[p];
    const Shape& vs = s[1 - p];
    if (out.size() == 2 && ps.size() == 2 && vs.size() == 3 && ps[0] == vs[0] && ps[1] == vs[1] &&
        out == Shape{vs[0], vs[2]})
      return std::make_unique<ContextImpl>(p, 1 - p, 0, 0);
    if (out.size() == 3 && ps.size() == 4 && vs.size() == 3 && ps[0] == vs[0] && ps[3] == vs[1] && out[0] == ps[0] &&
        out[1] == ps[2] && vs[2] >= out[2] && out[2] % ps[1] == 0)
      return std::make_unique<ContextImpl>(p, 1 - p, ps[1], out[2]);
  }
  return nullptr;
}

// Softmax cross-entropy of logits [N, ..., V] against integer labels (one per logit row) -> mean per example [N];
// or a sampled softmax (vocab x D output embedding plus biases, `classes` sampled columns with the true class first).
class LossImpl : public OpImpl {
 public:
  LossImpl(int x, int labels, int64_t batch, int64_t vocab, int64_t features, at::Tensor classes)
      : x_(x), labels_(labels), batch_(batch), vocab_(vocab), features_(features), classes_(std::move(classes)) {}

  at::Tensor Forward(const std::vector<at::Tensor>& in, const at::Tensor& w) const override {
    at::Tensor lsm = at::log_softmax(Logits(in, w), 1);
    at::Tensor nll = classes_.defined()
                         ? -lsm.select(1, 0)
                         : at::nll_loss(lsm, in[labels_].reshape({-1}).to(at::kLong), {}, at::Reduction::None);
    return nll.view({batch_, -1}).mean(1);
  }

  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor& grad, const at::Tensor& w,
                 const std::vector<char>& need) const override {
    at::Tensor p = at::softmax(Logits(in, w), 1);  // [rows, classes]
    const int64_t rows = p.size(0);
    at::Tensor scale = (grad / static_cast<double>(rows / batch_)).view({batch_, 1}).expand({batch_, rows / batch_});
    scale = scale.reshape({rows, 1});
    at::Tensor target = classes_.defined() ? at::zeros({rows, 1}, in[labels_].options().dtype(at::kLong))
                                           : in[labels_].reshape({rows, 1}).to(at::kLong);
    at::Tensor dlogits = (p * scale).scatter_add_(1, target, -scale);
    Grads g;
    g.inputs.resize(in.size());
    if (!classes_.defined()) {
      if (need[x_]) g.inputs[x_] = dlogits.view(in[x_].sizes());
      return g;
    }
    at::Tensor x2 = in[x_].reshape({rows, features_});
    if (need[x_]) g.inputs[x_] = at::mm(dlogits, Selected(w)).view(in[x_].sizes());
    at::Tensor gw = at::zeros_like(w);
    gw.narrow(0, 0, vocab_ * features_).view({vocab_, features_}).index_add_(0, classes_, at::mm(dlogits.t(), x2));
    gw.narrow(0, vocab_ * features_, vocab_).index_add_(0, classes_, dlogits.sum(0));
    g.weights = gw;
    return g;
  }

  int64_t IndexBound(int slot) const override { return slot == labels_ ? vocab_ : 0; }
  double FanIn() const override { return static_cast<double>(features_); }

 private:
  at::Tensor Selected(const at::Tensor& w) const {
    return w.narrow(0, 0, vocab_ * features_).view({vocab_, features_}).index_select(0, classes_);
  }
  at::Tensor Logits(const std::vector<at::Tensor>& in, const at::Tensor& w) const {
    if (!classes_.defined()) return in[x_].reshape({-1, vocab_});
    at::Tensor bias = w.narrow(0, vocab_ * features_, vocab_).index_select(0, classes_);
    return at::addmm(bias, in[x_].reshape({-1, features_}), Selected(w).t());
  }

  int x_, labels_;
  int64_t batch_, vocab_, features_;
  at::Tensor classes_;  // sampled softmax: the class ids scored (true class first); undefined for full softmax
};

std::unique_ptr<OpImpl> MakeLoss(const OpDesc& d, bool sampled) {
  const Shape& out = d.op->shape;
  const auto& s = d.input_shapes;
  if (out.size() != 1 || s.size() != 2) return nullptr;
  for (int x = 0; x < 2; ++x) {
    const int labels = 1 - x;
    if (!at::isFloatingType(d.input_types[x]) || at::isFloatingType(d.input_types[labels])) continue;
    const Shape& xs = s[x];
    if (xs.size() < 2 || xs[0] != out[0]) continue;
    const int64_t last = xs.back();
    const int64_t rows = Rows(xs);
    int64_t label_count = 1;
    for (int64_t e : s[labels]) label_count *= e;
    if (!sampled) {
      if (label_count != rows || d.param_elements != 0) continue;
      return std::make_unique<LossImpl>(x, labels, out[0], last, 0, at::Tensor());
    }
    if (d.param_elements % (last + 1) != 0) continue;
    const int64_t vocab = d.param_elements / (last + 1);
    const double c = d.op->flops / (static_cast<double>(rows) * (2.0 * static_cast<double>(last) + 6.0));
    const auto classes = static_cast<int64_t>(std::llround(c));
    if (classes < 1 || !Near(c, static_cast<double>(classes))) continue;
    // Deterministic, spread-out sample of class ids.
    at::Tensor ids = (at::arange(classes, at::TensorOptions().dtype(at::kLong)) * 7919) % vocab;
    return std::make_unique<LossImpl>(x, labels, out[0], vocab, last, ids.to(d.options.device()));
  }
  return nullptr;
}

}  // namespace

std::unique_ptr<OpImpl> MakeAttentionImpl(const OpDesc& d) {
  const std::string& t = d.op->type;
  if (t == "attention_scores") return MakeScores(d);
  if (t == "additive_attention_scores") return MakeAdditiveScores(d);
  if (t == "attention_context") return MakeContext(d);
  if (t == "softmax_cross_entropy") return MakeLoss(d, false);
  if (t == "sampled_softmax_loss") return MakeLoss(d, true);
  return nullptr;
}

}  // namespace devplace::exec
