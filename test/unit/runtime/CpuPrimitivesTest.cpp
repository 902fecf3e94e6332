// The helpers of the generated CPU kernels (compiler/lib/CodeGen/templates),
// compiled here as they are pasted into every generated source, against libm.
#include "compiler/lib/CodeGen/templates/cpu_primitives.h"

#include <gtest/gtest.h>

#include <cmath>

TEST(CpuPrimitives, FexpFollowsLibmToAFewUlp) {
  double worst = 0;
  for (float x = -87.f; x <= 88.f; x += 0.0137f) {
    double want = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::fabs(mixk::fexp(x) - want) / want);
  }
  EXPECT_LT(worst, 3e-7);
  EXPECT_EQ(mixk::fexp(0.f), 1.f);
  EXPECT_EQ(mixk::fexp(-100.f), 0.f);
  EXPECT_TRUE(std::isfinite(mixk::fexp(1000.f)));
  EXPECT_GT(mixk::fexp(1000.f), 1e38f);
}

TEST(CpuPrimitives, SigmoidAndSoftplusMatchTheirDefinitions) {
  for (float x = -30.f; x <= 30.f; x += 0.37f) {
    double e = std::exp(static_cast<double>(x));
    EXPECT_NEAR(mixk::sigmoid(x), e / (1 + e), 1e-6) << x;
    double sp = x > 20 ? x : std::log1p(e);
    EXPECT_NEAR(mixk::softplus(x), sp, 1e-6 * std::max(1.0, sp)) << x;
  }
}

TEST(CpuPrimitives, FlogAndFlog1pFollowLibmRelatively) {
  // flog on [1, 1e9] (softplus hands it 1 + e^x for x ≤ 20) and a little
  // below 1; flog1p from 1e-30 (u rounds to 1) through 1e9, relative error.
  double worstLog = 0, worstLog1p = 0;
  for (double u = 0.5; u < 1e9; u *= 1.0007) {
    const float uf = static_cast<float>(u);
    const double want = std::log(static_cast<double>(uf));
    if (want != 0)
      worstLog = std::max(worstLog, std::fabs(mixk::flog(uf) - want) / std::fabs(want));
  }
  for (double x = 1e-30; x < 1e9; x *= 1.0013) {
    const float xf = static_cast<float>(x);
    const double want = std::log1p(static_cast<double>(xf));
    worstLog1p = std::max(worstLog1p, std::fabs(mixk::flog1p(xf) - want) / want);
  }
  EXPECT_LT(worstLog, 2e-7);
  EXPECT_LT(worstLog1p, 4e-7);
  EXPECT_EQ(mixk::flog(1.f), 0.f);
  EXPECT_EQ(mixk::flog1p(0.f), 0.f);
}

TEST(CpuPrimitives, SoftplusIsRelativelyExactForVeryNegativeInputs) {
  // softplus(x) ≈ e^x far below 0: an absolute tolerance would not see a
  // log(1 + e^x) that rounded 1 + e^x.
  for (float x = -80.f; x <= 20.f; x += 0.173f) {
    const double want = std::log1p(std::exp(static_cast<double>(x)));
    EXPECT_LT(std::fabs(mixk::softplus(x) - want) / want, 8e-7) << x;
  }
}

TEST(CpuPrimitives, FerfAndGeluFollowLibm) {
  for (float x = -6.f; x <= 6.f; x += 0.011f) {
    EXPECT_NEAR(mixk::ferf(x), std::erf(static_cast<double>(x)), 4e-7) << x;
    double gelu = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    EXPECT_NEAR(mixk::gelu(x), gelu, 1e-6) << x;
  }
}
