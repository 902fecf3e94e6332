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

/// `scan`'s chunk plan into `plan` (none if the compiler wrote none): ""
/// when it parses and names only the scan's own step arguments and nodes,
/// its states and emitted values; else what is wrong (Model::create refuses
/// such a graph: a plan is only ever the compiler's, so a bad one is an
/// edited or damaged graph.json).
std::string readChunkPlan(const graph::Node &scan, std::optional<graph::ChunkPlan> &plan);

/// The same, a problem thrown (c10::Error).
std::optional<graph::ChunkPlan> chunkPlanOf(const graph::Node &scan);

/// The scan's emitted values over time ([B, T, ...] each), as runScan's,
/// computed `chunk` steps at a time; with `finalStates`, each state after
/// the last step. A decay factor below zero is refused (its logarithm).
std::vector<at::Tensor> runScanChunked(const std::vector<at::Tensor> &inputs, const graph::Node &scan,
                                       const graph::ChunkPlan &plan, int64_t chunk,
                                       std::vector<at::Tensor> *finalStates = nullptr);

/// Exact token-to-token contributions of a scan's emitted values (issue 58
/// item 4): [B, T, T, ...] per emitted value, c[:, t, i] the part of o_t that
/// step i's writes give (the decay family: h_t ⊙ Σ (q_t ⊙ x_i ⊙ e^{A_t−A_i}) y_i;
/// the delta rule: M_ti x_i with the effective attention M = (tril(Q Kᵀ) ⊙ Γ)
/// (I + A)⁻¹, the key-removal of the steps between i and t included), plus o_t's terms that read no
/// state at i = t; Σ_i c[:, t, i] = o_t (states start at zero). The whole
/// sequence is one chunk: [B, T, T, n] tensors, for analysis lengths.
std::vector<at::Tensor> scanContributions(const std::vector<at::Tensor> &inputs, const graph::Node &scan,
                                          const graph::ChunkPlan &plan);

} // namespace mixc::rt

#endif
