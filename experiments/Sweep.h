//===- Sweep.h - `mixc sweep`: a grid of training runs ----------*- C++ -*-===//
//
// A sweep file names a base training config, a grid of overrides (config
// paths such as "model.config.d" or "train.lr", each with a list of values)
// and intervention scripts to run on every trained cell. `mixc sweep` runs
// the cells as child processes (`mixc train`, then `mixc intervene`), several
// at once, and keeps a results table that makes it resumable: a finished
// cell is never re-run, an interrupted one continues from its checkpoint.
//
//   [sweep]   name, title, description, base = "config.toml", out = "dir", jobs,
//             pack (cells trained as one pack, experiments/Packs.h),
//             report_with = ["other sweep", …] (`mixc report` draws their
//             rows in this sweep's accuracy plot too, e.g. other widths)
//   [grid]    "path" = [values…] (an axis) or a single value (fixed)
//   [scale.NAME]   the same, replacing [grid] entries under --scale NAME
//   [interventions] scripts = ["x.rw", …], size = 320
//   [slurm]   partition, time, cpus_per_task, mem, gres, account, qos, extra = ["…"]
//             (#SBATCH settings for --engine=slurm)
//
// Every process that finishes a cell (this one, or a `--cell` task on
// another machine) adds its rows to OUT/results.csv and OUT/attrib.csv under
// an flock on OUT/.tables.lock, and rewrites them by an atomic rename: rows
// of tasks that finish at once are all kept, and a reader (`mixc report`)
// sees whole tables at any moment.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_EXPERIMENTS_SWEEP_H
#define MIXC_RUNTIME_EXPERIMENTS_SWEEP_H

#include "support/Status.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mixc::experiments {

struct SweepOptions {
  std::string file;        // the sweep file
  std::string scale;       // empty: the [grid] as written
  std::string outDir;      // empty: [sweep] out
  int64_t jobs = 0;        // 0: [sweep] jobs, else the number of cores
  int64_t pack = 0;        // cells trained as one pack (experiments/Packs.h); 0: [sweep] pack, else 1
  std::string backend = "auto"; // passed to every cell's `mixc train --backend`
  /// --device: the device of each of the `jobs` slots, in turn (a cell's
  /// `mixc train --device` is its slot's): {"cuda:0", "cuda:1"} with 2 jobs
  /// a GPU runs 4 cells at once, 2 on each. Empty: the CPU. Interventions
  /// run on the CPU.
  std::vector<std::string> devices;
  bool dryRun = false;     // list the cells, their configs and the estimated CPU time
  bool retryFailed = false;
  std::string engine = "local"; // local: child processes here; slurm: a job array (experiments/Slurm.h)
  std::string cell;        // run this one cell only (what a SLURM array task does); "a,b,c": one pack
  bool status = false;     // print each cell's state (finished, running, queued, failed, to run)
  std::vector<std::pair<std::string, std::string>> slurm; // --slurm key=value, over the file's [slurm]
  std::vector<std::string> sets; // --set KEY=VALUE: fixed in every cell, over the file's [grid] and preset
  std::string self;        // the mixc executable the cells run
  std::string projectRoot; // where stdlib/ lives
};

/// Runs (or continues) the sweep, writing a line per finished cell to
/// `io.out`. Fails on an error or a failed cell; interrupted by a signal.
support::Status runSweep(const SweepOptions &options, const support::Console &io);

} // namespace mixc::experiments

#endif
