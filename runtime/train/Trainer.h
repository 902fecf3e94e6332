//===- Trainer.h - `mixc train` and `mixc eval` -----------------*- C++ -*-===//
//
// The runtime's entry points for the driver: plain C++ in the signature so
// mixc.cpp needs neither torch nor MLIR headers.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_TRAIN_TRAINER_H
#define MIXC_RUNTIME_TRAIN_TRAINER_H

#include "runtime/graph/Graph.h"
#include "runtime/train/Config.h"

#include <ostream>
#include <set>
#include <string>

namespace mixc::train {

struct RunOptions {
  bool resume = false; // continue from <outDir>/checkpoint.pt
  bool quiet = false;  // no progress bar
  int64_t stopAfter = 0; // act as if interrupted after this many steps (tests)
  std::string kernelLibrary; // --backend=generated: the built kernels (runtime/kernels)
  std::set<std::string> overrides; // --override: settings --resume may change (overridableOnResume)
};

/// Sets the model's `vocab` parameter to the task's vocabulary size (an
/// explicit, different value is an error).
bool bindTaskToModel(TrainConfig &config, std::string &error);

/// Trains, evaluating and checkpointing on the way; writes the run folder
/// (config.toml, graph.json, checkpoint.pt, metrics.csv, curves.svg).
/// Returns the process exit status.
int train(const TrainConfig &config, const graph::Graph &graph, const RunOptions &options);

/// What one cell of a sweep costs, from a few timed steps on the task's
/// own data: the run's step count, seconds per training step (forward,
/// backward, AdamW), and seconds of evaluation over the whole run.
struct StepTiming {
  int64_t totalSteps = 0;
  double stepSec = 0, evalSec = 0;
};

/// Times `steps` training steps (after one warm-up step) and one evaluation;
/// writes nothing to the run folder. False (and `error`) if the model or the
/// kernels cannot be set up.
bool timeSteps(const TrainConfig &config, const graph::Graph &graph, const RunOptions &options,
               int64_t steps, StepTiming &out, std::string &error);

/// Accuracy of a checkpoint (or run folder) on the first `evalSize` test
/// documents (0: as configured). Returns the exit status.
int evaluate(const std::string &checkpointOrRun, int64_t evalSize, std::ostream &out);

} // namespace mixc::train

#endif
