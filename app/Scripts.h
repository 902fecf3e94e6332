//===- Scripts.h - intervention scripts on a trained run ---------*- C++ -*-===//
//
// What `mixc intervene`, `attribute` and `align` and the Python module's
// intervene() share: opening a run with a script applied (the run's
// checkpoint, its graph rewritten, the cells). Reading the script: ScriptFiles.h.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_APP_SCRIPTS_H
#define MIXC_APP_SCRIPTS_H

#include "app/Compile.h"
#include "app/ScriptFiles.h"
#include "runtime/analysis/Intervene.h"

#include <set>
#include <string>
#include <vector>

namespace mixc::app {

/// A run's checkpoint and graph with a script applied, and the cells.
struct ScriptRun {
  std::string checkpoint;
  std::string runDir;
  mix::CompileResult rewritten;
  analysis::InterveneSpec spec;
};

/// Opens `run` (a run folder or checkpoint) with the script at `scriptPath`
/// applied, or (`scriptPath` empty) everyPoint's, or with `edges`
/// everyEdge's.
support::Status openScriptRun(const std::string &run, const std::string &scriptPath, ScriptRun &out,
                              std::ostream &diagnostics, bool edges = false);

/// A comma-separated list of names or patterns (--save), resolved against `g`.
support::Status resolveSaveList(const std::string &list, const graph::Graph &g, std::set<std::string> &out);

} // namespace mixc::app

#endif
