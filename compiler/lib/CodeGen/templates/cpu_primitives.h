//===- cpu_primitives.h - mixer primitives for generated CPU kernels ------===//
//
// Pasted (after KernelAbi.h) into every generated CPU source; the code the
// emitter writes for a fused region calls these for its anchor primitive.
// Plain loops laid out so GCC vectorises the innermost one (-O3
// -march=native, reassociation allowed); OpenMP over the batch. Each has a forward and
// a backward that ADDS into its gradient buffers. The references they are
// tested against are the LibTorch primitives in runtime/core.
//
// Memory: the recurrences keep their state only every L steps (checkpoints)
// and recompute a chunk's states in the backward, instead of storing every
// state ([B, T, D, N] or [B, T, V, K]) as the LibTorch path does.
//
//===----------------------------------------------------------------------===//
#ifndef MIXK_KERNEL_MATH_H // pasted before this file in generated sources
#include "kernel_math.h"
#endif
#ifndef MIXC_ABI_KERNELABI_H // likewise
#include "abi/KernelAbi.h"
#endif
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace mixk {

inline int threadId() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/// Per-thread partial sums of a gradient that every row adds to (a
/// parameter's): no atomics, summed once at the end.
struct Partials {
  Partials(int threads, int64_t n) : n(n), data(static_cast<size_t>(threads) * n, 0.f) {}
  float *mine() { return data.data() + static_cast<int64_t>(threadId()) * n; }
  void addTo(float *dst) const {
    for (size_t p = 0; p < data.size(); p += n)
      for (int64_t i = 0; i < n; ++i)
        dst[i] += data[p + i];
  }
  int64_t n;
  std::vector<float> data;
};

// ------------------------------------------------------------ causal conv
// y[b,t,c] = bias[c] + Σ_k w[c,k] · x[b, t−K+1+k, c]   (x [B,T,C], w [C,K]).
inline void causalConvForward(const float *x, const float *w, const float *bias, float *y,
                              int64_t nb, int64_t nt, int64_t nc, int64_t nk, int threads) {
  std::vector<float> wt(nk * nc); // [K, C]: the inner loop runs over c
  for (int64_t c = 0; c < nc; ++c)
    for (int64_t k = 0; k < nk; ++k)
      wt[k * nc + c] = w[c * nk + k];
#pragma omp parallel for num_threads(threads)
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t t = 0; t < nt; ++t) {
      float *yr = y + (b * nt + t) * nc;
      for (int64_t c = 0; c < nc; ++c)
        yr[c] = bias ? bias[c] : 0.f;
      for (int64_t k = std::max<int64_t>(0, nk - 1 - t); k < nk; ++k) {
        const float *xr = x + (b * nt + t - (nk - 1) + k) * nc, *wk = wt.data() + k * nc;
        for (int64_t c = 0; c < nc; ++c)
          yr[c] += wk[c] * xr[c];
      }
    }
}

inline void causalConvBackward(const float *x, const float *w, const float *gy, float *gx,
                               float *gw, float *gbias, int64_t nb, int64_t nt, int64_t nc,
                               int64_t nk, int threads) {
  std::vector<float> wt(nk * nc);
  for (int64_t c = 0; c < nc; ++c)
    for (int64_t k = 0; k < nk; ++k)
      wt[k * nc + c] = w[c * nk + k];
  Partials gwt(threads, nk * nc + nc); // [K, C] then the bias [C]
#pragma omp parallel num_threads(threads)
  {
    float *gwk0 = gwt.mine(), *gb = gwk0 + nk * nc;
#pragma omp for
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t t = 0; t < nt; ++t) {
        const float *g = gy + (b * nt + t) * nc;
        for (int64_t c = 0; c < nc; ++c)
          gb[c] += g[c];
        for (int64_t k = std::max<int64_t>(0, nk - 1 - t); k < nk; ++k) {
          int64_t row = b * nt + t - (nk - 1) + k;
          const float *xr = x + row * nc, *wk = wt.data() + k * nc;
          float *gxr = gx + row * nc, *gwk = gwk0 + k * nc;
          for (int64_t c = 0; c < nc; ++c) {
            gxr[c] += wk[c] * g[c];
            gwk[c] += g[c] * xr[c];
          }
        }
      }
  }
  std::vector<float> sum(nk * nc + nc, 0.f);
  gwt.addTo(sum.data());
  for (int64_t c = 0; c < nc; ++c)
    for (int64_t k = 0; k < nk; ++k)
      gw[c * nk + k] += sum[k * nc + c];
  if (gbias)
    for (int64_t c = 0; c < nc; ++c)
      gbias[c] += sum[nk * nc + c];
}

