//===- Dataset.h - tokenised task documents and their probe roles -*- C++ -*-===//
//
// One layout for every task: documents right-padded with PAD to the longest
// in the set ([N, seqLen], row-major), each with its true length, the
// position whose logits predict the answer, and the roles of protocol §6
// (key, value, query, divider) that interventions address. Plain C++.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_TASKS_DATASET_H
#define MIXC_RUNTIME_TASKS_DATASET_H

#include <cstdint>
#include <string>
#include <vector>

namespace mixc::tasks {

constexpr int32_t kPad = 0, kBos = 1, kEos = 2, kFirstTerminal = 3;

struct Dataset {
  int64_t seqLen = 0;            // the longest document (the row width)
  int64_t vocabSize = 0;
  int32_t corruptLow = 0;        // corruption draws a token from
  int32_t corruptHigh = 0;       //   [corruptLow, corruptHigh) (§6)
  std::vector<int32_t> tokens;   // [N, seqLen], row-major, PAD after length
  std::vector<int32_t> length;   // [N] tokens before the padding
  std::vector<int32_t> readout;  // [N] position whose logits predict the answer
  std::vector<int32_t> target;   // [N] the answer token
  std::vector<int32_t> keyPos, valuePos, queryPos, dividerPos; // [N] each
  int64_t size() const { return static_cast<int64_t>(target.size()); }
  /// The longest document among rows [from, to): a batch needs no more
  /// columns (the models are causal, so padding never reaches the readout).
  int64_t maxLength(int64_t from, int64_t to) const;
  /// Appends one document, padding or widening rows as needed.
  void append(const std::vector<int32_t> &doc, int32_t readoutPos, int32_t answer, int32_t key,
              int32_t value, int32_t query, int32_t divider);
};

struct TaskData {
  Dataset train, test;
};

/// Whether every document of `d` is one a task could have made for a
/// vocabulary of `vocabSize`: tokens and answers in it, lengths within the
/// row width, every role position inside its document, and a corruption
/// range of at least two tokens inside the vocabulary. What the training,
/// corruption and readout code indexes with, checked before it does.
bool holdsOnlyValidDocuments(const Dataset &d, int64_t vocabSize);

/// Reads `file` when it is a regular file holding exactly the sets written
/// by `saveCache` with the same `magic` (8 bytes), sizes and vocabulary, and
/// only valid documents (holdsOnlyValidDocuments); returns false otherwise,
/// and the caller generates the data again (a damaged or planted cache is
/// replaced, never used).
bool loadCache(const std::string &file, const char magic[8], int64_t trainSize,
               int64_t testSize, int64_t vocabSize, TaskData &data);
/// Writes atomically (temporary file + rename); a failure only costs a
/// regeneration next time.
void saveCache(const std::string &file, const char magic[8], const TaskData &data);

} // namespace mixc::tasks

#endif
