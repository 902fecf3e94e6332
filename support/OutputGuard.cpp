//===- OutputGuard.cpp - an output never replaces an input or mixc's own files -===//
#include "support/OutputGuard.h"

#include <algorithm>
#include <filesystem>

namespace mixc::support {
namespace fs = std::filesystem;

namespace {
/// The files mixc writes into a run folder (Trainer, Checkpoint, Report)
/// and a sweep folder (Sweep): replacing one loses a run or a table.
const char *const kManaged[] = {"checkpoint.pt", "config.toml", "graph.json",  "metrics.csv", "curves.svg",
                                "result.toml",   "cell.toml",   "results.csv", "attrib.csv",  "sweep-meta.toml",
                                ".lock",         "log.txt",     "mixc-bundle"};
/// A folder is mixc's run, sweep or bundle folder when it holds one of these.
const char *const kFolderMarks[] = {"checkpoint.pt", "result.toml", "sweep-meta.toml", ".lock", "mixc-bundle"};

/// The path with `.`, `..` and symlinks resolved as far as it exists.
fs::path resolved(const std::string &p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::absolute(p).lexically_normal() : r;
}

bool sameFile(const fs::path &a, const fs::path &b) {
  std::error_code ec;
  if (a == b)
    return true;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec);
}
} // namespace

std::string outputClash(const std::string &output, const std::vector<std::string> &inputs) {
  const fs::path out = resolved(output);
  const std::string name = out.filename().string();
  const bool managed = std::find(std::begin(kManaged), std::end(kManaged), name) != std::end(kManaged);
  std::error_code ec;
  for (const std::string &in : inputs) {
    if (in.empty())
      continue;
    const fs::path p = resolved(in);
    if (sameFile(out, p))
      return "the output " + output + " is the input " + in + "; writing it would destroy it (give another -o)";
    if (managed && fs::is_directory(p, ec) && sameFile(out.parent_path(), p))
      return "the output " + output + " would replace " + name + " in the input folder " + in +
             " (a file mixc keeps there; give another -o)";
  }
  if (!managed || mixcFolderMark(out.parent_path().string()).empty())
    return "";
  return "the output " + output + " would replace " + name + ", a file mixc keeps in the folder " +
         out.parent_path().string() + " (give another -o)";
}

std::string mixcFolderMark(const std::string &dir) {
  std::error_code ec;
  for (const char *mark : kFolderMarks)
    if (fs::exists(fs::path(dir) / mark, ec))
      return mark;
  return "";
}

std::string foreignFolder(const std::string &dir, const std::vector<std::string> &marks, const std::string &what) {
  std::error_code ec;
  if (!fs::exists(dir, ec))
    return "";
  if (!fs::is_directory(dir, ec))
    return dir + " is not a folder";
  if (fs::is_empty(dir, ec))
    return "";
  for (const std::string &m : marks)
    if (fs::exists(fs::path(dir) / m, ec))
      return "";
  std::string first;
  for (const auto &e : fs::directory_iterator(dir, ec)) {
    first = e.path().filename().string();
    break;
  }
  return dir + " holds files that are not mixc's (" + first + ", ...): it cannot become " + what +
         " (give an empty or new folder)";
}

} // namespace mixc::support