// ------------------------------------------------------------ state access
// A recurrence's mixk_state (abi/KernelAbi.h): every state captured, and row
// b's state replaced or shifted after step edit_pos[b]. The state is given as
// up to two parts in the ABI's layout (linear attention: S, then z); the
// sweeps call this only on steps it touches, so the plain loop stays as is.
inline bool touchesState(const mixk_state *st, int64_t b, int64_t t) {
  return st && (st->capture || (st->edit_pos && st->edit_pos[b] == t));
}

/// Which reader of its state row b's edit at step t reaches (MIXK_EDIT_*):
/// an edge's edit keeps the unedited state beside the edited one for one
/// step, so that the output and the next step read different ones.
inline int editReader(const mixk_state *st, int64_t b, int64_t t) {
  return st && st->edit_reader && st->edit_pos && st->edit_pos[b] == t ? st->edit_reader[b] : MIXK_EDIT_BOTH;
}

/// Writes the state handed on into the capture at step t (after an edge's
/// edit: the access captured the edited state, which only the output read).
inline void recapture(const mixk_state *st, int64_t b, int64_t t, int64_t nt, const float *s0, int64_t n0,
                      const float *s1 = nullptr, int64_t n1 = 0) {
  if (!st->capture)
    return;
  float *c = st->capture + (b * nt + t) * (n0 + n1);
  std::copy(s0, s0 + n0, c);
  if (n1)
    std::copy(s1, s1 + n1, c + n0);
}

inline void accessState(const mixk_state *st, int64_t b, int64_t t, int64_t nt, float *s0, int64_t n0,
                        float *s1 = nullptr, int64_t n1 = 0) {
  const int64_t size = n0 + n1;
  if (st->edit_pos && st->edit_pos[b] == t) {
    const float *v = st->edit_value + b * size;
    const bool add = st->edit_add[b] != 0;
    for (int64_t j = 0; j < n0; ++j)
      s0[j] = add ? s0[j] + v[j] : v[j];
    for (int64_t j = 0; j < n1; ++j)
      s1[j] = add ? s1[j] + v[n0 + j] : v[n0 + j];
  }
  if (st->capture) {
    float *c = st->capture + (b * nt + t) * size;
    std::copy(s0, s0 + n0, c);
    if (n1)
      std::copy(s1, s1 + n1, c + n0);
  }
}

// ------------------------------------------------------------ selective scan
//   s_t = exp(Δ_t A) ⊙ s_{t−1} + Δ_t B_t x_t,   y_t = C_t · s_t + D ⊙ x_t
// x, Δ [B,T,D]; A [D,N]; B, C [B,T,N]; D [D]. The state is held as [N][D]
// so the inner loop runs over channels d, contiguous in x, Δ and y.
constexpr int64_t kScanChunk = 16;
inline int64_t scanSaved(int64_t nb, int64_t nt, int64_t nd, int64_t nn) {
  return nb * ((nt + kScanChunk - 1) / kScanChunk) * nn * nd;
}

/// One step of the state; KeepDA also keeps each exp(Δ a) in dA [N][D] for
/// the backward (one exp per state element a step instead of two there: the
/// exps are most of the scan's work).
template <bool KeepDA>
inline void scanStep(const float *xr, const float *dtr, const float *At, const float *Br,
                     const float *sPrev, float *s, float *dA, int64_t nd, int64_t nn) {
  for (int64_t n = 0; n < nn; ++n) {
    const float *a = At + n * nd, *sp = sPrev + n * nd;
    float *sn = s + n * nd, bn = Br[n];
    for (int64_t d = 0; d < nd; ++d) {
      const float e = fexp(dtr[d] * a[d]);
      if constexpr (KeepDA)
        dA[n * nd + d] = e;
      sn[d] = e * sp[d] + dtr[d] * xr[d] * bn;
    }
  }
}

