//===- StepTiming.cpp - what a cell costs, as a declared file --------------===//
#include "support/StepTiming.h"
#include "support/AtomicWrite.h"
#include "support/TextFile.h"

#include <nlohmann/json.hpp>

namespace mixc::support {
namespace {
constexpr const char *kFormat = "mixc-step-timing";
constexpr int kVersion = 1;
} // namespace

bool writeStepTiming(const std::string &dir, const StepTiming &t, std::string &error) {
  nlohmann::json j = {{"format", kFormat},     {"version", kVersion},  {"total_steps", t.totalSteps},
                      {"step_s", t.stepSec},   {"eval_s", t.evalSec},  {"backend", t.backend}};
  return writeFileAtomically(dir + "/" + kStepTimingFile, j.dump(1) + "\n", error);
}

bool readStepTiming(const std::string &dir, StepTiming &t, std::string &error) {
  const std::string path = dir + "/" + kStepTimingFile;
  std::string text;
  if (!readTextFile(path, text, error, 1u << 16))
    return false;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("format", "") != kFormat || j.value("version", 0) != kVersion) {
    error = path + " is not a version-" + std::to_string(kVersion) + " " + kFormat + " file";
    return false;
  }
  const auto &steps = j["total_steps"], &step = j["step_s"], &eval = j["eval_s"], &backend = j["backend"];
  if (!steps.is_number_integer() || !step.is_number() || !eval.is_number() || !backend.is_string()) {
    error = path + " lacks total_steps, step_s, eval_s or backend";
    return false;
  }
  t = {steps.get<int64_t>(), step.get<double>(), eval.get<double>(), backend.get<std::string>()};
  return true;
}

} // namespace mixc::support
