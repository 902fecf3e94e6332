//===- Bundle.cpp - a compiled model as files the runtime reads alone -------===//
#include "abi/Bundle.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace mixc::graph {
namespace fs = std::filesystem;
namespace {
const char *kMarker = "mixc-bundle";

bool writeFile(const fs::path &path, const std::string &text, std::string &error) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) {
      error = "cannot write " + tmp.string();
      return false;
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    error = "cannot write " + path.string() + ": " + ec.message();
  return !ec;
}

bool readFile(const fs::path &path, std::string &text, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "the bundle " + path.parent_path().string() + " has no " + path.filename().string();
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  text = ss.str();
  return true;
}
} // namespace

bool isBundle(const std::string &path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::exists(fs::path(path) / kMarker, ec);
}

bool writeBundle(const std::string &dir, const Bundle &b, std::string &error) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    error = "cannot create " + dir + ": " + ec.message();
    return false;
  }
  const fs::path d = dir;
  return writeFile(d / "graph.json", toJson(b.graph), error) &&
         writeFile(d / "kernels.cpp", b.cpuKernels, error) && writeFile(d / "kernels.cu", b.cudaKernels, error) &&
         writeFile(d / kMarker, "mixc bundle " + std::to_string(kBundleVersion) + "\n", error);
}

bool readBundle(const std::string &dir, Bundle &b, std::string &error) {
  const fs::path d = dir;
  std::string marker, graph;
  if (!readFile(d / kMarker, marker, error))
    return false;
  if (marker != "mixc bundle " + std::to_string(kBundleVersion) + "\n") {
    error = dir + " is a bundle of another version ('" + marker.substr(0, marker.find('\n')) + "', this mixc reads " +
            "'mixc bundle " + std::to_string(kBundleVersion) + "'): compile it again";
    return false;
  }
  if (!readFile(d / "graph.json", graph, error) || !readFile(d / "kernels.cpp", b.cpuKernels, error) ||
      !readFile(d / "kernels.cu", b.cudaKernels, error))
    return false;
  std::string why;
  if (!fromJson(graph, b.graph, why)) {
    error = (d / "graph.json").string() + ": " + why;
    return false;
  }
  return true;
}

} // namespace mixc::graph