inline void selectiveScanForward(const float *x, const float *dt, const float *A, const float *B,
                                 const float *C, const float *D, float *y, float *ckpt,
                                 const mixk_state *st, int64_t nb, int64_t nt, int64_t nd, int64_t nn,
                                 int threads) {
  std::vector<float> At(nn * nd);
  for (int64_t d = 0; d < nd; ++d)
    for (int64_t n = 0; n < nn; ++n)
      At[n * nd + d] = A[d * nn + n];
  int64_t chunks = (nt + kScanChunk - 1) / kScanChunk;
#pragma omp parallel for num_threads(threads)
  for (int64_t b = 0; b < nb; ++b) {
    std::vector<float> s(nn * nd, 0.f), next(nn * nd), canonical, kept;
    auto toCanonical = [&] { // held [N][D] here, [D, N] in the ABI
      canonical.resize(nn * nd);
      for (int64_t d = 0; d < nd; ++d)
        for (int64_t n = 0; n < nn; ++n)
          canonical[d * nn + n] = s[n * nd + d];
    };
    for (int64_t t = 0; t < nt; ++t) {
      if (t % kScanChunk == 0)
        std::copy(s.begin(), s.end(), ckpt + ((b * chunks) + t / kScanChunk) * nn * nd);
      int64_t row = b * nt + t;
      const float *xr = x + row * nd, *dtr = dt + row * nd, *Cr = C + row * nn;
      scanStep<false>(xr, dtr, At.data(), B + row * nn, s.data(), next.data(), nullptr, nd, nn);
      s.swap(next);
      const int reader = editReader(st, b, t);
      if (touchesState(st, b, t)) {
        if (reader != MIXK_EDIT_BOTH)
          kept = s; // unedited
        toCanonical();
        accessState(st, b, t, nt, canonical.data(), nn * nd);
        for (int64_t d = 0; d < nd; ++d)
          for (int64_t n = 0; n < nn; ++n)
            s[n * nd + d] = canonical[d * nn + n];
        if (reader == MIXK_EDIT_NEXT_STEP)
          s.swap(kept); // the output reads the unedited state; the edited one is handed on
      }
      float *yr = y + row * nd;
      for (int64_t d = 0; d < nd; ++d)
        yr[d] = D[d] * xr[d];
      for (int64_t n = 0; n < nn; ++n) {
        const float *sn = s.data() + n * nd;
        float cn = Cr[n];
        for (int64_t d = 0; d < nd; ++d)
          yr[d] += cn * sn[d];
      }
      if (reader != MIXK_EDIT_BOTH) { // the state handed on
        s.swap(kept);
        toCanonical();
        recapture(st, b, t, nt, canonical.data(), nn * nd);
      }
    }
  }
}

