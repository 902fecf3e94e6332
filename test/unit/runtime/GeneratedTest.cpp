// --backend=generated: every stdlib architecture, with its fused regions run
// through the generated CPU kernels (compiled here by the host compiler),
// against the LibTorch interpreter on the same graph and weights — logits
// and every parameter's gradient. The "_cuda_on_host" cases do the same
// with the generated CUDA source, compiled for the host with
// MIXK_CUDA_ON_HOST (templates/cuda_on_host.h: each launch a serial loop
// over blocks and threads), so the CUDA back end's arithmetic and indexing
// are checked without a GPU.
#include "CompileStdlib.h"
#include "runtime/core/Model.h"
#include "runtime/kernels/KernelBuild.h"

#include <fstream>
#include <filesystem>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>

using mixc::rt::Model;

namespace {
// The last three are written with the DSL's scan: their recurrences run the
// scan kernels (CodeGen/ScanPlan.h), with the backward the compiler derives.
const char *kArchitectures[] = {"attention", "baseconv", "based",         "mamba", "deltanet",
                                "h3",        "hyena",    "gla", "gated_deltanet", "retnet"};

/// max |a - b| / (max |b| + tiny): the kernels sum in another order.
double relErr(const at::Tensor &a, const at::Tensor &b) {
  return (a - b).abs().max().item<double>() / (b.abs().max().item<double>() + 1e-12);
}

struct Case {
  const char *arch;
  bool cudaOnHost;
  bool noConv = false; // Mamba with d_conv = 0: the scan's input is a SiLU also read by x_proj (Fuse.cpp)
};
void PrintTo(const Case &c, std::ostream *os) {
  *os << c.arch << (c.noConv ? " without conv" : "") << (c.cudaOnHost ? " (CUDA source on the host)" : "");
}
std::vector<Case> cases() {
  std::vector<Case> out;
  for (bool cuda : {false, true})
    for (const char *a : kArchitectures)
      out.push_back({a, cuda});
  out.push_back({"mamba", false, true});
  return out;
}

class Generated : public ::testing::TestWithParam<Case> {
protected:
  void SetUp() override {
    setenv("MIXC_KERNEL_CACHE", MIXC_TEST_KERNEL_CACHE, /*overwrite=*/0);
    at::set_num_threads(1);
    std::vector<mixc::dsl::ConfigEntry> config = {{"d", "16"}, {"vocab", "20"}};
    if (GetParam().noConv)
      config.push_back({"d_conv", "0"});
    result = compileStdlib(GetParam().arch, config);
    std::string error;
    std::string source = GetParam().cudaOnHost ? "#define MIXK_CUDA_ON_HOST\n" + result.cudaKernels
                                               : result.cpuKernels;
    auto library = mixc::kernels::buildLibrary(source, error);
    ASSERT_TRUE(library) << error;
    reference = Model::create(result.graph, error);
    ASSERT_TRUE(reference) << error;
    generated = Model::create(result.graph, error, library);
    ASSERT_TRUE(generated) << error;
    reference->initParameters(5);
    generated->initParameters(5);
  }
  mix::CompileResult result;
  std::unique_ptr<Model> reference, generated;
};
} // namespace

TEST_P(Generated, EveryRegionWithAKernelRunsGenerated) {
  int kernels = 0;
  ASSERT_EQ(generated->regionStatus().size(), result.graph.regions.size());
  for (size_t i = 0; i < result.graph.regions.size(); ++i) {
    const auto &r = result.graph.regions[i];
    const auto &[name, why] = generated->regionStatus()[i];
    EXPECT_EQ(name, r.name);
    if (!r.target(mixc::graph::kTargetCpu).kernel.empty()) {
      ++kernels;
      EXPECT_EQ(why, "") << r.name;
    } else {
      EXPECT_NE(why, "") << r.name;
    }
  }
  EXPECT_GT(kernels, 0) << "no region of " << GetParam().arch << " has a generated kernel";
  if (GetParam().noConv) { // the scan keeps its region (and kernel) without the conv before it
    EXPECT_TRUE(std::any_of(result.graph.regions.begin(), result.graph.regions.end(),
                            [](const auto &r) { return r.kind == "selective_scan"; }));
  }
  for (const auto &[name, why] : reference->regionStatus())
    EXPECT_NE(why, "") << name << " ran generated without a library";
}

