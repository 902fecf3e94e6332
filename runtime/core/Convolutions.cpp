//===- Convolutions.cpp - short, long, shift and diagonal-SSM convs ---------===//
#include "runtime/core/HostIsa.h"
#include "runtime/core/Primitives.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

namespace mixc::rt {
namespace {
std::atomic<bool> gPlainReferences{false};
} // namespace

void setPlainReferences(bool on) { gPlainReferences = on; }
bool plainReferences() { return gPlainReferences; }

namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Direct causal long conv, y[b,t,c] = Σ_{s≤t} h[s,c]·x[b,t−s,c], with its
// adjoints gx[b,τ,c] = Σ_{t≥τ} h[t−τ,c]·gy[b,t,c] and
// gh[s,c] = Σ_b Σ_{t≥s} gy[b,t,c]·x[b,t−s,c]. The inner loops run over the
// contiguous channels. B·C·T²/2 multiply-adds each way: at AR/ATR lengths
// far cheaper than LibTorch's FFTs, which cost ~15 ms fwd+bwd at
// [32, 37, 128] (H3's two long convs per layer were a third of its step).
// Each sweep's body is an always-inline function run through an AVX2 + FMA
// copy where the CPU has them (HostIsa.h).
template <typename S>
MIXC_ALWAYS_INLINE void directForwardRow(const S *x, const S *h, S *y, int64_t nt, int64_t nc) {
  for (int64_t t = 0; t < nt; ++t) {
    S *__restrict yt = y + t * nc;
    std::fill(yt, yt + nc, S(0));
    for (int64_t s = 0; s <= t; ++s) {
      const S *__restrict hs = h + s * nc, *__restrict xt = x + (t - s) * nc;
#pragma GCC ivdep
      for (int64_t c = 0; c < nc; ++c)
        yt[c] += hs[c] * xt[c];
    }
  }
}
template <typename S>
MIXC_TARGET_AVX2_FMA void directForwardRowAvx2(const S *x, const S *h, S *y, int64_t nt, int64_t nc) {
  directForwardRow(x, h, y, nt, nc);
}
template <typename S> void directForwardRowBase(const S *x, const S *h, S *y, int64_t nt, int64_t nc) {
  directForwardRow(x, h, y, nt, nc);
}

template <typename S>
void directForward(const S *x, const S *h, S *y, int64_t nb, int64_t nt, int64_t nc) {
  const auto row = hostAvx2Fma() ? directForwardRowAvx2<S> : directForwardRowBase<S>;
  at::parallel_for(0, nb, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      row(x + b * nt * nc, h, y + b * nt * nc, nt, nc);
  });
}

/// One batch row of the backward: gx of the row, and its part of gh.
template <typename S>
MIXC_ALWAYS_INLINE void directBackwardRow(const S *x, const S *h, const S *gy, S *gx, S *gh, int64_t nt,
                                          int64_t nc) {
  for (int64_t tau = 0; tau < nt; ++tau) {
    S *__restrict gxt = gx + tau * nc;
    std::fill(gxt, gxt + nc, S(0));
    for (int64_t t = tau; t < nt; ++t) {
      const S *__restrict hs = h + (t - tau) * nc, *__restrict gyt = gy + t * nc;
#pragma GCC ivdep
      for (int64_t c = 0; c < nc; ++c)
        gxt[c] += hs[c] * gyt[c];
    }
  }
  for (int64_t s = 0; s < nt; ++s) {
    S *__restrict ghs = gh + s * nc;
    for (int64_t t = s; t < nt; ++t) {
      const S *__restrict gyt = gy + t * nc, *__restrict xt = x + (t - s) * nc;
#pragma GCC ivdep
      for (int64_t c = 0; c < nc; ++c)
        ghs[c] += gyt[c] * xt[c];
    }
  }
}
template <typename S>
MIXC_TARGET_AVX2_FMA void directBackwardRowAvx2(const S *x, const S *h, const S *gy, S *gx, S *gh, int64_t nt,
                                                int64_t nc) {
  directBackwardRow(x, h, gy, gx, gh, nt, nc);
}
template <typename S>
void directBackwardRowBase(const S *x, const S *h, const S *gy, S *gx, S *gh, int64_t nt, int64_t nc) {
  directBackwardRow(x, h, gy, gx, gh, nt, nc);
}