inline void selectiveScanBackward(const float *x, const float *dt, const float *A, const float *B,
                                  const float *C, const float *D, const float *ckpt,
                                  const float *gy, float *gx, float *gdt, float *gA, float *gB,
                                  float *gC, float *gD, int64_t nb, int64_t nt, int64_t nd,
                                  int64_t nn, int threads) {
  std::vector<float> At(nn * nd);
  for (int64_t d = 0; d < nd; ++d)
    for (int64_t n = 0; n < nn; ++n)
      At[n * nd + d] = A[d * nn + n];
  int64_t chunks = (nt + kScanChunk - 1) / kScanChunk, sz = nn * nd;
  Partials part(threads, sz + nd); // gA as [N][D], then gD
#pragma omp parallel num_threads(threads)
  {
    float *gAt = part.mine(), *gDp = gAt + sz;
    std::vector<float> states((kScanChunk + 1) * sz), dAs(kScanChunk * sz), gs(sz);
#pragma omp for
    for (int64_t b = 0; b < nb; ++b) {
      std::fill(gs.begin(), gs.end(), 0.f);
      for (int64_t c = chunks - 1; c >= 0; --c) {
        int64_t t0 = c * kScanChunk, t1 = std::min(nt, t0 + kScanChunk);
        std::copy(ckpt + (b * chunks + c) * sz, ckpt + (b * chunks + c + 1) * sz, states.begin());
        for (int64_t t = t0; t < t1; ++t) { // states[i] = s_{t0+i−1}, dAs[i] = exp(Δ_{t0+i} A)
          int64_t row = b * nt + t;
          scanStep<true>(x + row * nd, dt + row * nd, At.data(), B + row * nn, states.data() + (t - t0) * sz,
                       states.data() + (t - t0 + 1) * sz, dAs.data() + (t - t0) * sz, nd, nn);
        }
        for (int64_t t = t1 - 1; t >= t0; --t) {
          int64_t row = b * nt + t;
          const float *xr = x + row * nd, *dtr = dt + row * nd, *g = gy + row * nd;
          const float *Br = B + row * nn, *Cr = C + row * nn;
          const float *st = states.data() + (t - t0 + 1) * sz, *sp = states.data() + (t - t0) * sz;
          float *gxr = gx + row * nd, *gdtr = gdt + row * nd;
          for (int64_t d = 0; d < nd; ++d) { // y += D ⊙ x
            gDp[d] += g[d] * xr[d];
            gxr[d] += g[d] * D[d];
          }
          for (int64_t n = 0; n < nn; ++n) {
            const float *a = At.data() + n * nd, *stn = st + n * nd, *spn = sp + n * nd;
            const float *dAn = dAs.data() + (t - t0) * sz + n * nd;
            float *gsn = gs.data() + n * nd, *gan = gAt + n * nd;
            float cn = Cr[n], bn = Br[n], gc = 0.f, gb = 0.f;
            // The gradient rows never alias; GCC cannot prove it by itself.
#pragma omp simd reduction(+ : gc, gb)
            for (int64_t d = 0; d < nd; ++d) {
              gc += g[d] * stn[d];     // y += C · s
              float gsd = gsn[d] + g[d] * cn;
              float dA = dAn[d];
              float gdA = gsd * spn[d]; // s = dA ⊙ s_prev + Δ B x
              gdtr[d] += gdA * dA * a[d] + gsd * bn * xr[d];
              gan[d] += gdA * dA * dtr[d];
              gb += gsd * dtr[d] * xr[d];
              gxr[d] += gsd * dtr[d] * bn;
              gsn[d] = gsd * dA;        // on to s_prev
            }
            gC[row * nn + n] += gc;
            gB[row * nn + n] += gb;
          }
        }
      }
    }
  }
  std::vector<float> sum(sz + nd, 0.f);
  part.addTo(sum.data());
  for (int64_t d = 0; d < nd; ++d) {
    for (int64_t n = 0; n < nn; ++n)
      gA[d * nn + n] += sum[n * nd + d];
    gD[d] += sum[sz + d];
  }
}

// ------------------------------------------------------------ delta rule
//   u_t = v_t − S_{t−1} k_t,  S_t = S_{t−1} + β_t u_t k_tᵀ,  o_t = S_t q_t
// q, k [B,T,K]; v [B,T,V]; β [B,T,1]; S [V][K].
constexpr int64_t kDeltaChunk = 8;
inline int64_t deltaSaved(int64_t nb, int64_t nt, int64_t nk, int64_t nv) {
  return nb * ((nt + kDeltaChunk - 1) / kDeltaChunk) * nv * nk;
}

inline void deltaStep(const float *qt, const float *kt, const float *vt, float bt, float *S,
                      float *ot, int64_t nk, int64_t nv) {
  for (int64_t i = 0; i < nv; ++i) {
    float *Si = S + i * nk, sk = 0.f;
    for (int64_t j = 0; j < nk; ++j)
      sk += Si[j] * kt[j];
    float bu = bt * (vt[i] - sk), acc = 0.f;
    for (int64_t j = 0; j < nk; ++j) {
      Si[j] += bu * kt[j];
      acc += Si[j] * qt[j];
    }
    if (ot)
      ot[i] = acc;
  }
}

inline void deltaRuleForward(const float *q, const float *k, const float *v, const float *beta,
                             float *o, float *ckpt, const mixk_state *st, int64_t nb, int64_t nt,
                             int64_t nk, int64_t nv, int threads) {
  int64_t chunks = (nt + kDeltaChunk - 1) / kDeltaChunk, sz = nv * nk;
#pragma omp parallel for num_threads(threads)
  for (int64_t b = 0; b < nb; ++b) {
    std::vector<float> S(sz, 0.f), kept;
    for (int64_t t = 0; t < nt; ++t) {
      if (t % kDeltaChunk == 0)
        std::copy(S.begin(), S.end(), ckpt + (b * chunks + t / kDeltaChunk) * sz);
      int64_t row = b * nt + t;
      if (!touchesState(st, b, t)) {
        deltaStep(q + row * nk, k + row * nk, v + row * nv, beta[row], S.data(), o + row * nv, nk, nv);
        continue;
      }
      // S_t first, then the access, then o_t from the state it leaves (an
      // edge's edit: the output reads one state, the next step the other).
      deltaStep(q + row * nk, k + row * nk, v + row * nv, beta[row], S.data(), nullptr, nk, nv);
      const int reader = editReader(st, b, t);
      if (reader != MIXK_EDIT_BOTH)
        kept = S; // unedited
      accessState(st, b, t, nt, S.data(), sz);
      if (reader == MIXK_EDIT_NEXT_STEP)
        S.swap(kept);
      const float *qt = q + row * nk;
      for (int64_t i = 0; i < nv; ++i) {
        float acc = 0.f;
        for (int64_t j = 0; j < nk; ++j)
          acc += S[i * nk + j] * qt[j];
        o[row * nv + i] = acc;
      }
      if (reader != MIXK_EDIT_BOTH) { // the state handed on
        S.swap(kept);
        recapture(st, b, t, nt, S.data(), sz);
      }
    }
  }
}

