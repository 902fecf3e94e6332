//===- kernel_math.h - scalar math shared by the CPU and CUDA kernels -----===//
//
// Pasted first into every generated source (C++ and CUDA). No libm calls
// in the hot functions, so CPU loops over them vectorise without
// -ffast-math; __host__ __device__ under nvcc.
//
//===----------------------------------------------------------------------===//
#ifndef MIXK_KERNEL_MATH_H
#define MIXK_KERNEL_MATH_H
#include <cmath>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define MIXK_HD __host__ __device__
#else
#define MIXK_HD
#endif

namespace mixk {

/// A float's bits as an int32 and back (no libm, vectorises; CUDA's own
/// intrinsics on the device).
MIXK_HD inline int32_t bitsOf(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_int(x);
#else
  int32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
#endif
}
MIXK_HD inline float floatOf(int32_t bits) {
#ifdef __CUDA_ARCH__
  return __int_as_float(bits);
#else
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
#endif
}

/// e^x without a libm call, so loops over it vectorise (libm's expf is a
/// scalar call unless -ffast-math, which we avoid: see KernelBuild.cpp).
/// Cephes' expf: x = n ln2 + r, |r| <= ln2/2, e^r by a degree-6 polynomial,
/// 2^n built in the exponent bits; relative error below 3e-7. Underflows
/// to 0 below -87.3 and saturates near 2.4e38 above 88.38 (libm: inf).
/// The kernels are compiled with -fassociative-math, which lets GCC merge
/// n·ln2's two parts (n·C1 − n·C2 → n·(C1 − C2)) and lose the low part
/// (3.7e-6 near x = 72): the reduction is two explicit fmaf calls, which
/// reassociation leaves alone (one instruction where the CPU has FMA).
MIXK_HD inline float fexp(float x) {
  // Selects, not fminf/fmaxf: those stay libm calls without -ffinite-math-only.
  float xc = x < -87.33654f ? -87.33654f : (x > 88.3762626647949f ? 88.3762626647949f : x);
  float n = floorf(xc * 1.44269504f + 0.5f);
  float r = fmaf(n, -0.693359375f, xc);
  r = fmaf(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.f;
  const float scale = floatOf((static_cast<int32_t>(n) + 127) << 23);
  return x < -87.33654f ? 0.f : p * scale;
}

/// ln(1 + t) + e·ln 2 for t in [√½ − 1, √2 − 1]: Cephes' logf after its
/// range reduction, ln(1 + t) = t − t²/2 + t³·P(t), e·ln 2 in two parts.
MIXK_HD inline float lnReduced(float t, float e) {
  const float z = t * t;
  float p = 7.0376836292e-2f;
  p = p * t - 1.1514610310e-1f;
  p = p * t + 1.1676998740e-1f;
  p = p * t - 1.2420140846e-1f;
  p = p * t + 1.4249322787e-1f;
  p = p * t - 1.6668057665e-1f;
  p = p * t + 2.0000714765e-1f;
  p = p * t - 2.4999993993e-1f;
  p = p * t + 3.3333331174e-1f;
  float y = p * t * z - 2.12194440e-4f * e - 0.5f * z;
  return t + y + 0.693359375f * e;
}

/// ln u for a positive, finite, normal u without a libm call (vectorises;
/// libm's logf and log1pf are scalar calls: log1pf was 7 % of a Mamba step
/// at d = 64, through softplus). u = m·2^e with m in [√½, √2), then
/// lnReduced(m − 1, e). Relative error below 2e-7 on [1, 1e9], as compiled
/// with the kernels' flags (KernelMath tests).
MIXK_HD inline float flog(float u) {
  const int32_t bits = bitsOf(u);
  float e = static_cast<float>(((bits >> 23) & 0xff) - 126); // u = m·2^e, m in [½, 1)
  const float m = floatOf((bits & 0x007fffff) | 0x3f000000);
  const bool low = m < 0.707106781186547524f; // to [√½, √2)
  e = low ? e - 1.f : e;
  return lnReduced(low ? m + m - 1.f : m - 1.f, e);
}
/// ln(1 + x) for x ≥ 0 without a libm call. Below √2 − 1, 1 + x is already
/// in flog's reduced range, so x itself is its t (exact: no rounding of
/// 1 + x to undo). Above, ln(1 + x) ≥ 0.34 and rounding 1 + x costs at
/// most 2⁻²⁴ absolute. (Goldberg's ln(u)·x/(u − 1), used before, is undone
/// by -fassociative-math: GCC folds (1 + x) − 1 to x, and softplus(−16.6)
/// came out 0.)
MIXK_HD inline float flog1p(float x) {
  return x < 0.41421356f ? lnReduced(x, 0.f) : flog(1.f + x);
}

MIXK_HD inline float sigmoid(float x) { return 1.f / (1.f + fexp(-x)); }
// torch.nn.functional.softplus (beta 1, threshold 20).
MIXK_HD inline float softplus(float x) { return x > 20.f ? x : flog1p(fexp(x)); }
/// erf(x) without a libm call (vectorises): Abramowitz & Stegun 7.1.26,
/// absolute error below 1.5e-7 (4e-7 once rounded to float).
MIXK_HD inline float ferf(float x) {
  float ax = fabsf(x), t = 1.f / (1.f + 0.3275911f * ax);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  float y = 1.f - p * t * fexp(-ax * ax);
  return x < 0.f ? -y : y;
}
MIXK_HD inline float gelu(float x) { return 0.5f * x * (1.f + ferf(x * 0.70710678f)); }
MIXK_HD inline float geluGrad(float x) {
  return 0.5f * (1.f + ferf(x * 0.70710678f)) + x * 0.39894228f * fexp(-0.5f * x * x);
}

} // namespace mixk

#endif
