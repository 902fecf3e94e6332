//===- Slurm.cpp - a sweep's cells as a SLURM job array ---------------------===//
#include "experiments/Slurm.h"
#include "support/Process.h"

#include <sstream>

namespace mixc::experiments {
namespace {
/// `s` quoted for bash (single quotes; a quote inside closes, escapes, reopens).
std::string shellQuote(const std::string &s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
} // namespace

std::string sbatchValueProblem(const std::string &value) {
  for (unsigned char c : value) {
    if (c < 0x20 || c == 0x7f)
      return c == '\n' || c == '\r' ? "it holds a line break" : "it holds a control character";
    if (c == '"')
      return "it holds a double quote";
  }
  return "";
}

std::string slurmScript(const SlurmJob &job) {
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# mixc sweep " << job.name << ": " << job.cells.size()
    << " array tasks (written by mixc sweep --engine=slurm).\n"
    << "# Array task i runs cells[i] (a cell, or \"a,b,c\": those cells trained as one pack):\n"
    << "# the training, the interventions, then the rows in the\n"
    << "# sweep's results.csv and attrib.csv. Resubmitting (mixc sweep --engine=slurm again)\n"
    << "# runs only the cells that have not finished; a cancelled one resumes from its checkpoint.\n"
    << "#SBATCH --job-name=\"mixc-" << job.name << "\"\n" // quoted: a name may hold blanks
    << "#SBATCH --array=0-" << (job.cells.empty() ? 0 : job.cells.size() - 1) << "\n"
    << "#SBATCH --output=\"" << job.logDir << "/%A_%a.log\"\n"; // quoted: a path may hold blanks
  for (const auto &[key, value] : job.settings)
    s << "#SBATCH --" << key << "=\"" << value << "\"\n";
  for (const std::string &line : job.extra)
    s << "#SBATCH " << line << "\n";
  s << "cells=(\n";
  for (const std::string &c : job.cells)
    s << "  " << shellQuote(c) << "\n";
  s << ")\n";
  s << "cd " << shellQuote(job.workDir) << " || exit 1\n";
  s << "exec";
  for (const std::string &a : job.command)
    s << " " << shellQuote(a);
  s << " --cell \"${cells[$SLURM_ARRAY_TASK_ID]}\"\n";
  return s.str();
}

support::Status slurmAvailable() {
  if (support::findProgram("sbatch").empty())
    return support::Status::failed("sbatch is not on PATH: --engine=slurm needs SLURM's client commands "
                                   "(Debian: apt-get install slurm-client) and a cluster to submit to");
  return support::Status::ok();
}

support::Status submitSlurm(const std::string &script, std::string &jobId) {
  if (support::Status st = slurmAvailable(); !st.isOk())
    return st;
  const std::string sbatch = support::findProgram("sbatch");
  std::string out, err;
  const int code = support::runCapture({sbatch, "--parsable", script}, out, err);
  if (code != 0) {
    std::string why = err.empty() ? out : err;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' '))
      why.pop_back();
    return support::Status::failed("sbatch " + script + " failed (exit " + std::to_string(code) + "): " + why);
  }
  jobId = out.substr(0, out.find_first_of(";\n")); // "<id>" or "<id>;<cluster>"
  if (jobId.empty())
    return support::Status::failed("sbatch printed no job id for " + script);
  return support::Status::ok();
}

std::vector<std::string> cellsOfScript(const std::string &text) {
  std::vector<std::string> cells;
  std::istringstream in(text);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line == "cells=(") {
      inside = true;
      continue;
    }
    if (inside && line == ")")
      break;
    if (inside) { // "  'name'" (names hold no quotes: letters, digits, . - _)
      size_t a = line.find('\''), b = line.rfind('\'');
      if (a != std::string::npos && b > a)
        cells.push_back(line.substr(a + 1, b - a - 1));
    }
  }
  return cells;
}

std::map<std::string, std::string> slurmQueue(const std::vector<std::string> &jobIds, std::string &note) {
  std::map<std::string, std::string> state;
  if (jobIds.empty())
    return state;
  std::string list;
  for (const std::string &id : jobIds)
    list += (list.empty() ? "" : ",") + id;
  const std::string squeue = support::findProgram("squeue");
  if (squeue.empty()) {
    note = "squeue is not on PATH: queued and running SLURM tasks are not shown";
    return state;
  }
  std::string out, err;
  // -r: one line per array task; a job squeue no longer knows is an error we
  // read as "not queued" (its tasks finished, failed or were cancelled).
  const int code = support::runCapture({squeue, "-h", "-r", "-j", list, "-o", "%i|%T"}, out, err);
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (size_t bar = line.find('|'); bar != std::string::npos)
      state[line.substr(0, bar)] = line.substr(bar + 1);
  if (code != 0 && state.empty() && err.find("Invalid job id") == std::string::npos)
    note = "squeue failed (exit " + std::to_string(code) + "): " + err.substr(0, err.find('\n'));
  return state;
}

} // namespace mixc::experiments
