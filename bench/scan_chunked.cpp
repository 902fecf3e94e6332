// The chunked form of a linear scan (runtime/core/ScanChunked.h, LibTorch
// ops) against its sequential forms, in one process: the generated CPU
// kernel of the scan's region (the fused step loop with its derived
// backward) and the LibTorch reference loop (runScan). One layer's scan of
// GLA, RetNet and Gated DeltaNet (stdlib), forward + backward, on the same
// random inputs in [0.5, 1) (decays in range; divided by √d for Gated
// DeltaNet, whose keys must stay at norm ≤ 1), at a constant B·T; prints
// tokens/s and the chunked form's speed over each sequential one.
// delta_scan is the built-in delta rule written as a scan
// (test/DSL/Inputs/scan-equivalents.mix); its rows end with the built-in
// delta_rule's hand-written kernel on inputs of the same shapes.
//   build/bench/scan_chunked [--d 64,128] [--seq 37,256,1024,2048] [--tokens 4096] [--chunk 64]
//                            [--reps 3] [--threads 1] [--loop-max 256] [--models gla,retnet,gated_deltanet,delta_scan]
#include "BenchCompile.h"
#include "BenchUtil.h"
#include "app/Compile.h"
#include "dsl/Program.h"
#include "runtime/core/Generated.h"
#include "runtime/core/Model.h"
#include "runtime/core/Primitives.h"
#include "runtime/core/Scan.h"
#include "runtime/core/ScanChunked.h"
#include "runtime/kernels/KernelBuild.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>