inline void deltaRuleBackward(const float *q, const float *k, const float *v, const float *beta,
                              const float *ckpt, const float *go, float *gq, float *gk, float *gv,
                              float *gbeta, int64_t nb, int64_t nt, int64_t nk, int64_t nv,
                              int threads) {
  int64_t chunks = (nt + kDeltaChunk - 1) / kDeltaChunk, sz = nv * nk;
#pragma omp parallel num_threads(threads)
  {
    std::vector<float> states((kDeltaChunk + 1) * sz), G(sz), u(nv), gu(nv);
#pragma omp for
    for (int64_t b = 0; b < nb; ++b) {
      std::fill(G.begin(), G.end(), 0.f); // dL/dS_t, accumulated backwards
      for (int64_t c = chunks - 1; c >= 0; --c) {
        int64_t t0 = c * kDeltaChunk, t1 = std::min(nt, t0 + kDeltaChunk);
        std::copy(ckpt + (b * chunks + c) * sz, ckpt + (b * chunks + c + 1) * sz, states.begin());
        for (int64_t t = t0; t < t1; ++t) { // states[i] = S_{t0+i−1}
          int64_t row = b * nt + t;
          float *next = states.data() + (t - t0 + 1) * sz;
          std::copy(states.data() + (t - t0) * sz, states.data() + (t - t0) * sz + sz, next);
          deltaStep(q + row * nk, k + row * nk, v + row * nv, beta[row], next, nullptr, nk, nv);
        }
        for (int64_t t = t1 - 1; t >= t0; --t) {
          int64_t row = b * nt + t;
          const float *kt = k + row * nk, *qt = q + row * nk, *vt = v + row * nv, *got = go + row * nv;
          const float *St = states.data() + (t - t0 + 1) * sz, *Sp = states.data() + (t - t0) * sz;
          float bt = beta[row];
          float *gqt = gq + row * nk, *gkt = gk + row * nk, *gvt = gv + row * nv;
          for (int64_t i = 0; i < nv; ++i) { // o = S_t q
            const float *Si = St + i * nk;
            float *Gi = G.data() + i * nk, goi = got[i];
            for (int64_t j = 0; j < nk; ++j) {
              Gi[j] += goi * qt[j];
              gqt[j] += Si[j] * goi;
            }
          }
          float gb = 0.f;
          for (int64_t i = 0; i < nv; ++i) { // u = v − S_prev k;  S_t = S_prev + β u kᵀ
            const float *Spi = Sp + i * nk, *Gi = G.data() + i * nk;
            float sk = 0.f, Gk = 0.f;
            for (int64_t j = 0; j < nk; ++j) {
              sk += Spi[j] * kt[j];
              Gk += Gi[j] * kt[j];
            }
            u[i] = vt[i] - sk;
            gb += u[i] * Gk;
            gu[i] = bt * Gk;
            gvt[i] += gu[i];
          }
          gbeta[row] += gb;
          for (int64_t i = 0; i < nv; ++i) { // gk = β Gᵀ u − S_prevᵀ gu;  G_prev = G − gu kᵀ
            const float *Spi = Sp + i * nk;
            float *Gi = G.data() + i * nk, bui = bt * u[i], gui = gu[i];
            for (int64_t j = 0; j < nk; ++j) {
              gkt[j] += bui * Gi[j] - Spi[j] * gui;
              Gi[j] -= gui * kt[j];
            }
          }
        }
      }
    }
  }
}

