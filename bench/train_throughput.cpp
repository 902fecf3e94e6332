// Training throughput (tokens/s) of each stdlib architecture on AR-shaped
// batches (B = 32, T = 37), split into forward, backward and optimiser time,
// for the LibTorch interpreter and the generated CPU kernels
// (--backend=generated) in one process, on the same weights and batch.
//   build/bench/train_throughput [--d 64,128,256] [--steps 20] [--vocab 8196]
//                                [--models a,b] [--threads 1] [--backend LIST]
//                                [--batch 32] [--seq 37]
// LIST is a comma-separated subset of reference, libtorch, generated (or
// both = libtorch,generated, the default). `reference` is the LibTorch path
// with the long conv and the S4D kernel in their plain tensor-op forms
// (rt::setPlainReferences): what H3 and Hyena ran before their sweeps.
// Prints, per architecture and width, milliseconds per step, tokens/s and
// the implied time for one epoch of the paper's AR (3126 steps), the ratio
// of tokens/s to the first back end listed, and the roofline: the step's
// floating-point work (3 forwards, counted from the graph by abi/Flops.h),
// the GFLOP/s it reaches, and that as a share of this machine's FMA peak on
// the threads used (bench/Peak.h, measured first in the same process).
#include "BenchUtil.h"
#include "Peak.h"
#include "abi/Flops.h"
#include "app/Compile.h"
#include "runtime/train/FusedAdamW.h"
#include "mix/Compiler.h"
#include "runtime/core/HostMemory.h"
#include "runtime/core/Model.h"
#include "runtime/core/Primitives.h"
#include "runtime/kernels/KernelBuild.h"
#include "support/Process.h"

#include <torch/torch.h>
#include <torch/csrc/autograd/profiler_legacy.h>

#include <filesystem>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace {
using mixc::bench::now;
using mixc::bench::splitList;

struct Timing {
  double fwd = 0, bwd = 0, upd = 0; // seconds per step
  double perStep() const { return fwd + bwd + upd; }
};

