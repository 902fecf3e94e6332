//===- Task.h - the task a run trains on ------------------------*- C++ -*-===//
#ifndef MIXC_RUNTIME_TASKS_TASK_H
#define MIXC_RUNTIME_TASKS_TASK_H

#include "runtime/tasks/AR.h"
#include "runtime/tasks/ATR.h"
#include "runtime/tasks/TaskError.h"
#include "support/Status.h"

#include <string>

namespace mixc::tasks {

/// `[task] name = "ar" | "atr"` with the chosen task's parameters.
struct TaskConfig {
  std::string name = "ar";
  ARConfig ar;
  ATRConfig atr;
  bool isATR() const { return name == "atr"; }
  int64_t vocabSize() const { return isATR() ? atr.vocabSize() : ar.vocabSize(); }
  int64_t trainSize() const { return isATR() ? atr.trainSize : ar.trainSize; }
  int64_t testSize() const { return isATR() ? atr.testSize : ar.testSize; }
  const char *title() const { return isATR() ? "ATR" : "AR"; }
  /// The accuracy of a uniform guess among the answers a document allows:
  /// AR, one of its num_pairs values; ATR, one of the |Σ| terminals.
  double chance() const {
    return 1.0 / static_cast<double>(isATR() ? atr.numTerminals : ar.numPairs);
  }
};

/// What of `asked` makes it another task than the one a model was `trained`
/// on ("" when nothing): the task's name; AR's num_kv (which tokens are
/// keys and which values) and query (key or value); ATR's grammar (its terminals, nonterminals, rule
/// shapes and seed: the seed draws the grammar). An evaluation may change
/// the rest (AR's seed and num_pairs, ATR's depth, lengths and held-out
/// split, the set sizes): the same task, other documents.
std::string identityChange(const TaskConfig &trained, const TaskConfig &asked);

/// The train and test sets (from `cacheDir` when it holds them). Throws
/// TaskError when the config admits no document or a signal stops it.
TaskData makeTask(const TaskConfig &config, const std::string &cacheDir);

/// makeTask for callers that do not use exceptions: the data in `out`, or
/// a failed (infeasible config) or interrupted (signal) status.
support::Status loadTask(const TaskConfig &config, const std::string &cacheDir, TaskData &out);

} // namespace mixc::tasks

#endif
