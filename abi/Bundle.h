//===- Bundle.h - a compiled model as files the runtime reads alone -*- C++ -*-===//
//
// `mixc compile X.mix --emit=bundle -o DIR` writes what a run needs from the
// compiler, so a machine without MLIR (a GPU node) can train it:
//   DIR/mixc-bundle   "mixc bundle <version>" (what marks the folder)
//   DIR/graph.json    the runtime graph; its `config` holds the model
//                     parameters it was compiled with (d = 64, ...)
//   DIR/kernels.cpp   the generated CPU kernels (abi/KernelAbi.h)
//   DIR/kernels.cu    the generated CUDA kernels
// A training config names the folder as its model.file.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_ABI_BUNDLE_H
#define MIXC_ABI_BUNDLE_H

#include "abi/Graph.h"

#include <string>

namespace mixc::graph {

constexpr int kBundleVersion = 1;

struct Bundle {
  Graph graph;
  std::string cpuKernels, cudaKernels;
};

/// Whether `path` is a bundle folder (it holds the mixc-bundle marker).
bool isBundle(const std::string &path);

/// Writes `b` into the folder `dir` (created); false with `error` set.
bool writeBundle(const std::string &dir, const Bundle &b, std::string &error);

/// Reads the bundle in `dir`; false with `error` naming what is wrong.
bool readBundle(const std::string &dir, Bundle &b, std::string &error);

} // namespace mixc::graph

#endif
