// The DSL's `scan` construct against the hand-written recurrences: the delta
// rule, Based's linear attention and Mamba's selective scan, written as
// scans in test/DSL/Inputs/scan-equivalents.mix, give the primitives' outputs
// and the same gradients for every parameter (LibTorch's autograd through
// the scan's step loop against the primitives' hand-derived backward).
#include "TestModels.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <map>
#include <random>
#include <sstream>

using mixc::rt::Model;
namespace graph = mixc::graph;

namespace {
mix::CompileResult compileEquivalentResult(int kind, bool useScan) {
  return compileMixFile("test/DSL/Inputs/scan-equivalents.mix",
                        {{"kind", std::to_string(kind)}, {"use_scan", useScan ? "true" : "false"}});
}
graph::Graph compileEquivalent(int kind, bool useScan) { return compileEquivalentResult(kind, useScan).graph; }

/// Where both models run: the LibTorch path (the scan's reference loop), the
/// generated CPU kernels (the scan's fused step and derived backward, the
/// primitive's hand-written templates), or the generated CUDA source
/// compiled for the host.
enum class Backend { LibTorch, Generated, CudaOnHost };
std::shared_ptr<mixc::kernels::Library> libraryFor(Backend backend, const mix::CompileResult &r) {
  if (backend == Backend::LibTorch)
    return nullptr;
  setenv("MIXC_KERNEL_CACHE", MIXC_TEST_KERNEL_CACHE, /*overwrite=*/0);
  std::string error;
  auto library = mixc::kernels::buildLibrary(
      backend == Backend::CudaOnHost ? "#define MIXK_CUDA_ON_HOST\n" + r.cudaKernels : r.cpuKernels, error);
  EXPECT_TRUE(library) << error;
  return library;
}
/// A batch for intervention cells (the layout Model::Interventions reads):
/// `keys.size()` random source documents of T tokens, as many base ones,
/// then a copy of the base block per cell; options with each document's key.
struct CellBatch {
  at::Tensor tokens;
  Model::Options options;
  int64_t docs = 0;
};
CellBatch cellBatch(int64_t T, const std::vector<int64_t> &keys, int64_t cells) {
  CellBatch b;
  b.docs = static_cast<int64_t>(keys.size());
  at::Tensor source = at::randint(3, 20, {b.docs, T}, at::kLong), base = at::randint(3, 20, {b.docs, T}, at::kLong);
  std::vector<at::Tensor> blocks = {source, base};
  for (int64_t c = 0; c < cells; ++c)
    blocks.push_back(base);
  b.tokens = at::cat(blocks, 0);
  Model::Interventions iv;
  iv.docs = b.docs;
  iv.roles["key"] = at::tensor(keys, at::kLong);
  b.options.interventions = iv;
  return b;
}
} // namespace

class ScanEquivalence : public ::testing::TestWithParam<std::tuple<int, Backend>> {};

