//===- AR.h - Associative Recall (paper-spec §1) ----------------*- C++ -*-===//
//
// tinylang's AR: documents [BOS, k₁, v₁, …, k_n, v_n, EOS, k_q, v_q, EOS],
// keys and values drawn without replacement from disjoint vocabularies
// (a new key→value map per document), one supervised token: v_q, read from
// the logits at the query key. Plain C++ (no torch).
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_TASKS_AR_H
#define MIXC_RUNTIME_TASKS_AR_H

#include <cstdint>
#include <string>
#include <vector>

namespace mixc::tasks {

constexpr int32_t kPad = 0, kBos = 1, kEos = 2, kFirstTerminal = 3;

struct ARConfig {
  int64_t numKV = 8192;     // key and value tokens together (ar_32: 8192)
  int64_t numPairs = 16;    // pairs per document (ar_32: max_length 32 / 2)
  int64_t trainSize = 100032;
  int64_t testSize = 1024;
  uint64_t seed = 42;
  int64_t keys() const { return numKV / 2; }
  /// 3 specials + keys + values + the unused row of tinylang's -100 entry.
  int64_t vocabSize() const { return numKV + 4; }
  int64_t seqLen() const { return 2 * numPairs + 5; }
  std::string key() const; // identifies the data set (for the cache)
};

/// A set of fixed-length documents with the positions the probes use.
struct Dataset {
  int64_t seqLen = 0;
  int64_t vocabSize = 0;
  std::vector<int32_t> tokens;   // [N, seqLen], row-major
  std::vector<int32_t> readout;  // [N] position whose logits predict the answer
  std::vector<int32_t> target;   // [N] the answer token
  // Roles of paper-spec §6, per document.
  std::vector<int32_t> keyPos, valuePos, queryPos, dividerPos;
  int64_t size() const { return static_cast<int64_t>(target.size()); }
};

struct ARData {
  Dataset train, test;
};

/// Generates (or reads from `cacheDir`, when non-empty) the train and test
/// sets; one RNG seeded with `seed` draws the train set, then the test set.
ARData makeAR(const ARConfig &config, const std::string &cacheDir);

} // namespace mixc::tasks

#endif
