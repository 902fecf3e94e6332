//===- Bundle.h - a compiled model as files the runtime reads alone -*- C++ -*-===//
//
// `mixc compile X.mix --emit=bundle -o DIR` writes what a run needs from the
// compiler, so a machine without MLIR (a GPU node) can train it:
//   DIR/mixc-bundle   "mixc bundle <version>" (what marks the folder)
//   DIR/graph.json    the runtime graph; its `config` holds the model
//                     parameters it was compiled with (d = 64, ...)
//   DIR/kernels.cpp   the generated CPU kernels (abi/KernelAbi.h)
//   DIR/kernels.cu    the generated CUDA kernels
//   DIR/rewrites/<digest>/{graph.json,kernels.cpp,kernels.cu,base}
//                     intervention scripts compiled against that graph
//                     (`--rewrite S.rw`, repeatable): a runtime without the
//                     compiler finds a script's rewritten graph by the digest
//                     of its text; `base` holds the digest of the graph it
//                     rewrote, so it is never applied to another model
// A training config names the folder as its model.file; a run trained from
// a bundle keeps a copy of its rewrites (RUN/rewrites/).
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_ABI_BUNDLE_H
#define MIXC_ABI_BUNDLE_H

#include "abi/Graph.h"

#include <string>
#include <vector>

namespace mixc::graph {

constexpr int kBundleVersion = 1;

/// An intervention script compiled against a bundle's graph.
struct CompiledRewrite {
  std::string digest;     // of the script (its text and the vectors it reads)
  std::string baseDigest; // graphDigest of the graph it rewrote
  Graph graph;            // the rewritten graph
  std::string cpuKernels, cudaKernels;
};

struct Bundle {
  Graph graph;
  std::string cpuKernels, cudaKernels;
  std::vector<CompiledRewrite> rewrites;
};

/// Whether `path` is a bundle folder (it holds the mixc-bundle marker).
bool isBundle(const std::string &path);

/// Writes `b` into the folder `dir` (created); false with `error` set.
bool writeBundle(const std::string &dir, const Bundle &b, std::string &error);

/// Reads the bundle in `dir` (its rewrites are read on demand, not here);
/// false with `error` naming what is wrong.
bool readBundle(const std::string &dir, Bundle &b, std::string &error);

/// The compiled rewrite `digest` under `dir` (a bundle or a run folder):
/// false with `error` empty when there is none, with `error` set when it is
/// there but unreadable.
bool readRewrite(const std::string &dir, const std::string &digest, CompiledRewrite &r, std::string &error);

/// Copies the compiled rewrites of the bundle `bundleDir` into `dir`/rewrites
/// (a run trained from it), replacing older copies; true when it has none.
bool copyRewrites(const std::string &bundleDir, const std::string &dir, std::string &error);

} // namespace mixc::graph

#endif
