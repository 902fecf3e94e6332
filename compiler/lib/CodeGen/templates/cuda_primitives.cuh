//===- cuda_primitives.cuh - mixer primitives for generated CUDA kernels --===//
//
// Pasted (after KernelAbi.h and kernel_math.h) into every generated CUDA
// source; the code the emitter writes for a fused region calls these host
// functions for its anchor primitive, on the caller's stream. Same
// formulas, layouts and checkpoint format as templates/cpu_primitives.h
// (linear attention's `saved` holds one more [B,T] scratch row here; the
// runtime asks each library's own <sym>_saved), so one runtime path serves both.
// The backward ADDS into its gradient buffers; sums over threads use
// atomicAdd after a warp reduction.
//
//   selective scan   one thread per (b, d) channel; its N states live in
//                    registers, checkpoints every kScanChunk steps
//   delta rule       one thread per (b, row i of S); the row (K floats) in
//                    thread-local memory, checkpoints every kDeltaChunk steps
//   causal conv      one thread per output element
//   long conv        direct, one thread per output (and per filter tap for gh)
//   linear attention one thread per (b, column d of S); the column in
//                    thread-local memory, no checkpoints (the backward
//                    sweeps forward again)
//
//===----------------------------------------------------------------------===//
#ifdef MIXK_CUDA_ON_HOST
// (cuda_on_host.h is pasted above: CI runs this source on the host.)
#else
#include <cuda_runtime.h>
#define MIXK_LAUNCH(kernel, grid, block, stream) kernel<<<grid, block, 0, stream>>>
#endif

#include <cstdint>

