//===- Convolutions.cpp - short, long, shift and diagonal-SSM convs ---------===//
#include "runtime/core/Primitives.h"

#include <cmath>

namespace mixc::rt {

at::Tensor causalConv(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b) {
  // [B, T, C] -> [B, C, T]; Conv1d(C, C, K, groups=C, padding=K−1) keeps the
  // first T outputs, so output t sees inputs t−K+1..t.
  int64_t T = x.size(1), C = x.size(2), K = w.size(1);
  at::Tensor y = at::conv1d(x.transpose(1, 2), w.unsqueeze(1), b, /*stride=*/1,
                            /*padding=*/K - 1, /*dilation=*/1, /*groups=*/C);
  return y.slice(2, 0, T).transpose(1, 2);
}

at::Tensor longConv(const at::Tensor &x, const at::Tensor &h) {
  int64_t T = x.size(1);
  TORCH_CHECK(h.size(0) >= T, "long_conv: filter has ", h.size(0),
              " taps but the sequence has ", T, " steps");
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
  at::Tensor K = at::fft_irfft(at::conj(at::fft_rfft(b, 2 * N, 1)) * at::fft_rfft(c, 2 * N, 1),
                               2 * N, 1)
                     .slice(1, 0, N); // [C, N]
  if (T <= N)
    return K.slice(1, 0, T).t(); // [T, C]
  return at::constant_pad_nd(K, {0, T - N}).t();
}

at::Tensor diagSSMKernel(const at::Tensor &logDt, const at::Tensor &logAReal,
                         const at::Tensor &aImag, const at::Tensor &b, const at::Tensor &c,
                         int64_t T) {
  // A = −exp(log_a_real) + i·a_imag; Δ = exp(log_dt); bilinear discretisation.
  at::Tensor A = at::complex(-at::exp(logAReal), aImag);       // [H, N]
  at::Tensor dtA = at::exp(logDt).unsqueeze(1) * A;            // [H, N]
  at::Tensor denom = 1.0 - dtA / 2.0;
  at::Tensor dA = (1.0 + dtA / 2.0) / denom;
  at::Tensor C = at::complex(c.select(2, 0), c.select(2, 1));  // [H, N]
  at::Tensor Bc = at::complex(b.select(2, 0), b.select(2, 1)); // [H, N], trainable
  at::Tensor Ct = C * Bc * at::exp(logDt).unsqueeze(1) / denom;
  // K[l] = 2·Re Σ_n C̃_n dA_n^l: the [H, N]-sized work above stays on autograd,
  // the [H, N, T] sum is one hand-differentiated sweep (Vandermonde.cpp).
  return vandermondeKernel(at::view_as_real(Ct), at::view_as_real(dA), T); // [T, H]
}

at::Tensor diagSSM(const at::Tensor &x, const at::Tensor &logDt, const at::Tensor &logAReal,
                   const at::Tensor &aImag, const at::Tensor &b, const at::Tensor &c) {
  int64_t B = x.size(0), T = x.size(1), H = x.size(2), M = x.size(3);
  at::Tensor K = diagSSMKernel(logDt, logAReal, aImag, b, c, T);      // [T, H]
  at::Tensor filter = K.unsqueeze(-1).expand({T, H, M}).reshape({T, H * M});
  return longConv(x.reshape({B, T, H * M}), filter).reshape({B, T, H, M});
}

} // namespace mixc::rt