TEST_P(ScanEquivalence, ValuesAndGradientsMatchThePrimitive) {
  const auto [kind, backend] = GetParam();
  mix::CompileResult primitive = compileEquivalentResult(kind, false), scan = compileEquivalentResult(kind, true);
  int scans = 0;
  for (const graph::Node &n : scan.graph.nodes)
    scans += n.op == "scan";
  ASSERT_EQ(scans, 2) << "one scan a layer";
  auto a = model(primitive.graph, libraryFor(backend, primitive)), b = model(scan.graph, libraryFor(backend, scan));
  ASSERT_TRUE(a && b);
  if (backend != Backend::LibTorch) { // the scans run their kernels, not the reference loop
    int kernels = 0;
    for (const auto &[region, why] : b->regionStatus())
      if (region.find("_mixer.scan") != std::string::npos) {
        EXPECT_EQ(why, "") << region;
        ++kernels;
      }
    EXPECT_EQ(kernels, 2) << "one scan region a layer";
  }
  a->initParameters(11);
  ASSERT_EQ(a->tensors().size(), b->tensors().size()) << "the same parameters";
  copyWeights(*a, *b);
  // T = 21 crosses the scan kernel's checkpoint chunk (16 steps); 2 threads
  // split the batch and sum the invariant inputs' gradients over partials.
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads = " + std::to_string(threads));
    at::set_num_threads(threads);
    for (auto *m : {a.get(), b.get()})
      for (const auto &[name, w] : m->tensors())
        if (w.grad().defined())
          w.mutable_grad().zero_();
    at::manual_seed(12);
    at::Tensor tokens = at::randint(3, 20, {3, 21}, at::kLong), w = at::randn({3, 21, 20});
    at::Tensor ya = a->forward(tokens), yb = b->forward(tokens);
    EXPECT_LT(relativeDifference(yb, ya), 1e-5) << "forward";
    (ya * w).sum().backward();
    (yb * w).sum().backward();
    std::map<std::string, at::Tensor> gradA;
    for (const auto &[name, t] : a->tensors())
      gradA[name] = t.grad();
    for (const auto &[name, t] : b->tensors()) {
      if (!gradA.at(name).defined()) {
        EXPECT_FALSE(t.grad().defined() && t.grad().abs().max().item<double>() > 0) << name;
        continue;
      }
      ASSERT_TRUE(t.grad().defined()) << name << " has no gradient through the scan";
      EXPECT_LT(relativeDifference(t.grad(), gradA.at(name)), 1e-4) << name;
    }
  }
  at::set_num_threads(1);
}

INSTANTIATE_TEST_SUITE_P(
    Recurrences, ScanEquivalence,
    ::testing::Combine(::testing::Values(0, 1, 2),
                       ::testing::Values(Backend::LibTorch, Backend::Generated, Backend::CudaOnHost)),
    [](const auto &i) {
      const int kind = std::get<0>(i.param);
      const Backend backend = std::get<1>(i.param);
      return std::string(kind == 0 ? "DeltaRule" : kind == 1 ? "LinearAttention" : "SelectiveScan") +
             (backend == Backend::LibTorch ? "" : backend == Backend::Generated ? "_generated" : "_cuda_on_host");
    });


// A scan's state is an intervention point: `patch | zero | mean NAME at key`
// on the delta rule's scan gives, from the step after the key on, what the
// same edit of the built-in delta_rule's state gives (an independent implementation);
// up to the key the cell's rows are the base run's. (At the key itself the
// built-in's output already sees the patched state, the scan's does not:
// Scan.h.)
class ScanStateEdit : public ::testing::TestWithParam<const char *> {};

TEST_P(ScanStateEdit, MatchesTheBuiltInRecurrenceAfterTheStep) {
  at::set_num_threads(1);
  const std::string mode = GetParam();
  graph::Graph primitive = rewrite(compileEquivalent(0, false), mode + " layers[0].mixer.state at key\n");
  graph::Graph scan = rewrite(compileEquivalent(0, true), mode + " layers[0].mixer.delta_scan_mixer.S at key\n");
  auto a = model(primitive), b = model(scan);
  ASSERT_TRUE(a && b);
  a->initParameters(21);
  copyWeights(*a, *b);
  torch::NoGradGuard noGrad;
  at::manual_seed(22);
  const CellBatch batch = cellBatch(10, {2, 4, 6}, 1);
  const int64_t docs = batch.docs;
  auto layer0 = [&](const Model &m) {
    at::Tensor value;
    Model::Options with = batch.options;
    with.observe = [&](const std::string &name, const at::Tensor &v) {
      if (name == "layers[0].mixer.o")
        value = v.clone();
    };
    m.forward(batch.tokens, with);
    return value;
  };
  at::Tensor pa = layer0(*a), pb = layer0(*b);
  ASSERT_TRUE(pa.defined() && pb.defined());
  for (int64_t d = 0; d < docs; ++d) {
    const int64_t key = batch.options.interventions->roles.at("key")[d].item<int64_t>();
    at::Tensor cellA = pa[2 * docs + d], cellB = pb[2 * docs + d], baseB = pb[docs + d];
    EXPECT_LT(relativeDifference(cellB.slice(0, key + 1), cellA.slice(0, key + 1)), 1e-5) << "doc " << d;
    EXPECT_LT(relativeDifference(cellB.slice(0, 0, key + 1), baseB.slice(0, 0, key + 1)), 1e-6) << "doc " << d;
    EXPECT_GT(relativeDifference(cellB.slice(0, key + 1), baseB.slice(0, key + 1)), 1e-4)
        << "the " << mode << " changed nothing after the key (doc " << d << ")";
  }
}

