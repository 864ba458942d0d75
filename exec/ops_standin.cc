// Dispatch from op type to its reconstructed computation, default weight initialisation, and the stand-in kernel
// for ops that cannot be reconstructed.
#include <algorithm>
#include <cmath>

#include "exec/backend.h"
#include "exec/op_impl.h"
#include "exec/tensor_util.h"

namespace devplace::exec {

void OpImpl::InitWeights(at::Tensor& flat, uint64_t seed) const {
  const double scale = std::sqrt(3.0 / std::max(1.0, FanIn()));
  flat.copy_(SeededTensor({flat.numel()}, flat.scalar_type(), flat.device(), seed, scale, 1));
}

std::unique_ptr<OpImpl> MakeOpImpl(const OpDesc& desc) {
  if (auto impl = MakeDenseImpl(desc)) return impl;
  if (auto impl = MakeElementwiseImpl(desc)) return impl;
  return MakeAttentionImpl(desc);
}

namespace {

// About `flops` of matmul work producing a [rows, cols] result: (a [rows, k] x b [k, cols]) repeated `reps` times
// with accumulation, with k capped so that the operands stay small. Work below one multiply-add per result element
// becomes a fill.
class MatmulWork {
 public:
  MatmulWork(double flops, int64_t rows, int64_t cols, const at::TensorOptions& options, uint64_t seed)
      : rows_(rows), cols_(cols), options_(options) {
    const double per_element = flops / (2.0 * static_cast<double>(rows * cols));
    if (per_element < 1.0) return;
    constexpr int64_t kMaxOperand = int64_t{1} << 22;  // elements
    int64_t k = static_cast<int64_t>(std::llround(per_element));
    const int64_t cap = std::max<int64_t>(1, kMaxOperand / std::max(rows, cols));
    reps_ = std::max<int64_t>(1, (k + cap - 1) / cap);
    k = std::max<int64_t>(1, std::llround(per_element / static_cast<double>(reps_)));
    a_ = SeededTensor({rows, k}, options.dtype().toScalarType(), options.device(), seed, 0.1, 1);
    b_ = SeededTensor({k, cols}, options.dtype().toScalarType(), options.device(), seed + 1, 0.1, 1);
  }

  at::Tensor Run() const {
    if (!a_.defined()) return at::empty({rows_, cols_}, options_).fill_(1.0);
    at::Tensor y = at::mm(a_, b_);
    for (int64_t r = 1; r < reps_; ++r) y.addmm_(a_, b_);
    return y;
  }

 private:
  int64_t rows_, cols_;
  at::TensorOptions options_;
  int64_t reps_ = 1;
  at::Tensor a_, b_;
};

class StandInImpl : public OpImpl {
 public:
  StandInImpl(const OpDesc& d, double forward_flops, double backward_flops)
      : out_shape_(d.op->shape),
        out_type_(TorchType(d.op->dtype, d.options.device())),
        forward_(forward_flops, Rows(Shape()), Cols(), d.options, MixSeed(1, d.op->name)),
        backward_(backward_flops, Rows(Shape()), Cols(), d.options, MixSeed(2, d.op->name)) {}

  at::Tensor Forward(const std::vector<at::Tensor>&, const at::Tensor&) const override {
    at::Tensor y = forward_.Run().view(Shape());
    if (!at::isFloatingType(out_type_)) y = y.to(out_type_);
    return y.view(out_shape_);
  }

  Grads Backward(const std::vector<at::Tensor>& in, const at::Tensor&, const at::Tensor&, const at::Tensor& w,
                 const std::vector<char>& need) const override {
    at::Tensor work = backward_.Run();
    Grads g;
    for (size_t i = 0; i < in.size(); ++i)
      g.inputs.push_back(need[i] ? at::zeros_like(in[i]) : at::Tensor());
    if (w.defined()) g.weights = at::zeros_like(w);
    (void)work;  // the work is the cost; its values are not needed
    return g;
  }

 private:
  std::vector<int64_t> Shape() const { return out_shape_.empty() ? std::vector<int64_t>{1} : out_shape_; }
  int64_t Cols() const { return out_shape_.empty() ? 1 : out_shape_.back(); }

  std::vector<int64_t> out_shape_;
  at::ScalarType out_type_;
  MatmulWork forward_, backward_;
};

}  // namespace

std::unique_ptr<OpImpl> MakeStandIn(const OpDesc& desc, double forward_flops, double backward_flops) {
  return std::make_unique<StandInImpl>(desc, forward_flops, backward_flops);
}

}  // namespace devplace::exec
