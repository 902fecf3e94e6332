// Packed training (runtime/core/Replicas.h) against separate runs, in one
// process on the same batch: cell-steps per second of K replicas trained as
// one program (one forward, one backward, ReplicaAdamW; on LibTorch, then with
// the regions that have kernels generated) and of one model
// alone on the LibTorch and generated back ends (forward, backward,
// fusedAdamWStep), each stdlib model and width, on AR-shaped batches
// (B = 32, T = 37, readout at one position a row, as the trainer).
//   build/bench/packed_step [--models a,b] [--d 16,32,64,128] [--k 1,2,4,8,16]
//                           [--steps 10] [--vocab 8196] [--threads 1] [--profile PREFIX]
// Prints ms per step and cell-steps/s per row, and the packed rows' speed-up
// over each separate back end: K cell-steps a packed step against one a
// separate step. --profile: `steps` more steps of each run under LibTorch's
// profiler, its trace in PREFIX-<model>-d<d>-<run>.json (chrome format;
// bench/profile_top.py lists the ops by self time).
#include "BenchUtil.h"
#include "app/Compile.h"
#include "mix/Compiler.h"
#include "runtime/core/HostMemory.h"
#include "runtime/core/Model.h"
#include "runtime/core/Replicas.h"
#include "runtime/kernels/KernelBuild.h"
#include "runtime/train/FusedAdamW.h"

#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace {
using mixc::bench::now;
using mixc::bench::splitList;

struct Batch {
  at::Tensor tokens, readout, target;
};

/// `steps` more steps of `run` under the profiler, the trace in `file`
/// (nothing when `file` is empty).
template <typename Run> void profile(const std::string &file, Run run) {
  if (file.empty())
    return;
  torch::autograd::profiler::RecordProfile guard(file);
  run();
}

/// Seconds per training step of a model alone (after two warm-up steps).
double timeAlone(mixc::rt::Model &model, const Batch &b, int steps) {
  torch::optim::AdamW opt(model.trainable(), torch::optim::AdamWOptions(1e-3).weight_decay(0));
  mixc::rt::Model::Options o;
  o.readout = b.readout;
  double start = 0;
  for (int s = -2; s < steps; ++s) {
    if (s == 0)
      start = now();
    at::Tensor loss = at::cross_entropy_loss(model.forward(b.tokens, o).squeeze(1), b.target);
    opt.zero_grad();
    loss.backward();
    mixc::train::fusedAdamWStep(opt);
  }
  return (now() - start) / steps;
}

