//===- Diagnostics.cpp - located errors and notes of the front end ----------===//
#include "dsl/Diagnostics.h"
#include "support/Format.h"

#include <algorithm>

namespace mixc::dsl {

void fail(SourceLoc loc, std::string message) { throw DslError(loc, std::move(message)); }

int SourceManager::add(std::string path, std::string text) {
  files_.push_back({std::move(path), std::move(text)});
  return static_cast<int>(files_.size()) - 1;
}

std::string SourceManager::lineText(int file, int line) const {
  const std::string &t = files_[file].text;
  size_t pos = 0;
  for (int l = 1; l < line && pos != std::string::npos; ++l) {
    pos = t.find('\n', pos);
    if (pos != std::string::npos)
      ++pos;
  }
  if (pos == std::string::npos || pos > t.size())
    return "";
  size_t end = t.find('\n', pos);
  return t.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
}

void printError(std::ostream &os, const SourceManager &sm, const DslError &e) {
  if (e.loc.file < 0 || e.loc.file >= sm.size()) {
    os << "error: " << support::clipLongLines(e.what()) << "\n";
    return;
  }
  os << sm.path(e.loc.file) << ":" << e.loc.line << ":" << e.loc.col
     << ": error: " << support::clipLongLines(e.what()) << "\n";
  std::string line = sm.lineText(e.loc.file, e.loc.line);
  // A long line (generated, or one with no newlines at all) is shown as a
  // window around the column, not echoed whole.
  constexpr int kBefore = 60, kAfter = 100;
  int col = std::max(e.loc.col, 1);
  std::string prefix;
  if (col > kBefore + 1) {
    const size_t from = static_cast<size_t>(col - 1 - kBefore);
    line = line.substr(std::min(from, line.size()));
    col -= static_cast<int>(from);
    prefix = "...";
  }
  const bool cut = line.size() > static_cast<size_t>(col + kAfter);
  if (cut)
    line = line.substr(0, static_cast<size_t>(col + kAfter));
  // Keep the caret aligned: tabs stay tabs, everything else becomes a space.
  std::string caret(prefix.size(), ' ');
  for (int i = 0; i + 1 < col && i < static_cast<int>(line.size()); ++i)
    caret += line[i] == '\t' ? '\t' : ' ';
  os << prefix << line << (cut ? "..." : "") << "\n" << caret << "^\n";
}

} // namespace mixc::dsl
