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

/// w, z [H, N, 2] (re, im) -> K [T, H]. The steps l run outside and the
/// modes n inside: the N running powers z_n^l are independent, so the inner
/// loops vectorise (with l inside, each mode was one chain of dependent
/// complex products, 4 ms a layer at H = 32, N = 512). The sum over n is a
/// separate plain loop, in a fixed order.
void vandermondeForward(const double *w, const double *z, double *K, int64_t nh, int64_t nn, int64_t nt) {
  at::parallel_for(0, nh, 1, [&](int64_t h0, int64_t h1) {
    std::vector<double> pr(nn), pi(nn), zr(nn), zi(nn), wr(nn), wi(nn), term(nn);
    for (int64_t h = h0; h < h1; ++h) {
      for (int64_t n = 0; n < nn; ++n) {
        const int64_t i = (h * nn + n) * 2;
        wr[n] = w[i], wi[n] = w[i + 1], zr[n] = z[i], zi[n] = z[i + 1], pr[n] = 1.0, pi[n] = 0.0;
      }
      for (int64_t l = 0; l < nt; ++l) {
        for (int64_t n = 0; n < nn; ++n) { // Re(w p), then p ← p z
          term[n] = wr[n] * pr[n] - wi[n] * pi[n];
          const double r = pr[n] * zr[n] - pi[n] * zi[n];
          pi[n] = pr[n] * zi[n] + pi[n] * zr[n];
          pr[n] = r;
        }
        double acc = 0.0;
        for (int64_t n = 0; n < nn; ++n)
          acc += term[n];
        K[l * nh + h] = 2.0 * acc;
      }
    }
  });
}

/// gw, gz [H, N, 2]: ∂L/∂(Re, Im) of w and z from gK [T, H] (the header's
/// gradients), the modes again inside.
void vandermondeBackward(const double *w, const double *z, const double *gK, double *gw, double *gz, int64_t nh,
                         int64_t nn, int64_t nt) {
  at::parallel_for(0, nh, 1, [&](int64_t h0, int64_t h1) {
    // z^l, z^{l−1}, Σ g_l z^l and Σ g_l l z^{l−1}, per mode, (re, im).
    std::vector<double> zr(nn), zi(nn), pr(nn), pi(nn), qr(nn), qi(nn), swr(nn), swi(nn), szr(nn), szi(nn);
    for (int64_t h = h0; h < h1; ++h) {
      for (int64_t n = 0; n < nn; ++n) {
        const int64_t i = (h * nn + n) * 2;
        zr[n] = z[i], zi[n] = z[i + 1], pr[n] = 1.0, pi[n] = 0.0, qr[n] = qi[n] = 0.0;
        swr[n] = swi[n] = szr[n] = szi[n] = 0.0;
      }
      for (int64_t l = 0; l < nt; ++l) {
        const double g = gK[l * nh + h], gl = g * static_cast<double>(l);
        for (int64_t n = 0; n < nn; ++n) {
          swr[n] += g * pr[n], swi[n] += g * pi[n];
          szr[n] += gl * qr[n], szi[n] += gl * qi[n];
          qr[n] = pr[n], qi[n] = pi[n];
          const double r = pr[n] * zr[n] - pi[n] * zi[n];
          pi[n] = pr[n] * zi[n] + pi[n] * zr[n];
          pr[n] = r;
        }
      }
      for (int64_t n = 0; n < nn; ++n) {
        const int64_t i = (h * nn + n) * 2;
        const cd dz = mul(cd(w[i], w[i + 1]), cd(szr[n], szi[n]));
        gw[i] = 2.0 * swr[n], gw[i + 1] = -2.0 * swi[n];
        gz[i] = 2.0 * dz.real(), gz[i + 1] = -2.0 * dz.imag();
      }
    }
  });
}

/// Per (h, n): the discretised mode z = dA and weight w = C̃ (and what the
/// backward needs of the way there).
struct Mode {
  cd A, x, denom, z, w, B, C;
  double dt;
};

template <typename S>
Mode modeOf(const S *logDt, const S *logAReal, const S *aImag, const S *b, const S *c, int64_t h, int64_t j) {
  Mode m;
  m.dt = std::exp(static_cast<double>(logDt[h]));
  m.A = cd(-std::exp(static_cast<double>(logAReal[j])), static_cast<double>(aImag[j]));
  m.x = m.dt * m.A;
  m.denom = 1.0 - m.x / 2.0;
  m.z = (1.0 + m.x / 2.0) / m.denom;
  m.B = cd(b[2 * j], b[2 * j + 1]);
  m.C = cd(c[2 * j], c[2 * j + 1]);
  m.w = m.C * m.B * m.dt / m.denom;
  return m;
}

