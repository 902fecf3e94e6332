//===- BootstrapTest.cpp - Attrib's bootstrap interval ---------------------===//
//
// Checked against what is known without a bootstrap: a ratio that is the
// same on every document has a zero-width interval; otherwise the 95 %
// interval's width follows the delta method's standard error of a ratio of
// means, computed plainly here.
//
//===----------------------------------------------------------------------===//
#include "runtime/analysis/Bootstrap.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using mixc::analysis::bootstrapAttrib;
using mixc::analysis::Interval;

namespace {
struct Docs {
  std::vector<double> clean, corrupt;
  std::vector<std::vector<double>> patched;
};

/// n documents with p_o in [0.6, 1], p_c in [0, 0.3].
Docs draw(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> hi(0.6, 1.0), lo(0.0, 0.3);
  Docs d;
  for (size_t i = 0; i < n; ++i) {
    d.clean.push_back(hi(rng));
    d.corrupt.push_back(lo(rng));
  }
  return d;
}

double mean(const std::vector<double> &v) {
  double s = 0;
  for (double x : v)
    s += x;
  return s / static_cast<double>(v.size());
}
} // namespace

TEST(Bootstrap, AConstantRatioHasAZeroWidthInterval) {
  Docs d = draw(200, 1);
  for (double a : {0.0, 0.6, 1.0}) {
    std::vector<double> p;
    for (size_t i = 0; i < d.clean.size(); ++i)
      p.push_back(d.corrupt[i] + a * (d.clean[i] - d.corrupt[i]));
    d.patched.push_back(p);
  }
  std::vector<Interval> iv = bootstrapAttrib(d.clean, d.corrupt, d.patched, 500, 7);
  ASSERT_EQ(iv.size(), 3u);
  const double want[] = {0.0, 0.6, 1.0};
  for (int c = 0; c < 3; ++c) {
    ASSERT_TRUE(iv[c].valid);
    EXPECT_NEAR(iv[c].lo, want[c], 1e-12);
    EXPECT_NEAR(iv[c].hi, want[c], 1e-12);
  }
}

TEST(Bootstrap, TheWidthFollowsTheDeltaMethod) {
  const size_t n = 400;
  Docs d = draw(n, 2);
  // Each document fully restored with probability 0.7, else not at all.
  std::mt19937_64 rng(3);
  std::bernoulli_distribution restored(0.7);
  std::vector<double> p, x, y;
  for (size_t i = 0; i < n; ++i) {
    p.push_back(restored(rng) ? d.clean[i] : d.corrupt[i]);
    x.push_back(p.back() - d.corrupt[i]);
    y.push_back(d.clean[i] - d.corrupt[i]);
  }
  d.patched.push_back(p);
  // Delta method for R = mean(x) / mean(y): Var(R) ≈ Var(x − R y) / (n · mean(y)²).
  const double R = mean(x) / mean(y);
  std::vector<double> resid;
  for (size_t i = 0; i < n; ++i)
    resid.push_back(x[i] - R * y[i]);
  const double m = mean(resid);
  double var = 0;
  for (double r : resid)
    var += (r - m) * (r - m);
  var /= static_cast<double>(n - 1);
  const double se = std::sqrt(var / static_cast<double>(n)) / mean(y);

  std::vector<Interval> iv = bootstrapAttrib(d.clean, d.corrupt, d.patched, 2000, 11);
  ASSERT_TRUE(iv[0].valid);
  EXPECT_LT(iv[0].lo, R);
  EXPECT_GT(iv[0].hi, R);
  EXPECT_NEAR(iv[0].hi - iv[0].lo, 2 * 1.96 * se, 0.2 * 2 * 1.96 * se)
      << "interval [" << iv[0].lo << ", " << iv[0].hi << "], R " << R << ", delta-method se " << se;
  // Another seed moves the endpoints by a small part of the width.
  std::vector<Interval> again = bootstrapAttrib(d.clean, d.corrupt, d.patched, 2000, 12);
  EXPECT_NEAR(again[0].lo, iv[0].lo, 0.1 * (iv[0].hi - iv[0].lo));
  EXPECT_NEAR(again[0].hi, iv[0].hi, 0.1 * (iv[0].hi - iv[0].lo));
}

TEST(Bootstrap, NoIntervalWhenCleanAndCorruptedBarelyDiffer) {
  Docs d = draw(100, 4);
  d.corrupt = d.clean; // the corruption changed nothing
  d.patched.push_back(d.clean);
  std::vector<Interval> iv = bootstrapAttrib(d.clean, d.corrupt, d.patched, 200, 5);
  ASSERT_EQ(iv.size(), 1u);
  EXPECT_FALSE(iv[0].valid);
}
