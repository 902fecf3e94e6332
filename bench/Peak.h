// The machine's arithmetic peak, measured: independent chains of 8-wide
// fused multiply-adds (AVX2 + FMA where the CPU has them, else what the
// compiler makes of the same vector code), on one core or on all. What a
// training step's achieved GFLOP/s is compared with (bench/fma_peak,
// bench/train_throughput).
#ifndef MIXC_BENCH_PEAK_H
#define MIXC_BENCH_PEAK_H

#include <chrono>
#include <thread>
#include <vector>

namespace mixc::bench {

typedef float Float8 __attribute__((vector_size(32)));

/// `iterations` rounds of 12 independent FMA chains (12 · 8 · 2 flops a
/// round): enough chains to cover the FMA latency on two pipes. A macro,
/// so each copy is compiled for its own target (a target attribute does not
/// reach a template or an inlined callee).
#define MIXC_FMA_CHAINS(iterations, seed)                                                          \
  Float8 mul, add, a[12];                                                                          \
  for (int j = 0; j < 8; ++j) {                                                                    \
    mul[j] = 0.999999f;                                                                            \
    add[j] = 1e-7f;                                                                                \
    for (int i = 0; i < 12; ++i)                                                                   \
      a[i][j] = (seed) + 0.001f * static_cast<float>(i * 8 + j);                                   \
  }                                                                                                \
  /* twelve named registers: an array would live in memory at -O2 */                              \
  Float8 a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4], a5 = a[5], a6 = a[6], a7 = a[7],   \
         a8 = a[8], a9 = a[9], a10 = a[10], a11 = a[11];                                           \
  for (long it = 0; it < (iterations); ++it) {                                                     \
    a0 = a0 * mul + add; a1 = a1 * mul + add; a2 = a2 * mul + add; a3 = a3 * mul + add;             \
    a4 = a4 * mul + add; a5 = a5 * mul + add; a6 = a6 * mul + add; a7 = a7 * mul + add;             \
    a8 = a8 * mul + add; a9 = a9 * mul + add; a10 = a10 * mul + add; a11 = a11 * mul + add;         \
  }                                                                                                \
  Float8 s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;                          \
  float sum = 0;                                                                                   \
  for (int j = 0; j < 8; ++j)                                                                      \
    sum += s[j];                                                                                   \
  return sum;

__attribute__((target("avx2,fma"))) inline float fmaChainsAvx2(long iterations, float seed) {
  MIXC_FMA_CHAINS(iterations, seed)
}
inline float fmaChainsGeneric(long iterations, float seed) { MIXC_FMA_CHAINS(iterations, seed) }
#undef MIXC_FMA_CHAINS

inline bool hasAvx2Fma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

/// GFLOP/s of `threads` threads each running the chains for about `seconds`.
inline double fmaPeakGflops(int threads, double seconds = 0.3) {
  const bool avx2 = hasAvx2Fma();
  auto run = [&](long n) { return avx2 ? fmaChainsAvx2(n, 1.f) : fmaChainsGeneric(n, 1.f); };
  long n = 1 << 16; // calibrate on one thread
  for (;;) {
    auto t0 = std::chrono::steady_clock::now();
    volatile float sink = run(n);
    (void)sink;
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > seconds / 4 || n > (1L << 40))
      break;
    n *= 2;
  }
  n *= 4;
  std::vector<std::thread> pool;
  std::vector<float> sinks(static_cast<size_t>(threads));
  auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { sinks[static_cast<size_t>(t)] = run(n); });
  for (auto &th : pool)
    th.join();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(threads) * static_cast<double>(n) * 12 * 8 * 2 / s / 1e9;
}

} // namespace mixc::bench

#endif
