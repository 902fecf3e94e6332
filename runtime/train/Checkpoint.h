//===- Checkpoint.h - atomic, self-describing checkpoints ------*- C++ -*-===//
#ifndef MIXC_RUNTIME_TRAIN_CHECKPOINT_H
#define MIXC_RUNTIME_TRAIN_CHECKPOINT_H

#include "runtime/core/Model.h"
#include "runtime/train/Config.h"

#include <torch/optim/adamw.h>

#include <string>

namespace mixc::train {

/// A checkpoint holds the weights, the optimiser state, the step, and the
/// config and graph it belongs to, so `mixc eval` needs nothing else.
struct CheckpointMeta {
  int64_t step = 0;
  bool stoppedEarly = false; // train.early_stop_acc was reached: the run is finished
  std::string configText;
  std::string graphJson;
  std::string settings; // runSettings(); empty in checkpoints written before it
};

/// Writes the checkpoint atomically (support/AtomicWrite.h): a crash or a
/// full disk leaves the previous checkpoint intact and no temporary; false
/// with `error` (the path and the OS's reason) when it could not. Tensors
/// are written as host tensors (the optimiser's state visits the host for
/// it, whatever device it is on), each with a digest of its values that
/// loadCheckpoint verifies.
bool saveCheckpoint(const std::string &path, const rt::Model &model, torch::optim::AdamW *optimizer,
                    const CheckpointMeta &meta, std::string &error);

/// Reads only the metadata (config, graph, step).
bool readCheckpointMeta(const std::string &path, CheckpointMeta &meta, std::string &error);

/// Restores weights (and the optimiser, when given) into `model`; checks
/// names and shapes, each weight's digest (where the checkpoint has them)
/// and that no weight is NaN or infinite.
bool loadCheckpoint(const std::string &path, rt::Model &model, torch::optim::AdamW *optimizer,
                    CheckpointMeta &meta, std::string &error);

/// `<run>/checkpoint.pt` for a run folder, else the path itself.
std::string checkpointPath(const std::string &checkpointOrRun);

/// A trained model brought back from a checkpoint or run folder.
struct Restored {
  std::string path;
  CheckpointMeta meta;
  TrainConfig config;
  std::unique_ptr<rt::Model> model;
};

/// Reads the checkpoint's config and graph (or runs `graph` instead, e.g.
/// the stored one rewritten for interventions, whose tensors must all be in
/// the checkpoint) and loads the weights; with `kernels`, the graph's fused
/// regions run generated where the library has their kernels. False, with
/// `error`, on failure.
bool restore(const std::string &checkpointOrRun, const graph::Graph *graph, Restored &out, std::string &error,
             std::shared_ptr<const kernels::Library> kernels = nullptr);

} // namespace mixc::train

#endif
