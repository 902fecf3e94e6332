//===- cuda_check.cpp - generated kernels on a device vs the LibTorch path --===//
//
// For each model in DIR (<arch>.graph.json + <arch>.cu, written by
// `bench/cuda_check.sh prepare` with mixc), on one AR-shaped batch:
//
//   reference  the LibTorch interpreter on the CPU (one op per node)
//   generated  every fused region through the generated kernels of the
//              chosen device (CUDA: <arch>.cu built with nvcc through
//              KernelBuild; --device cpu: <arch>.cpp, to check this program
//              itself on a machine without a GPU)
//
// and prints the max abs error of the logits and of every parameter's
// gradient (same weights, same tokens, loss = Σ logits ⊙ W for a fixed
// random W), then the time of one forward + backward each way, the
// interpreter on the device too where it runs there (the recurrences'
// LibTorch path is a host loop, so not for Mamba/DeltaNet), as ratios.
// For the recurrences it then times the generated region (scan or delta
// rule with its fused prologue/epilogue) against the natural peer, the
// chunked PyTorch form (Peers.h), after checking that peer against the
// runtime's reference sweep.
//
// Links the runtime only (no MLIR): it builds on the device machine against
// python's CUDA LibTorch (the runtime-only configuration: bench/cuda_check.sh).
//
//===----------------------------------------------------------------------===//
#include "Peers.h"
#include "runtime/core/Generated.h"
#include "runtime/core/Model.h"
#include "abi/Graph.h"
#include "runtime/kernels/KernelBuild.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using mixc::rt::Model;
namespace kernels = mixc::kernels;

namespace {
struct Options {
  std::string dir;
  std::string device = "cuda";
  std::vector<std::string> archs = {"attention", "baseconv", "based",         "mamba",  "deltanet",
                                    "h3",        "hyena",    "gla", "gated_deltanet", "retnet"};
  int64_t batch = 32, seqLen = 64;
  int iters = 10;
};

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return in ? ss.str() : "";
}

void sync(const at::Tensor &t) {
  // A copy to the host waits for the device's stream (torch::cuda::
  // synchronize is not in every LibTorch build).
  (void)t.sum().item<float>();
}

struct Pass {
  at::Tensor logits;
  std::vector<at::Tensor> grads;
};

/// One forward + backward of loss = Σ logits ⊙ W.
Pass run(Model &m, const at::Tensor &tokens, const at::Tensor &weight) {
  for (at::Tensor &p : m.trainable())
    p.mutable_grad() = at::Tensor();
  at::Tensor logits = m.forward(tokens);
  (logits * weight).sum().backward();
  Pass out{logits.detach(), {}};
  for (const at::Tensor &p : m.trainable())
    out.grads.push_back(p.grad().defined() ? p.grad().detach() : at::zeros_like(p));
  return out;
}