/// Seconds per training step of a pack of K (the loss: the replicas' sum).
double timePacked(mixc::rt::ReplicatedModel &pack, const Batch &b, int steps) {
  const int64_t K = pack.replicas();
  mixc::train::ReplicaAdamW opt(pack.trainable(), K);
  const std::vector<double> lr(K, 1e-3), wd(K, 0.0);
  const std::vector<bool> active(K, true);
  double start = 0;
  for (int s = -2; s < steps; ++s) {
    if (s == 0)
      start = now();
    at::Tensor logits = pack.forward(b.tokens, b.readout); // [K, B, V]
    at::Tensor loss = at::cross_entropy_loss(logits.flatten(0, 1), b.target.repeat({K}), {}, at::Reduction::Sum) /
                      static_cast<double>(b.target.size(0)); // Σ_k of each replica's mean loss
    opt.zeroGrad();
    loss.backward();
    opt.step(lr, wd, active);
  }
  return (now() - start) / steps;
}
} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> models = {"attention", "baseconv", "based", "mamba", "deltanet", "h3", "hyena"};
  std::vector<std::string> dims = {"16", "32", "64", "128"}, ks = {"1", "2", "4", "8", "16"};
  std::string vocab = "8196", profilePrefix;
  int steps = 10, threads = 1;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::printf("usage: packed_step [--models a,b] [--d 16,32,64,128] [--k 1,2,4,8,16] [--steps 10] "
                  "[--vocab 8196] [--threads 1] [--profile PREFIX]\n");
      return 0;
    }
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--d") dims = splitList(v);
    else if (k == "--k") ks = splitList(v);
    else if (k == "--steps") steps = std::stoi(v);
    else if (k == "--vocab") vocab = v;
    else if (k == "--models") models = splitList(v);
    else if (k == "--threads") threads = std::stoi(v);
    else if (k == "--profile") profilePrefix = v;
    else { std::cerr << "unknown option " << k << "\n"; return 2; }
  }
  mixc::rt::setThreads(threads);
  mixc::rt::keepFreedHostMemory(); // as mixc train runs
  const int64_t B = 32, T = 37, V = std::stoll(vocab);
  std::printf("# cell-steps/s: packed K replicas (LibTorch; gen: regions generated) against one model alone; "
              "B = %lld, T = %lld, "
              "vocab %lld, %d thread(s)\n", (long long)B, (long long)T, (long long)V, threads);
  std::printf("%-10s %4s %-18s %9s %12s %10s %10s\n", "model", "d", "run", "ms/step", "cell-steps/s",
              "vs libtorch", "vs generated");
  for (const std::string &d : dims)
    for (const std::string &m : models) {
      mix::CompileResult result;
      mixc::app::ModelRequest request{std::string(MIXC_SOURCE_ROOT) + "/stdlib/" + m + ".mix", "",
                                      {{"d", d}, {"vocab", vocab}}};
      if (!mixc::app::compiler().compile(request, result, std::cerr).isOk())
        return 1;
      torch::manual_seed(0);
      Batch b{at::randint(3, V - 1, {B, T}, at::kLong), at::full({B}, T - 3, at::kLong),
              at::randint(3, V - 1, {B}, at::kLong)};
      std::string error;
      std::shared_ptr<mixc::kernels::Library> library = mixc::kernels::buildLibrary(result.cpuKernels, error);
      if (!library) {
        std::cerr << error << "\n";
        return 1;
      }
      double alone[2];
      const char *names[2] = {"alone libtorch", "alone generated"};
      for (int g = 0; g < 2; ++g) {
        auto model = mixc::rt::Model::create(result.graph, error, g ? library : nullptr);
        model->initParameters(0);
        alone[g] = timeAlone(*model, b, steps);
        const std::string trace = profilePrefix.empty() ? "" : profilePrefix + "-" + m + "-d" + d + (g ? "-generated.json" : "-libtorch.json");
        profile(trace, [&] { timeAlone(*model, b, steps); });
        std::printf("%-10s %4s %-18s %9.2f %12.1f\n", m.c_str(), d.c_str(), names[g], 1e3 * alone[g], 1 / alone[g]);
      }
      for (const std::string &k : ks)
        for (int g = 0; g < 2; ++g) { // the pack on LibTorch, then with its regions generated
          const int64_t K = std::stoll(k);
          auto pack = mixc::rt::ReplicatedModel::create(result.graph, K, error, g ? library : nullptr);
          if (!pack) {
            std::cerr << error << "\n";
            return 1;
          }
          std::vector<uint64_t> seeds;
          for (int64_t i = 0; i < K; ++i)
            seeds.push_back(i);
          pack->initParameters(seeds);
          const double t = timePacked(*pack, b, steps), cells = K / t;
          const std::string run = "packed K=" + k + (g ? " gen" : "");
          const std::string trace = profilePrefix.empty() ? ""
              : profilePrefix + "-" + m + "-d" + d + "-packed" + k + (g ? "-generated.json" : ".json");
          profile(trace, [&] { timePacked(*pack, b, steps); });
          std::printf("%-10s %4s %-18s %9.2f %12.1f %9.2fx %11.2fx\n", m.c_str(), d.c_str(), run.c_str(), 1e3 * t,
                      cells, cells * alone[0], cells * alone[1]);
          std::fflush(stdout);
        }
    }
  return 0;
}
