// ClipAndStepAdam (agents/learned/adam_step.h): clipping and Adam by parameter on threads, against LibTorch's own
// clip_grad_norm_ and Adam::step, bit for bit.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "agents/learned/adam_step.h"

namespace devplace {
namespace {

// Parameters of assorted shapes (a matrix, a vector, a 3-d block, a scalar, one transposed so that it is not
// contiguous), the same values for every `copy`.
std::vector<torch::Tensor> MakeParams() {
  torch::manual_seed(5);
  std::vector<torch::Tensor> params = {torch::randn({64, 32}), torch::randn({32}), torch::randn({4, 8, 16}),
                                       torch::randn({}), torch::randn({16, 24}).t()};
  for (torch::Tensor& p : params) p.set_requires_grad(true);
  return params;
}

std::vector<torch::Tensor> Copy(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> copy;
  for (const torch::Tensor& p : params) {
    torch::Tensor c = torch::empty_like(p, torch::MemoryFormat::Preserve);
    {
      torch::NoGradGuard no_grad;
      c.copy_(p);
    }
    copy.push_back(c.set_requires_grad(true));
  }
  return copy;
}

bool BitEqual(const torch::Tensor& a, const torch::Tensor& b) {
  return a.defined() == b.defined() && (!a.defined() || (a.sizes() == b.sizes() && a.strides() == b.strides() &&
                                                         torch::equal(a, b)));
}

TEST(ClipAndStepAdam, EqualsClipGradNormThenAdamStepBitForBit) {
  for (const int32_t threads : {1, 2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    const std::vector<torch::Tensor> ref_params = MakeParams(), our_params = Copy(ref_params);
    torch::optim::Adam ref_adam(ref_params, torch::optim::AdamOptions(3e-3).eps(1e-6));
    torch::optim::Adam our_adam(our_params, torch::optim::AdamOptions(3e-3).eps(1e-6));
    std::mt19937_64 rng(11);
    for (int step = 0; step < 12; ++step) {
      ref_adam.zero_grad();
      our_adam.zero_grad();
      for (size_t i = 0; i < ref_params.size(); ++i) {
        // Parameter 2 gets no gradient in the first steps (no Adam state yet), then one every other step.
        if (i == 2 && (step < 3 || step % 2 == 0)) continue;
        torch::manual_seed(static_cast<uint64_t>(rng()));
        const torch::Tensor g = torch::randn(ref_params[i].sizes()) * (1.0 + static_cast<double>(step % 4));
        ref_params[i].mutable_grad() = g.clone();
        our_params[i].mutable_grad() = g.clone();
      }
      // Clipping binds in some steps and not in others.
      const double max_norm = step % 3 == 0 ? 1e30 : 5.0;
      const double ref_norm = torch::nn::utils::clip_grad_norm_(ref_params, max_norm);
      ref_adam.step();
      const double our_norm = ClipAndStepAdam(our_adam, our_params, max_norm, threads);
      ASSERT_EQ(our_norm, ref_norm) << "step " << step;
      for (size_t i = 0; i < ref_params.size(); ++i) {
        ASSERT_TRUE(BitEqual(our_params[i], ref_params[i])) << "step " << step << " parameter " << i;
        ASSERT_TRUE(BitEqual(our_params[i].grad(), ref_params[i].grad())) << "step " << step << " gradient " << i;
        const auto ref_it = ref_adam.state().find(AdamStateKey(ref_params[i]));
        const auto our_it = our_adam.state().find(AdamStateKey(our_params[i]));
        ASSERT_EQ(our_it == our_adam.state().end(), ref_it == ref_adam.state().end()) << "parameter " << i;
        if (ref_it == ref_adam.state().end()) continue;
        const auto& ref = static_cast<const torch::optim::AdamParamState&>(*ref_it->second);
        const auto& our = static_cast<const torch::optim::AdamParamState&>(*our_it->second);
        ASSERT_EQ(our.step(), ref.step());
        ASSERT_TRUE(BitEqual(our.exp_avg(), ref.exp_avg())) << "step " << step << " parameter " << i;
        ASSERT_TRUE(BitEqual(our.exp_avg_sq(), ref.exp_avg_sq())) << "step " << step << " parameter " << i;
      }
    }
  }
}

TEST(ClipAndStepAdam, WithoutGradientsStepsNothing) {
  const std::vector<torch::Tensor> params = MakeParams(), before = Copy(params);
  torch::optim::Adam adam(params, torch::optim::AdamOptions(1e-2));
  EXPECT_EQ(ClipAndStepAdam(adam, params, 1.0, 2), 0.0);
  EXPECT_TRUE(adam.state().empty());
  for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(BitEqual(params[i], before[i]));
}

}  // namespace
}  // namespace devplace