/// Median seconds of fn() over `iters` runs after one warm-up (fn ends in
/// a `sync`).
template <typename Fn> double median(int iters, Fn fn) {
  std::vector<double> t;
  for (int i = 0; i <= iters; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i > 0)
      t.push_back(s);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// One forward + backward of the model, timed.
double timePass(Model &m, const at::Tensor &tokens, const at::Tensor &weight, int iters) {
  return median(iters, [&] { sync(run(m, tokens, weight).grads.back()); });
}

double maxAbs(const at::Tensor &a, const at::Tensor &b) {
  return (a.cpu() - b.cpu()).abs().max().item<double>();
}

/// A tensor for a value of `shape` with the run-time dims set to B, T.
std::vector<int64_t> concrete(std::vector<int64_t> shape, int64_t B, int64_t T) {
  int dyn = 0;
  for (int64_t &d : shape)
    if (d == mixc::graph::kDynamic)
      d = dyn++ == 0 ? B : T;
  return shape;
}

/// Inputs of the anchor node in a shape the recurrence stays finite on.
std::vector<at::Tensor> anchorInputs(const std::string &op, const std::vector<std::vector<int64_t>> &shapes,
                                     const at::TensorOptions &opts) {
  std::vector<at::Tensor> in;
  for (const auto &s : shapes)
    in.push_back(at::randn(s, opts));
  if (op == "selective_scan") {
    in[1] = at::softplus(in[1]) * 0.5; // Δ > 0
    in[2] = -at::exp(in[2] * 0.5);     // A < 0
  } else if (op == "linear_attention") {
    in[0] = in[0].abs() * 0.3; // non-negative features: the denominator stays away from 0
    in[1] = in[1].abs() * 0.3;
  } else {
    in[0] = in[0] / in[0].norm(2, -1, true); // q, k unit (DeltaNet's l2norm)
    in[1] = in[1] / in[1].norm(2, -1, true);
    in[3] = at::sigmoid(in[3]); // β in (0, 1)
  }
  return in;
}

at::Tensor peer(const std::string &op, const std::vector<at::Tensor> &in, int64_t chunk) {
  if (op == "selective_scan")
    return mixc::peers::chunkedSelectiveScan(in[0], in[1], in[2], in[3], in[4], in[5], chunk);
  if (op == "linear_attention")
    return mixc::peers::chunkedLinearAttention(in[0], in[1], in[2], 1e-12, chunk);
  return mixc::peers::chunkedDeltaRule(in[0], in[1], in[2], in[3], chunk);
}

/// The first scan / delta-rule / linear-attention region: generated kernel
/// vs the chunked peer.
int checkPeer(const Options &o, const mixc::graph::Graph &g, const kernels::Library &library,
              const at::Device &device) {
  auto shapes = mixc::graph::valueShapes(g);
  for (const mixc::graph::Region &r : g.regions) {
    if (r.kind != "selective_scan" && r.kind != "delta_rule" && r.kind != "linear_attention")
      continue;
    const mixc::graph::Node *anchor = nullptr;
    for (const mixc::graph::Node &n : g.nodes)
      if (n.op == r.kind && n.attrs.count("fused") && n.attrs.at("fused").s == r.name)
        anchor = &n;
    if (!anchor)
      return 0;
    const int64_t chunk = 16;
    // The peer against the runtime's reference sweep, on the CPU.
    std::vector<std::vector<int64_t>> small, big;
    for (const std::string &v : anchor->inputs) {
      small.push_back(concrete(shapes.at(v), 2, 37));
      big.push_back(concrete(shapes.at(v), o.batch, o.seqLen));
    }
    std::vector<at::Tensor> in = anchorInputs(r.kind, small, at::TensorOptions().dtype(at::kFloat));
    double err = (peer(r.kind, in, chunk) - mixc::rt::runPrimitive(*anchor, in)[0]).abs().max().item<double>();
    // Timing on the device: the peer on the bare recurrence, the region with its prologue.
    std::vector<at::Tensor> pin = anchorInputs(r.kind, big, at::TensorOptions().dtype(at::kFloat));
    for (at::Tensor &t : pin)
      t = t.to(device).set_requires_grad(true);
    double tPeer = median(o.iters, [&] {
      at::Tensor y = peer(r.kind, pin, chunk);
      y.backward(at::ones_like(y));
      sync(pin[0].grad());
    });
    mixc::rt::BoundRegion bound;
    if (std::string why = mixc::rt::bindRegion(g, r, library, bound); !why.empty()) {
      std::printf("%-10s   peer: region %s has no kernel (%s)\n", "", r.name.c_str(), why.c_str());
      return 0;
    }
    std::vector<at::Tensor> rin;
    for (const std::string &v : r.inputs)
      rin.push_back((at::randn(concrete(shapes.at(v), o.batch, o.seqLen)) * 0.5).to(device).set_requires_grad(true));
    double tGen = median(o.iters, [&] {
      std::vector<at::Tensor> out = mixc::rt::runRegion(bound, rin);
      out[0].backward(at::ones_like(out[0]));
      sync(rin[0].grad());
    });
    std::printf("%-10s   %s region fwd+bwd: generated %8.3f ms | chunked peer (L=%lld) %8.3f ms "
                "(%5.2fx) | peer vs reference sweep: max abs err %.2e %s\n",
                "", r.kind.c_str(), tGen * 1e3, static_cast<long long>(chunk), tPeer * 1e3, tPeer / tGen, err,
                err < 1e-3 ? "ok" : "MISMATCH");
    return err < 1e-3 ? 0 : 1;
  }
  return 0;
}

int checkModel(const Options &o, const std::string &arch, const at::Device &device) {
  const bool cuda = device.is_cuda();
  std::string json = readFile(o.dir + "/" + arch + ".graph.json");
  std::string source = readFile(o.dir + "/" + arch + (cuda ? ".cu" : ".cpp"));
  if (json.empty() || source.empty()) {
    std::printf("%-10s missing %s.graph.json or its kernel source in %s\n", arch.c_str(), arch.c_str(),
                o.dir.c_str());
    return 1;
  }
  mixc::graph::Graph g;
  std::string error;
  if (!mixc::graph::fromJson(json, g, error)) {
    std::printf("%-10s bad graph: %s\n", arch.c_str(), error.c_str());
    return 1;
  }
  auto start = std::chrono::steady_clock::now();
  auto library = kernels::buildLibrary(source, error, cuda ? kernels::Target::Cuda : kernels::Target::Cpu);
  if (!library) {
    std::printf("%-10s kernel build failed: %s\n", arch.c_str(), error.c_str());
    return 1;
  }
  double buildSec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto reference = Model::create(g, error);
  auto generated = reference ? Model::create(g, error, library) : nullptr;
  auto interpOnDevice = reference ? Model::create(g, error) : nullptr;
  if (!generated || !interpOnDevice) {
    std::printf("%-10s %s\n", arch.c_str(), error.c_str());
    return 1;
  }
  reference->initParameters(7);
  generated->initParameters(7);
  interpOnDevice->initParameters(7);
  generated->to(device);
  interpOnDevice->to(device);
  int regions = 0, fast = 0;
  for (const auto &[name, why] : generated->regionStatus()) {
    ++regions;
    fast += why.empty();
  }

  at::manual_seed(11);
  int64_t vocab = 0;
  for (const auto &[key, value] : g.config)
    if (key == "vocab")
      vocab = std::stoll(value);
  if (vocab <= 0) {
    std::printf("%-10s the graph's config has no vocab\n", arch.c_str());
    return 1;
  }
  at::Tensor tokens = at::randint(0, vocab, {o.batch, o.seqLen}, at::kLong);
  at::Tensor probe;
  {
    torch::NoGradGuard noGrad;
    probe = reference->forward(tokens);
  }
  at::Tensor weight = at::randn(probe.sizes()) / std::sqrt(double(probe.numel()));
  Pass ref = run(*reference, tokens, weight);
  at::Tensor tokensDev = tokens.to(device), weightDev = weight.to(device);
  Pass gen = run(*generated, tokensDev, weightDev);

  double logitErr = maxAbs(gen.logits, ref.logits), gradErr = 0, gradScale = 0;
  for (size_t i = 0; i < ref.grads.size(); ++i) {
    gradErr = std::max(gradErr, maxAbs(gen.grads[i], ref.grads[i]));
    gradScale = std::max(gradScale, ref.grads[i].abs().max().item<double>());
  }
  double tRef = timePass(*reference, tokens, weight, std::max(1, o.iters / 5));
  double tGen = timePass(*generated, tokensDev, weightDev, o.iters);
  std::string devInterp = "n/a (host-loop primitive)";
  try {
    double tDev = timePass(*interpOnDevice, tokensDev, weightDev, o.iters);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%8.2f ms (%5.2fx)", tDev * 1e3, tDev / tGen);
    devInterp = buf;
  } catch (const c10::Error &) {
  }
  const bool ok = logitErr <= 1e-3 * std::max(1.0, ref.logits.abs().max().item<double>()) &&
                  gradErr <= 1e-3 * std::max(1.0, gradScale);
  std::printf("%-10s %d/%d regions  logits err %.2e  grads err %.2e (max |g| %.2e)  %s\n", arch.c_str(),
              fast, regions, logitErr, gradErr, gradScale, ok ? "ok" : "MISMATCH");
  std::printf("%-10s   fwd+bwd: generated %8.2f ms | CPU interpreter %8.2f ms (%6.2fx) | "
              "interpreter on %s %s | build %.1f s\n",
              "", tGen * 1e3, tRef * 1e3, tRef / tGen, cuda ? "CUDA" : "CPU", devInterp.c_str(),
              buildSec);
  std::fflush(stdout);
  int peerFailed = checkPeer(o, g, *library, device);
  return ok && !peerFailed ? 0 : 1;
}

int usage() {
  std::fprintf(stderr, "usage: cuda_check DIR [--device cuda|cpu] [--arch A]... [--batch B] [--seq T] "
                       "[--iters N]\n");
  return 2;
}
} // namespace

