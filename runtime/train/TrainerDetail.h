//===- TrainerDetail.h - the training loop's parts, for its two loops -*- C++ -*-===//
//
// The pieces of a run that `mixc train` (Trainer.cpp) and packed training
// (PackedTrainer.cpp) share: the batches, the schedule, the run folder, the
// closing result. Not an interface for other code.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_TRAIN_TRAINERDETAIL_H
#define MIXC_RUNTIME_TRAIN_TRAINERDETAIL_H

#include "abi/Graph.h"
#include "runtime/tasks/Dataset.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/Config.h"
#include "runtime/train/Report.h"
#include "runtime/train/Trainer.h"
#include "support/FileLock.h"
#include "support/Status.h"

#include <ATen/ATen.h>

#include <memory>
#include <ostream>
#include <string>

namespace mixc::train::detail {

/// Rows [from, to) of a data set as a batch: tokens cut to the batch's
/// longest document ([n, T_batch] int64), readout positions and targets.
struct Batch {
  at::Tensor tokens, readout, target;
};
Batch batchOf(const tasks::Dataset &d, int64_t from, int64_t to, const at::Device &device);

/// Steps per pass over the training set, and the run's steps (max_steps caps).
struct StepCount {
  int64_t perEpoch, total;
};
StepCount stepCount(const TrainConfig &c, const tasks::Dataset &trainSet);

/// The learning rate at `step` of `total`: warm-up, then cosine or linear decay.
double learningRate(const TrainConfig &c, int64_t step, int64_t total);

struct EvalResult {
  double accuracy = 0, probability = 0;
};

/// Why training `g` on `c`'s task would not fit in memory, or "".
std::string trainingTooLarge(const TrainConfig &c, const graph::Graph &g);
/// The end of a message about a failed step: which checkpoint survives.
std::string keptCheckpoint(int64_t lastCheckpoint);
/// "learning rate X at this step (schedule of the configured Y); too
/// high?": the step's rate alone (969846 for a configured 1e6, in the
/// warm-up) read as a config nobody wrote.
std::string learningRateNote(double atStep, double configured);
/// A signal during setup stops there: nothing is written yet.
support::Status stoppedDuringSetup(const char *phase);
/// --resume's refusal of settings changed since the checkpoint, or "".
std::string changedRunSettings(const CheckpointMeta &meta, const std::string &now, const RunOptions &opts,
                               const std::string &ckptPath);
/// The run folder created (unless it exists) and locked for the whole run.
support::Status openRunFolder(const std::string &dir, bool &created, std::unique_ptr<support::FolderLock> &lock);
/// A finished run: result.toml (read by the sweep) and the closing line.
void finishRun(const TrainConfig &c, const graph::Graph &g, const RunOptions &opts, const MetricsRow &last,
               int64_t step, int64_t total, bool stoppedEarly, double elapsed, std::ostream &out);

} // namespace mixc::train::detail

#endif
