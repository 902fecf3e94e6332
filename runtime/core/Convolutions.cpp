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
  int64_t N = b.size(1);
  at::Tensor K = at::fft_irfft(at::conj(at::fft_rfft(b, N, 1)) * at::fft_rfft(c, N, 1), N, 1);
  if (T <= N)
    return K.slice(1, 0, T).t(); // [T, C]
  return at::constant_pad_nd(K, {0, T - N}).t();
}

at::Tensor diagSSMKernel(const at::Tensor &logDt, const at::Tensor &logAReal,
                         const at::Tensor &aImag, const at::Tensor &c, int64_t T) {
  // A = −exp(log_a_real) + i·a_imag; Δ = exp(log_dt); bilinear discretisation.
  at::Tensor A = at::complex(-at::exp(logAReal), aImag);       // [H, N]
  at::Tensor dtA = at::exp(logDt).unsqueeze(1) * A;            // [H, N]
  at::Tensor denom = 1.0 - dtA / 2.0;
  at::Tensor dA = (1.0 + dtA / 2.0) / denom;
  at::Tensor C = at::complex(c.select(2, 0), c.select(2, 1));  // [H, N]
  at::Tensor Ct = C * at::exp(logDt).unsqueeze(1) / denom;
  // dA^l = exp(l · log dA), l = 0..T−1: [H, N, T].
  at::Tensor l = at::arange(T, logDt.options());
  at::Tensor powers = at::exp(at::log(dA).unsqueeze(-1) * l);
  at::Tensor K = 2.0 * at::real((Ct.unsqueeze(-1) * powers).sum(1)); // [H, T]
  return K.t();                                                      // [T, H]
}

at::Tensor diagSSM(const at::Tensor &x, const at::Tensor &logDt, const at::Tensor &logAReal,
                   const at::Tensor &aImag, const at::Tensor &c) {
  int64_t B = x.size(0), T = x.size(1), H = x.size(2), M = x.size(3);
  at::Tensor K = diagSSMKernel(logDt, logAReal, aImag, c, T);         // [T, H]
  at::Tensor filter = K.unsqueeze(-1).expand({T, H, M}).reshape({T, H * M});
  return longConv(x.reshape({B, T, H * M}), filter).reshape({B, T, H, M});
}

} // namespace mixc::rt