// ------------------------------------------------------------ linear attention
//   S_t = S_{t−1} + φk_t v_tᵀ,  z_t = z_{t−1} + φk_t,
//   o_t = φq_tᵀ S_t / (φq_t · z_t + eps)
// φq, φk [B,T,F]; v [B,T,D]; S [F][D]. Saved: den_t [B,T] (the forward's o
// is the anchor result, kept by the region). The backward sweeps forward
// again for gq (which needs S_t) and then backwards for gk, gv:
//   gnum_t = go_t / den_t,  gden_t = −(go_t · o_t) / den_t
//   gq_t = S_t gnum_t + z_t gden_t;  dS_t = Σ_{u≥t} φq_u gnum_uᵀ,  dz_t = Σ_{u≥t} φq_u gden_u
//   gk_t = dS_t v_t + dz_t;  gv_t = dS_tᵀ φk_t
inline int64_t linearAttentionSaved(int64_t nb, int64_t nt) { return nb * nt; }

inline void linearAttentionForward(const float *q, const float *k, const float *v, float *o,
                                   float *den, const mixk_state *st, int64_t nb, int64_t nt, int64_t nf,
                                   int64_t nd, float eps, int threads) {
#pragma omp parallel num_threads(threads)
  {
    std::vector<float> S(nf * nd), z(nf), num(nd), keptS, keptZ;
#pragma omp for
    for (int64_t b = 0; b < nb; ++b) {
      std::fill(S.begin(), S.end(), 0.f);
      std::fill(z.begin(), z.end(), 0.f);
      for (int64_t t = 0; t < nt; ++t) {
        int64_t row = b * nt + t;
        const float *qt = q + row * nf, *kt = k + row * nf, *vt = v + row * nd;
        std::fill(num.begin(), num.end(), 0.f);
        float dn = eps;
        if (touchesState(st, b, t)) { // S_t, z_t first; the outputs from what the access leaves
          for (int64_t f = 0; f < nf; ++f) {
            z[f] += kt[f];
            for (int64_t d = 0; d < nd; ++d)
              S[f * nd + d] += kt[f] * vt[d];
          }
          // An edge's edit: the output reads one state, the next step the other.
          const int reader = editReader(st, b, t);
          if (reader != MIXK_EDIT_BOTH)
            keptS = S, keptZ = z; // unedited
          accessState(st, b, t, nt, S.data(), nf * nd, z.data(), nf);
          if (reader == MIXK_EDIT_NEXT_STEP)
            S.swap(keptS), z.swap(keptZ);
          for (int64_t f = 0; f < nf; ++f) {
            dn += qt[f] * z[f];
            for (int64_t d = 0; d < nd; ++d)
              num[d] += qt[f] * S[f * nd + d];
          }
          if (reader != MIXK_EDIT_BOTH) { // the state handed on
            S.swap(keptS), z.swap(keptZ);
            recapture(st, b, t, nt, S.data(), nf * nd, z.data(), nf);
          }
        } else {
          for (int64_t f = 0; f < nf; ++f) {
            float *Sf = S.data() + f * nd, kf = kt[f], qf = qt[f];
            z[f] += kf;
            dn += qf * z[f];
            for (int64_t d = 0; d < nd; ++d) {
              Sf[d] += kf * vt[d];
              num[d] += qf * Sf[d];
            }
          }
        }
        den[row] = dn;
        for (int64_t d = 0; d < nd; ++d)
          o[row * nd + d] = num[d] / dn;
      }
    }
  }
}

/// o_t = num_t / den_t: gnum_t = go_t / den_t (into gnum); returns gden_t.
inline float linearAttentionOutGrads(const float *got, const float *ot, float den, float *gnum,
                                     int64_t nd) {
  float inv = 1.f / den, gden = 0.f;
  for (int64_t d = 0; d < nd; ++d) {
    gnum[d] = got[d] * inv;
    gden -= got[d] * ot[d] * inv;
  }
  return gden;
}

