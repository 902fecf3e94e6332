//===- cuda_on_host.h - run generated CUDA source on the host, serially ---===//
//
// With MIXK_CUDA_ON_HOST defined, a generated CUDA source compiles with the
// host C++ compiler and runs every kernel launch as a loop over its blocks
// and threads, one after another, on host memory. That is how CI (which
// has nvcc but no GPU) checks the CUDA back end's numbers — indexing,
// checkpoints, gradient accumulation — against the LibTorch path. What it
// cannot check is concurrency: launches here never race, so the warp
// reductions take their one-lane path (atomicAdd per lane).
//
//===----------------------------------------------------------------------===//
#include <cstdlib>
#include <cstring>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
typedef void *cudaStream_t;

namespace mixk_host {
struct Dim3 {
  unsigned x = 0;
};
inline Dim3 threadIdx, blockIdx, blockDim, gridDim;

/// A launch `kernel<<<grid, block>>>(args...)`, as MIXK_LAUNCH(...)(args...).
template <typename Kernel> struct Launch {
  Kernel kernel;
  unsigned grid, block;
  template <typename... Args> void operator()(Args... args) const {
    gridDim.x = grid;
    blockDim.x = block;
    for (unsigned b = 0; b < grid; ++b)
      for (unsigned t = 0; t < block; ++t) {
        blockIdx.x = b;
        threadIdx.x = t;
        kernel(args...);
      }
  }
};
template <typename Kernel> Launch<Kernel> launch(Kernel kernel, unsigned grid, unsigned block) {
  return {kernel, grid, block};
}
} // namespace mixk_host
using mixk_host::blockDim;
using mixk_host::blockIdx;
using mixk_host::gridDim;
using mixk_host::threadIdx;
#define MIXK_LAUNCH(kernel, grid, block, stream) ::mixk_host::launch(kernel, grid, block)

inline float atomicAdd(float *p, float v) {
  float old = *p;
  *p = old + v;
  return old;
}
// One lane at a time: no lane ever sees all 32 active.
inline unsigned __activemask() { return 1u; }
inline unsigned long long __match_all_sync(unsigned, unsigned long long v, int *pred) {
  *pred = 0;
  return v;
}
inline float __shfl_down_sync(unsigned, float v, int) { return v; }

inline int cudaMallocAsync(void **p, size_t bytes, cudaStream_t) {
  *p = std::malloc(bytes);
  return *p ? 0 : 2;
}
inline int cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t) {
  std::memset(p, value, bytes);
  return 0;
}
inline int cudaFreeAsync(void *p, cudaStream_t) {
  std::free(p);
  return 0;
}