// patch takes the source row's state; zero and mean (over the source run's
// states at each document's key) need no source row at the same step.
INSTANTIATE_TEST_SUITE_P(Modes, ScanStateEdit, ::testing::Values("patch", "zero", "mean"));

// The step's own values are intervention points too: patching the emitted
// value `scan.o` at the key (inside the loop, at step P) is the same as
// patching the scan's output over time at the key (a [B, T, ...] node, by the
// ordinary patch): both replace that one output and leave the state alone.
TEST(ScanState, PatchingAStepValueEqualsPatchingTheOutputAtThatStep) {
  at::set_num_threads(1);
  graph::Graph inside = rewrite(compileEquivalent(0, true), "patch layers[0].mixer.delta_scan_mixer.scan.o at key\n");
  graph::Graph outside = rewrite(compileEquivalent(0, true), "patch layers[0].mixer.delta_scan_mixer.scan at key\n");
  auto a = model(inside), b = model(outside);
  ASSERT_TRUE(a && b);
  a->initParameters(31);
  copyWeights(*a, *b);
  torch::NoGradGuard noGrad;
  at::manual_seed(32);
  const CellBatch batch = cellBatch(9, {1, 3, 5}, 1);
  const int64_t docs = batch.docs;
  at::Tensor la = a->forward(batch.tokens, batch.options), lb = b->forward(batch.tokens, batch.options);
  EXPECT_LT(relativeDifference(la, lb), 1e-5);
  EXPECT_GT(relativeDifference(la.slice(0, 2 * docs), la.slice(0, docs, 2 * docs)), 1e-4) << "the patch changed nothing";
}

// The backward the compiler derives for a scan's step, on random steps: a
// generator writes scans whose state update and output are random
// expressions over the DSL's step operations (elementwise arithmetic and
// activations, outer, matvec, vecmat, column, sum, l2norm, a loop-invariant
// parameter, two states), two per model (one a layer). The generated CPU
// kernels must give the reference loop's logits and gradients, and their
// directional derivative along a random direction of every parameter must
// match a central finite difference of the kernels' own forward.
namespace {
class RandomStep {
public:
  explicit RandomStep(unsigned seed) : rng(seed) {}

