//===- OutputGuard.h - an output never replaces an input or mixc's own files ---===//
//
// Every command that writes where the user says (-o FILE, --out DIR,
// --emit=bundle -o DIR) asks here first. Writing a file is refused when it
// would replace one of the command's inputs (the same path after resolving
// `.`, `..` and symlinks, or the same file under another name) or a file mixc
// keeps in a run or sweep folder (its checkpoint, config, tables); writing a
// folder is refused when it holds files that are not mixc's.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_SUPPORT_OUTPUTGUARD_H
#define MIXC_SUPPORT_OUTPUTGUARD_H

#include <string>
#include <vector>

namespace mixc::support {

/// Why writing the file `output` would destroy something, or "" when it is
/// safe: `output` is one of `inputs` (files, or folders whose files are all
/// inputs), or it is a file mixc manages (checkpoint.pt, config.toml,
/// graph.json, metrics.csv, result.toml, cell.toml, results.csv, attrib.csv,
/// sweep-meta.toml, .lock, ...) inside a run or sweep folder.
std::string outputClash(const std::string &output, const std::vector<std::string> &inputs);

/// The file that makes `dir` one of mixc's run, sweep or bundle folders
/// (checkpoint.pt, result.toml, sweep-meta.toml, .lock, mixc-bundle), or ""
/// when it holds none.
std::string mixcFolderMark(const std::string &dir);

/// Why mixc must not write its files into the folder `dir`, or "" when it
/// may: `dir` is missing or empty, or it already holds one of `marks` (a
/// file only mixc writes there, e.g. "mixc-bundle", "checkpoint.pt").
/// `what` names the folder's use in the message ("a bundle", "a run folder").
std::string foreignFolder(const std::string &dir, const std::vector<std::string> &marks, const std::string &what);

} // namespace mixc::support

#endif
