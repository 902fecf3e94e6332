//===- ScriptFiles.h - intervention scripts read and named -------*- C++ -*-===//
//
// Reading a .rw script once (its parse and digest), the script of every
// intervention point, and the comma lists of the command line: what needs
// no LibTorch, so that the compiler's mixc (tools/mixc) has it without
// loading the runtime. Opening a trained run with a script: Scripts.h.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_APP_SCRIPTFILES_H
#define MIXC_APP_SCRIPTFILES_H

#include "app/Compile.h"

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

/// `patch SENDER -> RECEIVER at ROLE` for every edge `mixc names --edges`
/// lists whose sender everyPoint would patch or is a built-in recurrence's
/// state (its edges into `next` and `output`), at key, value, divider and
/// query; coordinates edge × position: `attribute --edges` (EAP).
dsl::RwScript everyEdge(const graph::Graph &g);

/// "a,b,,c" -> {"a", "b", "", "c"}; "" -> {""}: every piece, empty ones too.
std::vector<std::string> splitCommas(const std::string &list);

} // namespace mixc::app

#endif
