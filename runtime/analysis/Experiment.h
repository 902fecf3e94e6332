//===- Experiment.h - the corruption experiment of every analysis -*- C++ -*-===//
//
// What `mixc intervene`, `attribute` and `align` share (protocol §6): a
// trained run restored with its graph rewritten for the script's cells,
// the task it was trained on, and test documents each with its corrupted
// twin (the key or the value in context replaced; seeded, so the three
// commands and any rerun see the same pairs), handed out in chunks that one
// batched forward takes. Each command keeps only its own mathematics:
// Attrib per cell (Intervene), its gradient estimate (Attribute), a learned
// subspace (Align).
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_ANALYSIS_EXPERIMENT_H
#define MIXC_RUNTIME_ANALYSIS_EXPERIMENT_H

#include "runtime/analysis/Intervene.h"
#include "runtime/tasks/Task.h"
#include "runtime/train/Checkpoint.h"

#include <memory>
#include <string>
#include <vector>

namespace mixc::analysis {

class CorruptionExperiment {
public:
  /// Restores `checkpoint` running `graph` (on `kernels`, if any) and loads
  /// its task; the first `size` test documents (at most the split's) and
  /// their twins corrupted as `spec` says, with `seed`.
  support::Status open(const std::string &checkpoint, const graph::Graph &graph, const InterveneSpec &spec,
                       std::shared_ptr<const kernels::Library> kernels, int64_t size, uint64_t seed);
  /// The same, with the caller's documents (`pairs`, restore order; checked
  /// with checkPairs) instead of the task's test set.
  support::Status open(const std::string &checkpoint, const graph::Graph &graph, const InterveneSpec &spec,
                       std::shared_ptr<const kernels::Library> kernels, std::shared_ptr<const DocumentChunk> pairs);

  rt::Model &model() { return *run_.model; }
  const train::TrainConfig &config() const { return run_.config; }
  const tasks::TaskData &data() const { return data_; }
  /// The test documents in the experiment.
  int64_t docs() const { return docs_; }
  /// The longest document's tokens.
  int64_t seqLen() const { return pairs_ ? pairs_->source.size(1) : data_.test.seqLen; }
  /// Test documents [i, j) as one batch: source and base tokens, readouts, roles.
  DocumentChunk chunk(int64_t i, int64_t j) const;

private:
  /// The run restored with `graph` on `kernels`, and the spec's direction: what both opens share.
  support::Status restore(const std::string &checkpoint, const graph::Graph &graph, const InterveneSpec &spec,
                          std::shared_ptr<const kernels::Library> kernels);

  train::Restored run_;
  tasks::TaskData data_;
  int64_t docs_ = 0;
  std::vector<int32_t> corrupted_;
  std::shared_ptr<const DocumentChunk> pairs_; // the caller's documents, if any
  bool swap_ = false;
};

/// A run's task and the corruption pairs its analyses use, for front ends
/// that bring their own interventions (Python's mixc.task): the train and
/// test sets, and test documents [0, size) with their twins corrupted as
/// `corrupt` (key | value | none) says, drawn with `seed` as `mixc
/// intervene` draws them (`pairs.source` clean, `pairs.base` corrupted).
struct RunTask {
  tasks::TaskConfig config;
  tasks::TaskData data;
  DocumentChunk pairs;
};
support::Status openRunTask(const std::string &checkpointOrRun, const std::string &corrupt, int64_t size,
                            uint64_t seed, RunTask &out);

} // namespace mixc::analysis

#endif
