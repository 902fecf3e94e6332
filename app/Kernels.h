//===- Kernels.h - choosing a run's kernels ------------------------*- C++ -*-===//
#ifndef MIXC_APP_KERNELS_H
#define MIXC_APP_KERNELS_H

#include "mix/Compiler.h"
#include "runtime/kernels/KernelBuild.h"
#include "support/Status.h"

#include <memory>
#include <ostream>
#include <string>

namespace mixc::app {

struct KernelChoice {
  std::string backend = "libtorch"; // libtorch, generated, or auto (generated where it builds)
  std::string device = "cpu";       // cpu, or cuda[:N]: which of the model's kernel sources
  bool quiet = false;               // no progress line
};

/// The compiled model's generated kernels as a shared library from the cache
/// (built unless already there), opened once, into `library`; null for the
/// LibTorch back end. `auto` falls back to LibTorch with a note on `notes`
/// when they do not build; `generated` fails. Notes also name the nodes in
/// no fused region; progress (unless quiet) goes there too. A stop signal
/// while building returns an interruption.
support::Status chooseKernels(const KernelChoice &choice, const mix::CompileResult &model,
                              std::shared_ptr<const kernels::Library> &library, std::ostream &notes);

/// The generated kernels for a trained run's graph `g` (the run folder
/// `runDir` holds its bundle's rewrites where this build cannot compile):
/// the graph compiled again for its kernel sources into `compiled`, then as
/// chooseKernels. Where the sources cannot be made, `auto` notes it and
/// leaves `library` null; `generated` fails.
support::Status kernelsForRun(const graph::Graph &g, const std::string &runDir, const KernelChoice &choice,
                              mix::CompileResult &compiled, std::shared_ptr<const kernels::Library> &library,
                              std::ostream &notes);

} // namespace mixc::app

#endif
