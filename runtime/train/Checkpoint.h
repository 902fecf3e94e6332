//===- Checkpoint.h - atomic, self-describing checkpoints ------*- C++ -*-===//
#ifndef MIXC_RUNTIME_TRAIN_CHECKPOINT_H
#define MIXC_RUNTIME_TRAIN_CHECKPOINT_H

#include "runtime/core/Model.h"

#include <torch/optim/adamw.h>

#include <string>

namespace mixc::train {

/// A checkpoint holds the weights, the optimiser state, the step, and the
/// config and graph it belongs to, so `mixc eval` needs nothing else.
struct CheckpointMeta {
  int64_t step = 0;
  std::string configText;
  std::string graphJson;
};

/// Writes to `path.tmp`, fsyncs, renames over `path`: a crash leaves the
/// previous checkpoint intact.
void saveCheckpoint(const std::string &path, const rt::Model &model,
                    const torch::optim::AdamW *optimizer, const CheckpointMeta &meta);

/// Reads only the metadata (config, graph, step).
bool readCheckpointMeta(const std::string &path, CheckpointMeta &meta, std::string &error);

/// Restores weights (and the optimiser, when given) into `model`; checks
/// names and shapes, and that no weight is NaN or infinite.
bool loadCheckpoint(const std::string &path, rt::Model &model, torch::optim::AdamW *optimizer,
                    CheckpointMeta &meta, std::string &error);

} // namespace mixc::train

#endif