namespace {
using mixc::bench::now;
using Outputs = std::vector<at::Tensor>;

/// Seconds per forward + backward of `run` (two warm-up calls first).
double timeBoth(const std::function<Outputs()> &run, int reps) {
  for (int r = 0; r < 2; ++r) { // warm-up
    at::Tensor loss;
    for (at::Tensor &o : run())
      loss = loss.defined() ? loss + o.sum() : o.sum();
    loss.backward();
  }
  const double t0 = now();
  for (int r = 0; r < reps; ++r) {
    at::Tensor loss;
    for (at::Tensor &o : run())
      loss = loss.defined() ? loss + o.sum() : o.sum();
    loss.backward();
  }
  return (now() - t0) / reps;
}

using mixc::bench::Compiled;

/// A model of one layer: compiled, with its CPU kernels built.
bool compileOne(const std::string &file, std::vector<mixc::dsl::ConfigEntry> config, Compiled &out) {
  config.push_back({"n_layers", "1"});
  return mixc::bench::compileWithKernels(file, config, out);
}

/// Random inputs in [0.5, 1) (times `scale`) for `region`'s inputs over [B, T].
std::vector<at::Tensor> regionInputs(const mixc::graph::Graph &g, const mixc::graph::Region &region, int64_t B,
                                     int64_t T, double scale) {
  const auto shapes = mixc::graph::valueShapes(g);
  std::vector<at::Tensor> inputs;
  at::manual_seed(0);
  for (const std::string &name : region.inputs) {
    std::vector<int64_t> shape = shapes.at(name);
    for (size_t i = 0, k = 0; i < shape.size(); ++i)
      if (shape[i] == mixc::graph::kDynamic)
        shape[i] = k++ == 0 ? B : T;
    inputs.push_back(((at::rand(shape) * 0.5 + 0.5) * scale).requires_grad_(true));
  }
  return inputs;
}

/// The hand-written delta_rule kernel (its region, with the fused prologue
/// the primitive's model gives it) on random inputs: tokens/s per T.
int benchDeltaPrimitive(const std::string &d, const std::vector<int64_t> &seqs, int64_t tokens, int reps) {
  Compiled c;
  if (!compileOne("test/DSL/Inputs/scan-equivalents.mix", {{"kind", "0"}, {"use_scan", "false"}, {"d", d}}, c))
    return 1;
  const mixc::graph::Region *region = nullptr;
  for (const mixc::graph::Region &r : c.result.graph.regions)
    if (r.kind == "delta_rule")
      region = &r;
  mixc::rt::BoundRegion bound;
  if (!region || !mixc::rt::bindRegion(c.result.graph, *region, *c.library, bound).empty())
    return 1;
  for (int64_t T : seqs) {
    const int64_t B = std::max<int64_t>(1, tokens / T);
    std::vector<at::Tensor> inputs = regionInputs(c.result.graph, *region, B, T, 1 / std::sqrt(std::stod(d)));
    const double t = timeBoth([&] { return mixc::rt::runRegion(bound, inputs); }, reps);
    std::printf("%-14s %4s %5lld %5lld      - %14.0f   (the built-in delta_rule's hand-written kernel)\n",
                "delta_rule", d.c_str(), (long long)B, (long long)T, static_cast<double>(B * T) / t);
    std::fflush(stdout);
  }
  return 0;
}

int benchModel(const std::string &arch, const std::string &d, const std::vector<int64_t> &seqs, int64_t tokens,
               int64_t chunk, int reps, int64_t loopMax) {
  // The delta rule written as a scan (test/DSL/Inputs/scan-equivalents.mix), beside the stdlib's scans.
  Compiled c;
  const bool deltaScan = arch == "delta_scan";
  if (!(deltaScan ? compileOne("test/DSL/Inputs/scan-equivalents.mix", {{"kind", "0"}, {"use_scan", "true"}, {"d", d}}, c)
                  : compileOne("stdlib/" + arch + ".mix", {{"d", d}}, c)))
    return 1;
  const auto &library = c.library;
  const mixc::graph::Graph &g = c.result.graph;
  const mixc::graph::Node *scan = nullptr;
  for (const mixc::graph::Node &n : g.nodes)
    if (n.op == "scan")
      scan = &n;
  const mixc::graph::Region *region = nullptr;
  for (const mixc::graph::Region &r : g.regions)
    if (r.kind == "scan")
      region = &r;
  std::optional<mixc::graph::ChunkPlan> plan = scan ? mixc::rt::chunkPlanOf(*scan) : std::nullopt;
  mixc::rt::BoundRegion bound;
  if (!scan || !region || !plan || !mixc::rt::bindRegion(g, *region, *library, bound).empty()) {
    std::cerr << arch << ": no scan region with a kernel and a chunk plan\n";
    return 1;
  }
  for (int64_t T : seqs) {
    const int64_t B = std::max<int64_t>(1, tokens / T);
    // The delta rule's keys at norm <= 1 (its recurrence stays bounded): every input / √d.
    const double scale = arch == "gated_deltanet" || deltaScan ? 1 / std::sqrt(std::stod(d)) : 1;
    std::vector<at::Tensor> inputs = regionInputs(g, *region, B, T, scale);
    const double kernel = timeBoth([&] { return mixc::rt::runRegion(bound, inputs); }, reps);
    const double chunked = timeBoth([&] { return mixc::rt::runScanChunked(inputs, *scan, *plan, chunk); }, reps);
    const double loop = T <= loopMax ? timeBoth([&] { return mixc::rt::runScan(inputs, *scan); }, reps) : 0;
    const double tok = static_cast<double>(B * T);
    const std::string overLoop = loop > 0 ? std::to_string(loop / chunked).substr(0, 5) + "x" : "-";
    std::printf("%-7s %4s %5lld %5lld %6lld %14.0f %14.0f %14.0f %10.2fx %10s\n", arch.c_str(), d.c_str(),
                (long long)B, (long long)T, (long long)chunk, tok / kernel, tok / chunked, loop > 0 ? tok / loop : 0.0,
                kernel / chunked, overLoop.c_str());
    std::fflush(stdout);
  }
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> widths = {"64", "128"};
  std::vector<std::string> archs = {"gla", "retnet", "gated_deltanet", "delta_scan"};
  std::vector<int64_t> seqs = {37, 256, 1024, 2048};
  int64_t tokens = 4096, chunk = 64, loopMax = 256;
  int reps = 3, threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--d") widths = mixc::bench::splitList(v);
    else if (k == "--seq") {
      seqs.clear();
      for (const std::string &s : mixc::bench::splitList(v))
        seqs.push_back(std::stoll(s));
    } else if (k == "--tokens") tokens = std::stoll(v);
    else if (k == "--chunk") chunk = std::stoll(v);
    else if (k == "--reps") reps = std::stoi(v);
    else if (k == "--threads") threads = std::stoi(v);
    else if (k == "--loop-max") loopMax = std::stoll(v);
    else if (k == "--models") archs = mixc::bench::splitList(v);
    else {
      std::cerr << "usage: scan_chunked [--d 64,128] [--seq 37,256,1024,2048] [--tokens 4096] [--chunk 64] "
                   "[--reps 3] [--threads 1] [--loop-max 256] [--models gla,retnet,gated_deltanet,delta_scan]\n";
      return 2;
    }
  }
  mixc::rt::setThreads(threads);
  std::printf("forward + backward of one scan, tokens/s (B·T = %lld)\n", (long long)tokens);
  std::printf("model      d     B     T  chunk  kernel (seq.)   chunked (LT)      loop (LT)  chunked speed: ×kernel  ×loop\n");
  for (const std::string &arch : archs)
    for (const std::string &d : widths)
      if (int rc = benchModel(arch, d, seqs, tokens, chunk, reps, loopMax))
        return rc;
  if (std::find(archs.begin(), archs.end(), "delta_scan") != archs.end())
    for (const std::string &d : widths)
      if (int rc = benchDeltaPrimitive(d, seqs, tokens, reps))
        return rc;
  return 0;
}
