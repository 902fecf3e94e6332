//===- Slurm.h - a sweep's cells as a SLURM job array -----------*- C++ -*-===//
//
// `mixc sweep FILE --engine=slurm` submits the unfinished cells as one job
// array: OUT/slurm/submit-<n>.sh runs, in array task i, `mixc sweep FILE
// --cell <cell i>`, which trains that cell, runs its interventions and adds
// its rows to the sweep's tables (under a lock: tasks finish at once on a
// shared filesystem). Each submission is listed in OUT/slurm/jobs.txt
// ("<job id> <script>"), which `--status` reads back with squeue.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_EXPERIMENTS_SLURM_H
#define MIXC_EXPERIMENTS_SLURM_H

#include "support/Status.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mixc::experiments {

/// What an array task runs and the #SBATCH settings.
/// Why `value` cannot be written into an #SBATCH line, or "": a line break
/// or another control character would end the line (the rest becoming a
/// shell command of the batch script), and a double quote would end the
/// quoted value. Every value the script takes is checked here first.
std::string sbatchValueProblem(const std::string &value);

struct SlurmJob {
  std::string name;                                     // the sweep's: the job is mixc-<name>
  std::vector<std::string> cells;                       // array task i runs cells[i] ("a,b,c": a pack)
  std::vector<std::string> command;                     // the `mixc sweep ... --cell` argv, before the cell
  std::string workDir;                                  // the tasks start here
  std::string logDir;                                   // <job>_<task>.log files
  std::vector<std::pair<std::string, std::string>> settings; // "partition" = "debug", "cpus-per-task" = "1", ...
  std::vector<std::string> extra;                       // more #SBATCH lines, as written
};

/// The batch script of `job`.
std::string slurmScript(const SlurmJob &job);

/// ok when sbatch is on PATH, else why a submission cannot be made.
support::Status slurmAvailable();

/// Submits `script` with `sbatch --parsable`; the job id, or why not.
support::Status submitSlurm(const std::string &script, std::string &jobId);

/// The cells an earlier submission's script ran, by array task index.
std::vector<std::string> cellsOfScript(const std::string &scriptText);

/// The queue's state ("PENDING", "RUNNING", ...) of each array task of the
/// jobs in `jobIds` still known to squeue, by "<job>_<task>"; empty when
/// squeue is missing or knows none of them (`note` then says why).
std::map<std::string, std::string> slurmQueue(const std::vector<std::string> &jobIds, std::string &note);

} // namespace mixc::experiments

#endif
