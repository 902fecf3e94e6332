//===- StepTiming.h - what a cell costs, as a declared file -----*- C++ -*-===//
//
// `mixc train --time-steps N` times a few training steps and one
// evaluation and leaves the result in the run folder as step-timing.json;
// `mixc sweep --dry-run`, which starts that command once per cell shape,
// reads it there. A versioned JSON file, so the two never parse each
// other's printed text:
//   {"format": "mixc-step-timing", "version": 1, "total_steps": 50016,
//    "step_s": 0.0123, "eval_s": 4.5, "backend": "generated"}
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_SUPPORT_STEPTIMING_H
#define MIXC_SUPPORT_STEPTIMING_H

#include <cstdint>
#include <string>

namespace mixc::support {

struct StepTiming {
  int64_t totalSteps = 0;  // the run's training steps
  double stepSec = 0;      // seconds a training step (forward, backward, AdamW)
  double evalSec = 0;      // seconds of evaluation over the whole run
  std::string backend;     // libtorch or generated: the kernels it was timed on
};

inline constexpr const char *kStepTimingFile = "step-timing.json";

/// Writes `t` to DIR/step-timing.json (atomically); false with `error`.
bool writeStepTiming(const std::string &dir, const StepTiming &t, std::string &error);
/// Reads DIR/step-timing.json; false with `error` when it is missing, of
/// another format or version, or damaged.
bool readStepTiming(const std::string &dir, StepTiming &t, std::string &error);

} // namespace mixc::support

#endif