/// gh is accumulated per batch row into ghPart [nb, T, C] (summed after),
/// so rows never share an output.
template <typename S>
void directBackward(const S *x, const S *h, const S *gy, S *gx, S *ghPart, int64_t nb, int64_t nt,
                    int64_t nc) {
  const auto row = hostAvx2Fma() ? directBackwardRowAvx2<S> : directBackwardRowBase<S>;
  at::parallel_for(0, nb, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t o = b * nt * nc;
      row(x + o, h, gy + o, gx + o, ghPart + o, nt, nc);
    }
  });
}

struct DirectLongConvFn : torch::autograd::Function<DirectLongConvFn> {
  /// x [B, T, C], h [T, C] (the filter's first T taps).
  static variable_list forward(AutogradContext *ctx, at::Tensor x, at::Tensor h) {
    x = x.contiguous(), h = h.contiguous();
    int64_t nb = x.size(0), nt = x.size(1), nc = x.size(2);
    at::Tensor y = at::empty_like(x);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "long_conv", [&] {
      directForward<scalar_t>(x.data_ptr<scalar_t>(), h.data_ptr<scalar_t>(),
                              y.data_ptr<scalar_t>(), nb, nt, nc);
    });
    ctx->save_for_backward({x, h});
    return {y};
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    at::Tensor x = saved[0], h = saved[1], gy = grads[0].contiguous();
    int64_t nb = x.size(0), nt = x.size(1), nc = x.size(2);
    at::Tensor gx = at::empty_like(x), ghPart = at::zeros({nb, nt, nc}, x.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "long_conv_backward", [&] {
      directBackward<scalar_t>(x.data_ptr<scalar_t>(), h.data_ptr<scalar_t>(),
                               gy.data_ptr<scalar_t>(), gx.data_ptr<scalar_t>(),
                               ghPart.data_ptr<scalar_t>(), nb, nt, nc);
    });
    return {gx, ghPart.sum(0)};
  }
};
// The shift SSM's kernel over its first L taps, a linear cross-correlation
// per channel: K[l, c] = Σ_{m+l<N} b[c, m]·cc[c, m+l], with the adjoints
//   gb[c, m] = Σ_l gK[l, c]·cc[c, m+l],   gcc[c, j] = Σ_{l≤j} gK[l, c]·b[c, j−l].
// C·L·N multiply-adds each; LibTorch's depthwise conv1d (which computed it
// before) spent ~5 ms a step in its backward at d = 64. The forward runs m
// outside and l inside (K[0..L) += b[m]·cc[m..m+L)): each K[l] still sums
// over m in increasing order, but the inner loop is an axpy that vectorises,
// where a dot product over m was one chain of dependent adds (strict float
// order forbids splitting it), ~3 ms a layer at d = 64, N = 1024.
template <typename S>
MIXC_ALWAYS_INLINE void shiftForwardChannel(const S *__restrict bc, const S *__restrict ccc, S *__restrict a,
                                            int64_t nn, int64_t nl) {
  std::fill(a, a + nl, S(0));
  for (int64_t m = 0; m < nn; ++m) {
    const S bm = bc[m];
    const S *__restrict cm = ccc + m;
    const int64_t lEnd = std::min(nl, nn - m); // m + l < N
#pragma GCC ivdep
    for (int64_t l = 0; l < lEnd; ++l)
      a[l] += bm * cm[l];
  }
}
template <typename S>
MIXC_TARGET_AVX2_FMA void shiftForwardChannelAvx2(const S *bc, const S *ccc, S *a, int64_t nn, int64_t nl) {
  shiftForwardChannel(bc, ccc, a, nn, nl);
}
template <typename S> void shiftForwardChannelBase(const S *bc, const S *ccc, S *a, int64_t nn, int64_t nl) {
  shiftForwardChannel(bc, ccc, a, nn, nl);
}

template <typename S>
void shiftForward(const S *b, const S *cc, S *K, int64_t nc, int64_t nn, int64_t nl) {
  const auto channel = hostAvx2Fma() ? shiftForwardChannelAvx2<S> : shiftForwardChannelBase<S>;
  at::parallel_for(0, nc, 1, [&](int64_t c0, int64_t c1) {
    std::vector<S> acc(nl);
    for (int64_t c = c0; c < c1; ++c) {
      channel(b + c * nn, cc + c * nn, acc.data(), nn, nl);
      for (int64_t l = 0; l < nl; ++l)
        K[l * nc + c] = acc[l];
    }
  });
}

