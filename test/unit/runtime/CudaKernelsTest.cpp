// The CUDA back end, on a machine without a GPU (CI): every stdlib model's
// generated CUDA source, at its default configuration, compiles with nvcc
// for sm_80 and sm_90 through the runtime's own build path (KernelBuild,
// the flags --device=cuda uses), and the library loads (the CUDA runtime is
// linked statically and starts lazily, so dlopen needs no driver), says it
// is for CUDA and holds every kernel the graph names. Running the kernels
// needs a GPU: bench/cuda_check does that on a device machine.
#include "CompileStdlib.h"
#include "runtime/kernels/KernelBuild.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace {
// gla, gated_deltanet and retnet: their scans' kernels (CodeGen/ScanPrinter.cpp) through nvcc.
const char *kArchitectures[] = {"attention", "baseconv", "based", "mamba",  "deltanet",
                                "h3",        "hyena",    "gla",   "gated_deltanet", "retnet"};

bool haveNvcc() {
  if (const char *n = std::getenv("MIXC_NVCC"); n && *n)
    return true;
  return std::filesystem::exists("/usr/local/cuda/bin/nvcc") ||
         std::system("command -v nvcc > /dev/null 2>&1") == 0;
}

class CudaKernels : public ::testing::TestWithParam<const char *> {};

TEST_P(CudaKernels, CompileForSm80AndSm90AndLoad) {
  if (!haveNvcc())
    GTEST_SKIP() << "no nvcc (set MIXC_NVCC)";
  setenv("MIXC_KERNEL_CACHE", MIXC_TEST_KERNEL_CACHE, 0);
  setenv("MIXC_CUDA_ARCHS", "80 90", 1);
  const std::string command = mixc::kernels::compilerCommand(mixc::kernels::Target::Cuda);
  EXPECT_NE(command.find("arch=compute_80,code=sm_80"), std::string::npos) << command;
  EXPECT_NE(command.find("arch=compute_90,code=sm_90"), std::string::npos) << command;

  mix::CompileResult result = compileStdlib(GetParam(), {});
  ASSERT_FALSE(result.cudaKernels.empty());
  std::string error;
  auto library = mixc::kernels::buildLibrary(result.cudaKernels, error, mixc::kernels::Target::Cuda);
  ASSERT_TRUE(library) << error;
  EXPECT_EQ(library->target(), mixc::kernels::Target::Cuda);
  int generated = 0;
  for (const mixc::graph::Region &r : result.graph.regions) {
    const std::string kernel = r.target(mixc::graph::kTargetCuda).kernel;
    if (kernel.empty())
      continue;
    mixc::kernels::RegionFns fns;
    EXPECT_TRUE(library->lookup(kernel, fns)) << r.name << ": " << kernel;
    // Host code only: sizing the saved buffer launches nothing.
    if (fns.saved) {
      int64_t dims[4] = {2, 8, 1, 1};
      EXPECT_GE(fns.saved(dims), 0) << r.name;
    }
    ++generated;
  }
  EXPECT_GT(generated, 0) << "no region of " << GetParam() << " has a kernel";
}

INSTANTIATE_TEST_SUITE_P(Stdlib, CudaKernels, ::testing::ValuesIn(kArchitectures),
                         [](const auto &info) { return std::string(info.param); });
} // namespace