struct S4dKernelFn : torch::autograd::Function<S4dKernelFn> {
  static variable_list forward(AutogradContext *ctx, at::Tensor logDt, at::Tensor logAReal, at::Tensor aImag,
                               at::Tensor b, at::Tensor c, int64_t T) {
    logDt = logDt.contiguous(), logAReal = logAReal.contiguous(), aImag = aImag.contiguous();
    b = b.contiguous(), c = c.contiguous();
    TORCH_CHECK(logDt.is_cpu(), "diag_ssm: the S4D kernel is computed on the host, not on ", logDt.device());
    const int64_t nh = logAReal.size(0), nn = logAReal.size(1);
    std::vector<double> w(nh * nn * 2), z(nh * nn * 2), K(T * nh);
    AT_DISPATCH_FLOATING_TYPES(logDt.scalar_type(), "s4d_kernel", [&] {
      const scalar_t *dt = logDt.data_ptr<scalar_t>(), *ar = logAReal.data_ptr<scalar_t>(),
                     *ai = aImag.data_ptr<scalar_t>(), *bp = b.data_ptr<scalar_t>(), *cp = c.data_ptr<scalar_t>();
      for (int64_t j = 0; j < nh * nn; ++j) {
        Mode m = modeOf(dt, ar, ai, bp, cp, j / nn, j);
        w[2 * j] = m.w.real(), w[2 * j + 1] = m.w.imag(), z[2 * j] = m.z.real(), z[2 * j + 1] = m.z.imag();
      }
    });
    vandermondeForward(w.data(), z.data(), K.data(), nh, nn, T);
    ctx->save_for_backward({logDt, logAReal, aImag, b, c});
    return {at::tensor(K, at::kDouble).view({T, nh}).to(logDt.scalar_type())};
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto s = ctx->get_saved_variables();
    at::Tensor logDt = s[0], logAReal = s[1], aImag = s[2], b = s[3], c = s[4];
    at::Tensor gK = grads[0].to(at::kDouble).contiguous();
    const int64_t nh = logAReal.size(0), nn = logAReal.size(1), nt = gK.size(0);
    std::vector<Mode> modes(nh * nn);
    std::vector<double> w(nh * nn * 2), z(nh * nn * 2), gw(nh * nn * 2), gz(nh * nn * 2);
    AT_DISPATCH_FLOATING_TYPES(logDt.scalar_type(), "s4d_kernel_modes", [&] {
      const scalar_t *dt = logDt.data_ptr<scalar_t>(), *ar = logAReal.data_ptr<scalar_t>(),
                     *ai = aImag.data_ptr<scalar_t>(), *bp = b.data_ptr<scalar_t>(), *cp = c.data_ptr<scalar_t>();
      for (int64_t j = 0; j < nh * nn; ++j) {
        modes[j] = modeOf(dt, ar, ai, bp, cp, j / nn, j);
        w[2 * j] = modes[j].w.real(), w[2 * j + 1] = modes[j].w.imag();
        z[2 * j] = modes[j].z.real(), z[2 * j + 1] = modes[j].z.imag();
      }
    });
    vandermondeBackward(w.data(), z.data(), gK.data_ptr<double>(), gw.data(), gz.data(), nh, nn, nt);
    at::Tensor gLogDt = at::zeros({nh}, at::kDouble), gLogAReal = at::empty({nh, nn}, at::kDouble),
               gAImag = at::empty({nh, nn}, at::kDouble), gb = at::empty({nh, nn, 2}, at::kDouble),
               gc = at::empty({nh, nn, 2}, at::kDouble);
    double *gdtH = gLogDt.data_ptr<double>(), *gar = gLogAReal.data_ptr<double>(), *gai = gAImag.data_ptr<double>(),
           *gbp = gb.data_ptr<double>(), *gcp = gc.data_ptr<double>();
    for (int64_t j = 0; j < nh * nn; ++j) {
      const Mode &m = modes[j];
      const cd Gw(gw[2 * j], gw[2 * j + 1]), Gz(gz[2 * j], gz[2 * j + 1]);
      const cd GC = Gw * std::conj(m.B * m.dt / m.denom), GB = Gw * std::conj(m.C * m.dt / m.denom);
      const cd Gx = Gz * std::conj(1.0 / (m.denom * m.denom)) + Gw * std::conj(m.w / m.denom) / 2.0;
      const cd GA = Gx * m.dt;
      const double gdt = (Gw * std::conj(m.w / m.dt)).real() + (Gx * std::conj(m.A)).real();
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