template <typename S>
MIXC_ALWAYS_INLINE void shiftBackwardChannel(const S *__restrict bc, const S *__restrict ccc, const S *gK,
                                             int64_t gStride, S *__restrict gbc, S *__restrict gcc, int64_t nn,
                                             int64_t nl) {
  std::fill(gbc, gbc + nn, S(0));
  std::fill(gcc, gcc + nn, S(0));
  for (int64_t l = 0; l < nl; ++l) {
    const S g = gK[l * gStride];
#pragma GCC ivdep
    for (int64_t m = 0; m < nn - l; ++m) {
      gbc[m] += g * ccc[m + l];
      gcc[m + l] += g * bc[m];
    }
  }
}
template <typename S>
MIXC_TARGET_AVX2_FMA void shiftBackwardChannelAvx2(const S *bc, const S *ccc, const S *gK, int64_t gStride, S *gbc,
                                                   S *gcc, int64_t nn, int64_t nl) {
  shiftBackwardChannel(bc, ccc, gK, gStride, gbc, gcc, nn, nl);
}
template <typename S>
void shiftBackwardChannelBase(const S *bc, const S *ccc, const S *gK, int64_t gStride, S *gbc, S *gcc, int64_t nn,
                              int64_t nl) {
  shiftBackwardChannel(bc, ccc, gK, gStride, gbc, gcc, nn, nl);
}

template <typename S>
void shiftBackward(const S *b, const S *cc, const S *gK, S *gb, S *gcc, int64_t nc, int64_t nn, int64_t nl) {
  const auto channel = hostAvx2Fma() ? shiftBackwardChannelAvx2<S> : shiftBackwardChannelBase<S>;
  at::parallel_for(0, nc, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      channel(b + c * nn, cc + c * nn, gK + c, nc, gb + c * nn, gcc + c * nn, nn, nl);
  });
}

struct ShiftKernelFn : torch::autograd::Function<ShiftKernelFn> {
  /// b, c [C, N] -> K [L, C].
  static variable_list forward(AutogradContext *ctx, at::Tensor b, at::Tensor c, int64_t L) {
    b = b.contiguous(), c = c.contiguous();
    TORCH_CHECK(b.is_cpu(), "shift_conv: the shift kernel is computed on the host, not on ", b.device());
    int64_t nc = b.size(0), nn = b.size(1);
    at::Tensor K = at::empty({L, nc}, b.options());
    AT_DISPATCH_FLOATING_TYPES(b.scalar_type(), "shift_kernel", [&] {
      shiftForward<scalar_t>(b.data_ptr<scalar_t>(), c.data_ptr<scalar_t>(), K.data_ptr<scalar_t>(), nc, nn, L);
    });
    ctx->save_for_backward({b, c});
    return {K};
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    at::Tensor b = saved[0], c = saved[1], gK = grads[0].contiguous();
    int64_t nc = b.size(0), nn = b.size(1), nl = gK.size(0);
    at::Tensor gb = at::empty_like(b), gc = at::empty_like(c);
    AT_DISPATCH_FLOATING_TYPES(b.scalar_type(), "shift_kernel_backward", [&] {
      shiftBackward<scalar_t>(b.data_ptr<scalar_t>(), c.data_ptr<scalar_t>(), gK.data_ptr<scalar_t>(),
                              gb.data_ptr<scalar_t>(), gc.data_ptr<scalar_t>(), nc, nn, nl);
    });
    return {gb, gc, at::Tensor()};
  }
};
} // namespace

at::Tensor causalConv(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b) {
  // [B, T, C] -> [B, C, T]; Conv1d(C, C, K, groups=C, padding=K−1) keeps the
  // first T outputs, so output t sees inputs t−K+1..t.
  int64_t T = x.size(1), C = x.size(2), K = w.size(1);
  at::Tensor y = at::conv1d(x.transpose(1, 2), w.unsqueeze(1), b, /*stride=*/1,
                            /*padding=*/K - 1, /*dilation=*/1, /*groups=*/C);
  return y.slice(2, 0, T).transpose(1, 2);
}

namespace {
/// Both forms need a filter at least as long as the sequence.
int64_t checkedLength(const at::Tensor &x, const at::Tensor &h) {
  int64_t T = x.size(1);
  TORCH_CHECK(h.size(0) >= T, "long_conv: filter has ", h.size(0),
              " taps but the sequence has ", T, " steps");
  return T;
}
} // namespace

at::Tensor longConv(const at::Tensor &x, const at::Tensor &h) {
  if (x.size(1) <= kDirectLongConvMaxT && x.is_cpu() && !plainReferences())
    return longConvDirect(x, h);
  return longConvFFT(x, h);
}