inline void linearAttentionBackward(const float *q, const float *k, const float *v, const float *o,
                                    const float *den, const float *go, float *gq, float *gk,
                                    float *gv, int64_t nb, int64_t nt, int64_t nf, int64_t nd,
                                    int threads) {
#pragma omp parallel num_threads(threads)
  {
    std::vector<float> S(nf * nd), z(nf), gnum(nd);
#pragma omp for
    for (int64_t b = 0; b < nb; ++b) {
      std::fill(S.begin(), S.end(), 0.f);
      std::fill(z.begin(), z.end(), 0.f);
      for (int64_t t = 0; t < nt; ++t) { // forward again: gq_t needs S_t, z_t
        int64_t row = b * nt + t;
        const float *kt = k + row * nf, *vt = v + row * nd;
        float gden = linearAttentionOutGrads(go + row * nd, o + row * nd, den[row], gnum.data(), nd);
        float *gqt = gq + row * nf;
        for (int64_t f = 0; f < nf; ++f) {
          float *Sf = S.data() + f * nd, kf = kt[f], acc = 0.f;
          z[f] += kf;
          for (int64_t d = 0; d < nd; ++d) {
            Sf[d] += kf * vt[d];
            acc += Sf[d] * gnum[d];
          }
          gqt[f] += acc + z[f] * gden;
        }
      }
      float *dS = S.data(), *dz = z.data(); // reused: now dL/dS_t, dL/dz_t
      std::fill(S.begin(), S.end(), 0.f);
      std::fill(z.begin(), z.end(), 0.f);
      for (int64_t t = nt - 1; t >= 0; --t) {
        int64_t row = b * nt + t;
        const float *qt = q + row * nf, *kt = k + row * nf, *vt = v + row * nd;
        float gden = linearAttentionOutGrads(go + row * nd, o + row * nd, den[row], gnum.data(), nd);
        float *gkt = gk + row * nf, *gvt = gv + row * nd;
        for (int64_t f = 0; f < nf; ++f) {
          float *dSf = dS + f * nd, qf = qt[f], kf = kt[f], acc = 0.f;
          dz[f] += qf * gden;
          for (int64_t d = 0; d < nd; ++d) {
            dSf[d] += qf * gnum[d];
            acc += dSf[d] * vt[d];
            gvt[d] += dSf[d] * kf;
          }
          gkt[f] += acc + dz[f];
        }
      }
    }
  }
}

// ------------------------------------------------------------ softmax attention
//   o_i = Σ_{j≤i} p_ij v_j,  p_ij = exp(s_ij − lse_i),  s_ij = q_i·k_j / √K
// q, k [B,T,K]; v [B,T,V] (protocol §3.2). The reference adds −10000 above the
// diagonal instead of skipping it; exp of that is 0 in float, so skipping is
// the same function. Saved: lse_i [B,T] (the log of the row's normaliser).
//   D_i = go_i·o_i;  ds_ij = p_ij (go_i·v_j − D_i)
//   gq_i = Σ_{j≤i} ds_ij k_j / √K;  gk_j = Σ_{i≥j} ds_ij q_i / √K;  gv_j = Σ_{i≥j} p_ij go_i
// Rows of one document are one thread's (parallel over b), so gk and gv are
// accumulated without atomics.
inline int64_t softmaxAttentionSaved(int64_t nb, int64_t nt) { return nb * nt; }

inline float dot(const float *a, const float *b, int64_t n) {
  float acc = 0.f;
  for (int64_t i = 0; i < n; ++i)
    acc += a[i] * b[i];
  return acc;
}

/// p_ij for j ≤ i into p[0..i], from the saved lse_i (or, with lse null,
/// computing it: the forward's case); returns lse_i.
inline float attentionRow(const float *qi, const float *k, int64_t i, int64_t nk, float scale, const float *lse,
                          float *p) {
  float m = -INFINITY;
  for (int64_t j = 0; j <= i; ++j) {
    p[j] = scale * dot(qi, k + j * nk, nk);
    m = std::max(m, p[j]);
  }
  float l = lse ? *lse : 0.f;
  if (!lse) {
    float sum = 0.f;
    for (int64_t j = 0; j <= i; ++j)
      sum += fexp(p[j] - m);
    l = m + std::log(sum);
  }
  for (int64_t j = 0; j <= i; ++j)
    p[j] = fexp(p[j] - l);
  return l;
}

