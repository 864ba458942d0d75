// PPO pieces (Schulman et al. 2017): generalised advantage estimation and the clipped surrogate loss with value
// and entropy terms. Internal to devplace_learn.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <torch/torch.h>

#include "config/experiment_config.h"

namespace devplace {

struct GaeResult {
  std::vector<double> advantages;
  std::vector<double> returns;  // advantages + values (the value targets)
};

// GAE(gamma, lambda) over a sequence of steps of one or more consecutive episodes: dones[t] = 1 when step t
// ends its episode (no bootstrap across it); `last_value` bootstraps after the final step when it does not end
// an episode. delta_t = r_t + gamma V_{t+1} (1 - done_t) - V_t; A_t = delta_t + gamma lambda (1 - done_t) A_{t+1}.
// Precondition: the three spans have equal length.
GaeResult ComputeGae(std::span<const double> rewards, std::span<const double> values, std::span<const uint8_t> dones,
                     double last_value, double gamma, double lambda);

// Loss terms of one minibatch. Policy terms are means over actions (tokens); the value term is a mean over
// value predictions. total = policy + value_coef * value - entropy_coef * entropy.
struct PpoLoss {
  torch::Tensor total, policy, value, entropy;
  double clip_fraction = 0.0;  // share of tokens whose ratio left [1 - clip, 1 + clip]
  double approx_kl = 0.0;      // mean of old_logp - new_logp
};

// new_logp, old_logp, advantages, entropy: [K] (one per action); values, returns: [M].
// policy = -mean(min(r A, clip(r, 1 - c, 1 + c) A)), r = exp(new_logp - old_logp); value = mean((V - R)^2).
PpoLoss ComputePpoLoss(const torch::Tensor& new_logp, const torch::Tensor& old_logp, const torch::Tensor& advantages,
                       const torch::Tensor& entropy, const torch::Tensor& values, const torch::Tensor& returns,
                       const PpoConfig& config);

// Normalises advantages in place to mean 0 and standard deviation 1 (unchanged spread when the std is ~0).
void NormaliseAdvantages(std::vector<double>* advantages);

}  // namespace devplace
