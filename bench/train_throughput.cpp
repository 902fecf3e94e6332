// Training throughput (tokens/s) of each stdlib architecture on AR-shaped
// batches (B = 32, T = 37), split into forward, backward and optimiser time.
//   build/bench/train_throughput [--d 64,128] [--steps 20] [--vocab 8196] [--models a,b] [--threads 1]
// Prints, per architecture and width, milliseconds per step and tokens/s, and
// the implied time for one epoch of the paper's AR (3126 steps).
#include "dsl/Frontend.h"
#include "mix/Compiler.h"
#include "runtime/core/Model.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace {
std::vector<std::string> splitList(const std::string &s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    out.push_back(item);
  return out;
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> models = {"attention", "baseconv", "based", "mamba", "deltanet", "h3", "hyena"};
  std::vector<std::string> dims = {"64", "128"};
  int steps = 20, batch = 32, seq = 37;
  std::string vocab = "8196";
  int threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--d") dims = splitList(v);
    else if (k == "--steps") steps = std::stoi(v);
    else if (k == "--vocab") vocab = v;
    else if (k == "--models") models = splitList(v);
    else if (k == "--threads") threads = std::stoi(v);
    else { std::cerr << "unknown option " << k << "\n"; return 2; }
  }
  mixc::rt::setThreads(threads);
  std::printf("%-10s %5s %10s %9s %9s %9s %12s %10s\n", "model", "d", "params", "fwd ms", "bwd ms",
              "opt ms", "tokens/s", "AR epoch");
  for (const std::string &d : dims)
    for (const std::string &m : models) {
      mixc::dsl::Frontend fe({MIXC_SOURCE_ROOT});
      std::string path = std::string(MIXC_SOURCE_ROOT) + "/stdlib/" + m + ".mix";
      if (!fe.load(path, std::cerr))
        return 1;
      auto program = fe.elaborate("", {{"d", d}, {"vocab", vocab}}, std::cerr);
      mix::CompileResult result;
      if (!program || !mix::compileProgram(*program, fe.sources(), mix::Stage::Lowered, result, std::cerr))
        return 1;
      std::string error;
      auto model = mixc::rt::Model::create(result.graph, error);
      if (!model) {
        std::cerr << error << "\n";
        return 1;
      }
      model->initParameters(0);
      torch::optim::AdamW opt(model->trainable(), torch::optim::AdamWOptions(1e-3).weight_decay(0));
      int64_t V = std::stoll(vocab);
      at::Tensor tokens = at::randint(3, V - 1, {batch, seq}, at::kLong);
      at::Tensor target = at::randint(3, V - 1, {batch}, at::kLong);
      mixc::rt::Model::Options o;
      o.readout = at::full({batch}, seq - 3, at::kLong);
      double fwd = 0, bwd = 0, upd = 0;
      for (int s = -2; s < steps; ++s) { // two warm-up steps
        double t0 = now();
        at::Tensor loss = at::cross_entropy_loss(model->forward(tokens, o).squeeze(1), target);
        double t1 = now();
        opt.zero_grad();
        loss.backward();
        double t2 = now();
        opt.step();
        double t3 = now();
        if (s >= 0)
          fwd += t1 - t0, bwd += t2 - t1, upd += t3 - t2;
      }
      double per = (fwd + bwd + upd) / steps;
      std::printf("%-10s %5s %10lld %9.2f %9.2f %9.2f %12.0f %9.0fs\n", m.c_str(), d.c_str(),
                  (long long)mixc::graph::parameterCount(result.graph), 1e3 * fwd / steps,
                  1e3 * bwd / steps, 1e3 * upd / steps, batch * seq / per, 3126 * per);
      std::fflush(stdout);
    }
  return 0;
}
