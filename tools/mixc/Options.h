//===- Options.h - the mixc command line ------------------------*- C++ -*-===//
//
// The driver's options, the commands that take each, the usage text and
// the parser. Only the front end reads these: the application layer
// (app/) takes plain arguments.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_TOOLS_MIXC_OPTIONS_H
#define MIXC_TOOLS_MIXC_OPTIONS_H

#include "dsl/ConfigEntry.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mixc::cli {

struct Options {
  std::string command;
  std::vector<std::string> files;
  std::string model;
  std::vector<mixc::dsl::ConfigEntry> config;
  std::vector<std::string> includeDirs;
  std::string emit = "graph";
  std::string output;
  bool resume = false, quiet = false;
  bool check = false;   // attribute --check: the exact interventions of every cell too
  bool edges = false;   // names --edges: the edges a script can name (SENDER -> RECEIVER)
  int64_t checkTop = 0; // attribute --check-top N: of the N largest estimates and N random others
  int64_t steps = 0, batch = 0, trainDocs = 0; // align (0: its defaults)
  double lr = 0;
  std::set<std::string> overrides; // --override: settings --resume may change
  int64_t stopAfter = 0, maxSteps = 0, timeSteps = 0;
  std::string outDir;
  int64_t size = 0;
  std::string rewrite;               // the first --rewrite
  std::vector<std::string> rewrites; // every --rewrite (compile --emit=bundle takes several)
  std::string backend; // empty: libtorch, or auto for sweep
  std::string device = "cpu";
  std::string scale, title;
  std::string compare; // report --compare FILE
  std::string initFrom;             // train --init-from
  std::vector<std::string> sets;    // train --set section.key=value (repeatable)
  std::string save;                 // intervene --save: node names or patterns, comma-separated
  std::string format = "safetensors"; // export --format
  int64_t jobs = 0, jobsPerGpu = 0, pack = 0; // sweep
  bool dryRun = false, retryFailed = false;
  std::string engine = "local", cell; // sweep
  bool status = false;
  std::vector<std::pair<std::string, std::string>> slurm; // sweep --slurm key=value
};

/// `mixc --help`: every command and option.
extern const char *const kUsage;

/// The options each command reads: any other is refused, never silently
/// ignored (`mixc train x.toml --scale small` would otherwise run at full
/// scale). Commands not listed are reported by main.
const std::map<std::string, std::set<std::string>> &optionsOf();
/// " (did you mean 'train'?)" for an unknown command, or "".
std::string commandHint(const std::string &command);

/// The command line into `o`; false with `problem` set on a usage error.
bool parseArgs(int argc, char **argv, Options &o, std::string &problem);

} // namespace mixc::cli

#endif
