//===- ScanLinearity.h - is a scan's step linear in its state? --*- C++ -*-===//
//
// The analysis the chunkwise-parallel form starts from (issue 57; Yang et
// al. 2024, "Gated Linear Attention Transformers with Hardware-Efficient
// Training", §3, and "Parallelizing Linear Transformers with the Delta Rule
// over Sequence Length", §3). For each state S of a `mix.scan` it decides
// whether the step is
//
//   S_t = L_t(S_{t−1}) + W_t
//
// with L_t one of
//   a decay       S ↦ D_t ⊙ S, D_t a scalar, one factor per row, per column,
//                 a row factor times a column factor, or a full matrix;
//   a decay times a rank-1 correction
//                 S ↦ (D_t ⊙ S)(I − β_t k_t k_tᵀ)   (contracting S's columns)
//                 S ↦ (I − β_t k_t k_tᵀ)(D_t ⊙ S)   (contracting its rows),
// and W_t a sum of outer products a_t b_tᵀ; and whether each emitted value
// is linear (or affine) in the new states S_t, or a non-linear function of
// values linear in them that each contract the state (a "readout", e.g. a
// normalised linear attention's numerator and denominator).
//
// How: an abstract interpretation of the step. Every value is free (reads
// no state), non-linear in a state, or a sum of terms, each a product of
// free factors and at most one state written as an index expression
// (einsum-like): a label per axis of the state, of each factor and of the
// value, so a `sum` over a state's axis is a contraction and a broadcast
// `mul` a factor that carries the labels of the axes it varies along.
//
//===----------------------------------------------------------------------===//
#ifndef MIX_SCANLINEARITY_H
#define MIX_SCANLINEARITY_H

#include "mix/MixOps.h"

#include <string>
#include <vector>

namespace mix {

/// How L_t scales the old state, before any rank-1 correction.
enum class DecayKind {
  None,      // S_{t−1} as it is (plain linear attention, DeltaNet)
  Scalar,    // γ_t S (RetNet, Gated DeltaNet)
  Row,       // diag(α_t) S: one factor per row (GLA's gate over d_k)
  Column,    // S diag(α_t)
  RowColumn, // (a_t b_tᵀ) ⊙ S: a row factor times a column factor
  Element,   // D_t ⊙ S with D_t not separable (Mamba-1's exp(Δ_t A))
};

/// The rank-1 correction, if any.
enum class Correction {
  None,
  Right,        // (D ⊙ S)(I − β k kᵀ): contracts S's columns with k
  Left,         // (I − β k kᵀ)(D ⊙ S): contracts its rows with k
  GeneralRight, // (D ⊙ S)(I − a bᵀ), a ≠ b
  GeneralLeft,  // (I − a bᵀ)(D ⊙ S), a ≠ b
};

struct StateForm {
  std::string name;        // the state's node name
  bool matrix = true;      // a [m, n] state (else a vector [m])
  DecayKind decay = DecayKind::None;
  Correction correction = Correction::None;
  bool outerWrite = false; // W_t a sum of outer products (or, for a vector state, any vector)
  /// "decay.row, write outer"; "decay.scalar * rank1.right, write outer";
  /// "identity, write vector".
  std::string text() const;
};

enum class EmitKind {
  Free,    // reads no state
  Linear,  // Σ contractions of S_t with free values
  Affine,  // the same plus a free value
  Readout, // a non-linear function of linear values, each contracting a state
};

struct EmitForm {
  std::string name;      // the emitted value's node name
  EmitKind kind = EmitKind::Free;
  bool previous = false; // reads S_{t−1} (before the update), not S_t
  std::string text() const; // "linear", "affine (reads S_{t-1})", ...
};

struct ScanLinearity {
  bool chunkable = false;        // the chunked form applies
  std::vector<StateForm> states; // filled up to the first state that breaks
  std::vector<EmitForm> emits;
  std::string reason;            // why not chunkable ("" when it is)
  mlir::Operation *culprit = nullptr; // the op that breaks it, where one does
  /// The chunked form for the runtime (abi/ChunkPlan.h, JSON); "" when the
  /// scan is not chunkable or the runtime has no chunked form for it yet
  /// (`planGap` says which part).
  std::string chunkPlan, planGap;
};

/// Analyses `scan`'s step; never fails (a step it cannot read is sequential).
ScanLinearity analyzeScanLinearity(ScanOp scan);

/// Writes the analysis onto `scan` as string attributes, visible in the IR
/// and carried by the graph: `linearity` ("chunkable" | "sequential"),
/// `linearity_states`, `linearity_emits` and, when sequential,
/// `linearity_reason`; `chunk_plan` where the runtime has the chunked form,
/// else (a chunkable scan) `chunk_plan_gap`, why not yet.
void annotateScanLinearity(ScanOp scan, const ScanLinearity &result);

} // namespace mix

#endif // MIX_SCANLINEARITY_H