  /// A mixer named `name` whose scan has a random step (S [3, 4], z [3]).
  std::string mixer(const std::string &name) {
    std::string s = "mixer " + name + "(d: int, n_layers: int) {\n"
                    "  input x: [B, T, d]\n"
                    "  let a = linear(x, 3, bias = false)\n"
                    "  let b = linear(x, 4, bias = false)\n"
                    "  let c = sigmoid(linear(x, 3))\n"
                    "  let P = param([3, 4], init = normal(0.5))\n"
                    "  scan t with state S: [3, 4] = zeros, z: [3] = zeros {\n";
    // sin(...) keeps each step's increment bounded; c ∈ (0, 1) decays.
    s += "    S = column(c[t]) * S + sin(" + mat(3) + ")\n";
    s += "    z = c[t] * z + sin(" + rows(2) + ")\n";
    s += "    emit y = " + cols(3) + " + vecmat(z, S)\n";
    s += "  }\n  return linear(y, d, bias = false)\n}\n\n";
    return s;
  }

private:
  int pick(int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); } // the same on every library
  std::string unary() {
    const char *ops[] = {"sigmoid", "silu", "sin", "softplus", "gelu"};
    return ops[pick(5)];
  }
  // [3, 4] values.
  std::string mat(int depth) {
    if (depth == 0 || pick(4) == 0) {
      const char *atoms[] = {"S", "outer(a[t], b[t])", "column(c[t]) * S", "P"};
      return atoms[pick(4)];
    }
    switch (pick(6)) {
    case 0: return "(" + mat(depth - 1) + " + " + mat(depth - 1) + ")";
    case 1: return "(" + mat(depth - 1) + " - " + mat(depth - 1) + ")";
    case 2: return "(" + mat(depth - 1) + " * " + mat(depth - 1) + ")";
    case 3: return unary() + "(" + mat(depth - 1) + ")";
    case 4: return "column(" + rows(depth - 1) + ") * " + mat(depth - 1);
    default: return "outer(" + rows(depth - 1) + ", " + cols(depth - 1) + ")";
    }
  }
  // [3] values.
  std::string rows(int depth) {
    if (depth == 0 || pick(3) == 0) {
      const char *atoms[] = {"a[t]", "c[t]", "z"};
      return atoms[pick(3)];
    }
    switch (pick(4)) {
    case 0: return "matvec(" + mat(depth - 1) + ", b[t])";
    case 1: return unary() + "(" + rows(depth - 1) + ")";
    case 2: return "l2norm(" + rows(depth - 1) + ")";
    default: return "(" + rows(depth - 1) + " * " + rows(depth - 1) + ")";
    }
  }
  // [4] values.
  std::string cols(int depth) {
    if (depth == 0 || pick(3) == 0)
      return "b[t]";
    switch (pick(3)) {
    case 0: return "vecmat(a[t], " + mat(depth - 1) + ")";
    case 1: return "sum(" + mat(depth - 1) + ", -2)";
    default: return unary() + "(" + cols(depth - 1) + ")";
    }
  }
  std::mt19937 rng;
};

/// Σ w ⊙ logits of `m` on `tokens`.
double weightedLogits(mixc::rt::Model &m, const at::Tensor &tokens, const at::Tensor &w) {
  return (m.forward(tokens).to(at::kDouble) * w).sum().item<double>();
}
} // namespace

TEST(ScanKernel, DerivedBackwardMatchesTheReferenceAndFiniteDifferencesOnRandomSteps) {
  at::set_num_threads(1);
  for (unsigned seed = 1; seed <= 4; ++seed) {
    RandomStep gen(seed);
    const std::string source = "import \"stdlib/blocks.mix\"\n\n" + gen.mixer("random_even") +
                               gen.mixer("random_odd") +
                               "model random_scan_lm(vocab: int = 20, d: int = 8, n_layers: int = 2) {\n"
                               "  input tokens: [B, T] int\n"
                               "  return lm(tokens, vocab, d, n_layers, false, transformer_block(d, n_layers),\n"
                               "            random_even(d, n_layers), random_odd(d, n_layers))\n}\n";
    SCOPED_TRACE("seed " + std::to_string(seed) + ":\n" + source);
    mix::CompileResult compiled = compileMixSource(source, "random-scan-" + std::to_string(seed));
    auto reference = model(compiled.graph), generated = model(compiled.graph, libraryFor(Backend::Generated, compiled));
    ASSERT_TRUE(reference && generated);
    int kernels = 0;
    for (const auto &[region, why] : generated->regionStatus())
      if (region.find(".scan") != std::string::npos) {
        EXPECT_EQ(why, "") << region;
        ++kernels;
      }
    ASSERT_EQ(kernels, 2);
    reference->initParameters(seed);
    copyWeights(*reference, *generated);
    at::manual_seed(100 + seed);
    at::Tensor tokens = at::randint(3, 20, {2, 21}, at::kLong), w = at::randn({2, 21, 20}, at::kDouble);
    // The kernels against the reference loop.
    at::Tensor ya = reference->forward(tokens), yb = generated->forward(tokens);
    EXPECT_LT(relativeDifference(yb, ya), 1e-5) << "forward";
    (ya * w.to(at::kFloat)).sum().backward();
    (yb * w.to(at::kFloat)).sum().backward();
    double directional = 0, norm = 0;
    std::vector<at::Tensor> direction;
    for (size_t i = 0; i < generated->tensors().size(); ++i) {
      const at::Tensor &g = generated->tensors()[i].second, &r = reference->tensors()[i].second;
      direction.push_back(at::randn_like(g));
      if (!g.requires_grad())
        continue;
      ASSERT_TRUE(g.grad().defined() && r.grad().defined()) << generated->tensors()[i].first;
      EXPECT_LT(relativeDifference(g.grad(), r.grad()), 1e-4) << generated->tensors()[i].first;
      directional += (g.grad().to(at::kDouble) * direction.back()).sum().item<double>();
      norm += direction.back().pow(2).sum().item<double>();
    }
    // The kernels against themselves, differenced: (f(θ + εδ) − f(θ − εδ)) / 2ε, |δ| = 1.
    const double eps = 1e-2 / std::sqrt(norm);
    auto shifted = [&](double by) {
      torch::NoGradGuard noGrad;
      for (size_t i = 0; i < direction.size(); ++i)
        const_cast<at::Tensor &>(generated->tensors()[i].second).add_(direction[i], by);
    };
    shifted(eps);
    const double up = weightedLogits(*generated, tokens, w);
    shifted(-2 * eps);
    const double down = weightedLogits(*generated, tokens, w);
    shifted(eps);
    const double difference = (up - down) / (2 * eps);
    EXPECT_NEAR(directional, difference, 2e-2 * std::max(1.0, std::abs(difference)))
        << "directional derivative from the derived backward vs central differences";
  }
}

