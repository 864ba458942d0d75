#include "agents/learned/adam_step.h"

#include <cmath>
#include <cstddef>
#include <tuple>
#include <unordered_map>

#include "agents/learned/learner.h"
#include "core/check.h"

namespace devplace {

double ClipAndStepAdam(torch::optim::Adam& adam, const std::vector<torch::Tensor>& params, double max_norm,
                       int32_t threads) {
  std::vector<size_t> with_grad;
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].grad().defined()) with_grad.push_back(i);
  if (with_grad.empty()) return 0.0;  // clipping returns 0 and Adam steps nothing
  // Clipping: the 2-norm of each gradient, of those norms the total, and the factor every gradient is scaled by
  // (the same tensor operations as clip_grad_norm_).
  const double norm_type = 2.0;
  std::vector<torch::Tensor> norms(with_grad.size());
  RunParallel(with_grad.size(), threads, [&](size_t k) {
    torch::NoGradGuard no_grad;  // grad mode is per thread
    norms[k] = params[with_grad[k]].grad().data().norm(norm_type);
  });
  torch::NoGradGuard no_grad;
  const torch::Tensor total = norms.size() == 1 ? norms[0] : torch::stack(norms).norm(norm_type);
  const torch::Tensor clip_coef = torch::clamp(max_norm / (total + 1e-6), c10::nullopt, 1.0);
  // Adam: each parameter's options from its group, and its state, made (as Adam::step makes it) before the
  // threads start, since the state map must not grow while they read it.
  std::unordered_map<const void*, size_t> index;  // by TensorImpl
  for (size_t i = 0; i < params.size(); ++i) index.emplace(params[i].unsafeGetTensorImpl(), i);
  std::vector<const torch::optim::AdamOptions*> options(params.size(), nullptr);
  for (auto& group : adam.param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamOptions&>(group.options());
    DEVPLACE_CHECK(o.weight_decay() == 0 && !o.amsgrad(), "ClipAndStepAdam: weight decay and AMSGrad not supported");
    for (const torch::Tensor& p : group.params())
      if (const auto it = index.find(p.unsafeGetTensorImpl()); it != index.end()) options[it->second] = &o;
  }
  std::vector<torch::optim::AdamParamState*> states(params.size(), nullptr);
  for (size_t i : with_grad) {
    DEVPLACE_CHECK(options[i] != nullptr, "ClipAndStepAdam: a parameter outside the optimizer's groups");
    auto it = adam.state().find(AdamStateKey(params[i]));
    if (it == adam.state().end()) {
      auto state = std::make_unique<torch::optim::AdamParamState>();
      state->step(0);
      state->exp_avg(torch::zeros_like(params[i], torch::MemoryFormat::Preserve));
      state->exp_avg_sq(torch::zeros_like(params[i], torch::MemoryFormat::Preserve));
      adam.state()[AdamStateKey(params[i])] = std::move(state);
      it = adam.state().find(AdamStateKey(params[i]));
    }
    states[i] = static_cast<torch::optim::AdamParamState*>(it->second.get());
  }
  RunParallel(with_grad.size(), threads, [&](size_t k) {
    torch::NoGradGuard no_grad_here;
    const size_t i = with_grad[k];
    torch::Tensor p = params[i];
    p.grad().data().mul_(clip_coef);
    const torch::optim::AdamOptions& o = *options[i];
    torch::optim::AdamParamState& state = *states[i];
    const torch::Tensor& grad = p.grad();
    state.step(state.step() + 1);
    const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
    const double bias_correction1 = 1 - std::pow(beta1, state.step());
    const double bias_correction2 = 1 - std::pow(beta2, state.step());
    state.exp_avg().mul_(beta1).add_(grad, 1 - beta1);
    state.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);
    const torch::Tensor denom = (state.exp_avg_sq().sqrt() / std::sqrt(bias_correction2)).add_(o.eps());
    p.addcdiv_(state.exp_avg(), denom, -(o.lr() / bias_correction1));
  });
  return total.item().toDouble();
}

}  // namespace devplace