/// `steps` AdamW steps (after two warm-up ones) on one fixed batch.
Timing timeTraining(mixc::rt::Model &model, const at::Tensor &tokens, const at::Tensor &target,
                    int steps) {
  torch::optim::AdamW opt(model.trainable(), torch::optim::AdamWOptions(1e-3).weight_decay(0));
  mixc::rt::Model::Options o;
  o.readout = at::full({tokens.size(0)}, tokens.size(1) - 3, at::kLong);
  Timing t;
  for (int s = -2; s < steps; ++s) {
    double t0 = now();
    at::Tensor loss = at::cross_entropy_loss(model.forward(tokens, o).squeeze(1), target);
    double t1 = now();
    opt.zero_grad();
    loss.backward();
    double t2 = now();
    mixc::train::fusedAdamWStep(opt); // the trainer's step (bench/adamw_step compares it with LibTorch's)
    double t3 = now();
    if (s >= 0)
      t.fwd += t1 - t0, t.bwd += t2 - t1, t.upd += t3 - t2;
  }
  t.fwd /= steps, t.bwd /= steps, t.upd /= steps;
  return t;
}
} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> models = {"attention", "baseconv", "based", "mamba", "deltanet", "h3", "hyena"};
  std::vector<std::string> dims = {"64", "128", "256"};
  std::string backend = "both";
  int steps = 20, batch = 32, seq = 37;
  std::string profileDir; // --profile DIR: a Chrome trace per row (bench/profile_table.py sums it)
  std::string vocab = "8196";
  int threads = 1;
  // --malloc glibc,keep: rows with glibc's own (adaptive) thresholds, then
  // as mixc runs (runtime/core/HostMemory.h). Once set, glibc's adaptive
  // thresholds cannot come back: keep rows come after the glibc ones.
  std::string malloc = "keep";
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::printf("usage: train_throughput [--d 64,128,256] [--steps 20] [--vocab 8196] "
                  "[--models a,b] [--threads 1]\n"
                  "                        [--backend reference,libtorch,generated | both] [--profile DIR]\n"
                  "                        [--batch 32] [--seq 37]   (tiny ones: the per-step overhead)\n");
      return 0;
    }
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--d") dims = splitList(v);
    else if (k == "--steps") steps = std::stoi(v);
    else if (k == "--vocab") vocab = v;
    else if (k == "--models") models = splitList(v);
    else if (k == "--batch") batch = std::stoi(v);
    else if (k == "--seq") seq = std::stoi(v);
    else if (k == "--threads") threads = std::stoi(v);
    else if (k == "--backend") backend = v;
    else if (k == "--profile") profileDir = v;
    else if (k == "--malloc") malloc = v;
    else { std::cerr << "unknown option " << k << "\n"; return 2; }
  }
  if (threads > 1) // as mixc train does: OpenMP's workers wait passively (tools/mixc/mixc.cpp)
    mixc::support::restartWithEnvironment("OMP_WAIT_POLICY", "passive");
  mixc::rt::setThreads(threads);
  std::vector<std::string> backends = splitList(backend == "both" ? "libtorch,generated" : backend);
  for (const std::string &b : backends)
    if (b != "reference" && b != "libtorch" && b != "generated") {
      std::cerr << "--backend takes reference, libtorch, generated (comma-separated) or both\n";
      return 2;
    }
  std::vector<std::string> mallocs = splitList(malloc);
  if (mallocs != std::vector<std::string>{"keep"} && mallocs != std::vector<std::string>{"glibc"} &&
      mallocs != std::vector<std::string>{"glibc", "keep"}) {
    std::cerr << "--malloc takes glibc, keep, or glibc,keep (in that order)\n";
    return 2;
  }
  const double peak = mixc::bench::fmaPeakGflops(threads);
  std::printf("# FMA peak on %d thread(s): %.1f GFLOP/s (bench/Peak.h); GFLOP = 3 x the forward's work\n",
              threads, peak);
  std::printf("%-10s %5s %10s %-9s %8s %8s %8s %10s %9s %7s %7s %8s %6s %-7s %s\n", "model", "d", "params", "backend",
              "fwd ms", "bwd ms", "opt ms", "tokens/s", "AR epoch", "ratio", "GFLOP", "GFLOP/s", "%peak",
              "regions", "malloc");
  for (const std::string &d : dims)
    for (const std::string &m : models) {
      mix::CompileResult result;
      mixc::app::ModelRequest request{std::string(MIXC_SOURCE_ROOT) + "/stdlib/" + m + ".mix", "",
                                      {{"d", d}, {"vocab", vocab}}};
      if (!mixc::app::compiler().compile(request, result, std::cerr).isOk())
        return 1;
      int64_t V = std::stoll(vocab);
      // The step's work: the trainer reads the LM head at one position a row.
      const double stepGflop = 3 * mixc::graph::forwardFlops(result.graph, batch, seq, batch).total / 1e9;
      at::Tensor tokens = at::randint(3, V - 1, {batch, seq}, at::kLong);
      at::Tensor target = at::randint(3, V - 1, {batch}, at::kLong);
      double base = 0;
      for (const std::string &alloc : mallocs)
      for (const std::string &b : backends) {
        if (alloc == "keep")
          mixc::rt::keepFreedHostMemory();
        std::string error;
        std::shared_ptr<mixc::kernels::Library> library;
        if (b == "generated" && !(library = mixc::kernels::buildLibrary(result.cpuKernels, error))) {
          std::cerr << error << "\n";
          return 1;
        }
        auto model = mixc::rt::Model::create(result.graph, error, library);
        if (!model) {
          std::cerr << error << "\n";
          return 1;
        }
        int generated = 0;
        for (const auto &[region, why] : model->regionStatus())
          generated += why.empty();
        model->initParameters(0);
        mixc::rt::setPlainReferences(b == "reference");
        Timing t;
        if (profileDir.empty()) {
          t = timeTraining(*model, tokens, target, steps);
        } else { // LibTorch's profiler: every op's time, at some cost to the totals
          std::filesystem::create_directories(profileDir);
          torch::autograd::profiler::RecordProfile guard(profileDir + "/" + m + "-d" + d + "-" + b + ".json");
          t = timeTraining(*model, tokens, target, steps);
        }
        mixc::rt::setPlainReferences(false);
        double tps = batch * seq / t.perStep();
        if (base == 0)
          base = tps;
        char ratio[16] = "";
        if (b != backends.front() || alloc != mallocs.front())
          std::snprintf(ratio, sizeof ratio, "%.2fx", tps / base);
        const double gflops = stepGflop / t.perStep();
        char regions[32];
        std::snprintf(regions, sizeof regions, "%d/%zu", generated, model->regionStatus().size());
        std::printf("%-10s %5s %10lld %-9s %8.2f %8.2f %8.2f %10.0f %8.0fs %7s %7.3f %8.2f %5.1f%% %-7s %s\n",
                    m.c_str(), d.c_str(), (long long)mixc::graph::parameterCount(result.graph), b.c_str(),
                    1e3 * t.fwd, 1e3 * t.bwd, 1e3 * t.upd, tps, 3126 * t.perStep(), ratio, stepGflop, gflops,
                    100 * gflops / peak, regions, alloc.c_str());
        std::fflush(stdout);
      }
    }
  return 0;
}
