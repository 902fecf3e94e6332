//===- Vandermonde.cpp - the S4D kernel: discretisation and Σ_n w_n z_n^l ---===//
//
// The diagonal SSM's kernel (protocol §3.5 step 4): per head h and mode n,
//   dt = exp(log_dt[h]),  A = −exp(log_a_real) + i·a_imag,  x = dt·A,
//   denom = 1 − x/2,  z = dA = (1 + x/2)/denom,  w = C̃ = C·B·dt/denom,
// then the Vandermonde product K[l, h] = 2·Re Σ_n w z^l over T steps. As
// tensor ops it materialises [H, N, T] complex intermediates, and even with
// only the sum hand-written its complex [H, N] prologue was ~25 small
// autograd ops per layer (a tenth of H3's step at d = 64); here the whole of
// it is one custom autograd function, in double whatever the tensors' type.
//
// Gradients, writing G_u = ∂L/∂Re u + i·∂L/∂Im u for a complex u (then
// G_v = G_u·conj(f'(v)) through a holomorphic u = f(v), and ∂L/∂t =
// Re(G_u·conj(∂u/∂t)) for a real t), with g_l = ∂L/∂K[l]:
//   G_w = 2 Σ_l g_l conj(z^l),   G_z = 2 Σ_l g_l conj(l w z^{l−1})     (the sweep)
//   G_C = G_w·conj(B dt/denom),  G_B = G_w·conj(C dt/denom)
//   G_x = G_z·conj(1/denom²) + G_w·conj(w/denom)/2                  (denom = 1 − x/2)
//   G_A = G_x·dt;  ∂L/∂dt = Re(G_w·conj(w/dt)) + Re(G_x·conj(A))
//   ∂L/∂log_a_real = −exp(log_a_real)·Re G_A,  ∂L/∂a_imag = Im G_A,  ∂L/∂log_dt = dt·Σ_n ∂L/∂dt
//
//===----------------------------------------------------------------------===//
#include "runtime/core/HostIsa.h"
#include "runtime/core/Primitives.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <complex>
#include <vector>

