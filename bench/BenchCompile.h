// A model compiled for a benchmark, with its CPU kernels built into the
// kernel cache: what the benchmarks that time regions share.
#ifndef MIXC_BENCH_BENCHCOMPILE_H
#define MIXC_BENCH_BENCHCOMPILE_H

#include "app/Compile.h"
#include "runtime/kernels/KernelBuild.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace mixc::bench {

struct Compiled {
  mix::CompileResult result;
  std::shared_ptr<mixc::kernels::Library> library;
};

/// `file` (relative to the source root) with `config`; false, saying why
/// on stderr, when it does not compile or its kernels do not build.
inline bool compileWithKernels(const std::string &file, const std::vector<mixc::dsl::ConfigEntry> &config,
                               Compiled &out) {
  mixc::app::ModelRequest request{std::string(MIXC_SOURCE_ROOT) + "/" + file, "", config};
  if (!mixc::app::compiler().compile(request, out.result, std::cerr).isOk())
    return false;
  std::string error;
  out.library = mixc::kernels::buildLibrary(out.result.cpuKernels, error);
  if (!out.library)
    std::cerr << error << "\n";
  return out.library != nullptr;
}

} // namespace mixc::bench

#endif
