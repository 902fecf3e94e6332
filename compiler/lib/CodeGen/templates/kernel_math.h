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
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
#ifdef __CUDA_ARCH__
  float scale = __int_as_float(bits);
#else
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
#endif
  return x < -87.33654f ? 0.f : p * scale;
}

MIXK_HD inline float sigmoid(float x) { return 1.f / (1.f + fexp(-x)); }
// torch.nn.functional.softplus (beta 1, threshold 20).
MIXK_HD inline float softplus(float x) { return x > 20.f ? x : log1pf(fexp(x)); }
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