// T = 21 crosses the scans' (16) and the delta rule's (8) checkpoint chunks;
// 2 threads split the batch and sum parameter gradients over partials.
TEST_P(Generated, LogitsAndGradientsMatchTheInterpreter) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads = " + std::to_string(threads));
    at::set_num_threads(threads);
    at::manual_seed(11);
    at::Tensor tokens = at::randint(3, 20, {3, 21}, at::kLong);
    at::Tensor weight = at::randn({3, 21, 20});
    for (auto *m : {reference.get(), generated.get()})
      for (const auto &[name, w] : m->tensors())
        if (w.grad().defined())
          w.mutable_grad().zero_();
    at::Tensor want = reference->forward(tokens);
    at::Tensor got = generated->forward(tokens);
    ASSERT_EQ(got.sizes(), want.sizes());
    EXPECT_LT(relErr(got, want), 1e-4);
    (want * weight).sum().backward();
    (got * weight).sum().backward();
    for (size_t i = 0; i < reference->tensors().size(); ++i) {
      const auto &[name, w] = reference->tensors()[i];
      const at::Tensor &g = generated->tensors()[i].second;
      if (!w.requires_grad())
        continue;
      ASSERT_TRUE(w.grad().defined() && g.grad().defined()) << name;
      EXPECT_LT(relErr(g.grad(), w.grad()), 1e-3) << name;
    }
  }
  at::set_num_threads(1);
}

