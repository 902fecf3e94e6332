//===- Models.h - a training config and the model it names --------*- C++ -*-===//
#ifndef MIXC_APP_MODELS_H
#define MIXC_APP_MODELS_H

#include "app/Compile.h"
#include "runtime/train/Config.h"
#include "support/StepTiming.h"

#include <ostream>
#include <string>
#include <vector>

namespace mixc::app {

/// The training config at `path` ("": the built-in default) with `settings`
/// (--set section.key=value) applied and `modelConfig` overriding its
/// [model.config] (one config, several widths). Parse errors, located, go
/// to `diagnostics`.
support::Status loadTrainConfig(const std::string &path, const std::vector<std::string> &settings,
                                const std::vector<dsl::ConfigEntry> &modelConfig, train::TrainConfig &config,
                                std::ostream &diagnostics);

/// The compiled model a training config names.
struct TrainModel {
  mix::CompileResult compiled;
  bool fromBundle = false; // model.file is a bundle: compiled already, its rewrites go with the run
};

/// model.file compiled with the config's model and parameters (and the
/// script `rewrite`, if any), or read from a bundle, whose parameters the
/// config may restate but not change.
support::Status modelForConfig(const train::TrainConfig &config, const std::string &rewrite,
                               const std::vector<std::string> &includeDirs, TrainModel &out,
                               std::ostream &diagnostics);

/// Seconds per training step of the config at `configPath` with `settings`
/// (`mixc train --time-steps`: the library's own step on `backend`'s
/// kernels), into `timing`; `config` is the config it read.
support::Status timeTrainingSteps(const std::string &configPath, const std::vector<std::string> &settings,
                                  int64_t steps, const std::string &backend, train::TrainConfig &config,
                                  support::StepTiming &timing, std::ostream &diagnostics);

} // namespace mixc::app

#endif
