// What the runtime tests that compare two compiled models share: a script
// applied to a graph, a model from a graph, weights copied by name, and the
// relative difference of two results.
#ifndef MIXC_TEST_UNIT_RUNTIME_TESTMODELS_H
#define MIXC_TEST_UNIT_RUNTIME_TESTMODELS_H

#include "CompileStdlib.h"
#include "dsl/Rewrite.h"
#include "runtime/core/Model.h"
#include "runtime/kernels/KernelBuild.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>

/// `g` compiled with the .rw `script` applied: the rewritten graph and its
/// kernels (`path` places relative add(FILE) paths).
inline mix::CompileResult rewriteResult(const mixc::graph::Graph &g, const std::string &script,
                                        const std::string &path = "test.rw") {
  mixc::dsl::SourceManager sm;
  mixc::dsl::RwScript s;
  std::ostringstream err;
  EXPECT_TRUE(mixc::dsl::parseRewrite(script, path, sm, s, err)) << err.str();
  mix::CompileResult result;
  EXPECT_TRUE(mix::rewriteGraph(g, s, sm, result, err)) << err.str();
  return result;
}

/// `g` with the .rw `script` applied.
inline mixc::graph::Graph rewrite(const mixc::graph::Graph &g, const std::string &script,
                                  const std::string &path = "test.rw") {
  return rewriteResult(g, script, path).graph;
}

/// A model of `g`; with `library`, its regions run the generated kernels.
inline std::unique_ptr<mixc::rt::Model> model(const mixc::graph::Graph &g,
                                              std::shared_ptr<mixc::kernels::Library> library = nullptr) {
  std::string error;
  auto m = mixc::rt::Model::create(g, error, std::move(library));
  EXPECT_TRUE(m) << error;
  return m;
}

/// Copies weights by name from `from` into `to` (every tensor of `to` must exist in `from`).
inline void copyWeights(const mixc::rt::Model &from, mixc::rt::Model &to) {
  torch::NoGradGuard noGrad;
  for (const auto &[name, t] : to.tensors()) {
    bool found = false;
    for (const auto &[n, s] : from.tensors())
      if (n == name) {
        const_cast<at::Tensor &>(t).copy_(s);
        found = true;
      }
    EXPECT_TRUE(found) << name;
  }
}

/// max |a − b| relative to the size of `b` (at least 1). Rows of one batch,
/// or two graphs that compute the same function through different nodes, are
/// not bit-identical: BLAS rounding depends on where a row falls in the
/// micro-kernel tiles, which differs between CPUs (seen: 6.7e-8 on Zen 5).
inline double relativeDifference(const at::Tensor &a, const at::Tensor &b) {
  double scale = std::max(1.0, b.abs().max().item<double>());
  return (a - b).abs().max().item<double>() / scale;
}

#endif
