//===- Rotation.cpp - Cayley-parametrised rotations for DAS -----------------===//
#include "runtime/analysis/Rotation.h"

#include <torch/torch.h>

namespace mixc::analysis {

at::Tensor cayley(const at::Tensor &skew) {
  at::Tensor eye = at::eye(skew.size(0), skew.options());
  return at::linalg_solve(eye + skew, eye - skew);
}

at::Tensor randomOrthogonal(int64_t width, at::Generator generator) {
  at::Tensor g = at::normal(0.0, 1.0, {width, width}, generator, at::TensorOptions().dtype(at::kDouble));
  auto [q, r] = at::linalg_qr(g);
  // Q's columns times the signs of R's diagonal: Haar-distributed (Mezzadri 2007).
  return (q * at::sign(at::diagonal(r)).unsqueeze(0)).to(at::kFloat);
}

Rotation::Rotation(int64_t width, int64_t k, at::Generator generator)
    : free_(at::zeros({width, width}).set_requires_grad(true)), start_(randomOrthogonal(width, generator)), k_(k) {
  TORCH_CHECK(k >= 1 && k <= width, "a rotation's subspace has 1..", width, " dimensions, not ", k);
}

at::Tensor Rotation::matrix() const { return at::matmul(start_, cayley(free_ - free_.t())); }

double Rotation::orthogonalityError() const {
  torch::NoGradGuard noGrad;
  at::Tensor r = matrix().to(at::kDouble);
  return (at::matmul(r, r.t()) - at::eye(r.size(0), r.options())).abs().max().item<double>();
}

} // namespace mixc::analysis
