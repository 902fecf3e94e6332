//===- Models.cpp - a training config and the model it names ----------------===//
#include "app/Models.h"
#include "app/Kernels.h"
#include "app/Scripts.h"
#include "runtime/train/Trainer.h"
#include "abi/Bundle.h"
#include "support/TextFile.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

namespace mixc::app {
namespace {
/// "" when the bundle's parameters agree with every one the config sets, else why not.
std::string bundleConfigClash(const graph::Graph &bundled, const train::TrainConfig &config) {
  for (const auto &[key, value] : config.modelConfig) {
    auto it = std::find_if(bundled.config.begin(), bundled.config.end(),
                           [&, &key = key](const auto &kv) { return kv.first == key; });
    if (it == bundled.config.end() || it->second != value)
      return "model.file " + config.modelFile + " is a bundle compiled with " +
             (it == bundled.config.end() ? "no parameter " + key : key + " = " + it->second) +
             ", but the config sets " + key + " = " + value + ": compile a bundle with it (mixc compile X.mix -c " +
             key + "=" + value + " --emit=bundle -o DIR)";
  }
  return "";
}
} // namespace

support::Status loadTrainConfig(const std::string &path, const std::vector<std::string> &settings,
                                const std::vector<dsl::ConfigEntry> &modelConfig, train::TrainConfig &config,
                                std::ostream &diagnostics) {
  std::string text, error, shownPath = "<built-in default config>", baseDir = ".";
  if (path.empty()) {
    text = train::defaultConfigText();
  } else {
    shownPath = path;
    if (!support::readTextFile(path, text, error, 16u << 20))
      return support::Status::failed("config: " + error);
    baseDir = std::filesystem::path(path).parent_path().string();
  }
  const bool parsed = train::parseConfig(text, shownPath, baseDir, MIXC_SOURCE_ROOT, config, error, settings);
  for (const dsl::ConfigEntry &entry : modelConfig) {
    auto it = std::find_if(config.modelConfig.begin(), config.modelConfig.end(),
                           [&](const auto &kv) { return kv.first == entry.key; });
    if (it == config.modelConfig.end())
      config.modelConfig.push_back({entry.key, entry.value});
    else
      it->second = entry.value;
  }
  if (!parsed) {
    diagnostics << error << "\n"; // located by the parser
    return support::Status::failed("");
  }
  return support::Status::ok();
}

support::Status modelForConfig(const train::TrainConfig &config, const std::string &rewrite,
                               const std::vector<std::string> &includeDirs, TrainModel &out,
                               std::ostream &diagnostics) {
  out.fromBundle = graph::isBundle(config.modelFile);
  if (!out.fromBundle) {
    ModelRequest request{config.modelFile, config.modelName, {}, includeDirs, rewrite};
    for (const auto &[k, v] : config.modelConfig)
      request.config.push_back({k, v});
    return compiler().compile(request, out.compiled, diagnostics);
  }
  if (!rewrite.empty()) // compiled already: no compiler needed, none used
    return support::Status::failed("--rewrite: model.file " + config.modelFile +
                                   " is a compiled bundle; compile the model with the script instead");
  graph::Bundle bundle;
  std::string error;
  if (!graph::readBundle(config.modelFile, bundle, error))
    return support::Status::failed("model.file: " + error);
  if (std::string why = bundleConfigClash(bundle.graph, config); !why.empty())
    return support::Status::failed(why);
  out.compiled.graph = std::move(bundle.graph);
  out.compiled.cpuKernels = std::move(bundle.cpuKernels);
  out.compiled.cudaKernels = std::move(bundle.cudaKernels);
  return support::Status::ok();
}

support::Status timeTrainingSteps(const std::string &configPath, const std::vector<std::string> &settings,
                                  int64_t steps, const std::string &backend, train::TrainConfig &config,
                                  support::StepTiming &timing, std::ostream &diagnostics) {
  if (support::Status s = loadTrainConfig(configPath, settings, {}, config, diagnostics); !s.isOk())
    return s;
  if (std::string error; !train::bindTaskToModel(config, error))
    return support::Status::failed(error);
  TrainModel model;
  if (support::Status s = modelForConfig(config, "", {}, model, diagnostics); !s.isOk())
    return s;
  train::RunOptions run;
  run.quiet = true;
  if (support::Status s = chooseKernels({backend, "cpu", true}, model.compiled, run.kernels, diagnostics); !s.isOk())
    return s;
  std::ostringstream log;
  return train::timeSteps(config, model.compiled.graph, run, steps, timing, log);
}

} // namespace mixc::app
