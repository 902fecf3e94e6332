// AdamW step time: LibTorch's torch::optim::AdamW::step() against
// mixc::train::fusedAdamWStep (runtime/train/FusedAdamW.h) on every stdlib
// model's trainable parameters, in one process, same gradients, 1 thread.
//   build/bench/adamw_step [--steps N] [--d 64,128]
#include "BenchUtil.h"
#include "app/Compile.h"
#include "runtime/core/Model.h"
#include "runtime/train/FusedAdamW.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace {
using mixc::bench::splitList;

/// Median seconds per step over `steps` steps (after 3 warm-up steps).
template <typename Step>
double timeSteps(int steps, Step step) {
  for (int i = 0; i < 3; ++i)
    step();
  std::vector<double> t;
  for (int i = 0; i < steps; ++i) {
    auto a = std::chrono::steady_clock::now();
    step();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}
} // namespace

int main(int argc, char **argv) {
  int steps = 200;
  std::string dims = "64,128";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--steps")
      steps = std::stoi(argv[i + 1]);
    else if (k == "--d")
      dims = argv[i + 1];
  }
  at::set_num_threads(1);
  std::printf("%-10s %5s %10s %8s %12s %10s %7s\n", "model", "d", "params", "tensors", "libtorch ms", "fused ms",
              "ratio");
  for (const std::string &d : splitList(dims))
    for (const char *m : {"attention", "baseconv", "based", "h3", "hyena", "mamba", "deltanet"}) {
      mix::CompileResult result;
      mixc::app::ModelRequest request{std::string(MIXC_SOURCE_ROOT) + "/stdlib/" + m + ".mix", "",
                                      {{"d", d}, {"vocab", "8196"}}};
      if (!mixc::app::compiler().compile(request, result, std::cerr).isOk())
        return 1;
      std::string error;
      auto model = mixc::rt::Model::create(result.graph, error);
      if (!model) {
        std::cerr << error << "\n";
        return 1;
      }
      model->initParameters(0);
      std::vector<at::Tensor> params = model->trainable();
      int64_t count = 0;
      for (at::Tensor &p : params) {
        p.mutable_grad() = at::randn_like(p) * 1e-2;
        count += p.numel();
      }
      auto opts = torch::optim::AdamWOptions(1e-3).betas({0.9, 0.999}).eps(1e-8).weight_decay(0);
      torch::optim::AdamW ref(params, opts), fused(params, opts);
      double tRef = timeSteps(steps, [&] { ref.step(); });
      double tFused = timeSteps(steps, [&] { mixc::train::fusedAdamWStep(fused); });
      std::printf("%-10s %5s %10lld %8zu %12.3f %10.3f %6.2fx\n", m, d.c_str(), static_cast<long long>(count),
                  params.size(), tRef * 1e3, tFused * 1e3, tRef / tFused);
    }
  return 0;
}
