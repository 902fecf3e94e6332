//===- Trainer.h - `mixc train` and `mixc eval` -----------------*- C++ -*-===//
//
// The runtime's entry points for the driver: plain C++ in the signature so
// mixc.cpp needs neither torch nor MLIR headers.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_TRAIN_TRAINER_H
#define MIXC_RUNTIME_TRAIN_TRAINER_H

#include "support/StepTiming.h"
#include "abi/Graph.h"
#include "runtime/kernels/KernelBuild.h"
#include "runtime/train/Config.h"
#include "support/Status.h"

#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace mixc::train {

struct RunOptions {
  bool resume = false; // continue from <outDir>/checkpoint.pt
  bool quiet = false;  // no progress bar
  int64_t stopAfter = 0; // act as if interrupted after this many steps (tests)
  std::shared_ptr<const kernels::Library> kernels; // --backend=generated: the built kernels, opened
  std::set<std::string> overrides; // --override: settings --resume may change (overridableOnResume)
  std::string initFrom; // --init-from: start from these weights (runtime/train/Weights.h), not the init rules
  std::string device = "cpu"; // --device: cpu, cuda or cuda:N (runtime/core/Device.h)
};

/// Sets the model's `vocab` parameter to the task's vocabulary size (an
/// explicit, different value is an error).
bool bindTaskToModel(TrainConfig &config, std::string &error);

/// Trains, evaluating and checkpointing on the way; writes the run folder
/// (config.toml, graph.json, checkpoint.pt, metrics.csv, curves.svg). The
/// final accuracy goes to `io.out`, progress and notes to `io.log`.
support::Status train(const TrainConfig &config, const graph::Graph &graph, const RunOptions &options,
                      const support::Console &io);

/// Trains the runs of `configs` as one pack (runtime/core/Replicas.h): the
/// same graph and data, each run its own learning rate, schedule, seed and
/// early stop (any other difference is refused, naming the key), each run's
/// folder written as `train` alone writes it. A run that stops early is
/// frozen while the others go on; one whose loss diverges fails alone.
/// With options.kernels, the regions the library holds run generated
/// (ReplicatedModel); the members' checkpoints are the same either way.
support::Status trainPack(const std::vector<TrainConfig> &configs, const graph::Graph &graph,
                          const RunOptions &options, const support::Console &io);

/// What one cell of a sweep costs, from a few timed steps on the task's
/// own data: the run's step count, seconds per training step (forward,
/// backward, AdamW), and seconds of evaluation over the whole run.
using StepTiming = support::StepTiming;

/// Times `steps` training steps (after one warm-up step) and one evaluation;
/// writes nothing to the run folder. Fails if the model, the kernels or the
/// data cannot be set up.
support::Status timeSteps(const TrainConfig &config, const graph::Graph &graph, const RunOptions &options,
                          int64_t steps, StepTiming &out, std::ostream &log);

/// timeSteps for the runs of `configs` trained as one pack (trainPack):
/// seconds per step of the whole pack.
support::Status timePack(const std::vector<TrainConfig> &configs, const graph::Graph &graph,
                         const RunOptions &options, int64_t steps, StepTiming &out, std::ostream &log);

/// Accuracy of a checkpoint (or run folder) on the first `evalSize` test
/// documents (0: as configured), written to `out`. `settings` ("KEY=VALUE",
/// as train's --set) change the evaluation's task (task.*, e.g. longer
/// documents) or train.eval_size / eval_batch; the model and its training
/// are the checkpoint's, so any other key is refused.
support::Status evaluate(const std::string &checkpointOrRun, int64_t evalSize, std::ostream &out,
                         const std::string &device = "cpu", const std::vector<std::string> &settings = {});

} // namespace mixc::train

#endif
