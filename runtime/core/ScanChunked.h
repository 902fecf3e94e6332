//===- ScanChunked.h - a linear scan, chunk by chunk -------------*- C++ -*-===//
//
// The chunkwise-parallel form of a scan the compiler found linear
// (docs/chunked-form.md §2), from the plan it wrote on the node
// (abi/ChunkPlan.h). For a state S [m, n] with
//
//   S_t = (e^{a_t} e^{c_t}ᵀ) ⊙ S_{t−1} + Σ_w x_t^w y_t^wᵀ        a_t [m], c_t [n] log decays
//   o_t = h_t ⊙ (S_tᵀ q_t)                                       (or S_t q_t: rows kept)
//
// and a chunk of L steps from state S_0, with A_t = Σ_{u≤t} a_u, C_t likewise:
//
//   o_t = h_t ⊙ [ ((q_t ⊙ e^{A_t})ᵀ S_0) ⊙ e^{C_t}
//               + Σ_{s≤t} Σ_w (Σ_i q_t[i] x_s[i] e^{A_t[i]−A_s[i]}) (y_s ⊙ e^{C_t−C_s}) ]
//   S_L = (e^{A_L} e^{C_L}ᵀ) ⊙ S_0 + Σ_s Σ_w (x_s ⊙ e^{A_L−A_s}) (y_s ⊙ e^{C_L−C_s})ᵀ
//
// The exponents are differences of cumulative logs (in double), masked to
// s ≤ t before exp, so a decay near 0 gives e^{−large} = 0 and one near 1 no
// loss; a value read before the update (S_{t−1}) uses A_{t−1} and s < t.
// LibTorch ops throughout: autograd differentiates it, as the loop's.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_CORE_SCANCHUNKED_H
#define MIXC_RUNTIME_CORE_SCANCHUNKED_H

#include "abi/ChunkPlan.h"
#include "abi/Graph.h"

#include <ATen/ATen.h>

#include <optional>
#include <vector>

namespace mixc::rt {

/// The node's chunk plan, if the compiler wrote one.
std::optional<graph::ChunkPlan> chunkPlanOf(const graph::Node &scan);

/// The scan's emitted values over time ([B, T, ...] each), as runScan's,
/// computed `chunk` steps at a time; with `finalStates`, each state after
/// the last step. A decay factor below zero is refused (its logarithm).
std::vector<at::Tensor> runScanChunked(const std::vector<at::Tensor> &inputs, const graph::Node &scan,
                                       const graph::ChunkPlan &plan, int64_t chunk,
                                       std::vector<at::Tensor> *finalStates = nullptr);

} // namespace mixc::rt

#endif
