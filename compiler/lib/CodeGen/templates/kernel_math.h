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
MIXK_HD inline float fexp(float x) {
  // Selects, not fminf/fmaxf: those stay libm calls without -ffinite-math-only.
  float xc = x < -87.33654f ? -87.33654f : (x > 88.3762626647949f ? 88.3762626647949f : x);
  float n = floorf(xc * 1.44269504f + 0.5f);
  float r = xc - n * 0.693359375f + n * 2.12194440e-4f;
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

/// ln u for a positive, finite, normal u without a libm call (vectorises;
/// libm's logf and log1pf are scalar calls: log1pf was 7 % of a Mamba step
/// at d = 64, through softplus). Cephes' logf: u = m·2^e with m in
/// [√½, √2), ln m = t − t²/2 + t³·P(t) for t = m − 1, e·ln 2 in two parts.
/// Relative error below 2e-7 on [1, 1e9] (CpuPrimitives tests).
MIXK_HD inline float flog(float u) {
  const int32_t bits = bitsOf(u);
  float e = static_cast<float>(((bits >> 23) & 0xff) - 126); // u = m·2^e, m in [½, 1)
  const float m = floatOf((bits & 0x007fffff) | 0x3f000000);
  const bool low = m < 0.707106781186547524f; // to [√½, √2)
  e = low ? e - 1.f : e;
  const float t = low ? m + m - 1.f : m - 1.f, z = t * t;
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
/// ln(1 + x) for x ≥ 0 without a libm call: ln u · x/(u − 1) with u = 1 + x
/// rounded (the quotient undoes the rounding of u; Goldberg, "What every
/// computer scientist should know about floating-point arithmetic", 1991), x itself
/// where u rounds to 1.
MIXK_HD inline float flog1p(float x) {
  const float u = 1.f + x;
  return u == 1.f ? x : flog(u) * (x / (u - 1.f));
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
