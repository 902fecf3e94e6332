// libFuzzer target: the bundle loader (abi/Bundle.h), as `mixc train` meets
// a bundle: its marker, graph.json and kernel sources read from a folder,
// then the graph validated, and a compiled rewrite read from rewrites/.
// The input is split at its NUL bytes into the marker, graph.json,
// kernels.cpp and a rewrite's `base` digest file.
#include "abi/Bundle.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace {
void write(const std::filesystem::path &p, const std::string &text) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace fs = std::filesystem;
  static const fs::path dir = fs::temp_directory_path() / ("mixc-bundle-fuzz-" + std::to_string(::getpid()));
  static const fs::path rewrite = dir / "rewrites" / "0123456789abcdef";
  fs::create_directories(rewrite);
  const std::string input(reinterpret_cast<const char *>(data), size);
  std::string parts[4];
  for (size_t i = 0, at = 0; i < 4 && at <= input.size(); ++i) {
    size_t end = i == 3 ? input.size() : input.find('\0', at);
    if (end == std::string::npos)
      end = input.size();
    parts[i] = input.substr(at, end - at);
    at = end + 1;
  }
  write(dir / "mixc-bundle", parts[0]);
  write(dir / "graph.json", parts[1]);
  write(dir / "kernels.cpp", parts[2]);
  write(dir / "kernels.cu", parts[2]);
  for (const char *name : {"graph.json", "kernels.cpp", "kernels.cu"})
    fs::copy_file(dir / name, rewrite / name, fs::copy_options::overwrite_existing);
  write(rewrite / "base", parts[3]);
  mixc::graph::Bundle bundle;
  mixc::graph::CompiledRewrite compiled;
  std::string error;
  if (mixc::graph::readBundle(dir.string(), bundle, error))
    mixc::graph::graphDigest(bundle.graph);
  mixc::graph::readRewrite(dir.string(), "0123456789abcdef", compiled, error);
  return 0;
}
