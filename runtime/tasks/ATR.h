//===- ATR.h - Associative Treecall (protocol §2) ---------------*- C++ -*-===//
//
// tinylang's PCFG task: a random head-right grammar (built once per data set
// from the seed), strings sampled depth-first, and one parent query per
// document:
//   [BOS, t₁ … t_n, EOS, child, parent, EOS]
// where `child` is the rightmost occurrence of its label and `parent` the
// head of the production that emitted it; the logits at `child` (len − 3)
// predict `parent`. Token ids: PAD 0, BOS 1, EOS 2, terminal i = 3 + i;
// vocabulary |Σ| + 6 (three unused query-type tokens). Plain C++.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_TASKS_ATR_H
#define MIXC_RUNTIME_TASKS_ATR_H

#include "runtime/tasks/Dataset.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace mixc::tasks {

struct ATRConfig {
  int64_t numTerminals = 20;     // |Σ|
  int64_t numNonterminals = 40;  // |N|
  int64_t maxRhsLen = 5;         // L_max: at most L_max symbols with the head
  int64_t maxRulesPerNt = 5;     // R_max
  int64_t maxDepth = 10;         // d_max
  int64_t terminalFactor = 0;    // r_Σ: weight of the terminal class; 0: 1 per terminal
  double heldOut = 0;            // fraction of (parent, child) label pairs kept for test
  int64_t maxStringLen = 1024;   // longer strings are rejected
  int64_t trainSize = 100032;
  int64_t testSize = 320;
  uint64_t seed = 42;
  int64_t vocabSize() const { return numTerminals + 6; }
  std::string key() const; // identifies the data set (for the cache)
};

/// A sampled string and its tree relation.
struct ATRString {
  std::vector<int32_t> labels; // terminal index per position (0-based)
  std::vector<int32_t> parent; // position of each terminal's parent; −1 for the root head
};

/// The grammar of §2.1 with its sampler; one RNG, seeded once, builds the
/// grammar and then draws every string, so a seed fixes the whole data set.
class PCFG {
public:
  explicit PCFG(const ATRConfig &config);
  /// One string (§2.2); empty when it grew past maxStringLen (rejected).
  ATRString sample();
  /// Whether the (parent, child) label pair is held out for the test set.
  bool heldOut(int32_t parentLabel, int32_t childLabel) const;
  /// The RNG the query draws continue with.
  std::mt19937_64 &rng() { return rng_; }

private:
  ATRConfig c_;
  std::mt19937_64 rng_;
  std::vector<int32_t> depth_;                          // [|N|] d(X)
  std::vector<std::vector<std::vector<int32_t>>> rules_; // [|N|][rule] RHS: ≥ 0 terminal, < 0 nonterminal −1−Y
  std::vector<std::discrete_distribution<int32_t>> ruleDist_, headDist_; // [|N|]
  std::vector<char> heldOut_;                           // [|Σ|·|Σ|], parent-major
};

/// Documents (§2.3) from strings sampled until `n` are accepted; `test`
/// selects the held-out label pairs (§2.5; all pairs when none are held out).
Dataset sampleDocuments(PCFG &pcfg, const ATRConfig &config, int64_t n, bool test);

/// Generates (or reads from `cacheDir`, when non-empty) the train and test sets.
TaskData makeATR(const ATRConfig &config, const std::string &cacheDir);

} // namespace mixc::tasks

#endif
