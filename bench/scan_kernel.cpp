// The generated kernels of a DSL scan against the hand-written primitive
// kernels of the same recurrence, in one process: the delta rule, Based's
// linear attention and Mamba's selective scan, each written both ways in
// test/DSL/Inputs/scan-equivalents.mix. Times one layer's region (the
// primitive's with its fused prologue and epilogue; the scan's alone, its
// neighbours being the same per-position ops in regions of their own) on
// the same random inputs, forward alone and forward + backward, and prints
// scan / primitive.
//   build/bench/scan_kernel [--d 64] [--d-state 16] [--batch 32] [--seq 64] [--reps 20] [--threads 1]
#include "BenchCompile.h"
#include "BenchUtil.h"
#include "app/Compile.h"
#include "runtime/core/Generated.h"
#include "runtime/core/Model.h"
#include "runtime/core/Primitives.h"
#include "runtime/kernels/KernelBuild.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>

namespace {
using mixc::bench::now;

using mixc::bench::Compiled;

bool compile(int kind, bool scan, const std::string &d, const std::string &dState, Compiled &out) {
  return mixc::bench::compileWithKernels("test/DSL/Inputs/scan-equivalents.mix",
                                         {{"kind", std::to_string(kind)}, {"use_scan", scan ? "true" : "false"},
                                          {"d", d}, {"d_state", dState}, {"n_layers", "1"}},
                                         out);
}

struct Timing {
  double forward = 0, both = 0; // seconds per call
};

/// Times the region of kind `kind` on inputs drawn in [0, 0.5) (decays and
/// step sizes stay in range), B and T as given.
bool timeRegion(const Compiled &c, const std::string &kind, int64_t B, int64_t T, int reps, Timing &t) {
  const mixc::graph::Graph &g = c.result.graph;
  const mixc::graph::Region *region = nullptr;
  for (const mixc::graph::Region &r : g.regions)
    if (r.kind == kind)
      region = &r;
  if (!region) {
    std::cerr << "no region of kind " << kind << "\n";
    return false;
  }
  mixc::rt::BoundRegion bound;
  if (std::string why = mixc::rt::bindRegion(g, *region, *c.library, bound); !why.empty()) {
    std::cerr << region->name << ": " << why << "\n";
    return false;
  }
  const auto shapes = mixc::graph::valueShapes(g);
  std::vector<at::Tensor> inputs;
  at::manual_seed(0);
  for (const std::string &name : region->inputs) {
    std::vector<int64_t> shape = shapes.at(name);
    for (size_t i = 0, d = 0; i < shape.size(); ++i)
      if (shape[i] == mixc::graph::kDynamic)
        shape[i] = d++ == 0 ? B : T;
    inputs.push_back((at::rand(shape) * 0.5).requires_grad_(true));
  }
  for (int warm = 0; warm < 2; ++warm)
    for (auto &o : mixc::rt::runRegion(bound, inputs))
      o.sum().backward();
  double t0 = now();
  {
    torch::NoGradGuard noGrad;
    for (int r = 0; r < reps; ++r)
      mixc::rt::runRegion(bound, inputs);
  }
  double t1 = now();
  for (int r = 0; r < reps; ++r) {
    at::Tensor loss;
    for (auto &o : mixc::rt::runRegion(bound, inputs))
      loss = loss.defined() ? loss + o.sum() : o.sum();
    loss.backward();
  }
  double t2 = now();
  t.forward = (t1 - t0) / reps;
  t.both = (t2 - t1) / reps;
  return true;
}
} // namespace

int main(int argc, char **argv) {
  std::string d = "64", dState = "16";
  int64_t B = 32, T = 64;
  int reps = 20, threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--d") d = v;
    else if (k == "--d-state") dState = v;
    else if (k == "--batch") B = std::stoll(v);
    else if (k == "--seq") T = std::stoll(v);
    else if (k == "--reps") reps = std::stoi(v);
    else if (k == "--threads") threads = std::stoi(v);
    else {
      std::cerr << "usage: scan_kernel [--d 64] [--d-state 16] [--batch 32] [--seq 64] [--reps 20] [--threads 1]\n";
      return 2;
    }
  }
  mixc::rt::setThreads(threads);
  std::printf("recurrence         d  B   T  primitive fwd ms  scan fwd ms  ratio  primitive fwd+bwd ms  scan fwd+bwd ms  ratio\n");
  const char *names[] = {"delta_rule", "linear_attention", "selective_scan"};
  for (int kind = 0; kind < 3; ++kind) {
    Compiled primitive, scan;
    if (!compile(kind, false, d, dState, primitive) || !compile(kind, true, d, dState, scan))
      return 1;
    Timing a, b;
    if (!timeRegion(primitive, names[kind], B, T, reps, a) || !timeRegion(scan, "scan", B, T, reps, b))
      return 1;
    std::printf("%-16s %3s %3lld %3lld %17.2f %12.2f %5.2fx %21.2f %16.2f %5.2fx\n", names[kind], d.c_str(),
                (long long)B, (long long)T, 1e3 * a.forward, 1e3 * b.forward, b.forward / a.forward, 1e3 * a.both,
                1e3 * b.both, b.both / a.both);
    std::fflush(stdout);
  }
  return 0;
}
