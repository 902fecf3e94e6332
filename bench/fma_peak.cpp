// The machine's measured arithmetic peak next to what LibTorch's sgemm
// reaches at the shapes of a training step (B = 32, T = 37: the paper's AR),
// the ceiling the roofline column of bench/train_throughput is read against.
//   build/bench/fma_peak [--threads N]   (default: 1 and all cores)
#include "Peak.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include "runtime/core/Model.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

namespace {
double sgemmGflops(int64_t m, int64_t k, int64_t n) {
  at::Tensor a = at::randn({m, k}), b = at::randn({k, n});
  at::Tensor c = at::mm(a, b);
  int reps = 1;
  double s = 0;
  for (;;) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r)
      c = at::mm(a, b);
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0.2)
      break;
    reps *= 2;
  }
  return 2.0 * static_cast<double>(m * k * n) * reps / s / 1e9;
}
} // namespace

int main(int argc, char **argv) {
  int all = static_cast<int>(std::thread::hardware_concurrency());
  std::vector<int> counts = {1, all};
  if (argc == 3 && std::string(argv[1]) == "--threads")
    counts = {std::stoi(argv[2])};
  std::printf("FMA chains (%s): 8-wide, 12 independent, fused multiply-add = 2 flops\n",
              mixc::bench::hasAvx2Fma() ? "AVX2 + FMA" : "generic vector code");
  for (int t : counts)
    std::printf("  %2d thread(s): %7.1f GFLOP/s\n", t, mixc::bench::fmaPeakGflops(t));
  std::printf("LibTorch sgemm at a step's shapes (rows = B·T = 1184):\n");
  for (int t : counts) {
    mixc::rt::setThreads(t); // LibTorch and OpenBLAS, as the runtime sets them
    for (int64_t d : {64, 128})
      for (auto [k, n] : {std::pair<int64_t, int64_t>{d, d}, {d, 4 * d}, {4 * d, d}})
        std::printf("  %2d thread(s): [1184, %3lld] x [%3lld, %3lld] %7.1f GFLOP/s\n", t, (long long)k,
                    (long long)k, (long long)n, sgemmGflops(1184, k, n));
  }
  return 0;
}
