//===- Attention.cpp - softmax and linear attention, norms ------------------===//
#include "runtime/core/Primitives.h"

#include <cmath>

namespace mixc::rt {

namespace {
/// [T, T] boolean, true strictly above the diagonal (future positions).
at::Tensor futureMask(int64_t T, const at::Tensor &like) {
  return at::triu(at::ones({T, T}, like.options().dtype(at::kBool)), 1);
}
} // namespace

at::Tensor softmaxAttention(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v) {
  int64_t T = q.size(1);
  at::Tensor scores = at::matmul(q, k.transpose(1, 2)) / std::sqrt(static_cast<double>(q.size(2)));
  // Zoology adds M = −10000 above the diagonal (not −inf).
  scores = scores + at::where(futureMask(T, q), -10000.0, 0.0).to(scores.scalar_type());
  return at::matmul(at::softmax(scores, -1), v);
}

at::Tensor taylorMap(const at::Tensor &x) {
  double F = static_cast<double>(x.size(-1));
  at::Tensor ones = at::ones_like(x.narrow(-1, 0, 1));
  at::Tensor linear = x / std::pow(F, 0.25);
  at::Tensor outer = (x.unsqueeze(-1) * x.unsqueeze(-2)).flatten(-2) / (std::sqrt(2.0) * std::sqrt(F));
  return at::cat({ones, linear, outer}, -1);
}

at::Tensor linearAttention(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
                           double eps) {
  // The "quadratic" train view: an explicit causal [T, T] weight matrix,
  // cheaper than a recurrence at the sequence lengths of AR/ATR.
  at::Tensor A = at::matmul(q, k.transpose(1, 2));
  A = A.masked_fill(futureMask(q.size(1), q), 0.0);
  return at::matmul(A, v) / (A.sum(-1, /*keepdim=*/true) + eps);
}

at::Tensor rmsNorm(const at::Tensor &x, const at::Tensor &w, double eps) {
  return x * at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps) * w;
}

at::Tensor l2Norm(const at::Tensor &x, double eps) {
  return x * at::rsqrt(x.pow(2).sum(-1, /*keepdim=*/true) + eps);
}

} // namespace mixc::rt
