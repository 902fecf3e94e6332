//===- Config.h - training run configuration --------------------*- C++ -*-===//
#ifndef MIXC_RUNTIME_TRAIN_CONFIG_H
#define MIXC_RUNTIME_TRAIN_CONFIG_H

#include "runtime/tasks/Task.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mixc::train {

/// Everything `mixc train` needs (protocol §4 defaults). Plain C++.
struct TrainConfig {
  // [model]
  std::string modelFile;  // resolved path of the .mix file
  std::string modelName;  // empty: the file's last model
  std::vector<std::pair<std::string, std::string>> modelConfig; // [model.config]
  std::string scanForm = "sequential"; // "chunked": linear scans chunkwise (docs/chunked-form.md)
  int64_t scanChunk = 64;              // steps per chunk of the chunked form
  // [task]
  tasks::TaskConfig task;
  std::string cacheDir;   // empty: no cache
  // [train]
  int64_t epochs = 16;
  int64_t batchSize = 32;
  double lr = 1e-3;
  double warmup = 0.1;            // fraction of all steps
  std::string schedule = "cosine"; // or "linear" decay after warm-up
  uint64_t seed = 42;
  int64_t evalEvery = 200;
  int64_t logEvery = 0; // steps a loss.csv row averages (0: eval_every / 10, at least 1)
  int64_t lossWindow() const { return logEvery > 0 ? logEvery : std::max<int64_t>(1, evalEvery / 10); }
  int64_t evalSize = 320;
  int64_t evalBatch = 64;
  int64_t checkpointEvery = 1000;
  int64_t maxSteps = 0;           // 0: epochs × steps per epoch
  int64_t threads = 0;            // intra-op threads; 0: one
  double earlyStopAcc = 0;        // stop once eval accuracy >= this (0: never), as zoology
  // [output]
  std::string outDir = "runs/run";

  std::string text; // the TOML the run was configured with
};

/// Parses TOML text. Unknown sections/keys and wrong types are errors of
/// the form `file:line:col: error: ...` (with the valid keys named); returns
/// false and sets `error`. Relative paths are resolved against `baseDir`,
/// then `projectRoot`. `settings` ("section.key=value", mixc's --set) are
/// applied over the text first and checked as if written there; an error in
/// one names it ("--set train.lr=x: error: ...").
bool parseConfig(const std::string &text, const std::string &path, const std::string &baseDir,
                 const std::string &projectRoot, TrainConfig &config, std::string &error,
                 const std::vector<std::string> &settings = {});

/// "" or the error for the first key that `settings` ("section.key=value")
/// set twice: a repeated key is refused, as a repeated -c is (the last one
/// used to win silently).
std::string repeatedSetting(const std::vector<std::string> &settings);

/// The settings a run's outcome depends on (task and training, not the
/// model: the graph is compared on its own), as "key = value" lines in a
/// fixed order. Checkpoints store them, so --resume can refuse a change.
std::string runSettings(const TrainConfig &config);

/// The keys whose values differ between two runSettings texts.
std::vector<std::string> changedSettings(const std::string &before, const std::string &after);

/// Keys --resume may change when --override names them: they decide when
/// the run evaluates, checkpoints or ends, not what it trains on.
bool overridableOnResume(const std::string &key);

/// Keys in which the runs of a pack (`mixc train A.toml B.toml ...`, `mixc
/// sweep --pack`) may differ: each replica has its own learning rate,
/// schedule, init seed and early stop; everything else is shared.
const std::set<std::string> &packableSettings();

/// The built-in default run: a small Based on a reduced AR (the main job).
std::string defaultConfigText();

} // namespace mixc::train

#endif