int main(int argc, char **argv) {
  Options o;
  std::vector<std::string> archs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--device")
      o.device = next();
    else if (a == "--arch")
      archs.push_back(next());
    else if (a == "--batch")
      o.batch = std::stoll(next());
    else if (a == "--seq")
      o.seqLen = std::stoll(next());
    else if (a == "--iters")
      o.iters = std::stoi(next());
    else if (!a.empty() && a[0] != '-' && o.dir.empty())
      o.dir = a;
    else
      return usage();
  }
  if (o.dir.empty() || (o.device != "cuda" && o.device != "cpu"))
    return usage();
  if (!archs.empty())
    o.archs = archs;
  if (o.device == "cuda" && !torch::cuda::is_available()) {
    std::fprintf(stderr, "cuda_check: this LibTorch sees no CUDA device (--device cpu checks the "
                         "CPU kernels instead)\n");
    return 1;
  }
  at::Device device(o.device == "cuda" ? at::kCUDA : at::kCPU);
  mixc::rt::setThreads(1);
  std::printf("cuda_check: %s, batch %lld x %lld tokens, kernels from %s\n", o.device.c_str(),
              static_cast<long long>(o.batch), static_cast<long long>(o.seqLen), o.dir.c_str());
  int failures = 0;
  for (const std::string &arch : o.archs) {
    try {
      failures += checkModel(o, arch, device);
    } catch (const c10::Error &e) {
      std::printf("%-10s error: %s\n", arch.c_str(), e.what_without_backtrace());
      ++failures;
    }
  }
  std::printf("cuda_check: %d of %zu models failed\n", failures, o.archs.size());
  return failures ? 1 : 0;
}
