//===- ChunkPlan.h - a linear scan's chunked form, as the runtime reads it -===//
//
// What the compiler's linearity analysis (compiler/include/mix/ScanLinearity.h)
// hands the runtime so that it can run a scan chunkwise (docs/chunked-form.md):
// each state's decay and write, each emitted value's terms, as products of
// step values with a letter per axis (einsum-like). Carried in the graph as
// the scan node's `chunk_plan` attribute (JSON); absent when the scan has no
// chunked form the runtime implements.
//
// Letters: in a term that reads state S [m, n], 'r' is S's row axis and 'c'
// its column axis; other letters ('a', 'b', ...) name the value's own axes;
// '-' a unit axis. A factor's `axes` has one entry per axis of the value after
// its batch dimension (a step value [B, ...]; a loop-invariant input whole).
//
//   S_t = exp(Σ decay factors' logs) ⊙ S_{t−1} + Σ_w coef_w Π factors_w
//   emit_j = Σ_terms coef Π factors · S_k   (contracting the letters not in `out`)
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_ABI_CHUNKPLAN_H
#define MIXC_ABI_CHUNKPLAN_H

#include <string>
#include <vector>

namespace mixc::graph {

/// The longest chunk `scan_chunk` may ask for (training configs, Python).
constexpr long long kMaxScanChunk = 4096;

struct ChunkFactor {
  std::string value;    // "#N": the step's argument N; else a step node's name
  std::string axes;     // a letter or '-' per axis of the value
  bool inverse = false; // 1 / value
};

struct ChunkTerm {
  double coef = 1;
  int state = -1;        // the state it reads; -1: a product of step values alone
  bool previous = false; // reads S_{t−1} (the value was read before the update)
  std::vector<ChunkFactor> factors;
  std::string out;       // a letter or '-' per axis of the value the term adds to
};

struct ChunkState {
  std::vector<ChunkFactor> decay; // each carries 'r', 'c', both or neither: D_t = Π factors
  std::vector<ChunkTerm> writes;  // W_t = Σ terms, each (row factors)(column factors)
  /// The delta rule's correction, S_t = (D_t ⊙ S_{t−1})(I − β_t k_t k_tᵀ) + W_t
  /// when it contracts S's columns (`correctionAxis` 'c'), (I − β_t k_t k_tᵀ)(D_t ⊙ S_{t−1})
  /// + W_t its rows ('r'); empty: none. β_t = betaCoef · Π beta, k_t = Π key
  /// (along that axis). Each write's factors along that axis are k's.
  std::string correctionAxis;
  double betaCoef = 1;
  std::vector<ChunkFactor> beta, key;
};

struct ChunkPlan {
  std::vector<std::string> freeNodes; // the step nodes that read no state, in order
  std::vector<ChunkState> states;
  std::vector<std::vector<ChunkTerm>> emits; // per emitted value: Σ terms
};

std::string chunkPlanToJson(const ChunkPlan &plan);
/// "" on success, else what is wrong with `json`.
std::string chunkPlanFromJson(const std::string &json, ChunkPlan &plan);

} // namespace mixc::graph

#endif // MIXC_ABI_CHUNKPLAN_H
