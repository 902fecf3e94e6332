//===- Vandermonde.cpp - the S4D kernel sum Σ_n w_n z_n^l -------------------===//
//
// The diagonal SSM's kernel (protocol §3.5 step 4) is a Vandermonde
// product K[l, h] = 2·Re Σ_n w[h, n] · z[h, n]^l over T steps and N modes.
// Written as tensor ops it materialises [H, N, T] complex intermediates
// (and as many again for autograd), which dominated H3's step time; here it
// is one custom autograd function whose forward and backward sweep l with
// running powers, in double precision whatever the tensors' type.
//
// Gradients (w = a + ib, z = x + iy, g_l = ∂L/∂K[l]; Re f is not
// holomorphic, so by components):
//   ∂L/∂a = 2 Σ_l g_l Re z^l,            ∂L/∂b = −2 Σ_l g_l Im z^l
//   ∂L/∂x = 2 Σ_l g_l Re(l w z^{l−1}),   ∂L/∂y = −2 Σ_l g_l Im(l w z^{l−1})
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

/// w, z [H, N, 2] (re, im) -> K [T, H].
template <typename S>
void vandermondeForward(const S *w, const S *z, S *K, int64_t nh, int64_t nn, int64_t nt) {
  at::parallel_for(0, nh, 1, [&](int64_t h0, int64_t h1) {
    std::vector<double> acc(nt);
    for (int64_t h = h0; h < h1; ++h) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t n = 0; n < nn; ++n) {
        int64_t i = (h * nn + n) * 2;
        cd wn(w[i], w[i + 1]), zn(z[i], z[i + 1]), p(1.0, 0.0);
        for (int64_t l = 0; l < nt; ++l, p = mul(p, zn))
          acc[l] += 2.0 * (wn.real() * p.real() - wn.imag() * p.imag());
      }
      for (int64_t l = 0; l < nt; ++l)
        K[l * nh + h] = static_cast<S>(acc[l]);
    }
  });
}

template <typename S>
void vandermondeBackward(const S *w, const S *z, const S *gK, S *gw, S *gz, int64_t nh,
                         int64_t nn, int64_t nt) {
  at::parallel_for(0, nh * nn, 1, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      int64_t h = j / nn, i = j * 2;
      cd wn(w[i], w[i + 1]), zn(z[i], z[i + 1]);
      cd p(1.0, 0.0), prev(0.0, 0.0); // z^l and z^{l−1}
      cd sw(0.0, 0.0), sz(0.0, 0.0);  // Σ g_l z^l, Σ g_l l z^{l−1}
      for (int64_t l = 0; l < nt; ++l) {
        double g = gK[l * nh + h];
        sw += g * p;
        sz += (g * static_cast<double>(l)) * prev;
        prev = p;
        p = mul(p, zn);
      }
      cd dz = mul(wn, sz);
      gw[i] = static_cast<S>(2.0 * sw.real());
      gw[i + 1] = static_cast<S>(-2.0 * sw.imag());
      gz[i] = static_cast<S>(2.0 * dz.real());
      gz[i + 1] = static_cast<S>(-2.0 * dz.imag());
    }
  });
}

struct VandermondeFn : torch::autograd::Function<VandermondeFn> {
  static variable_list forward(AutogradContext *ctx, at::Tensor w, at::Tensor z, int64_t T) {
    w = w.contiguous(), z = z.contiguous();
    TORCH_CHECK(w.is_cpu(), "diag_ssm: the S4D kernel is computed on the host, not on ", w.device());
    int64_t nh = w.size(0), nn = w.size(1);
    at::Tensor K = at::empty({T, nh}, w.options());
    AT_DISPATCH_FLOATING_TYPES(w.scalar_type(), "vandermonde", [&] {
      vandermondeForward<scalar_t>(w.data_ptr<scalar_t>(), z.data_ptr<scalar_t>(),
                                   K.data_ptr<scalar_t>(), nh, nn, T);
    });
    ctx->save_for_backward({w, z});
    return {K};
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    at::Tensor w = saved[0], z = saved[1], gK = grads[0].contiguous();
    int64_t nh = w.size(0), nn = w.size(1), nt = gK.size(0);
    at::Tensor gw = at::empty_like(w), gz = at::empty_like(z);
    AT_DISPATCH_FLOATING_TYPES(w.scalar_type(), "vandermonde_backward", [&] {
      vandermondeBackward<scalar_t>(w.data_ptr<scalar_t>(), z.data_ptr<scalar_t>(),
                                    gK.data_ptr<scalar_t>(), gw.data_ptr<scalar_t>(),
                                    gz.data_ptr<scalar_t>(), nh, nn, nt);
    });
    return {gw, gz, at::Tensor()};
  }
};
} // namespace

at::Tensor vandermondeKernel(const at::Tensor &w, const at::Tensor &z, int64_t T) {
  TORCH_CHECK(w.dim() == 3 && w.size(2) == 2 && z.sizes() == w.sizes(),
              "vandermonde: w and z must be [H, N, 2] (re, im) of one shape");
  return VandermondeFn::apply(w, z, T)[0];
}

} // namespace mixc::rt
