//===- Sweep.h - `mixc sweep`: a grid of training runs ----------*- C++ -*-===//
//
// A sweep file names a base training config, a grid of overrides (config
// paths such as "model.config.d" or "train.lr", each with a list of values)
// and intervention scripts to run on every trained cell. `mixc sweep` runs
// the cells as child processes (`mixc train`, then `mixc intervene`), several
// at once, and keeps a results table that makes it resumable: a finished
// cell is never re-run, an interrupted one continues from its checkpoint.
//
//   [sweep]   name, title, description, base = "config.toml", out = "dir", jobs
//   [grid]    "path" = [values…] (an axis) or a single value (fixed)
//   [scale.NAME]   the same, replacing [grid] entries under --scale NAME
//   [interventions] scripts = ["x.rw", …], size = 320
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_EXPERIMENTS_SWEEP_H
#define MIXC_RUNTIME_EXPERIMENTS_SWEEP_H

#include "support/Status.h"

#include <cstdint>
#include <string>

namespace mixc::experiments {

struct SweepOptions {
  std::string file;        // the sweep file
  std::string scale;       // empty: the [grid] as written
  std::string outDir;      // empty: [sweep] out
  int64_t jobs = 0;        // 0: [sweep] jobs, else the number of cores
  std::string backend = "auto"; // passed to every cell's `mixc train --backend`
  bool dryRun = false;     // list the cells, their configs and the estimated CPU time
  bool retryFailed = false;
  std::string self;        // the mixc executable the cells run
  std::string projectRoot; // where stdlib/ lives
};

/// Runs (or continues) the sweep, writing a line per finished cell to
/// `io.out`. Fails on an error or a failed cell; interrupted by a signal.
support::Status runSweep(const SweepOptions &options, const support::Console &io);

} // namespace mixc::experiments

#endif
