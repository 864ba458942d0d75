#include "agents/learned/ppo.h"

#include <cmath>

#include "core/check.h"

namespace devplace {

GaeResult ComputeGae(std::span<const double> rewards, std::span<const double> values, std::span<const uint8_t> dones,
                     double last_value, double gamma, double lambda) {
  DEVPLACE_CHECK(rewards.size() == values.size() && values.size() == dones.size(), "GAE inputs differ in length");
  const size_t n = rewards.size();
  GaeResult out;
  out.advantages.assign(n, 0.0);
  out.returns.assign(n, 0.0);
  double next_advantage = 0.0, next_value = last_value;
  for (size_t i = n; i-- > 0;) {
    const double live = dones[i] ? 0.0 : 1.0;
    const double delta = rewards[i] + gamma * next_value * live - values[i];
    next_advantage = delta + gamma * lambda * live * next_advantage;
    out.advantages[i] = next_advantage;
    out.returns[i] = next_advantage + values[i];
    next_value = values[i];
  }
  return out;
}

PpoLoss ComputePpoLoss(const torch::Tensor& new_logp, const torch::Tensor& old_logp, const torch::Tensor& advantages,
                       const torch::Tensor& entropy, const torch::Tensor& values, const torch::Tensor& returns,
                       const PpoConfig& config) {
  PpoLoss loss;
  torch::Tensor ratio = torch::exp(new_logp - old_logp);
  torch::Tensor unclipped = ratio * advantages;
  torch::Tensor clipped = torch::clamp(ratio, 1.0 - config.clip, 1.0 + config.clip) * advantages;
  loss.policy = -torch::min(unclipped, clipped).mean();
  loss.value = (values - returns).pow(2).mean();
  loss.entropy = entropy.mean();
  loss.total = loss.policy + config.value_coef * loss.value - config.entropy_coef * loss.entropy;
  {
    torch::NoGradGuard no_grad;
    loss.clip_fraction = ((ratio - 1.0).abs() > config.clip).to(torch::kFloat64).mean().item<double>();
    loss.approx_kl = (old_logp - new_logp).mean().item<double>();
  }
  return loss;
}

void NormaliseAdvantages(std::vector<double>* advantages) {
  if (advantages->empty()) return;
  double mean = 0.0;
  for (double a : *advantages) mean += a;
  mean /= static_cast<double>(advantages->size());
  double var = 0.0;
  for (double a : *advantages) var += (a - mean) * (a - mean);
  const double std = std::sqrt(var / static_cast<double>(advantages->size()));
  const double scale = std > 1e-8 ? 1.0 / std : 1.0;
  for (double& a : *advantages) a = (a - mean) * scale;
}

}  // namespace devplace