// State edits in the scan's own kernels: with the generated back end a
// scan under state edits keeps its region, the edits travelling as a state
// access (each on its state's floats of the row); the logits of every cell
// equal the reference loop's under the same script. Linear attention's scan
// has two states, S and z; each cell edits one of them, in either layer.
class ScanStateKernel : public ::testing::TestWithParam<Backend> {};

TEST_P(ScanStateKernel, EditsInTheKernelMatchTheReferenceLoop) {
  at::set_num_threads(1);
  mix::CompileResult compiled = compileEquivalentResult(1, true);
  const std::string script = "patch layers[0].mixer.linear_scan_mixer.S at key\n"
                             "zero layers[0].mixer.linear_scan_mixer.z at key\n"
                             "mean layers[1].mixer.linear_scan_mixer.S at key\n"
                             "patch layers[1].mixer.linear_scan_mixer.z at key+1\n";
  // The rewritten graph with its own kernels (kernels run only beside the graph they were generated for).
  compiled = rewriteResult(compiled.graph, script);
  auto reference = model(compiled.graph), generated = model(compiled.graph, libraryFor(GetParam(), compiled));
  ASSERT_TRUE(reference && generated);
  for (const auto &[region, why] : generated->regionStatus()) {
    if (region.find(".scan") != std::string::npos) {
      EXPECT_EQ(why, "") << region << " (under state edits, the scan keeps its kernels)";
    }
  }
  reference->initParameters(31);
  copyWeights(*reference, *generated);
  torch::NoGradGuard noGrad;
  at::manual_seed(32);
  const int64_t cells = 4;
  const CellBatch batch = cellBatch(21, {2, 9, 17}, cells); // keys either side of the kernels' 16-step chunk
  const int64_t docs = batch.docs;
  at::Tensor want = reference->forward(batch.tokens, batch.options), got = generated->forward(batch.tokens, batch.options);
  EXPECT_LT(relativeDifference(got, want), 1e-5);
  for (int64_t c = 0; c < cells; ++c) // each cell's edit changed its rows
    EXPECT_GT(relativeDifference(got.slice(0, (2 + c) * docs, (3 + c) * docs), got.slice(0, docs, 2 * docs)), 1e-5)
        << "cell " << c;
}

INSTANTIATE_TEST_SUITE_P(Kernels, ScanStateKernel, ::testing::Values(Backend::Generated, Backend::CudaOnHost),
                         [](const auto &i) { return i.param == Backend::Generated ? "cpu" : "cuda_on_host"; });
