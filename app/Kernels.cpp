//===- Kernels.cpp - choosing a run's kernels --------------------------------===//
#include "app/Kernels.h"
#include "app/Compile.h"
#include "support/Format.h"
#include "support/Stop.h"

#include <chrono>
#include <sstream>

namespace mixc::app {
namespace {
/// The progress line and the notes on nodes that run on LibTorch.
void describe(const mix::CompileResult &model, const kernels::Library &library, bool cuda, double seconds,
              bool quiet, std::ostream &notes) {
  size_t generated = 0;
  for (const auto &r : model.graph.regions)
    generated += !r.target(cuda ? graph::kTargetCuda : graph::kTargetCpu).kernel.empty();
  if (!quiet) // progress, like training's; the notes below are warnings and always print
    notes << support::format("kernels: %zu of %zu fused regions generated for %s, %s (%.1f s)\n", generated,
                             model.graph.regions.size(), cuda ? "CUDA" : "the CPU", library.path().c_str(), seconds);
  for (const graph::Node &n : model.graph.nodes)
    if (auto it = n.attrs.find(graph::kUnfusedAttr); it != n.attrs.end())
      notes << "note: " << n.name << " (" << n.op << ") is in no fused region (" << it->second.s
            << "): it runs on LibTorch\n";
}
} // namespace

support::Status chooseKernels(const KernelChoice &choice, const mix::CompileResult &model,
                              std::shared_ptr<const kernels::Library> &library, std::ostream &notes) {
  library = nullptr;
  if (choice.backend != "generated" && choice.backend != "auto")
    return support::Status::ok();
  const auto start = std::chrono::steady_clock::now();
  const bool cuda = choice.device != "cpu";
  std::string error;
  {
    support::StopOnSignals signals; // a stop reaches the compiler (support/Process.h)
    library = kernels::buildLibrary(cuda ? model.cudaKernels : model.cpuKernels, error,
                                    cuda ? kernels::Target::Cuda : kernels::Target::Cpu);
  }
  if (support::stopRequested()) // the command stops here, whatever the back end
    return support::Status::interrupted(
        (error.empty() ? std::string("interrupted while the kernels were built") : error) + "; nothing was written");
  if (!library) {
    if (choice.backend != "auto")
      return support::Status::failed("--backend=generated: " + error);
    notes << "note: --backend=auto: the generated kernels did not build, so the LibTorch back end runs instead: "
          << error << "\n";
    return support::Status::ok();
  }
  describe(model, *library, cuda,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), choice.quiet, notes);
  return support::Status::ok();
}

support::Status kernelsForRun(const graph::Graph &g, const std::string &runDir, const KernelChoice &choice,
                              mix::CompileResult &compiled, std::shared_ptr<const kernels::Library> &library,
                              std::ostream &notes) {
  library = nullptr;
  if (choice.backend != "generated" && choice.backend != "auto")
    return support::Status::ok();
  LoadedScript none; // the run's graph as it is: no cells, no removals
  std::ostringstream diagnostics;
  if (support::Status s = compiler().rewrite(g, none, runDir, compiled, diagnostics); !s.isOk()) {
    if (choice.backend == "generated")
      return support::Status::failed("backend generated: " + diagnostics.str() + s.message());
    notes << "note: backend auto: the run's kernels cannot be generated here (" << s.message()
          << "), so the LibTorch back end runs\n";
    return support::Status::ok();
  }
  return chooseKernels(choice, compiled, library, notes);
}

} // namespace mixc::app
