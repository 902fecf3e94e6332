//===- InitTest.cpp - parameter init rules drawn as their definitions say ---===//
#include "runtime/core/Init.h"

#include <gtest/gtest.h>

namespace {
using mixc::rt::InitRule;

at::Tensor draw(const std::string &text, at::IntArrayRef shape) {
  InitRule rule;
  EXPECT_EQ(mixc::rt::parseInit(text, rule), "") << text;
  at::manual_seed(7);
  return mixc::rt::initTensor(rule, shape);
}

TEST(InitRules, LogOfUniformIsTheLogOfAUniformDraw) {
  // fla's Gated DeltaNet: A_log = log A, A ~ U(0, 16). exp of the draw is
  // U(0, 16): mean 8, variance 16²/12, every value in [0, 16], all finite.
  at::Tensor a = draw("log_of_uniform(0, 16)", {200000}).exp();
  EXPECT_TRUE(at::isfinite(a).all().item<bool>());
  EXPECT_GE(a.min().item<float>(), 0.f);
  EXPECT_LE(a.max().item<float>(), 16.f);
  EXPECT_NEAR(a.mean().item<double>(), 8.0, 0.05);
  EXPECT_NEAR(a.var().item<double>(), 256.0 / 12, 0.3);
  // A quarter of the draws below 4 (a uniform's quantile).
  EXPECT_NEAR((a < 4).to(at::kFloat).mean().item<double>(), 0.25, 0.01);
  InitRule rule;
  EXPECT_NE(mixc::rt::parseInit("log_of_uniform(16)", rule), "");
}

TEST(InitRules, DtBiasIsTheInverseSoftplusOfALogUniformStep) {
  // softplus(b) = Δ₀, log-uniform in [1e-3, 0.1]: its log uniform in between.
  at::Tensor dt = at::softplus(draw("dt_bias(0.001, 0.1, 0.0001)", {200000}));
  EXPECT_GE(dt.min().item<float>(), 0.001f * 0.999f);
  EXPECT_LE(dt.max().item<float>(), 0.1f * 1.001f);
  EXPECT_NEAR(dt.log().mean().item<double>(), 0.5 * (std::log(0.001) + std::log(0.1)), 0.02);
}
} // namespace