namespace mixc::rt {
namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using cd = std::complex<double>;

/// a·b without std::complex's inf/NaN recovery (a __muldc3 call per product
/// at -O2): the operands here are finite.
inline cd mul(cd a, cd b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

/// Partial sums the sum over modes keeps: lane j adds the modes n ≡ j
/// (mod kLanes) in increasing n, then the lanes are added pairwise, a fixed
/// order whatever the machine. One running sum was a chain of dependent adds
/// (T·N of them per head, ~1 ms a layer at H = 32, N = 512).
constexpr int64_t kLanes = 8;

inline int64_t paddedModes(int64_t nn) { return (nn + kLanes - 1) / kLanes * kLanes; }

/// One head of the forward sweep, K[l] = 2 Re Σ_n w_n p_n with p_n = z_n^l:
/// the steps l outside and the modes n inside, so the N running powers are
/// independent and the inner loops vectorise (with l inside, each mode was
/// one chain of dependent complex products, 4 ms a layer at H = 32,
/// N = 512). np modes, padded with w = z = 0 (terms of 0); p starts at 1.
MIXC_ALWAYS_INLINE void forwardHead(const double *__restrict wr, const double *__restrict wi,
                                    const double *__restrict zr, const double *__restrict zi,
                                    double *__restrict pr, double *__restrict pi, double *__restrict term,
                                    double *K, int64_t kStride, int64_t np, int64_t nt) {
  for (int64_t l = 0; l < nt; ++l) {
    for (int64_t n = 0; n < np; ++n) { // Re(w p), then p ← p z
      term[n] = wr[n] * pr[n] - wi[n] * pi[n];
      const double r = pr[n] * zr[n] - pi[n] * zi[n];
      pi[n] = pr[n] * zi[n] + pi[n] * zr[n];
      pr[n] = r;
    }
    double lane[kLanes] = {};
    for (int64_t n0 = 0; n0 < np; n0 += kLanes)
      for (int64_t j = 0; j < kLanes; ++j)
        lane[j] += term[n0 + j];
    K[l * kStride] = 2.0 * (((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7])));
  }
}
MIXC_TARGET_AVX2_FMA void forwardHeadAvx2(const double *wr, const double *wi, const double *zr, const double *zi,
                                          double *pr, double *pi, double *term, double *K, int64_t kStride,
                                          int64_t np, int64_t nt) {
  forwardHead(wr, wi, zr, zi, pr, pi, term, K, kStride, np, nt);
}
void forwardHeadBase(const double *wr, const double *wi, const double *zr, const double *zi, double *pr, double *pi,
                     double *term, double *K, int64_t kStride, int64_t np, int64_t nt) {
  forwardHead(wr, wi, zr, zi, pr, pi, term, K, kStride, np, nt);
}

/// w, z [H, N, 2] (re, im) -> K [T, H].
void vandermondeForward(const double *w, const double *z, double *K, int64_t nh, int64_t nn, int64_t nt) {
  const int64_t np = paddedModes(nn);
  const bool avx2 = hostAvx2Fma();
  at::parallel_for(0, nh, 1, [&](int64_t h0, int64_t h1) {
    std::vector<double> buf(7 * np);
    double *wr = buf.data(), *wi = wr + np, *zr = wi + np, *zi = zr + np, *pr = zi + np, *pi = pr + np,
           *term = pi + np;
    for (int64_t h = h0; h < h1; ++h) {
      std::fill(buf.begin(), buf.end(), 0.0);
      for (int64_t n = 0; n < nn; ++n) {
        const int64_t i = (h * nn + n) * 2;
        wr[n] = w[i], wi[n] = w[i + 1], zr[n] = z[i], zi[n] = z[i + 1], pr[n] = 1.0;
      }
      (avx2 ? forwardHeadAvx2 : forwardHeadBase)(wr, wi, zr, zi, pr, pi, term, K + h, nh, np, nt);
    }
  });
}

/// One head of the backward sweep: with p = z^l, sw = Σ_l g_l z^l and
/// sz = Σ_l g_l l z^{l−1} = Σ_l g_{l+1} (l+1) z^l per mode (the header's G_w
/// and G_z before their conjugates), the modes inside as in the forward.
MIXC_ALWAYS_INLINE void backwardHead(const double *__restrict zr, const double *__restrict zi,
                                     double *__restrict pr, double *__restrict pi, double *__restrict swr,
                                     double *__restrict swi, double *__restrict szr, double *__restrict szi,
                                     const double *gK, int64_t gStride, int64_t nn, int64_t nt) {
  for (int64_t l = 0; l < nt; ++l) {
    const double g = gK[l * gStride];
    const double gn = l + 1 < nt ? gK[(l + 1) * gStride] * static_cast<double>(l + 1) : 0.0;
    for (int64_t n = 0; n < nn; ++n) {
      swr[n] += g * pr[n];
      swi[n] += g * pi[n];
      szr[n] += gn * pr[n];
      szi[n] += gn * pi[n];
      const double r = pr[n] * zr[n] - pi[n] * zi[n];
      pi[n] = pr[n] * zi[n] + pi[n] * zr[n];
      pr[n] = r;
    }
  }
}
MIXC_TARGET_AVX2_FMA void backwardHeadAvx2(const double *zr, const double *zi, double *pr, double *pi, double *swr,
                                           double *swi, double *szr, double *szi, const double *gK, int64_t gStride,
                                           int64_t nn, int64_t nt) {
  backwardHead(zr, zi, pr, pi, swr, swi, szr, szi, gK, gStride, nn, nt);
}
void backwardHeadBase(const double *zr, const double *zi, double *pr, double *pi, double *swr, double *swi,
                      double *szr, double *szi, const double *gK, int64_t gStride, int64_t nn, int64_t nt) {
  backwardHead(zr, zi, pr, pi, swr, swi, szr, szi, gK, gStride, nn, nt);
}

/// gw, gz [H, N, 2]: ∂L/∂(Re, Im) of w and z from gK [T, H] (the header's
/// gradients).
void vandermondeBackward(const double *w, const double *z, const double *gK, double *gw, double *gz, int64_t nh,
                         int64_t nn, int64_t nt) {
  const bool avx2 = hostAvx2Fma();
  at::parallel_for(0, nh, 1, [&](int64_t h0, int64_t h1) {
    std::vector<double> buf(8 * nn);
    double *zr = buf.data(), *zi = zr + nn, *pr = zi + nn, *pi = pr + nn, *swr = pi + nn, *swi = swr + nn,
           *szr = swi + nn, *szi = szr + nn;
    for (int64_t h = h0; h < h1; ++h) {
      std::fill(buf.begin(), buf.end(), 0.0);
      for (int64_t n = 0; n < nn; ++n) {
        const int64_t i = (h * nn + n) * 2;
        zr[n] = z[i], zi[n] = z[i + 1], pr[n] = 1.0;
      }
      (avx2 ? backwardHeadAvx2 : backwardHeadBase)(zr, zi, pr, pi, swr, swi, szr, szi, gK + h, nh, nn, nt);
      for (int64_t n = 0; n < nn; ++n) {
        const int64_t i = (h * nn + n) * 2;
        const cd dz = mul(cd(w[i], w[i + 1]), cd(szr[n], szi[n]));
        gw[i] = 2.0 * swr[n], gw[i + 1] = -2.0 * swi[n];
        gz[i] = 2.0 * dz.real(), gz[i + 1] = -2.0 * dz.imag();
      }
    }
  });
}

/// Per (h, n): the discretised mode z = dA and weight w = C̃, and what the
/// backward needs of the way there (inv = 1/denom: one complex division per
/// mode, the other quotients are products with it). All doubles: the
/// forward keeps the [H·N] modes in a double tensor for the backward.
struct Mode {
  cd A, x, inv, z, w, B, C;
  double dt;
};
constexpr int64_t kModeDoubles = sizeof(Mode) / sizeof(double);
static_assert(sizeof(Mode) == kModeDoubles * sizeof(double), "Mode must be plain doubles");

template <typename S>
Mode modeOf(const S *logDt, const S *logAReal, const S *aImag, const S *b, const S *c, int64_t h, int64_t j) {
  Mode m;
  m.dt = std::exp(static_cast<double>(logDt[h]));
  m.A = cd(-std::exp(static_cast<double>(logAReal[j])), static_cast<double>(aImag[j]));
  m.x = m.dt * m.A;
  m.inv = 1.0 / (1.0 - m.x / 2.0);
  m.z = mul(1.0 + m.x / 2.0, m.inv);
  m.B = cd(b[2 * j], b[2 * j + 1]);
  m.C = cd(c[2 * j], c[2 * j + 1]);
  m.w = mul(mul(m.C, m.B), m.inv) * m.dt;
  return m;
}

struct S4dKernelFn : torch::autograd::Function<S4dKernelFn> {
  static variable_list forward(AutogradContext *ctx, at::Tensor logDt, at::Tensor logAReal, at::Tensor aImag,
                               at::Tensor b, at::Tensor c, int64_t T) {
    logDt = logDt.contiguous(), logAReal = logAReal.contiguous(), aImag = aImag.contiguous();
    b = b.contiguous(), c = c.contiguous();
    TORCH_CHECK(logDt.is_cpu(), "diag_ssm: the S4D kernel is computed on the host, not on ", logDt.device());
    const int64_t nh = logAReal.size(0), nn = logAReal.size(1);
    at::Tensor modeTable = at::empty({nh * nn, kModeDoubles}, at::kDouble);
    Mode *modes = reinterpret_cast<Mode *>(modeTable.data_ptr<double>());
    std::vector<double> w(nh * nn * 2), z(nh * nn * 2), K(T * nh);
    AT_DISPATCH_FLOATING_TYPES(logDt.scalar_type(), "s4d_kernel", [&] {
      const scalar_t *dt = logDt.data_ptr<scalar_t>(), *ar = logAReal.data_ptr<scalar_t>(),
                     *ai = aImag.data_ptr<scalar_t>(), *bp = b.data_ptr<scalar_t>(), *cp = c.data_ptr<scalar_t>();
      for (int64_t j = 0; j < nh * nn; ++j) {
        const Mode &m = modes[j] = modeOf(dt, ar, ai, bp, cp, j / nn, j);
        w[2 * j] = m.w.real(), w[2 * j + 1] = m.w.imag(), z[2 * j] = m.z.real(), z[2 * j + 1] = m.z.imag();
      }
    });
    vandermondeForward(w.data(), z.data(), K.data(), nh, nn, T);
    ctx->save_for_backward({logDt, logAReal, aImag, b, c});
    ctx->saved_data["modes"] = modeTable;
    return {at::tensor(K, at::kDouble).view({T, nh}).to(logDt.scalar_type())};
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto s = ctx->get_saved_variables();
    at::Tensor logDt = s[0], logAReal = s[1], aImag = s[2], b = s[3], c = s[4];
    at::Tensor modeTable = ctx->saved_data["modes"].toTensor();
    const Mode *modes = reinterpret_cast<const Mode *>(modeTable.data_ptr<double>());
    at::Tensor gK = grads[0].to(at::kDouble).contiguous();
    const int64_t nh = logAReal.size(0), nn = logAReal.size(1), nt = gK.size(0);
    std::vector<double> w(nh * nn * 2), z(nh * nn * 2), gw(nh * nn * 2), gz(nh * nn * 2);
    for (int64_t j = 0; j < nh * nn; ++j) {
      w[2 * j] = modes[j].w.real(), w[2 * j + 1] = modes[j].w.imag();
      z[2 * j] = modes[j].z.real(), z[2 * j + 1] = modes[j].z.imag();
    }
    vandermondeBackward(w.data(), z.data(), gK.data_ptr<double>(), gw.data(), gz.data(), nh, nn, nt);
    at::Tensor gLogDt = at::zeros({nh}, at::kDouble), gLogAReal = at::empty({nh, nn}, at::kDouble),
               gAImag = at::empty({nh, nn}, at::kDouble), gb = at::empty({nh, nn, 2}, at::kDouble),
               gc = at::empty({nh, nn, 2}, at::kDouble);
    double *gdtH = gLogDt.data_ptr<double>(), *gar = gLogAReal.data_ptr<double>(), *gai = gAImag.data_ptr<double>(),
           *gbp = gb.data_ptr<double>(), *gcp = gc.data_ptr<double>();
    for (int64_t j = 0; j < nh * nn; ++j) {
      const Mode &m = modes[j];
      const cd Gw(gw[2 * j], gw[2 * j + 1]), Gz(gz[2 * j], gz[2 * j + 1]);
      const cd dtInv = m.inv * m.dt;
      const cd GC = mul(Gw, std::conj(mul(m.B, dtInv))), GB = mul(Gw, std::conj(mul(m.C, dtInv)));
      const cd Gx = mul(Gz, std::conj(mul(m.inv, m.inv))) + mul(Gw, std::conj(mul(m.w, m.inv))) / 2.0;
      const cd GA = Gx * m.dt;
      const double gdt = mul(Gw, std::conj(mul(mul(m.C, m.B), m.inv))).real() + mul(Gx, std::conj(m.A)).real();
      gdtH[j / nn] += gdt * m.dt;
      gar[j] = m.A.real() * GA.real(); // ∂(−exp(a))/∂a = −exp(a) = Re A
      gai[j] = GA.imag();
      gcp[2 * j] = GC.real(), gcp[2 * j + 1] = GC.imag();
      gbp[2 * j] = GB.real(), gbp[2 * j + 1] = GB.imag();
    }
    auto as = [&](const at::Tensor &t, const at::Tensor &like) { return t.to(like.scalar_type()); };
    return {as(gLogDt, logDt), as(gLogAReal, logAReal), as(gAImag, aImag), as(gb, b), as(gc, c), at::Tensor()};
  }
};
} // namespace

at::Tensor s4dKernel(const at::Tensor &logDt, const at::Tensor &logAReal, const at::Tensor &aImag,
                     const at::Tensor &b, const at::Tensor &c, int64_t T) {
  TORCH_CHECK(logAReal.dim() == 2 && aImag.sizes() == logAReal.sizes() && logDt.dim() == 1 &&
                  logDt.size(0) == logAReal.size(0) && b.dim() == 3 && b.size(2) == 2 &&
                  b.size(0) == logAReal.size(0) && b.size(1) == logAReal.size(1) && c.sizes() == b.sizes(),
              "diag_ssm: log_dt [H], log_a_real and a_imag [H, N], b and c [H, N, 2]");
  return S4dKernelFn::apply(logDt, logAReal, aImag, b, c, T)[0];
}

} // namespace mixc::rt
