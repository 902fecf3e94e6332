//===- ReadoutTest.cpp - the intervention readouts against plain loops -----===//
#include "runtime/analysis/Readout.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

using mixc::analysis::readouts;

namespace {
// [blocks = 3, m = 4, V = 6] logits; block 1 is the corrupted run.
struct Case {
  at::Tensor logits = at::randn({3, 4, 6}) * 2;
  at::Tensor target = at::tensor({0, 5, 2, 2}, at::kLong);
  double logit(int64_t b, int64_t k, int64_t v) const { return logits[b][k][v].item<double>(); }
  double logZ(int64_t b, int64_t k) const {
    double z = 0;
    for (int64_t v = 0; v < 6; ++v)
      z += std::exp(logit(b, k, v));
    return std::log(z);
  }
  int64_t y(int64_t k) const { return target[k].item<int64_t>(); }
};
} // namespace

TEST(Readout, PIsTheTrueAnswersProbability) {
  at::manual_seed(1);
  Case c;
  auto r = readouts(c.logits, c.target, 1, "p");
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t k = 0; k < 4; ++k) {
      double want = std::exp(c.logit(b, k, c.y(k)) - c.logZ(b, k));
      EXPECT_NEAR(r.p[b][k].item<double>(), want, 1e-6);
      EXPECT_NEAR(r.value[b][k].item<double>(), want, 1e-6);
    }
}

TEST(Readout, LogitDiffAgainstTheCorruptedRunsTopOtherAnswer) {
  at::manual_seed(2);
  Case c;
  auto r = readouts(c.logits, c.target, 1, "logit_diff");
  for (int64_t k = 0; k < 4; ++k) {
    int64_t other = -1; // the corrupted run's (block 1) highest logit apart from the true answer
    for (int64_t v = 0; v < 6; ++v)
      if (v != c.y(k) && (other < 0 || c.logit(1, k, v) > c.logit(1, k, other)))
        other = v;
    for (int64_t b = 0; b < 3; ++b)
      EXPECT_NEAR(r.value[b][k].item<double>(), c.logit(b, k, c.y(k)) - c.logit(b, k, other), 1e-5);
  }
}

TEST(Readout, KlFromTheCorruptedRun) {
  at::manual_seed(3);
  Case c;
  auto r = readouts(c.logits, c.target, 1, "kl");
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t k = 0; k < 4; ++k) {
      double kl = 0;
      for (int64_t v = 0; v < 6; ++v) {
        double lp = c.logit(b, k, v) - c.logZ(b, k), lq = c.logit(1, k, v) - c.logZ(1, k);
        kl += std::exp(lp) * (lp - lq);
      }
      EXPECT_NEAR(r.value[b][k].item<double>(), kl, 1e-5);
    }
  EXPECT_EQ(r.value[1].abs().max().item<double>(), 0.0); // the corrupted run from itself
}