inline void softmaxAttentionForward(const float *q, const float *k, const float *v, float *o, float *lse,
                                    int64_t nb, int64_t nt, int64_t nk, int64_t nv, int threads) {
  const float scale = 1.f / std::sqrt(static_cast<float>(nk));
#pragma omp parallel num_threads(threads)
  {
    std::vector<float> p(nt);
#pragma omp for collapse(2)
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t i = 0; i < nt; ++i) {
        const int64_t row = b * nt + i;
        const float *kb = k + b * nt * nk, *vb = v + b * nt * nv;
        lse[row] = attentionRow(q + row * nk, kb, i, nk, scale, nullptr, p.data());
        float *oi = o + row * nv;
        std::fill(oi, oi + nv, 0.f);
        for (int64_t j = 0; j <= i; ++j)
          for (int64_t d = 0; d < nv; ++d)
            oi[d] += p[j] * vb[j * nv + d];
      }
  }
}

inline void softmaxAttentionBackward(const float *q, const float *k, const float *v, const float *o,
                                     const float *lse, const float *go, float *gq, float *gk, float *gv,
                                     int64_t nb, int64_t nt, int64_t nk, int64_t nv, int threads) {
  const float scale = 1.f / std::sqrt(static_cast<float>(nk));
#pragma omp parallel num_threads(threads)
  {
    std::vector<float> p(nt);
#pragma omp for
    for (int64_t b = 0; b < nb; ++b) {
      const float *kb = k + b * nt * nk, *vb = v + b * nt * nv;
      float *gkb = gk + b * nt * nk, *gvb = gv + b * nt * nv;
      for (int64_t i = 0; i < nt; ++i) {
        const int64_t row = b * nt + i;
        const float *qi = q + row * nk, *goi = go + row * nv;
        attentionRow(qi, kb, i, nk, scale, lse + row, p.data());
        const float D = dot(goi, o + row * nv, nv);
        float *gqi = gq + row * nk;
        for (int64_t j = 0; j <= i; ++j) {
          const float ds = p[j] * (dot(goi, vb + j * nv, nv) - D) * scale;
          for (int64_t f = 0; f < nk; ++f) {
            gqi[f] += ds * kb[j * nk + f];
            gkb[j * nk + f] += ds * qi[f];
          }
          for (int64_t d = 0; d < nv; ++d)
            gvb[j * nv + d] += p[j] * goi[d];
        }
      }
    }
  }
}

// ------------------------------------------------------------ long conv
//   y[b,t,c] = Σ_{s≤t} h[s,c] · x[b,t−s,c]      x [B,T,C]; h [L,C], L ≥ T
// Direct (O(T²C) per row) rather than by FFT like the LibTorch path: at
// the lengths of AR/ATR (tens to a few hundred steps) it is the cheaper
// one, and it vectorises over c.
//   gx[b,s,c] = Σ_{t≥s} h[t−s,c] gy[b,t,c];   gh[s,c] = Σ_b Σ_{t≥s} gy[b,t,c] x[b,t−s,c]
inline void longConvForward(const float *x, const float *h, float *y, int64_t nb, int64_t nt,
                            int64_t nc, int threads) {
#pragma omp parallel for collapse(2) num_threads(threads)
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t t = 0; t < nt; ++t) {
      float *yt = y + (b * nt + t) * nc;
      std::fill(yt, yt + nc, 0.f);
      for (int64_t s = 0; s <= t; ++s) {
        const float *hs = h + s * nc, *xs = x + (b * nt + t - s) * nc;
        for (int64_t c = 0; c < nc; ++c)
          yt[c] += hs[c] * xs[c];
      }
    }
}

inline void longConvBackward(const float *x, const float *h, const float *gy, float *gx, float *gh,
                             int64_t nb, int64_t nt, int64_t nc, int threads) {
#pragma omp parallel num_threads(threads)
  {
#pragma omp for collapse(2)
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t s = 0; s < nt; ++s) {
        float *gxs = gx + (b * nt + s) * nc;
        for (int64_t t = s; t < nt; ++t) {
          const float *ht = h + (t - s) * nc, *gyt = gy + (b * nt + t) * nc;
          for (int64_t c = 0; c < nc; ++c)
            gxs[c] += ht[c] * gyt[c];
        }
      }
    // Rows of gh are independent: split them, not the batch.
#pragma omp for
    for (int64_t s = 0; s < nt; ++s) {
      float *ghs = gh + s * nc;
      for (int64_t b = 0; b < nb; ++b)
        for (int64_t t = s; t < nt; ++t) {
          const float *gyt = gy + (b * nt + t) * nc, *xs = x + (b * nt + t - s) * nc;
          for (int64_t c = 0; c < nc; ++c)
            ghs[c] += gyt[c] * xs[c];
        }
    }
  }
}

} // namespace mixk
