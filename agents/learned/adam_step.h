// The PPO update's last step, gradient clipping and Adam, spread over threads by parameter with the result of
// LibTorch's own serial calls, bit for bit (internal to devplace_learn).
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>
#include <torch/version.h>

namespace devplace {

// The key of a parameter in LibTorch's optimizer state: its TensorImpl's address, as text in LibTorch 1.x and as the
// pointer itself in 2.x.
inline auto AdamStateKey(const torch::Tensor& param) {
#if TORCH_VERSION_MAJOR >= 2
  return static_cast<void*>(param.unsafeGetTensorImpl());
#else
  return c10::guts::to_string(param.unsafeGetTensorImpl());
#endif
}

// torch::nn::utils::clip_grad_norm_(params, max_norm) followed by adam.step(), with the per-parameter work (each
// gradient's norm, then its scaling and Adam update) on up to `threads` threads (RunParallel): the parameters,
// their gradients and Adam's state end bit for bit as those calls leave them, whatever `threads`, and the returned
// total norm is theirs. `params` must be every parameter of `adam`'s groups (what clipping then covers), each in
// one group; parameters without a gradient are left alone. Adam's options must be the defaults apart from the
// learning rate and betas/eps (no weight decay, no AMSGrad: the PPO learner sets neither).
double ClipAndStepAdam(torch::optim::Adam& adam, const std::vector<torch::Tensor>& params, double max_norm,
                       int32_t threads);

}  // namespace devplace
