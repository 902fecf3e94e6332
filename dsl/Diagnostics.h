//===- Diagnostics.h - located errors of the mixer DSL ----------*- C++ -*-===//
//
// Every front-end error is `file:line:col: error: message`, then the source
// line and a caret. Inside dsl/ errors travel as `DslError` exceptions (dsl
// is a plain C++ library built with exceptions); the public entry points
// catch them, so nothing unwinds into the MLIR code that calls them.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_DSL_DIAGNOSTICS_H
#define MIXC_DSL_DIAGNOSTICS_H

#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mixc::dsl {

struct SourceLoc {
  int file = -1; // index into SourceManager; -1 = no location (e.g. --config)
  int line = 0;  // 1-based
  int col = 0;   // 1-based
};

/// Owns the text of every loaded source file.
class SourceManager {
public:
  int add(std::string path, std::string text);
  const std::string &path(int file) const { return files_[file].path; }
  const std::string &text(int file) const { return files_[file].text; }
  /// The text of line `line` (1-based) of `file`, without its newline.
  std::string lineText(int file, int line) const;
  int size() const { return static_cast<int>(files_.size()); }

private:
  struct File {
    std::string path, text;
  };
  std::vector<File> files_;
};

class DslError : public std::runtime_error {
public:
  DslError(SourceLoc loc, std::string message)
      : std::runtime_error(message), loc(loc) {}
  SourceLoc loc;
};

/// Throws DslError; defined out of line so MLIR code (built without
/// exceptions) may include this header.
[[noreturn]] void fail(SourceLoc loc, std::string message);

/// Prints `file:line:col: error: message`, the source line and a caret.
void printError(std::ostream &os, const SourceManager &sm, const DslError &e);

} // namespace mixc::dsl

#endif
