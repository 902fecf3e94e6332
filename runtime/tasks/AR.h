//===- AR.h - Associative Recall (protocol §1) ------------------*- C++ -*-===//
//
// tinylang's AR: documents [BOS, k₁, v₁, …, k_n, v_n, EOS, k_q, v_q, EOS],
// keys and values drawn without replacement from disjoint vocabularies
// (a new key→value map per document), one supervised token: v_q, read from
// the logits at the query key. Reverse AR (query = "value") ends
// [EOS, v_q, k_q, EOS] instead: the key is the answer. Plain C++ (no torch).
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_TASKS_AR_H
#define MIXC_RUNTIME_TASKS_AR_H

#include "runtime/tasks/Dataset.h"

#include <cstdint>
#include <string>

namespace mixc::tasks {

struct ARConfig {
  int64_t numKV = 8192;     // key and value tokens together (ar_32: 8192)
  int64_t numPairs = 16;    // pairs per document (ar_32: max_length 32 / 2)
  int64_t trainSize = 100032;
  int64_t testSize = 1024;
  uint64_t seed = 42;
  /// tinylang's query_type: "key" (the query is a key, the answer its value)
  /// or "value" (reverse AR: the query is a value, the answer its key; the
  /// context keeps its key-then-value order, reference §1's ar_32_reverse).
  bool queryValue = false;
  int64_t keys() const { return numKV / 2; }
  /// 3 specials + keys + values + the unused row of tinylang's -100 entry.
  int64_t vocabSize() const { return numKV + 4; }
  int64_t seqLen() const { return 2 * numPairs + 5; }
  std::string key() const; // identifies the data set (for the cache)
};

/// Generates (or reads from `cacheDir`, when non-empty) the train and test
/// sets; one RNG seeded with `seed` draws the train set, then the test set.
TaskData makeAR(const ARConfig &config, const std::string &cacheDir);

} // namespace mixc::tasks

#endif
