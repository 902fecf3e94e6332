//===- Rotation.h - a learned orthogonal map for DAS --------------*- C++ -*-===//
//
// Distributed alignment search learns a rotation R [W, W] of a node's values
// and interchanges the first k rotated coordinates (Intervene's das(k)).
// R stays orthogonal through training by construction, with the Cayley
// transform of a skew-symmetric matrix:
//   A = F − Fᵀ,   C = (I + A)⁻¹ (I − A),   R = R₀ C
// F [W, W] is the trained parameter (zero at the start, so R starts at R₀)
// and R₀ a fixed random orthogonal matrix (Haar: QR of a Gaussian with the
// signs of R's diagonal), so the first k rows start in a random subspace
// rather than on k of the node's channels. Gradients reach F through
// LibTorch's linear solve.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_TRAIN_ROTATION_H
#define MIXC_RUNTIME_TRAIN_ROTATION_H

#include <ATen/ATen.h>

#include <cstdint>

namespace mixc::analysis {

/// (I + A)⁻¹ (I − A) for a skew-symmetric A [W, W]: orthogonal, and −1 is
/// never an eigenvalue of a skew matrix, so I + A is always invertible.
at::Tensor cayley(const at::Tensor &skew);

/// A Haar-random orthogonal [W, W] matrix from `generator`'s stream.
at::Tensor randomOrthogonal(int64_t width, at::Generator generator);

class Rotation {
public:
  /// R over `width` values, interchanging its first `k` rows; R₀ drawn from `generator`.
  Rotation(int64_t width, int64_t k, at::Generator generator);

  /// The trained parameter F [W, W] (requires grad).
  const at::Tensor &parameter() const { return free_; }
  /// R [W, W] and its first k rows [k, W], differentiable in F.
  at::Tensor matrix() const;
  at::Tensor rows() const { return matrix().narrow(0, 0, k_); }
  int64_t k() const { return k_; }
  /// max |R Rᵀ − I|: 0 up to rounding (a few 1e-6 in float).
  double orthogonalityError() const;

private:
  at::Tensor free_, start_;
  int64_t k_;
};

} // namespace mixc::analysis

#endif
