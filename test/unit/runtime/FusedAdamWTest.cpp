// The fused AdamW step (runtime/train/FusedAdamW.h) against LibTorch's
// torch::optim::AdamW step for step: the same parameters, gradients and
// learning-rate schedule give the same parameters and optimiser state, and a
// checkpoint of either optimiser continues under the other.
#include "runtime/train/FusedAdamW.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sstream>

namespace {
using mixc::train::fusedAdamWStep;

std::vector<at::Tensor> makeParams(at::ScalarType type = at::kFloat) {
  std::vector<at::Tensor> out;
  for (auto shape : std::vector<std::vector<int64_t>>{{7, 5}, {13}, {1}, {64, 33}, {3, 4, 5}})
    out.push_back(at::randn(shape, at::TensorOptions().dtype(type)).requires_grad_(true));
  return out;
}

std::vector<at::Tensor> cloneParams(const std::vector<at::Tensor> &ps) {
  std::vector<at::Tensor> out;
  for (const at::Tensor &p : ps)
    out.push_back(p.detach().clone().requires_grad_(true));
  return out;
}

torch::optim::AdamWOptions options(double wd) {
  return torch::optim::AdamWOptions(1e-3).betas({0.9, 0.999}).eps(1e-8).weight_decay(wd);
}

double relDiff(const at::Tensor &a, const at::Tensor &b) {
  return (a - b).abs().max().item<double>() / std::max(1e-12, b.abs().max().item<double>());
}

/// One step of both: the same gradients (parameter 1 has none on odd steps),
/// and the same warm-up/cosine-like learning rate.
void stepBoth(std::vector<at::Tensor> &a, torch::optim::AdamW &optA, std::vector<at::Tensor> &b,
              torch::optim::AdamW &optB, int step, bool fusedA, bool fusedB) {
  const double lr = 1e-3 * std::min(1.0, (step + 1) / 10.0) * (0.5 + 0.5 * std::cos(step * 0.03));
  for (auto *opt : {&optA, &optB})
    for (auto &g : opt->param_groups())
      static_cast<torch::optim::AdamWOptions &>(g.options()).lr(lr);
  for (size_t i = 0; i < a.size(); ++i) {
    if (i == 1 && step % 2 == 1) {
      a[i].mutable_grad() = at::Tensor();
      b[i].mutable_grad() = at::Tensor();
      continue;
    }
    at::Tensor g = at::randn_like(a[i]) * static_cast<double>(i + 1);
    a[i].mutable_grad() = g.clone();
    b[i].mutable_grad() = g.clone();
  }
  if (fusedA)
    fusedAdamWStep(optA);
  else
    optA.step();
  if (fusedB)
    fusedAdamWStep(optB);
  else
    optB.step();
}

void expectSameState(const std::vector<at::Tensor> &a, torch::optim::AdamW &optA, const std::vector<at::Tensor> &b,
                     torch::optim::AdamW &optB, double tol) {
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_LT(relDiff(a[i].detach(), b[i].detach()), tol) << "parameter " << i;
    auto &sa = static_cast<torch::optim::AdamWParamState &>(
        *optA.state().at(c10::guts::to_string(a[i].unsafeGetTensorImpl())));
    auto &sb = static_cast<torch::optim::AdamWParamState &>(
        *optB.state().at(c10::guts::to_string(b[i].unsafeGetTensorImpl())));
    EXPECT_EQ(sa.step(), sb.step()) << "parameter " << i;
    EXPECT_LT(relDiff(sa.exp_avg(), sb.exp_avg()), tol) << "parameter " << i;
    EXPECT_LT(relDiff(sa.exp_avg_sq(), sb.exp_avg_sq()), tol) << "parameter " << i;
  }
}
} // namespace

class FusedAdamW : public ::testing::TestWithParam<double> {}; // weight decay

TEST_P(FusedAdamW, FollowsLibTorchsStepFor100Steps) {
  at::manual_seed(1);
  std::vector<at::Tensor> ref = makeParams(), fused = cloneParams(ref), initial = cloneParams(ref);
  torch::optim::AdamW optRef(ref, options(GetParam())), optFused(fused, options(GetParam()));
  for (int step = 0; step < 100; ++step) {
    at::manual_seed(100 + step);
    stepBoth(ref, optRef, fused, optFused, step, false, true);
  }
  // float32 and the same formula, not bit for bit (the fused loop rounds its
  // scalar factors once, and LibTorch vectorises differently): within 1e-6
  // of the largest value after 100 steps.
  expectSameState(fused, optFused, ref, optRef, 1e-6);
  // The steps moved the parameters (by up to ~100 · lr each).
  EXPECT_GT(relDiff(fused[3].detach(), initial[3].detach()), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(WeightDecay, FusedAdamW, ::testing::Values(0.0, 0.1));

TEST(FusedAdamWCheckpoints, EitherStepContinuesTheOthersSavedState) {
  at::manual_seed(2);
  std::vector<at::Tensor> a = makeParams(), b = cloneParams(a);
  torch::optim::AdamW optA(a, options(0)), optB(b, options(0));
  for (int step = 0; step < 10; ++step) {
    at::manual_seed(200 + step);
    stepBoth(a, optA, b, optB, step, true, false); // A fused, B LibTorch
  }
  // Save both optimisers; load each into a fresh one over copies of its parameters.
  std::stringstream savedA, savedB;
  torch::save(optA, savedA);
  torch::save(optB, savedB);
  std::vector<at::Tensor> a2 = cloneParams(a), b2 = cloneParams(b);
  torch::optim::AdamW optA2(a2, options(0)), optB2(b2, options(0));
  torch::load(optA2, savedA);
  torch::load(optB2, savedB);
  for (int step = 10; step < 20; ++step) {
    at::manual_seed(300 + step);
    stepBoth(a2, optA2, b2, optB2, step, false, true); // now A's state under LibTorch, B's fused
  }
  expectSameState(a2, optA2, b2, optB2, 1e-5);
}

TEST(FusedAdamWFallback, OtherTypesTakeLibTorchsStep) {
  at::manual_seed(3);
  std::vector<at::Tensor> a = makeParams(at::kDouble), b = cloneParams(a);
  torch::optim::AdamW optA(a, options(0)), optB(b, options(0));
  for (int step = 0; step < 5; ++step) {
    at::manual_seed(400 + step);
    stepBoth(a, optA, b, optB, step, true, false);
  }
  expectSameState(a, optA, b, optB, 0.0 + 1e-15); // the same ops: identical
}
