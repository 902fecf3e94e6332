//===- Help.h - per-command help out of the one usage text ------*- C++ -*-===//
//
// `mixc --help` prints the whole usage text; `mixc CMD --help` only CMD's
// entry and the options CMD takes, cut out of that same text, so a
// command's help never drifts from the full one.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_TOOLS_MIXC_HELP_H
#define MIXC_TOOLS_MIXC_HELP_H

#include <set>
#include <string>

namespace mixc::cli {

/// CMD's help from `usage` (a "commands:" section of entries indented by
/// two spaces, continued by deeper lines, then an "options:" section of the
/// same shape): "usage: mixc CMD ...", its entry, and the entries of the
/// options in `flags`. Empty when `usage` has no entry for `command`.
std::string commandHelp(const std::string &usage, const std::string &command, const std::set<std::string> &flags);

} // namespace mixc::cli

#endif
