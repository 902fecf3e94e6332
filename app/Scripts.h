//===- Scripts.h - intervention scripts on a trained run ---------*- C++ -*-===//
//
// What `mixc intervene`, `attribute` and `align` and the Python module's
// intervene() share: reading a .rw script once, and opening a run with it
// applied (the run's checkpoint, its graph rewritten, the cells).
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_APP_SCRIPTS_H
#define MIXC_APP_SCRIPTS_H

#include "app/Compile.h"
#include "runtime/analysis/Intervene.h"

#include <set>
#include <string>
#include <vector>

namespace mixc::app {

/// What names a compiled intervention script in a bundle: the digest of its
/// text and of the vectors its add(FILE) actions read (the files' contents
/// are part of the rewritten graph).
std::string scriptDigest(const std::string &text, const dsl::RwScript &script);

/// Reads and parses the script at `path` (parse errors, located, in `diagnostics`).
support::Status loadScript(const std::string &path, LoadedScript &out, std::ostream &diagnostics);

/// `patch NODE at ROLE` for every named node that takes interventions (not
/// the compiler's own `_` nodes, not the LM head's logits, which are the
/// readout itself) at key, value, divider and query; coordinates node ×
/// position, in graph order: attribution's script when none is given.
dsl::RwScript everyPoint(const graph::Graph &g);

/// A run's checkpoint and graph with a script applied, and the cells.
struct ScriptRun {
  std::string checkpoint;
  std::string runDir;
  mix::CompileResult rewritten;
  analysis::InterveneSpec spec;
};

/// Opens `run` (a run folder or checkpoint) with the script at `scriptPath`
/// applied, or (`scriptPath` empty) everyPoint's.
support::Status openScriptRun(const std::string &run, const std::string &scriptPath, ScriptRun &out,
                              std::ostream &diagnostics);

/// A comma-separated list of names or patterns (--save), resolved against `g`.
support::Status resolveSaveList(const std::string &list, const graph::Graph &g, std::set<std::string> &out);

/// "a,b,,c" -> {"a", "b", "", "c"}; "" -> {""}: every piece, empty ones too.
std::vector<std::string> splitCommas(const std::string &list);

} // namespace mixc::app

#endif
