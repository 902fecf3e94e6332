//===- Bundle.cpp - a compiled model as files the runtime reads alone -------===//
#include "abi/Bundle.h"
#include "support/OutputGuard.h"
#include "support/AtomicWrite.h"
#include "support/TextFile.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace mixc::graph {
namespace fs = std::filesystem;
namespace {
const char *kMarker = "mixc-bundle";

bool writeFile(const fs::path &path, const std::string &text, std::string &error) {
  return support::writeFileAtomically(path.string(), text, error);
}

/// A part of a bundle; a missing one is named as such.
bool readFile(const fs::path &path, std::string &text, std::string &error) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    error = "the bundle " + path.parent_path().string() + " has no " + path.filename().string();
    return false;
  }
  return support::readTextFile(path.string(), text, error);
}

/// graph.json + kernels.cpp + kernels.cu: a graph and its kernels in `d`.
bool writeCompiled(const fs::path &d, const Graph &g, const std::string &cpu, const std::string &cuda,
                   std::string &error) {
  return writeFile(d / "graph.json", toJson(g), error) && writeFile(d / "kernels.cpp", cpu, error) &&
         writeFile(d / "kernels.cu", cuda, error);
}

bool readCompiled(const fs::path &d, Graph &g, std::string &cpu, std::string &cuda, std::string &error) {
  std::string graph;
  if (!readFile(d / "graph.json", graph, error) || !readFile(d / "kernels.cpp", cpu, error) ||
      !readFile(d / "kernels.cu", cuda, error))
    return false;
  std::string why;
  if (!fromJson(graph, g, why)) {
    error = (d / "graph.json").string() + ": " + why;
    return false;
  }
  return true;
}
} // namespace

bool isBundle(const std::string &path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::exists(fs::path(path) / kMarker, ec);
}

bool writeBundle(const std::string &dir, const Bundle &b, std::string &error) {
  // A bundle written again replaces its rewrites/ folder: never a user's folder.
  if (std::string why = support::foreignFolder(dir, {kMarker}, "a bundle"); !why.empty()) {
    error = why;
    return false;
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    error = "cannot create " + dir + ": " + ec.message();
    return false;
  }
  const fs::path d = dir;
  fs::remove(d / kMarker, ec); // while it is written, the folder is no bundle
  if (!writeCompiled(d, b.graph, b.cpuKernels, b.cudaKernels, error))
    return false;
  fs::remove_all(d / "rewrites", ec); // a bundle written again holds only its new rewrites
  for (const CompiledRewrite &r : b.rewrites) {
    const fs::path rd = d / "rewrites" / r.digest;
    fs::create_directories(rd, ec);
    if (ec) {
      error = "cannot create " + rd.string() + ": " + ec.message();
      return false;
    }
    if (!writeCompiled(rd, r.graph, r.cpuKernels, r.cudaKernels, error) ||
        !writeFile(rd / "base", r.baseDigest + "\n", error))
      return false;
  }
  // The marker last: a folder interrupted while written is not a bundle.
  return writeFile(d / kMarker, "mixc bundle " + std::to_string(kBundleVersion) + "\n", error);
}

bool readBundle(const std::string &dir, Bundle &b, std::string &error) {
  const fs::path d = dir;
  std::string marker;
  if (!readFile(d / kMarker, marker, error))
    return false;
  const std::string expected = "mixc bundle " + std::to_string(kBundleVersion);
  std::string line = marker.substr(0, marker.find('\n'));
  if (!line.empty() && line.back() == '\r') // written on (or copied through) Windows: the same marker
    line.pop_back();
  if (line != expected || marker.size() > line.size() + 2) {
    std::string shown = line.size() > 40 ? line.substr(0, 40) + "..." : line;
    error = dir + " is not a bundle this mixc reads (its " + kMarker + " says '" + shown + "', this mixc reads '" +
            expected + "'): compile it again";
    return false;
  }
  return readCompiled(d, b.graph, b.cpuKernels, b.cudaKernels, error);
}

bool readRewrite(const std::string &dir, const std::string &digest, CompiledRewrite &r, std::string &error) {
  error.clear();
  const fs::path rd = fs::path(dir) / "rewrites" / digest;
  std::error_code ec;
  if (!fs::is_directory(rd, ec))
    return false;
  std::string base;
  if (!readCompiled(rd, r.graph, r.cpuKernels, r.cudaKernels, error) || !readFile(rd / "base", base, error))
    return false;
  r.digest = digest;
  r.baseDigest = base.substr(0, base.find('\n'));
  return true;
}

bool copyRewrites(const std::string &bundleDir, const std::string &dir, std::string &error) {
  const fs::path from = fs::path(bundleDir) / "rewrites", to = fs::path(dir) / "rewrites";
  std::error_code ec;
  if (!fs::is_directory(from, ec))
    return true;
  fs::remove_all(to, ec);
  fs::copy(from, to, fs::copy_options::recursive, ec);
  if (ec)
    error = "cannot copy " + from.string() + " to " + to.string() + ": " + ec.message();
  return !ec;
}

} // namespace mixc::graph