TEST_P(Generated, ReadoutAndNoGradAgree) {
  torch::NoGradGuard noGrad;
  at::Tensor tokens = at::randint(3, 20, {2, 9}, at::kLong);
  Model::Options o;
  o.readout = at::tensor({8, 3}, at::kLong);
  EXPECT_LT(relErr(generated->forward(tokens, o), reference->forward(tokens, o)), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Stdlib, Generated, ::testing::ValuesIn(cases()), [](const auto &info) {
  return std::string(info.param.arch) + (info.param.noConv ? "_noconv" : "") +
         (info.param.cudaOnHost ? "_cuda_on_host" : "");
});

// The softmax attention kernel (a region of its own) at the widths of the
// paper's grid and at sequence lengths 1 (one key), 37 (AR) and 80, on both
// back ends, against the interpreter's masked softmax: logits and the
// gradients of every parameter.
struct AttentionShape {
  int64_t d, t;
  bool cudaOnHost;
};
class AttentionKernel : public ::testing::TestWithParam<AttentionShape> {};

TEST_P(AttentionKernel, MatchesTheMaskedSoftmax) {
  setenv("MIXC_KERNEL_CACHE", MIXC_TEST_KERNEL_CACHE, 0);
  at::set_num_threads(1);
  const AttentionShape s = GetParam();
  mix::CompileResult result = compileStdlib("attention", {{"d", std::to_string(s.d)}, {"vocab", "20"}});
  std::string error;
  auto library = mixc::kernels::buildLibrary(
      s.cudaOnHost ? "#define MIXK_CUDA_ON_HOST\n" + result.cudaKernels : result.cpuKernels, error);
  ASSERT_TRUE(library) << error;
  auto reference = Model::create(result.graph, error), generated = Model::create(result.graph, error, library);
  ASSERT_TRUE(reference && generated) << error;
  bool attentionRegion = false;
  for (const auto &r : result.graph.regions)
    attentionRegion |= r.kind == "softmax_attention";
  ASSERT_TRUE(attentionRegion);
  reference->initParameters(3);
  generated->initParameters(3);
  at::manual_seed(7);
  at::Tensor tokens = at::randint(0, 20, {2, s.t}, at::kLong);
  at::Tensor weight = at::randn({2, s.t, 20});
  at::Tensor want = reference->forward(tokens), got = generated->forward(tokens);
  EXPECT_LT(relErr(got, want), 1e-4);
  (want * weight).sum().backward();
  (got * weight).sum().backward();
  for (size_t i = 0; i < reference->tensors().size(); ++i) {
    const auto &[name, w] = reference->tensors()[i];
    if (w.requires_grad()) {
      EXPECT_LT(relErr(generated->tensors()[i].second.grad(), w.grad()), 1e-3) << name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionKernel,
                         ::testing::Values(AttentionShape{16, 1, false}, AttentionShape{64, 37, false},
                                           AttentionShape{128, 80, false}, AttentionShape{256, 37, false},
                                           AttentionShape{16, 1, true}, AttentionShape{64, 37, true},
                                           AttentionShape{128, 80, true}),
                         [](const auto &info) {
                           return "d" + std::to_string(info.param.d) + "_t" + std::to_string(info.param.t) +
                                  (info.param.cudaOnHost ? "_cuda_on_host" : "");
                         });

TEST(KernelBuild, ACompileErrorIsReportedWithTheCompilersOutput) {
  setenv("MIXC_KERNEL_CACHE", MIXC_TEST_KERNEL_CACHE, 0);
  std::string error;
  EXPECT_FALSE(mixc::kernels::buildLibrary("int broken( {", error));
  EXPECT_NE(error.find("compiling the generated CPU kernels failed"), std::string::npos) << error;
  EXPECT_NE(error.find("error"), std::string::npos) << error;
}

TEST(KernelBuild, ALibraryOfAnotherAbiIsRefused) {
  setenv("MIXC_KERNEL_CACHE", MIXC_TEST_KERNEL_CACHE, 0);
  std::string error;
  EXPECT_FALSE(mixc::kernels::buildLibrary("extern \"C\" int mixk_abi_version() { return 999; }", error));
  EXPECT_NE(error.find("another kernel ABI"), std::string::npos) << error;
}

TEST(KernelBuild, ALibraryThatDoesNotNameItsTargetIsRefused) {
  setenv("MIXC_KERNEL_CACHE", MIXC_TEST_KERNEL_CACHE, 0);
  std::string error;
  EXPECT_FALSE(mixc::kernels::buildLibrary(
      "extern \"C\" int mixk_abi_version() { return " + std::to_string(MIXK_ABI_VERSION) +
          "; }\nextern \"C\" int mixk_target() { return 7; }\n",
      error));
  EXPECT_NE(error.find("which device"), std::string::npos) << error;
}

TEST(KernelBuild, ACorruptOrForeignCacheEntryIsRebuiltNotReported) {
  setenv("MIXC_KERNEL_CACHE", MIXC_TEST_KERNEL_CACHE, 0);
  const std::string source = "extern \"C\" int mixk_abi_version() { return " +
                             std::to_string(MIXK_ABI_VERSION) +
                             "; }\nextern \"C\" int mixk_target() { return 0; }\n"
                             "extern \"C\" int corrupt_entry_marker() { return 17; }\n";
  std::string error;
  auto built = mixc::kernels::buildLibrary(source, error);
  ASSERT_TRUE(built) << error;
  const std::string path = built->path();
  built.reset(); // unloaded before its file is overwritten
  // An empty file and a foreign one at the cache name.
  for (const std::string &bad : {std::string(), std::string("not an ELF file at all")}) {
    { std::ofstream(path, std::ios::binary | std::ios::trunc) << bad; }
    auto library = mixc::kernels::buildLibrary(source, error);
    ASSERT_TRUE(library) << "a bad entry (" << bad.size() << " bytes) was not rebuilt: " << error;
    EXPECT_EQ(library->path(), path);
  }
}

TEST(KernelBuild, CachePathsAndCompilerVariablesNeverReachAShell) {
  // A cache folder whose name is shell syntax: with system() this ran
  // `touch` (and a quote broke the build). With an argument vector it is
  // just a folder name.
  const std::string base = std::string(MIXC_TEST_KERNEL_CACHE) + "/shell-test";
  const std::string marker = base + "/pwned";
  const std::string cache = base + "/it's $(touch " + marker + ") `touch " + marker + "`";
  std::filesystem::remove_all(base);
  const char *old = std::getenv("MIXC_KERNEL_CACHE");
  const std::string saved = old ? old : "";
  setenv("MIXC_KERNEL_CACHE", cache.c_str(), 1);
  std::string error;
  auto library = mixc::kernels::buildLibrary(
      "extern \"C\" int mixk_abi_version() { return " + std::to_string(MIXK_ABI_VERSION) +
          "; }\nextern \"C\" int mixk_target() { return 0; }\n",
      error);
  ASSERT_TRUE(library) << error;
  EXPECT_EQ(library->path().rfind(cache, 0), 0u) << library->path();
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a cache path ran shell code";
  // $MIXC_CXX is split at blanks, never interpreted: a `;` is an argument.
  setenv("MIXC_CXX", ("c++ ; touch " + marker).c_str(), 1);
  EXPECT_FALSE(mixc::kernels::buildLibrary("int changed_source_so_it_builds;", error));
  EXPECT_FALSE(std::filesystem::exists(marker)) << "MIXC_CXX ran shell code";
  unsetenv("MIXC_CXX");
  if (old)
    setenv("MIXC_KERNEL_CACHE", saved.c_str(), 1);
  else
    unsetenv("MIXC_KERNEL_CACHE");
  std::filesystem::remove_all(base);
}

/// A one-layer, d = 16 stdlib model and its CPU kernel library (nullptr
/// after a failure is reported).
static std::shared_ptr<mixc::kernels::Library> oneLayerCpuLibrary(const char *arch, mix::CompileResult &result) {
  setenv("MIXC_KERNEL_CACHE", MIXC_TEST_KERNEL_CACHE, 0);
  result = compileStdlib(arch, {{"d", "16"}, {"n_layers", "1"}});
  std::string error;
  auto library = mixc::kernels::buildLibrary(result.cpuKernels, error);
  EXPECT_TRUE(library) << error;
  return library;
}

TEST(KernelBuild, CpuLibraryOfAModelSaysCpu) {
  mix::CompileResult result;
  auto library = oneLayerCpuLibrary("mamba", result);
  ASSERT_TRUE(library);
  EXPECT_EQ(library->target(), mixc::kernels::Target::Cpu);
}

// The generated long conv reads the first T taps of its [L, C] filter: a
// filter shorter than the sequence is an error, as on the LibTorch path.
TEST(KernelBuild, ALongConvFilterShorterThanTheSequenceIsRefused) {
  mix::CompileResult result;
  auto library = oneLayerCpuLibrary("hyena", result);
  ASSERT_TRUE(library);
  const mixc::graph::Region *conv = nullptr;
  for (const auto &r : result.graph.regions)
    if (r.kind == "long_conv")
      conv = &r;
  ASSERT_TRUE(conv);
  mixc::rt::BoundRegion bound;
  ASSERT_EQ(mixc::rt::bindRegion(result.graph, *conv, *library, bound), "");
  std::vector<at::Tensor> inputs;
  for (size_t i = 0; i < conv->inputs.size(); ++i)
    inputs.push_back(bound.inputIsFilter[i] ? at::zeros({3, 16}) : at::zeros({2, 5, 16}));
  try {
    mixc::rt::runRegion(bound, inputs);
    ADD_FAILURE() << "a 3-tap filter ran on 5 steps";
  } catch (const c10::Error &e) {
    EXPECT_NE(std::string(e.what()).find("filter has 3 taps but the sequence has 5 steps"), std::string::npos)
        << e.what();
  }
}

// A CPU tensor must not reach a CUDA kernel (nor the reverse): the region
// call says so instead of handing host pointers to the device.
TEST(KernelBuild, ARegionRefusesTensorsOnTheWrongDevice) {
  mix::CompileResult result;
  auto library = oneLayerCpuLibrary("mamba", result);
  ASSERT_TRUE(library);
  const mixc::graph::Region &region = result.graph.regions.front();
  mixc::rt::BoundRegion bound;
  ASSERT_EQ(mixc::rt::bindRegion(result.graph, region, *library, bound), "");
  bound.target = mixc::kernels::Target::Cuda; // as if bound to a CUDA library
  std::vector<at::Tensor> inputs;
  for (const std::string &v : region.inputs) {
    (void)v;
    inputs.push_back(at::zeros({1, 4, 32}));
  }
  try {
    mixc::rt::runRegion(bound, inputs);
    ADD_FAILURE() << "a CPU tensor reached a CUDA kernel";
  } catch (const c10::Error &e) {
    EXPECT_NE(std::string(e.what()).find("its kernel is for the CUDA"), std::string::npos) << e.what();
  }
}