at::Tensor longConvDirect(const at::Tensor &x, const at::Tensor &h) {
  int64_t T = checkedLength(x, h);
  TORCH_CHECK(x.is_cpu(), "long_conv: the direct form sweeps on the host, not on ", x.device());
  return DirectLongConvFn::apply(x, h.slice(0, 0, T))[0];
}

at::Tensor longConvFFT(const at::Tensor &x, const at::Tensor &h) {
  int64_t T = checkedLength(x, h);
  int64_t n = 2 * T; // linear (not circular) convolution
  at::Tensor X = at::fft_rfft(x, n, /*dim=*/1);                 // [B, n/2+1, C]
  at::Tensor H = at::fft_rfft(h.slice(0, 0, T), n, /*dim=*/0);  // [n/2+1, C]
  return at::fft_irfft(X * H, n, /*dim=*/1).slice(1, 0, T);
}

at::Tensor shiftKernel(const at::Tensor &b, const at::Tensor &c, int64_t T) {
  // K[l] = Σ_m b[m]·c[m+l] (m+l < N): a *linear* cross-correlation, as in
  // zoology's shift SSM (FFTs zero-padded to 2N); size N would wrap c around
  // (circular), equal only while b = e₁.
  int64_t N = b.size(1);
  if (plainReferences() || !b.is_cpu()) { // zoology's form: FFTs of size 2N, all N taps (any device)
    at::Tensor K = at::fft_irfft(at::conj(at::fft_rfft(b, 2 * N, 1)) * at::fft_rfft(c, 2 * N, 1),
                                 2 * N, 1)
                       .slice(1, 0, N); // [C, N]
    if (T <= N)
      return K.slice(1, 0, T).t(); // [T, C]
    return at::constant_pad_nd(K, {0, T - N}).t();
  }
  // Only the first min(T, N) taps are ever used: C·L·N multiply-adds in one
  // hand-differentiated sweep (ShiftKernelFn) instead of three FFTs of size
  // 2N per channel.
  int64_t L = std::min(T, N);
  at::Tensor K = ShiftKernelFn::apply(b, c, L)[0]; // [L, C]
  if (T > N)
    K = at::constant_pad_nd(K, {0, 0, 0, T - N});
  return K; // [T, C]
}

at::Tensor diagSSMKernel(const at::Tensor &logDt, const at::Tensor &logAReal,
                         const at::Tensor &aImag, const at::Tensor &b, const at::Tensor &c,
                         int64_t T) {
  if (!plainReferences() && logDt.is_cpu()) // one hand-differentiated host function (Vandermonde.cpp)
    return s4dKernel(logDt, logAReal, aImag, b, c, T);
  // On a device, as the plain reference: tensor ops run anywhere.
  // The plain reference as tensor ops: A = −exp(log_a_real) + i·a_imag;
  // Δ = exp(log_dt); bilinear discretisation; dA^l = exp(l · log dA), [H, N, T].
  at::Tensor A = at::complex(-at::exp(logAReal), aImag);       // [H, N]
  at::Tensor dtA = at::exp(logDt).unsqueeze(1) * A;            // [H, N]
  at::Tensor denom = 1.0 - dtA / 2.0;
  at::Tensor dA = (1.0 + dtA / 2.0) / denom;
  at::Tensor C = at::complex(c.select(2, 0), c.select(2, 1));  // [H, N]
  at::Tensor Bc = at::complex(b.select(2, 0), b.select(2, 1)); // [H, N], trainable
  at::Tensor Ct = C * Bc * at::exp(logDt).unsqueeze(1) / denom;
  at::Tensor l = at::arange(T, logDt.options());
  at::Tensor powers = at::exp(at::log(dA).unsqueeze(-1) * l);
  return (2.0 * at::real((Ct.unsqueeze(-1) * powers).sum(1))).t(); // [T, H]
}

at::Tensor diagSSM(const at::Tensor &x, const at::Tensor &logDt, const at::Tensor &logAReal,
                   const at::Tensor &aImag, const at::Tensor &b, const at::Tensor &c) {
  int64_t B = x.size(0), T = x.size(1), H = x.size(2), M = x.size(3);
  at::Tensor K = diagSSMKernel(logDt, logAReal, aImag, b, c, T);      // [T, H]
  at::Tensor filter = K.unsqueeze(-1).expand({T, H, M}).reshape({T, H * M});
  return longConv(x.reshape({B, T, H * M}), filter).reshape({B, T, H, M});
}

} // namespace mixc::rt