namespace mixk {

constexpr int64_t kScanChunk = 16;
constexpr int64_t kDeltaChunk = 8;
inline int64_t scanSaved(int64_t nb, int64_t nt, int64_t nd, int64_t nn) {
  return nb * ((nt + kScanChunk - 1) / kScanChunk) * nn * nd;
}
inline int64_t deltaSaved(int64_t nb, int64_t nt, int64_t nk, int64_t nv) {
  return nb * ((nt + kDeltaChunk - 1) / kDeltaChunk) * nv * nk;
}

constexpr int kThreads = 256;
inline unsigned blocksFor(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}
#define MIXK_GRID_LOOP(i, n)                                                                       \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n);          \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

/// State interventions (abi/KernelAbi.h's mixk_state, passed to a kernel by
/// value: its pointers are device memory). A thread holds part of row b's
/// state; `at` is the ABI index of its element j.
__device__ inline bool touchesState(const mixk_state &s, int64_t b, int64_t t) {
  return s.capture || (s.edit_pos && s.edit_pos[b] == t);
}
/// Element `at` of row b's state after the access at step t (capture after the edit).
__device__ inline float editState(const mixk_state &s, int64_t b, int64_t t, int64_t size, int64_t at,
                                  float x) {
  if (s.edit_pos && s.edit_pos[b] == t) {
    float v = s.edit_value[b * size + at];
    x = s.edit_add[b] ? x + v : v;
  }
  return x;
}
__device__ inline float accessState(const mixk_state &s, int64_t b, int64_t t, int64_t nt, int64_t size,
                                    int64_t at, float x) {
  x = editState(s, b, t, size, at, x);
  if (s.capture)
    s.capture[(b * nt + t) * size + at] = x;
  return x;
}
/// Which reader of its state row b's edit at step t reaches (MIXK_EDIT_*):
/// for an edge's edit a thread keeps the unedited elements beside the
/// edited ones for one step (the output reads one, the next step the other).
__device__ inline int editReader(const mixk_state &s, int64_t b, int64_t t) {
  return s.edit_reader && s.edit_pos && s.edit_pos[b] == t ? s.edit_reader[b] : MIXK_EDIT_BOTH;
}
/// Element `at` of the state handed on, into the capture (after an edge's edit).
__device__ inline void recapture(const mixk_state &s, int64_t b, int64_t t, int64_t nt, int64_t size, int64_t at,
                                 float x) {
  if (s.capture)
    s.capture[(b * nt + t) * size + at] = x;
}
/// After accessState's edit `e` of `x` at an edge: `x` becomes what the
/// output reads and `kept` what is handed on.
__device__ inline void splitEdge(int reader, float e, float &x, float &kept) {
  kept = reader == MIXK_EDIT_OUTPUT ? x : e;
  x = reader == MIXK_EDIT_NEXT_STEP ? x : e;
}
inline mixk_state stateOrNone(const mixk_state *s) { return s ? *s : mixk_state{}; }

/// atomicAdd(dst, v), summed over the warp first when all 32 lanes add to
/// the same address (the common case: lanes are neighbouring channels of
/// one row); otherwise each lane adds its own.
__device__ inline void warpAtomicAdd(float *dst, float v) {
  unsigned mask = __activemask();
  int same = 0;
  __match_all_sync(mask, reinterpret_cast<unsigned long long>(dst), &same);
  if (mask != 0xffffffffu || !same) {
    atomicAdd(dst, v);
    return;
  }
  for (int off = 16; off > 0; off /= 2)
    v += __shfl_down_sync(mask, v, off);
  if ((threadIdx.x & 31) == 0)
    atomicAdd(dst, v);
}

// ------------------------------------------------------------ causal conv
// y[b,t,c] = bias[c] + Σ_k w[c,k] · x[b, t−K+1+k, c]   (x [B,T,C], w [C,K]).
__global__ void causalConvForwardKernel(const float *x, const float *w, const float *bias, float *y,
                                        int64_t nb, int64_t nt, int64_t nc, int64_t nk) {
  MIXK_GRID_LOOP(i, nb * nt * nc) {
    int64_t c = i % nc, t = (i / nc) % nt, b = i / (nc * nt);
    float acc = bias ? bias[c] : 0.f;
    for (int64_t k = nk - 1 - t > 0 ? nk - 1 - t : 0; k < nk; ++k)
      acc += w[c * nk + k] * x[(b * nt + t - (nk - 1) + k) * nc + c];
    y[i] = acc;
  }
}

// gx[b,s,c] = Σ_k w[c,k] gy[b, s+K−1−k, c];  gw, gbias summed over (b, t).
__global__ void causalConvBackwardKernel(const float *x, const float *w, const float *gy, float *gx,
                                         float *gw, float *gbias, int64_t nb, int64_t nt,
                                         int64_t nc, int64_t nk) {
  MIXK_GRID_LOOP(i, nb * nt * nc) {
    int64_t c = i % nc, s = (i / nc) % nt, b = i / (nc * nt);
    float g = gy[i], acc = 0.f;
    for (int64_t k = 0; k < nk; ++k) {
      int64_t t = s + nk - 1 - k;
      if (t < nt)
        acc += w[c * nk + k] * gy[(b * nt + t) * nc + c];
      int64_t src = s - (nk - 1) + k; // the input this output read through tap k
      if (src >= 0)
        atomicAdd(&gw[c * nk + k], g * x[(b * nt + src) * nc + c]);
    }
    gx[i] += acc;
    if (gbias)
      atomicAdd(&gbias[c], g);
  }
}

inline void causalConvForward(const float *x, const float *w, const float *bias, float *y,
                              int64_t nb, int64_t nt, int64_t nc, int64_t nk, cudaStream_t st) {
  MIXK_LAUNCH(causalConvForwardKernel, blocksFor(nb * nt * nc), kThreads, st)(x, w, bias, y, nb, nt, nc, nk);
}
inline void causalConvBackward(const float *x, const float *w, const float *gy, float *gx,
                               float *gw, float *gbias, int64_t nb, int64_t nt, int64_t nc,
                               int64_t nk, cudaStream_t st) {
  MIXK_LAUNCH(causalConvBackwardKernel, blocksFor(nb * nt * nc), kThreads, st)(x, w, gy, gx, gw, gbias,
                                                                        nb, nt, nc, nk);
}

// ------------------------------------------------------------ selective scan
//   s_t = exp(Δ_t A) ⊙ s_{t−1} + Δ_t B_t x_t,   y_t = C_t · s_t + D ⊙ x_t
// x, Δ [B,T,D]; A [D,N]; B, C [B,T,N]; D [D]; checkpoints [B][chunk][N][D].
template <int N>
__global__ void selectiveScanForwardKernel(const float *x, const float *dt, const float *A,
                                           const float *B, const float *C, const float *D,
                                           float *y, float *ckpt, mixk_state st, int64_t nb,
                                           int64_t nt, int64_t nd) {
  MIXK_GRID_LOOP(i, nb * nd) {
    int64_t d = i % nd, b = i / nd, chunks = (nt + kScanChunk - 1) / kScanChunk;
    float s[N], a[N];
    for (int n = 0; n < N; ++n)
      s[n] = 0.f, a[n] = A[d * N + n];
    for (int64_t t = 0; t < nt; ++t) {
      if (t % kScanChunk == 0)
        for (int n = 0; n < N; ++n)
          ckpt[((b * chunks + t / kScanChunk) * N + n) * nd + d] = s[n];
      int64_t row = b * nt + t;
      float xv = x[row * nd + d], dv = dt[row * nd + d], acc = D[d] * xv;
      for (int n = 0; n < N; ++n)
        s[n] = fexp(dv * a[n]) * s[n] + dv * xv * B[row * N + n];
      float kept[N];
      int reader = MIXK_EDIT_BOTH;
      if (touchesState(st, b, t)) { // ABI layout [D, N]
        reader = editReader(st, b, t);
        for (int n = 0; n < N; ++n)
          splitEdge(reader, accessState(st, b, t, nt, nd * N, d * N + n, s[n]), s[n], kept[n]);
      }
      for (int n = 0; n < N; ++n)
        acc += C[row * N + n] * s[n];
      y[row * nd + d] = acc;
      if (reader != MIXK_EDIT_BOTH) // the state handed on
        for (int n = 0; n < N; ++n) {
          s[n] = kept[n];
          recapture(st, b, t, nt, nd * N, d * N + n, s[n]);
        }
    }
  }
}

template <int N>
__global__ void selectiveScanBackwardKernel(const float *x, const float *dt, const float *A,
                                            const float *B, const float *C, const float *D,
                                            const float *ckpt, const float *gy, float *gx,
                                            float *gdt, float *gA, float *gB, float *gC,
                                            float *gD, int64_t nb, int64_t nt, int64_t nd) {
  MIXK_GRID_LOOP(i, nb * nd) {
    int64_t d = i % nd, b = i / nd, chunks = (nt + kScanChunk - 1) / kScanChunk;
    float a[N], gs[N], ga[N], gd = 0.f;
    float states[(kScanChunk + 1) * N]; // states[k] = s_{t0+k−1}
    for (int n = 0; n < N; ++n)
      a[n] = A[d * N + n], gs[n] = 0.f, ga[n] = 0.f;
    for (int64_t c = chunks - 1; c >= 0; --c) {
      int64_t t0 = c * kScanChunk, t1 = t0 + kScanChunk < nt ? t0 + kScanChunk : nt;
      for (int n = 0; n < N; ++n)
        states[n] = ckpt[((b * chunks + c) * N + n) * nd + d];
      for (int64_t t = t0; t < t1; ++t) {
        int64_t row = b * nt + t, k = t - t0;
        float xv = x[row * nd + d], dv = dt[row * nd + d];
        for (int n = 0; n < N; ++n)
          states[(k + 1) * N + n] = fexp(dv * a[n]) * states[k * N + n] + dv * xv * B[row * N + n];
      }
      for (int64_t t = t1 - 1; t >= t0; --t) {
        int64_t row = b * nt + t, k = t - t0;
        float xv = x[row * nd + d], dv = dt[row * nd + d], g = gy[row * nd + d];
        float gxv = g * D[d], gdv = 0.f;
        gd += g * xv;
        for (int n = 0; n < N; ++n) {
          float st = states[(k + 1) * N + n], sp = states[k * N + n], bn = B[row * N + n];
          warpAtomicAdd(&gC[row * N + n], g * st);
          float gsd = gs[n] + g * C[row * N + n];
          float dA = fexp(dv * a[n]), gdA = gsd * sp;
          gdv += gdA * dA * a[n] + gsd * bn * xv;
          ga[n] += gdA * dA * dv;
          warpAtomicAdd(&gB[row * N + n], gsd * dv * xv);
          gxv += gsd * dv * bn;
          gs[n] = gsd * dA;
        }
        gx[row * nd + d] += gxv;
        gdt[row * nd + d] += gdv;
      }
    }
    for (int n = 0; n < N; ++n)
      atomicAdd(&gA[d * N + n], ga[n]);
    atomicAdd(&gD[d], gd);
  }
}

template <int N>
void selectiveScanForward(const float *x, const float *dt, const float *A, const float *B,
                          const float *C, const float *D, float *y, float *ckpt, const mixk_state *state,
                          int64_t nb, int64_t nt, int64_t nd, cudaStream_t st) {
  MIXK_LAUNCH(selectiveScanForwardKernel<N>, blocksFor(nb * nd), kThreads, st)(x, dt, A, B, C, D, y, ckpt,
                                                                       stateOrNone(state), nb, nt, nd);
}
template <int N>
void selectiveScanBackward(const float *x, const float *dt, const float *A, const float *B,
                           const float *C, const float *D, const float *ckpt, const float *gy,
                           float *gx, float *gdt, float *gA, float *gB, float *gC, float *gD,
                           int64_t nb, int64_t nt, int64_t nd, cudaStream_t st) {
  MIXK_LAUNCH(selectiveScanBackwardKernel<N>, blocksFor(nb * nd), kThreads, st)(
      x, dt, A, B, C, D, ckpt, gy, gx, gdt, gA, gB, gC, gD, nb, nt, nd);
}

// ------------------------------------------------------------ delta rule
//   u_t = v_t − S_{t−1} k_t,  S_t = S_{t−1} + β_t u_t k_tᵀ,  o_t = S_t q_t
// q, k [B,T,K]; v [B,T,V]; β [B,T,1]; S [V][K]; row i of S is independent
// of the others given the inputs, so each thread carries one.
template <int K>
__global__ void deltaRuleForwardKernel(const float *q, const float *k, const float *v,
                                       const float *beta, float *o, float *ckpt, mixk_state st,
                                       int64_t nb, int64_t nt, int64_t nv) {
  MIXK_GRID_LOOP(gi, nb * nv) {
    int64_t i = gi % nv, b = gi / nv, chunks = (nt + kDeltaChunk - 1) / kDeltaChunk;
    float S[K];
    for (int j = 0; j < K; ++j)
      S[j] = 0.f;
    for (int64_t t = 0; t < nt; ++t) {
      int64_t row = b * nt + t;
      if (t % kDeltaChunk == 0)
        for (int j = 0; j < K; ++j)
          ckpt[((b * chunks + t / kDeltaChunk) * nv + i) * K + j] = S[j];
      const float *kt = k + row * K, *qt = q + row * K;
      float sk = 0.f;
      for (int j = 0; j < K; ++j)
        sk += S[j] * kt[j];
      float bu = beta[row] * (v[row * nv + i] - sk), acc = 0.f;
      for (int j = 0; j < K; ++j)
        S[j] += bu * kt[j];
      float kept[K];
      int reader = MIXK_EDIT_BOTH;
      if (touchesState(st, b, t)) { // ABI layout [V, K]: this thread's row i
        reader = editReader(st, b, t);
        for (int j = 0; j < K; ++j)
          splitEdge(reader, accessState(st, b, t, nt, nv * K, i * K + j, S[j]), S[j], kept[j]);
      }
      for (int j = 0; j < K; ++j)
        acc += S[j] * qt[j];
      o[row * nv + i] = acc;
      if (reader != MIXK_EDIT_BOTH) // the state handed on
        for (int j = 0; j < K; ++j) {
          S[j] = kept[j];
          recapture(st, b, t, nt, nv * K, i * K + j, S[j]);
        }
    }
  }
}

template <int K>
__global__ void deltaRuleBackwardKernel(const float *q, const float *k, const float *v,
                                        const float *beta, const float *ckpt, const float *go,
                                        float *gq, float *gk, float *gv, float *gbeta, int64_t nb,
                                        int64_t nt, int64_t nv) {
  MIXK_GRID_LOOP(gi, nb * nv) {
    int64_t i = gi % nv, b = gi / nv, chunks = (nt + kDeltaChunk - 1) / kDeltaChunk;
    float G[K];                             // dL/dS_t, row i
    float states[(kDeltaChunk + 1) * K];    // states[s] = S_{t0+s−1}, row i
    for (int j = 0; j < K; ++j)
      G[j] = 0.f;
    for (int64_t c = chunks - 1; c >= 0; --c) {
      int64_t t0 = c * kDeltaChunk, t1 = t0 + kDeltaChunk < nt ? t0 + kDeltaChunk : nt;
      for (int j = 0; j < K; ++j)
        states[j] = ckpt[((b * chunks + c) * nv + i) * K + j];
      for (int64_t t = t0; t < t1; ++t) {
        int64_t row = b * nt + t, s = t - t0;
        const float *kt = k + row * K, *Sp = states + s * K;
        float *Sn = states + (s + 1) * K, sk = 0.f;
        for (int j = 0; j < K; ++j)
          sk += Sp[j] * kt[j];
        float bu = beta[row] * (v[row * nv + i] - sk);
        for (int j = 0; j < K; ++j)
          Sn[j] = Sp[j] + bu * kt[j];
      }
      for (int64_t t = t1 - 1; t >= t0; --t) {
        int64_t row = b * nt + t, s = t - t0;
        const float *kt = k + row * K, *qt = q + row * K;
        const float *St = states + (s + 1) * K, *Sp = states + s * K;
        float goi = go[row * nv + i], bt = beta[row];
        for (int j = 0; j < K; ++j) { // o = S_t q
          G[j] += goi * qt[j];
          warpAtomicAdd(&gq[row * K + j], St[j] * goi);
        }
        float sk = 0.f, Gk = 0.f;
        for (int j = 0; j < K; ++j)
          sk += Sp[j] * kt[j], Gk += G[j] * kt[j];
        float u = v[row * nv + i] - sk, gu = bt * Gk;
        warpAtomicAdd(&gbeta[row], u * Gk);
        gv[row * nv + i] += gu;
        for (int j = 0; j < K; ++j) { // gk = β Gᵀ u − S_prevᵀ gu;  G_prev = G − gu kᵀ
          warpAtomicAdd(&gk[row * K + j], bt * u * G[j] - Sp[j] * gu);
          G[j] -= gu * kt[j];
        }
      }
    }
  }
}

template <int K>
void deltaRuleForward(const float *q, const float *k, const float *v, const float *beta, float *o,
                      float *ckpt, const mixk_state *state, int64_t nb, int64_t nt, int64_t nv,
                      cudaStream_t st) {
  MIXK_LAUNCH(deltaRuleForwardKernel<K>, blocksFor(nb * nv), kThreads, st)(q, k, v, beta, o, ckpt,
                                                                           stateOrNone(state), nb, nt, nv);
}
template <int K>
void deltaRuleBackward(const float *q, const float *k, const float *v, const float *beta,
                       const float *ckpt, const float *go, float *gq, float *gk, float *gv,
                       float *gbeta, int64_t nb, int64_t nt, int64_t nv, cudaStream_t st) {
  MIXK_LAUNCH(deltaRuleBackwardKernel<K>, blocksFor(nb * nv), kThreads, st)(q, k, v, beta, ckpt, go, gq, gk,
                                                                    gv, gbeta, nb, nt, nv);
}

// ------------------------------------------------------------ linear attention
//   S_t = S_{t−1} + φk_t v_tᵀ,  z_t = z_{t−1} + φk_t,  o_t = φq_tᵀ S_t / (φq_t · z_t + eps)
// One thread per (b, column d of S): the column (F floats) and z in thread
// memory (z is the same for every column; each thread keeps its own copy
// rather than share it). Saved: den_t, then gden_t (backward) [B,T] each.
// The backward is as templates/cpu_primitives.h; the sums over d of gq and
// gk go through warpAtomicAdd (the z terms once, by column 0).
inline int64_t linearAttentionSaved(int64_t nb, int64_t nt) { return 2 * nb * nt; }

template <int F>
__global__ void linearAttentionForwardKernel(const float *q, const float *k, const float *v, float *o,
                                             float *den, mixk_state st, int64_t nb, int64_t nt, int64_t nd,
                                             float eps) {
  MIXK_GRID_LOOP(gi, nb * nd) {
    int64_t d = gi % nd, b = gi / nd;
    float S[F], z[F];
    for (int f = 0; f < F; ++f)
      S[f] = z[f] = 0.f;
    for (int64_t t = 0; t < nt; ++t) {
      int64_t row = b * nt + t;
      const float *qt = q + row * F, *kt = k + row * F;
      float vd = v[row * nd + d], num = 0.f, dn = eps;
      for (int f = 0; f < F; ++f) {
        z[f] += kt[f];
        S[f] += kt[f] * vd;
      }
      float keptS[F], keptZ[F];
      int reader = MIXK_EDIT_BOTH;
      const int64_t size = F * nd + F;
      if (touchesState(st, b, t)) { // ABI layout: S [F, D] (this thread's column d), then z [F]
        reader = editReader(st, b, t);
        for (int f = 0; f < F; ++f) {
          splitEdge(reader, accessState(st, b, t, nt, size, f * nd + d, S[f]), S[f], keptS[f]);
          // Every thread keeps its own z: each edits it, column 0 captures it.
          splitEdge(reader,
                    d == 0 ? accessState(st, b, t, nt, size, F * nd + f, z[f]) : editState(st, b, t, size, F * nd + f, z[f]),
                    z[f], keptZ[f]);
        }
      }
      for (int f = 0; f < F; ++f) {
        num += qt[f] * S[f];
        dn += qt[f] * z[f];
      }
      o[row * nd + d] = num / dn;
      if (d == 0)
        den[row] = dn;
      if (reader != MIXK_EDIT_BOTH) // the state handed on
        for (int f = 0; f < F; ++f) {
          S[f] = keptS[f], z[f] = keptZ[f];
          recapture(st, b, t, nt, size, f * nd + d, S[f]);
          if (d == 0)
            recapture(st, b, t, nt, size, F * nd + f, z[f]);
        }
    }
  }
}

/// gden_t = −(go_t · o_t) / den_t, one thread per (b, t).
__global__ void linearAttentionGdenKernel(const float *o, const float *den, const float *go,
                                          float *gden, int64_t rows, int64_t nd) {
  MIXK_GRID_LOOP(row, rows) {
    float acc = 0.f;
    for (int64_t d = 0; d < nd; ++d)
      acc += go[row * nd + d] * o[row * nd + d];
    gden[row] = -acc / den[row];
  }
}

template <int F>
__global__ void linearAttentionBackwardKernel(const float *q, const float *k, const float *v,
                                              const float *den, const float *gden, const float *go,
                                              float *gq, float *gk, float *gv, int64_t nb, int64_t nt,
                                              int64_t nd) {
  MIXK_GRID_LOOP(gi, nb * nd) {
    int64_t d = gi % nd, b = gi / nd;
    float S[F], z[F];
    for (int f = 0; f < F; ++f)
      S[f] = z[f] = 0.f;
    for (int64_t t = 0; t < nt; ++t) { // forward again: gq_t needs S_t, z_t
      int64_t row = b * nt + t;
      const float *kt = k + row * F;
      float vd = v[row * nd + d], gnum = go[row * nd + d] / den[row], gd = gden[row];
      for (int f = 0; f < F; ++f) {
        z[f] += kt[f];
        S[f] += kt[f] * vd;
        warpAtomicAdd(&gq[row * F + f], S[f] * gnum + (d == 0 ? z[f] * gd : 0.f));
      }
    }
    for (int f = 0; f < F; ++f) // now dL/dS_t (column d), dL/dz_t
      S[f] = z[f] = 0.f;
    for (int64_t t = nt - 1; t >= 0; --t) {
      int64_t row = b * nt + t;
      const float *qt = q + row * F, *kt = k + row * F;
      float vd = v[row * nd + d], gnum = go[row * nd + d] / den[row], gd = gden[row], gvd = 0.f;
      for (int f = 0; f < F; ++f) {
        S[f] += qt[f] * gnum;
        z[f] += qt[f] * gd;
        gvd += S[f] * kt[f];
        warpAtomicAdd(&gk[row * F + f], S[f] * vd + (d == 0 ? z[f] : 0.f));
      }
      gv[row * nd + d] += gvd;
    }
  }
}

template <int F>
inline void linearAttentionForward(const float *q, const float *k, const float *v, float *o,
                                   float *saved, const mixk_state *state, int64_t nb, int64_t nt, int64_t nd,
                                   float eps, cudaStream_t st) {
  MIXK_LAUNCH(linearAttentionForwardKernel<F>, blocksFor(nb * nd), kThreads, st)(q, k, v, o, saved,
                                                                                stateOrNone(state), nb, nt, nd, eps);
}

template <int F>
inline void linearAttentionBackward(const float *q, const float *k, const float *v, const float *o,
                                    float *saved, const float *go, float *gq, float *gk, float *gv,
                                    int64_t nb, int64_t nt, int64_t nd, cudaStream_t st) {
  float *gden = saved + nb * nt;
  MIXK_LAUNCH(linearAttentionGdenKernel, blocksFor(nb * nt), kThreads, st)(o, saved, go, gden, nb * nt, nd);
  MIXK_LAUNCH(linearAttentionBackwardKernel<F>, blocksFor(nb * nd), kThreads, st)(q, k, v, saved, gden, go,
                                                                                 gq, gk, gv, nb, nt, nd);
}

// ------------------------------------------------------------ softmax attention
//   o_i = Σ_{j≤i} p_ij v_j,  p_ij = exp(s_ij − lse_i),  s_ij = q_i·k_j / √K
// As templates/cpu_primitives.h. One thread per query row (b, i) computes
// its scores twice (max, then sum) and accumulates o_i in place; the
// backward is one thread per query row for D_i and gq_i, then one per key
// row (b, j) for gk_j and gv_j (no atomics). Saved: lse [B,T], then D [B,T].
inline int64_t softmaxAttentionSaved(int64_t nb, int64_t nt) { return 2 * nb * nt; }

MIXK_HD inline float rowDot(const float *a, const float *b, int64_t n) {
  float acc = 0.f;
  for (int64_t i = 0; i < n; ++i)
    acc += a[i] * b[i];
  return acc;
}

__global__ void softmaxAttentionForwardKernel(const float *q, const float *k, const float *v, float *o,
                                              float *lse, int64_t nb, int64_t nt, int64_t nk, int64_t nv,
                                              float scale) {
  MIXK_GRID_LOOP(row, nb * nt) {
    const int64_t i = row % nt, b = row / nt;
    const float *qi = q + row * nk, *kb = k + b * nt * nk, *vb = v + b * nt * nv;
    float m = -INFINITY, sum = 0.f;
    for (int64_t j = 0; j <= i; ++j)
      m = fmaxf(m, scale * rowDot(qi, kb + j * nk, nk));
    float *oi = o + row * nv;
    for (int64_t d = 0; d < nv; ++d)
      oi[d] = 0.f;
    for (int64_t j = 0; j <= i; ++j) {
      const float e = fexp(scale * rowDot(qi, kb + j * nk, nk) - m);
      sum += e;
      for (int64_t d = 0; d < nv; ++d)
        oi[d] += e * vb[j * nv + d];
    }
    for (int64_t d = 0; d < nv; ++d)
      oi[d] /= sum;
    lse[row] = m + logf(sum);
  }
}

__global__ void softmaxAttentionQueryGradKernel(const float *q, const float *k, const float *v, const float *o,
                                                const float *lse, float *D, const float *go, float *gq,
                                                int64_t nb, int64_t nt, int64_t nk, int64_t nv, float scale) {
  MIXK_GRID_LOOP(row, nb * nt) {
    const int64_t i = row % nt, b = row / nt;
    const float *qi = q + row * nk, *goi = go + row * nv, *kb = k + b * nt * nk, *vb = v + b * nt * nv;
    const float Di = rowDot(goi, o + row * nv, nv);
    D[row] = Di;
    float *gqi = gq + row * nk;
    for (int64_t j = 0; j <= i; ++j) {
      const float p = fexp(scale * rowDot(qi, kb + j * nk, nk) - lse[row]);
      const float ds = p * (rowDot(goi, vb + j * nv, nv) - Di) * scale;
      for (int64_t f = 0; f < nk; ++f)
        gqi[f] += ds * kb[j * nk + f];
    }
  }
}

__global__ void softmaxAttentionKeyGradKernel(const float *q, const float *k, const float *v, const float *lse,
                                              const float *D, const float *go, float *gk, float *gv, int64_t nb,
                                              int64_t nt, int64_t nk, int64_t nv, float scale) {
  MIXK_GRID_LOOP(row, nb * nt) {
    const int64_t j = row % nt, b = row / nt;
    const float *kj = k + row * nk, *vj = v + row * nv;
    float *gkj = gk + row * nk, *gvj = gv + row * nv;
    for (int64_t i = j; i < nt; ++i) {
      const int64_t r = b * nt + i;
      const float *qi = q + r * nk, *goi = go + r * nv;
      const float p = fexp(scale * rowDot(qi, kj, nk) - lse[r]);
      const float ds = p * (rowDot(goi, vj, nv) - D[r]) * scale;
      for (int64_t f = 0; f < nk; ++f)
        gkj[f] += ds * qi[f];
      for (int64_t d = 0; d < nv; ++d)
        gvj[d] += p * goi[d];
    }
  }
}

inline void softmaxAttentionForward(const float *q, const float *k, const float *v, float *o, float *saved,
                                    int64_t nb, int64_t nt, int64_t nk, int64_t nv, cudaStream_t st) {
  const float scale = 1.f / sqrtf(static_cast<float>(nk));
  MIXK_LAUNCH(softmaxAttentionForwardKernel, blocksFor(nb * nt), kThreads, st)(q, k, v, o, saved, nb, nt, nk, nv,
                                                                              scale);
}

inline void softmaxAttentionBackward(const float *q, const float *k, const float *v, const float *o,
                                     float *saved, const float *go, float *gq, float *gk, float *gv, int64_t nb,
                                     int64_t nt, int64_t nk, int64_t nv, cudaStream_t st) {
  const float scale = 1.f / sqrtf(static_cast<float>(nk));
  float *D = saved + nb * nt;
  MIXK_LAUNCH(softmaxAttentionQueryGradKernel, blocksFor(nb * nt), kThreads, st)(q, k, v, o, saved, D, go, gq, nb,
                                                                                nt, nk, nv, scale);
  MIXK_LAUNCH(softmaxAttentionKeyGradKernel, blocksFor(nb * nt), kThreads, st)(q, k, v, saved, D, go, gk, gv, nb,
                                                                              nt, nk, nv, scale);
}

// ------------------------------------------------------------ long conv
//   y[b,t,c] = Σ_{s≤t} h[s,c] · x[b,t−s,c]      x [B,T,C]; h [L,C], L ≥ T
// Direct, one thread per output (not cuFFT: see cpu_primitives.h); the
// filter gradient one thread per (s, c), summing over b and t itself.
__global__ void longConvForwardKernel(const float *x, const float *h, float *y, int64_t nb, int64_t nt,
                                      int64_t nc) {
  MIXK_GRID_LOOP(i, nb * nt * nc) {
    int64_t c = i % nc, t = (i / nc) % nt, b = i / (nc * nt);
    float acc = 0.f;
    for (int64_t s = 0; s <= t; ++s)
      acc += h[s * nc + c] * x[(b * nt + t - s) * nc + c];
    y[i] = acc;
  }
}

__global__ void longConvBackwardKernel(const float *x, const float *h, const float *gy, float *gx,
                                       float *gh, int64_t nb, int64_t nt, int64_t nc) {
  MIXK_GRID_LOOP(i, nb * nt * nc) { // gx[b,s,c]
    int64_t c = i % nc, s = (i / nc) % nt, b = i / (nc * nt);
    float acc = 0.f;
    for (int64_t t = s; t < nt; ++t)
      acc += h[(t - s) * nc + c] * gy[(b * nt + t) * nc + c];
    gx[i] += acc;
  }
  MIXK_GRID_LOOP(i, nt * nc) { // gh[s,c]
    int64_t c = i % nc, s = i / nc;
    float acc = 0.f;
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t t = s; t < nt; ++t)
        acc += gy[(b * nt + t) * nc + c] * x[(b * nt + t - s) * nc + c];
    gh[i] += acc;
  }
}

inline void longConvForward(const float *x, const float *h, float *y, int64_t nb, int64_t nt, int64_t nc,
                            cudaStream_t st) {
  MIXK_LAUNCH(longConvForwardKernel, blocksFor(nb * nt * nc), kThreads, st)(x, h, y, nb, nt, nc);
}

inline void longConvBackward(const float *x, const float *h, const float *gy, float *gx, float *gh,
                             int64_t nb, int64_t nt, int64_t nc, cudaStream_t st) {
  MIXK_LAUNCH(longConvBackwardKernel, blocksFor(nb * nt * nc), kThreads, st)(x, h, gy, gx, gh, nb, nt, nc);
}

} // namespace mixk
