//===- Help.cpp - per-command help out of the one usage text ---------------===//
#include "tools/mixc/Help.h"

#include <sstream>
#include <vector>

namespace mixc::cli {
namespace {
/// One entry: its first line and the deeper-indented lines after it.
struct Entry {
  std::string key; // the first word: a command or a flag
  std::string text;
};

std::vector<Entry> entriesOf(const std::string &section) {
  std::vector<Entry> out;
  std::istringstream in(section);
  for (std::string line; std::getline(in, line);) {
    const bool starts = line.size() > 2 && line.compare(0, 2, "  ") == 0 && line[2] != ' ';
    if (starts) {
      size_t end = line.find(' ', 2);
      out.push_back({line.substr(2, end == std::string::npos ? std::string::npos : end - 2), line + "\n"});
    } else if (!out.empty() && line.size() > 2 && line.compare(0, 3, "   ") == 0) {
      out.back().text += line + "\n";
    }
  }
  return out;
}
} // namespace

std::string commandHelp(const std::string &usage, const std::string &command, const std::set<std::string> &flags) {
  const size_t commands = usage.find("\ncommands:\n"), options = usage.find("\noptions:\n");
  if (commands == std::string::npos || options == std::string::npos)
    return "";
  std::string entry;
  for (const Entry &e : entriesOf(usage.substr(commands, options - commands)))
    if (e.key == command)
      entry = e.text;
  if (entry.empty())
    return "";
  // The synopsis is the entry's first line up to the gap before its text.
  std::string first = entry.substr(2, entry.find('\n') - 2);
  size_t gap = first.find("  ");
  std::string synopsis = gap == std::string::npos ? first : first.substr(0, gap);
  std::ostringstream out;
  out << "usage: mixc " << synopsis << (flags.empty() ? "" : " [options]") << "\n\n" << entry;
  if (!flags.empty()) {
    out << "\noptions:\n";
    for (const Entry &e : entriesOf(usage.substr(options)))
      if (flags.count(e.key))
        out << e.text;
  }
  return out.str();
}

} // namespace mixc::cli
