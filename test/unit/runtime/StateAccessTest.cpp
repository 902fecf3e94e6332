// State interventions (protocol: "Interventions on recurrent state").
//
// The recurrences' StateAccess sweeps (runtime/core/Recurrences.cpp) against
// naive per-step loops written here, in double: every state captured, and
// row b's state replaced or shifted after step pos[b], the recurrence
// carrying on from the edited state. Then whole models under `.rw` state
// edits: the interpreter, the generated CPU kernels and the generated CUDA
// source compiled for the host agree; cells batched together equal cells
// run alone; an edit changes nothing before its position; patching from an
// identical source changes nothing at all.
#include "CompileStdlib.h"
#include "abi/StateLayout.h"
#include "dsl/Rewrite.h"
#include "runtime/core/Model.h"
#include "runtime/core/Primitives.h"
#include "runtime/kernels/KernelBuild.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

using at::Tensor;
using mixc::rt::Model;
using mixc::rt::StateAccess;
using mixc::rt::l2Norm;
using mixc::rt::linearAttention;
using mixc::rt::selectiveScan;

namespace {
at::TensorOptions f64() { return at::TensorOptions().dtype(at::kDouble); }
Tensor rnd(at::IntArrayRef shape) { return at::randn(shape, f64()); }
double maxDiff(const Tensor &a, const Tensor &b) { return (a - b).abs().max().item<double>(); }

/// A per-row edit: after step pos[b] (−1: never), state = value[b] or
/// state + value[b] (add[b]).
struct NaiveEdit {
  std::vector<int64_t> pos;
  std::vector<std::vector<double>> value;
  std::vector<int> add;
  void apply(int64_t b, int64_t t, std::vector<double> &s) const {
    if (pos[b] != t)
      return;
    for (size_t j = 0; j < s.size(); ++j)
      s[j] = add[b] ? s[j] + value[b][j] : value[b][j];
  }
};

NaiveEdit randomEdit(int64_t B, int64_t T, int64_t size) {
  NaiveEdit e;
  for (int64_t b = 0; b < B; ++b) {
    // Row 0 never edited, then the first step, the last, one in between.
    const int64_t choices[] = {-1, 0, T - 1, T / 2};
    e.pos.push_back(choices[b % 4]);
    std::vector<double> v(size);
    for (double &x : v)
      x = at::randn({1}, f64()).item<double>();
    e.value.push_back(v);
    e.add.push_back(static_cast<int>(b % 2));
  }
  return e;
}

StateAccess accessOf(const NaiveEdit &e, int64_t B, int64_t T, int64_t size) {
  StateAccess a;
  a.capture = at::zeros({B, T, size}, f64());
  a.editPos = at::tensor(e.pos, at::kLong);
  a.editValue = at::zeros({B, size}, at::kFloat);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < size; ++j)
      a.editValue[b][j] = e.value[b][j];
  a.editAdd = at::tensor(std::vector<int32_t>(e.add.begin(), e.add.end()), at::kInt);
  return a;
}

/// The edit values as the access holds them (f32), back in the naive edit.
void roundValues(NaiveEdit &e, const StateAccess &a) {
  for (size_t b = 0; b < e.value.size(); ++b)
    for (size_t j = 0; j < e.value[b].size(); ++j)
      e.value[b][j] = a.editValue[b][j].item<double>();
}
} // namespace

class StateAccessSweeps : public ::testing::Test {
protected:
  void SetUp() override { at::manual_seed(3); }
  torch::NoGradGuard noGrad;
};

// s_t = exp(Δ_t A) ⊙ s_{t−1} + Δ_t B_t x_t, edited, y_t = C_t · s_t + D x_t; state [D, N].
TEST_F(StateAccessSweeps, SelectiveScanFollowsTheNaiveLoop) {
  const int64_t B = 5, T = 7, D = 3, N = 4;
  Tensor x = rnd({B, T, D}), dt = at::softplus(rnd({B, T, D})), A = -at::exp(rnd({D, N})), Bm = rnd({B, T, N}),
         Cm = rnd({B, T, N}), Dv = rnd({D});
  NaiveEdit e = randomEdit(B, T, D * N);
  StateAccess access = accessOf(e, B, T, D * N);
  roundValues(e, access);
  Tensor y = selectiveScan(x, dt, A, Bm, Cm, Dv, access);
  Tensor ref = at::zeros({B, T, D}, f64()), states = at::zeros({B, T, D * N}, f64());
  for (int64_t b = 0; b < B; ++b) {
    std::vector<double> s(D * N, 0.0);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t d = 0; d < D; ++d)
        for (int64_t n = 0; n < N; ++n)
          s[d * N + n] = std::exp(dt[b][t][d].item<double>() * A[d][n].item<double>()) * s[d * N + n] +
                         dt[b][t][d].item<double>() * Bm[b][t][n].item<double>() * x[b][t][d].item<double>();
      e.apply(b, t, s);
      for (int64_t j = 0; j < D * N; ++j)
        states[b][t][j] = s[j];
      for (int64_t d = 0; d < D; ++d) {
        double acc = Dv[d].item<double>() * x[b][t][d].item<double>();
        for (int64_t n = 0; n < N; ++n)
          acc += Cm[b][t][n].item<double>() * s[d * N + n];
        ref[b][t][d] = acc;
      }
    }
  }
  EXPECT_LT(maxDiff(y, ref), 1e-10);
  EXPECT_LT(maxDiff(access.capture, states), 1e-10);
  // Without an edit: the training primitive's output.
  EXPECT_LT(maxDiff(selectiveScan(x, dt, A, Bm, Cm, Dv, StateAccess{}), selectiveScan(x, dt, A, Bm, Cm, Dv)),
            1e-12);
}

// u_t = v_t − S_{t−1} k_t, S_t = S_{t−1} + β_t u_t k_tᵀ, edited, o_t = S_t q_t; state [V, K].
TEST_F(StateAccessSweeps, DeltaRuleFollowsTheNaiveLoop) {
  const int64_t B = 4, T = 6, K = 3, V = 2;
  Tensor q = rnd({B, T, K}), k = l2Norm(rnd({B, T, K}), 1e-6), v = rnd({B, T, V}),
         beta = at::sigmoid(rnd({B, T, 1}));
  NaiveEdit e = randomEdit(B, T, V * K);
  StateAccess access = accessOf(e, B, T, V * K);
  roundValues(e, access);
  Tensor o = mixc::rt::deltaRule(q, k, v, beta, access);
  Tensor ref = at::zeros({B, T, V}, f64()), states = at::zeros({B, T, V * K}, f64());
  for (int64_t b = 0; b < B; ++b) {
    std::vector<double> S(V * K, 0.0);
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> u(V);
      for (int64_t i = 0; i < V; ++i) {
        double sk = 0;
        for (int64_t j = 0; j < K; ++j)
          sk += S[i * K + j] * k[b][t][j].item<double>();
        u[i] = v[b][t][i].item<double>() - sk;
      }
      for (int64_t i = 0; i < V; ++i)
        for (int64_t j = 0; j < K; ++j)
          S[i * K + j] += beta[b][t][0].item<double>() * u[i] * k[b][t][j].item<double>();
      e.apply(b, t, S);
      for (int64_t j = 0; j < V * K; ++j)
        states[b][t][j] = S[j];
      for (int64_t i = 0; i < V; ++i) {
        double acc = 0;
        for (int64_t j = 0; j < K; ++j)
          acc += S[i * K + j] * q[b][t][j].item<double>();
        ref[b][t][i] = acc;
      }
    }
  }
  EXPECT_LT(maxDiff(o, ref), 1e-10);
  EXPECT_LT(maxDiff(access.capture, states), 1e-10);
  EXPECT_LT(maxDiff(mixc::rt::deltaRule(q, k, v, beta, StateAccess{}), mixc::rt::deltaRule(q, k, v, beta)), 1e-12);
}

// S_t = S_{t−1} + k_t v_tᵀ, z_t = z_{t−1} + k_t, edited, y_t = q_tᵀ S_t / (q_t · z_t + eps);
// state [F, D] then [F]. Positive features keep the denominator away from 0.
TEST_F(StateAccessSweeps, LinearAttentionFollowsTheNaiveLoop) {
  const int64_t B = 4, T = 6, F = 3, D = 2;
  const double eps = 1e-3;
  Tensor q = at::exp(rnd({B, T, F})), k = at::exp(rnd({B, T, F})), v = rnd({B, T, D});
  NaiveEdit e = randomEdit(B, T, F * D + F);
  for (auto &val : e.value) // a replaced z stays positive: the denominator too
    for (int64_t f = 0; f < F; ++f)
      val[F * D + f] = std::fabs(val[F * D + f]) + 1;
  StateAccess access = accessOf(e, B, T, F * D + F);
  roundValues(e, access);
  Tensor y = linearAttention(q, k, v, eps, access);
  Tensor ref = at::zeros({B, T, D}, f64()), states = at::zeros({B, T, F * D + F}, f64());
  for (int64_t b = 0; b < B; ++b) {
    std::vector<double> s(F * D + F, 0.0);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t f = 0; f < F; ++f) {
        for (int64_t d = 0; d < D; ++d)
          s[f * D + d] += k[b][t][f].item<double>() * v[b][t][d].item<double>();
        s[F * D + f] += k[b][t][f].item<double>();
      }
      e.apply(b, t, s);
      for (int64_t j = 0; j < F * D + F; ++j)
        states[b][t][j] = s[j];
      double den = eps;
      for (int64_t f = 0; f < F; ++f)
        den += q[b][t][f].item<double>() * s[F * D + f];
      for (int64_t d = 0; d < D; ++d) {
        double num = 0;
        for (int64_t f = 0; f < F; ++f)
          num += q[b][t][f].item<double>() * s[f * D + d];
        ref[b][t][d] = num / den;
      }
    }
  }
  EXPECT_LT(maxDiff(y, ref), 1e-9);
  EXPECT_LT(maxDiff(access.capture, states), 1e-10);
  // The recurrent form equals the quadratic one the model trains with.
  EXPECT_LT(maxDiff(linearAttention(q, k, v, eps, StateAccess{}), linearAttention(q, k, v, eps)), 1e-10);
}

TEST(StateAccess, RefusedUnderGradientsAndForWrongSizes) {
  Tensor q = at::randn({1, 3, 2}), k = at::randn({1, 3, 2}), v = at::randn({1, 3, 2}),
         beta = at::rand({1, 3, 1});
  {
    torch::AutoGradMode grad(true);
    EXPECT_THROW(mixc::rt::deltaRule(q, k, v, beta, StateAccess{}), c10::Error);
  }
  torch::NoGradGuard noGrad;
  StateAccess a;
  a.capture = at::zeros({1, 3, 5}); // the state is 2 × 2
  EXPECT_THROW(mixc::rt::deltaRule(q, k, v, beta, a), c10::Error);
  StateAccess b;
  b.editPos = at::zeros({1}, at::kLong), b.editValue = at::zeros({1, 3}), b.editAdd = at::zeros({1}, at::kInt);
  EXPECT_THROW(mixc::rt::deltaRule(q, k, v, beta, b), c10::Error);
}

// ------------------------------------------------------------ whole models

namespace {
struct ModelCase {
  const char *arch;
  int layer; // the layer whose mixer keeps a state
};
void PrintTo(const ModelCase &c, std::ostream *os) { *os << c.arch; }

const int64_t kDocs = 3, kT = 19, kVocab = 20;

/// Cells: patch at key, zero at value, mean at key + 2, add (a constant) at pos(4).
std::string script(const ModelCase &c, int64_t stateSize) {
  const std::string state = "layers[" + std::to_string(c.layer) + "].mixer.state";
  const std::string file = ::testing::TempDir() + "state-add-" + c.arch + ".txt";
  {
    std::ofstream out(file);
    for (int64_t j = 0; j < stateSize; ++j)
      out << 0.01 * static_cast<double>(j % 7) << (j + 1 < stateSize ? " " : "\n");
  }
  return "patch " + state + " at key\nzero " + state + " at value\nmean " + state + " at key+2\nadd(" + file +
         ") " + state + " at pos(4)\n";
}

/// Source, base, then the cells' copies of base; the key differs per document.
Model::Options layout(int64_t firstCell, int64_t numCells) {
  Model::Options o;
  Model::Interventions iv;
  iv.docs = kDocs;
  iv.roles["key"] = at::tensor({2, 5, 7}, at::kLong);
  iv.roles["value"] = at::tensor({3, 6, 8}, at::kLong);
  iv.firstCell = firstCell, iv.numCells = numCells;
  o.interventions = iv;
  return o;
}

Tensor batch(const Tensor &source, const Tensor &base, int64_t cells) {
  std::vector<Tensor> blocks{source, base};
  for (int64_t c = 0; c < cells; ++c)
    blocks.push_back(base);
  return at::cat(blocks, 0);
}

double relErr(const Tensor &a, const Tensor &b) {
  return (a - b).abs().max().item<double>() / (b.abs().max().item<double>() + 1e-12);
}
} // namespace

/// `result`'s graph with its generated kernels (the CPU source, or the CUDA
/// source compiled for the host), parameters seeded as the tests' references.
static std::unique_ptr<Model> withKernels(const mix::CompileResult &result, bool cudaOnHost) {
  std::string error;
  std::string source = cudaOnHost ? "#define MIXK_CUDA_ON_HOST\n" + result.cudaKernels : result.cpuKernels;
  auto library = mixc::kernels::buildLibrary(source, error);
  EXPECT_TRUE(library) << error;
  auto m = Model::create(result.graph, error, library);
  EXPECT_TRUE(m) << error;
  if (m)
    m->initParameters(5);
  return m;
}

/// How many of `m`'s regions run their generated kernel.
static int generatedRegions(const Model &m) {
  int kernels = 0;
  for (const auto &[name, why] : m.regionStatus())
    kernels += why.empty();
  return kernels;
}

/// `c`'s model (d = 16) with the script `makeScript(state size)` applied.
void compileEdited(const ModelCase &c, const std::function<std::string(int64_t)> &makeScript,
                   mix::CompileResult &result) {
  mix::CompileResult plain = compileStdlib(c.arch, {{"d", "16"}, {"vocab", "20"}});
  int64_t size = 0;
  for (const auto &n : plain.graph.nodes)
    if (auto it = n.attrs.find("state_name");
        it != n.attrs.end() && it->second.s == "layers[" + std::to_string(c.layer) + "].mixer.state") {
      std::vector<std::vector<int64_t>> operands;
      const auto shapes = mixc::graph::valueShapes(plain.graph);
      for (const std::string &in : n.inputs)
        operands.push_back(shapes.at(in));
      size = mixc::graph::stateSize(n.op, operands);
    }
  ASSERT_GT(size, 0) << "no state in " << c.arch;
  mixc::dsl::SourceManager sm;
  mixc::dsl::RwScript s;
  std::ostringstream err;
  ASSERT_TRUE(mixc::dsl::parseRewrite(makeScript(size), "state.rw", sm, s, err)) << err.str();
  ASSERT_TRUE(mix::rewriteGraph(plain.graph, s, sm, result, err)) << err.str();
}

class StateEdits : public ::testing::TestWithParam<ModelCase> {
protected:
  void SetUp() override {
    setenv("MIXC_KERNEL_CACHE", MIXC_TEST_KERNEL_CACHE, 0);
    at::set_num_threads(1);
    at::manual_seed(7);
    ASSERT_NO_FATAL_FAILURE(compileEdited(GetParam(), [&](int64_t size) { return makeScript(size); }, result));
    std::string error;
    reference = Model::create(result.graph, error);
    ASSERT_TRUE(reference) << error;
    reference->initParameters(5);
  }
  virtual std::string makeScript(int64_t stateSize) const { return script(GetParam(), stateSize); }
  std::unique_ptr<Model> withKernels(bool cudaOnHost) { return ::withKernels(result, cudaOnHost); }
  mix::CompileResult result;
  std::unique_ptr<Model> reference;
  torch::NoGradGuard noGrad;
};

TEST_P(StateEdits, TheRecurrenceStaysInItsFusedRegion) {
  mix::CompileResult plain = compileStdlib(GetParam().arch, {{"d", "16"}, {"vocab", "20"}});
  EXPECT_EQ(result.graph.regions.size(), plain.graph.regions.size());
  int edits = 0;
  for (const auto &n : result.graph.nodes)
    edits += n.op == mixc::graph::kStateEditOp;
  EXPECT_EQ(edits, 4);
}

TEST_P(StateEdits, GeneratedKernelsMatchTheInterpreter) {
  Tensor source = at::randint(3, kVocab, {kDocs, kT}, at::kLong), base = at::randint(3, kVocab, {kDocs, kT}, at::kLong);
  Tensor tokens = batch(source, base, 4);
  Tensor want = reference->forward(tokens, layout(0, -1));
  for (bool cuda : {false, true}) {
    SCOPED_TRACE(cuda ? "CUDA source on the host" : "CPU kernels");
    auto generated = withKernels(cuda);
    ASSERT_TRUE(generated);
    EXPECT_GT(generatedRegions(*generated), 0);
    EXPECT_LT(relErr(generated->forward(tokens, layout(0, -1)), want), 1e-4);
  }
}

TEST_P(StateEdits, CellsBatchedEqualCellsAlone) {
  Tensor source = at::randint(3, kVocab, {kDocs, kT}, at::kLong), base = at::randint(3, kVocab, {kDocs, kT}, at::kLong);
  Tensor all = reference->forward(batch(source, base, 4), layout(0, -1));
  for (int64_t c = 0; c < 4; ++c) {
    Tensor alone = reference->forward(batch(source, base, 1), layout(c, 1));
    EXPECT_LT(relErr(alone.slice(0, 2 * kDocs), all.slice(0, (2 + c) * kDocs, (3 + c) * kDocs)), 1e-5) << "cell " << c;
  }
}

TEST_P(StateEdits, AnEditChangesNothingBeforeItsPosition) {
  Tensor source = at::randint(3, kVocab, {kDocs, kT}, at::kLong), base = at::randint(3, kVocab, {kDocs, kT}, at::kLong);
  Tensor out = reference->forward(batch(source, base, 4), layout(0, -1));
  Tensor baseOut = out.slice(0, kDocs, 2 * kDocs);
  const int64_t key[] = {2, 5, 7};
  for (int64_t doc = 0; doc < kDocs; ++doc) {
    // Cell 0 patches at the key: the logits before it are the base run's,
    // those at it differ (the source's state replaced the base's).
    Tensor cell = out[2 * kDocs + doc], b = baseOut[doc];
    EXPECT_LT(relErr(cell.slice(0, 0, key[doc]), b.slice(0, 0, key[doc])), 1e-5) << doc;
    EXPECT_GT(relErr(cell.slice(0, key[doc], key[doc] + 1), b.slice(0, key[doc], key[doc] + 1)), 1e-4) << doc;
    // Cell 3 adds at pos(4).
    Tensor added = out[5 * kDocs + doc];
    EXPECT_LT(relErr(added.slice(0, 0, 4), b.slice(0, 0, 4)), 1e-5) << doc;
    EXPECT_GT(relErr(added.slice(0, 4, 5), b.slice(0, 4, 5)), 1e-6) << doc;
  }
  // The base rows equal a forward without interventions.
  Model::Options none;
  std::string error;
  mix::CompileResult plain = compileStdlib(GetParam().arch, {{"d", "16"}, {"vocab", "20"}});
  auto clean = Model::create(plain.graph, error);
  ASSERT_TRUE(clean) << error;
  clean->initParameters(5);
  EXPECT_LT(relErr(baseOut, clean->forward(base, none)), 1e-5);
}

TEST_P(StateEdits, PatchingFromAnIdenticalSourceChangesNothing) {
  Tensor base = at::randint(3, kVocab, {kDocs, kT}, at::kLong);
  Tensor out = reference->forward(batch(base, base, 1), layout(0, 1));
  EXPECT_LT(relErr(out.slice(0, 2 * kDocs), out.slice(0, kDocs, 2 * kDocs)), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Stdlib, StateEdits,
                         ::testing::Values(ModelCase{"mamba", 0}, ModelCase{"deltanet", 1}, ModelCase{"based", 1}),
                         [](const auto &info) { return std::string(info.param.arch); });

// Edges out of a built-in recurrence's state (docs/protocol.md §6.3): cell 0
// patches the state at the key, cell 1 only its edge into the next step,
// cell 2 only its edge into the output at the key.
class StateEdges : public StateEdits {
protected:
  std::string makeScript(int64_t) const override {
    const std::string state = "layers[" + std::to_string(GetParam().layer) + "].mixer.state";
    return "patch " + state + " at key\npatch " + state + " -> next at key\npatch " + state + " -> output at key\n";
  }
};

TEST_P(StateEdges, GeneratedKernelsMatchTheInterpreter) {
  Tensor source = at::randint(3, kVocab, {kDocs, kT}, at::kLong), base = at::randint(3, kVocab, {kDocs, kT}, at::kLong);
  Tensor tokens = batch(source, base, 3);
  Tensor want = reference->forward(tokens, layout(0, -1));
  for (bool cuda : {false, true}) {
    SCOPED_TRACE(cuda ? "CUDA source on the host" : "CPU kernels");
    auto generated = withKernels(cuda);
    ASSERT_TRUE(generated);
    EXPECT_EQ(generated->regionStatus().size(), result.graph.regions.size());
    EXPECT_LT(relErr(generated->forward(tokens, layout(0, -1)), want), 1e-4);
  }
}

// The state's layer is the model's last mixer: after it each step's logits
// read that step alone. So the edge into the output changes the logits at
// the key only (to the node patch's there), and the edge into the next step
// those after the key only (to the node patch's there).
TEST_P(StateEdges, EachReaderSeesTheEditAlone) {
  Tensor source = at::randint(3, kVocab, {kDocs, kT}, at::kLong), base = at::randint(3, kVocab, {kDocs, kT}, at::kLong);
  for (bool generated : {false, true}) {
    SCOPED_TRACE(generated ? "CPU kernels" : "interpreter");
    std::unique_ptr<Model> kernels = generated ? withKernels(false) : nullptr;
    Model &m = generated ? *kernels : *reference;
    Tensor out = m.forward(batch(source, base, 3), layout(0, -1));
    const int64_t key[] = {2, 5, 7};
    for (int64_t doc = 0; doc < kDocs; ++doc) {
      SCOPED_TRACE("document " + std::to_string(doc));
      const int64_t k = key[doc];
      Tensor b = out[kDocs + doc], node = out[2 * kDocs + doc], next = out[3 * kDocs + doc],
             output = out[4 * kDocs + doc];
      auto steps = [](const Tensor &t, int64_t from, int64_t to) { return t.slice(0, from, to); };
      ASSERT_GT(relErr(steps(node, k, k + 1), steps(b, k, k + 1)), 1e-4) << "the patch changes nothing at the key";
      ASSERT_GT(relErr(steps(node, k + 1, kT), steps(b, k + 1, kT)), 1e-4) << "the patch changes nothing after it";
      EXPECT_LT(relErr(steps(output, 0, k), steps(b, 0, k)), 1e-5);
      EXPECT_LT(relErr(steps(output, k, k + 1), steps(node, k, k + 1)), 1e-5);
      EXPECT_LT(relErr(steps(output, k + 1, kT), steps(b, k + 1, kT)), 1e-5);
      EXPECT_LT(relErr(steps(next, 0, k + 1), steps(b, 0, k + 1)), 1e-5);
      EXPECT_LT(relErr(steps(next, k + 1, kT), steps(node, k + 1, kT)), 1e-5);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Stdlib, StateEdges,
                         ::testing::Values(ModelCase{"mamba", 1}, ModelCase{"deltanet", 1}, ModelCase{"based", 1}),
                         [](const auto &info) { return std::string(info.param.arch); });

// Edges inside a scan's step (GLA, layer 1, the model's last mixer):
//   S_t = diag(α_t) S_{t−1} + k_t v_tᵀ   (the step value `scan._add5`)
//   o_t = S_tᵀ q_t                        (`scan._mul7` reads S_t, `scan.o` sums)
// `patch _add5 -> _mul7 at key` edits S_key where the output at the key reads
// it alone: o_key = S_key(source)ᵀ q_key(base), every other step the base
// run's. `patch _add5 -> layers[1].mixer.S at key` edits only the state
// handed on: the state patch's logits. The node patch is both at once.
class ScanStepEdges : public ::testing::Test {
protected:
  void SetUp() override {
    setenv("MIXC_KERNEL_CACHE", MIXC_TEST_KERNEL_CACHE, 0);
    at::set_num_threads(1);
    at::manual_seed(11);
    mix::CompileResult plain = compileStdlib("gla", {{"d", "16"}, {"vocab", "20"}});
    const std::string L = "layers[1].mixer.";
    const std::string text = "patch " + L + "scan._add5 -> " + L + "scan._mul7 at key\n" + "patch " + L +
                             "scan._add5 -> " + L + "S at key\n" + "patch " + L + "S at key\n" + "patch " + L +
                             "scan._add5 at key\n";
    mixc::dsl::SourceManager sm;
    mixc::dsl::RwScript s;
    std::ostringstream err;
    ASSERT_TRUE(mixc::dsl::parseRewrite(text, "edges.rw", sm, s, err)) << err.str();
    ASSERT_TRUE(mix::rewriteGraph(plain.graph, s, sm, result, err)) << err.str();
    std::string error;
    reference = Model::create(result.graph, error);
    ASSERT_TRUE(reference) << error;
    reference->initParameters(5);
  }
  mix::CompileResult result;
  std::unique_ptr<Model> reference;
  torch::NoGradGuard noGrad;
};

TEST_F(ScanStepEdges, EachReaderSeesTheEditAlone) {
  Tensor source = at::randint(3, kVocab, {kDocs, kT}, at::kLong), base = at::randint(3, kVocab, {kDocs, kT}, at::kLong);
  Model::Options o = layout(0, -1);
  Tensor o1, q, S; // the scan's output [B, T, 16], its scaled query [B, T, 8], S_t [B, T, 8, 16]
  o.saveStepValues = {"layers[1].mixer.scan._add5"};
  o.observe = [&](const std::string &name, const Tensor &v) {
    if (name == "layers[1].mixer.o")
      o1 = v.clone();
    else if (name == "layers[1].mixer.q_scaled")
      q = v.clone();
    else if (name == "layers[1].mixer.scan._add5")
      S = v.clone();
  };
  Tensor out = reference->forward(batch(source, base, 4), o);
  ASSERT_TRUE(o1.defined() && q.defined() && S.defined());
  ASSERT_EQ(S.dim(), 4);
  const int64_t key[] = {2, 5, 7};
  auto steps = [](const Tensor &t, int64_t from, int64_t to) { return t.slice(0, from, to); };
  for (int64_t doc = 0; doc < kDocs; ++doc) {
    SCOPED_TRACE("document " + std::to_string(doc));
    const int64_t k = key[doc];
    Tensor b = out[kDocs + doc], output = out[2 * kDocs + doc], next = out[3 * kDocs + doc],
           state = out[4 * kDocs + doc], node = out[5 * kDocs + doc];
    ASSERT_GT(relErr(steps(output, k, k + 1), steps(b, k, k + 1)), 1e-4) << "the output edge changes nothing";
    ASSERT_GT(relErr(steps(next, k + 1, kT), steps(b, k + 1, kT)), 1e-4) << "the state edge changes nothing";
    // The output edge: the output at the key alone, to S_key(source)ᵀ q_key(base).
    EXPECT_LT(relErr(steps(output, 0, k), steps(b, 0, k)), 1e-6);
    EXPECT_LT(relErr(steps(output, k + 1, kT), steps(b, k + 1, kT)), 1e-6);
    Tensor want = at::matmul(q[kDocs + doc][k].unsqueeze(0), S[doc][k]).squeeze(0); // [16]
    EXPECT_LT(relErr(o1[2 * kDocs + doc][k], want), 1e-5);
    // The state edge is the state patch: the steps after the key.
    EXPECT_LT(relErr(next, state), 1e-6);
    EXPECT_LT(relErr(steps(next, 0, k + 1), steps(b, 0, k + 1)), 1e-6);
    // The node patch is both edges.
    EXPECT_LT(relErr(steps(node, 0, k), steps(b, 0, k)), 1e-6);
    EXPECT_LT(relErr(steps(node, k, k + 1), steps(output, k, k + 1)), 1e-5);
    EXPECT_LT(relErr(steps(node, k + 1, kT), steps(next, k + 1, kT)), 1e-5);
  }
}

// With the generated kernels the scan under edits inside its step runs its
// reference loop; the other regions keep their kernels; same logits.
TEST_F(ScanStepEdges, GeneratedKernelsMatchTheInterpreter) {
  Tensor source = at::randint(3, kVocab, {kDocs, kT}, at::kLong), base = at::randint(3, kVocab, {kDocs, kT}, at::kLong);
  Tensor tokens = batch(source, base, 4);
  Tensor want = reference->forward(tokens, layout(0, -1));
  auto generated = withKernels(result, false);
  ASSERT_TRUE(generated);
  EXPECT_GT(generatedRegions(*generated), 0);
  EXPECT_LT(relErr(generated->forward(tokens, layout(0, -1)), want), 1e-4);
}

// Attribution through a built-in recurrence's state (Options::probes): the
// recurrence runs as a loop of LibTorch ops with the edits as probes. Its
// logits are the plain model's (the sweeps, another implementation), and
// each probe's gradient at step p along a direction u is the central
// difference of the same model with `add(±εu) STATE [-> READER] at pos(p)`,
// which the sweeps' own edit code applies.
TEST_P(StateEdges, ProbesGiveTheSweepsLogitsAndFiniteDifferenceGradients) {
  const int64_t p = 4;
  Tensor base = at::randint(3, kVocab, {kDocs, kT}, at::kLong);
  mix::CompileResult plainResult = compileStdlib(GetParam().arch, {{"d", "16"}, {"vocab", "20"}});
  std::string error;
  auto plain = Model::create(plainResult.graph, error);
  ASSERT_TRUE(plain) << error;
  plain->initParameters(5);
  Tensor w = at::randn({kDocs, kT, kVocab});
  // The probes' gradients of m = Σ w ⊙ logits over the base documents.
  std::map<std::string, Tensor> probe;
  Model::Options o;
  o.probes = true;
  o.observe = [&](const std::string &name, const Tensor &v) {
    if (name.find("@c") != std::string::npos)
      probe[name] = v;
  };
  Tensor logits;
  {
    torch::AutoGradMode grad(true);
    logits = reference->forward(base, o);
    (w * logits).sum().backward();
  }
  EXPECT_LT(relErr(logits.detach(), plain->forward(base, {})), 1e-5) << "the probed loop is not the sweep";
  ASSERT_EQ(probe.size(), 3u);
  int64_t size = 0;
  for (auto &[name, v] : probe)
    size = v.size(2);
  Tensor u = at::randn({size}, at::kDouble);
  const double eps = 1e-3;
  auto m = [&](double sign) { // Σ w ⊙ logits of each of the three add cells
    const std::string file = ::testing::TempDir() + "fd-" + GetParam().arch + (sign > 0 ? "-plus" : "-minus") + ".txt";
    {
      std::ofstream out(file);
      out.precision(17);
      for (int64_t j = 0; j < size; ++j)
        out << sign * eps * u[j].item<double>() << (j + 1 < size ? " " : "\n");
    }
    const std::string state = "layers[" + std::to_string(GetParam().layer) + "].mixer.state";
    mix::CompileResult r;
    compileEdited(GetParam(), [&](int64_t) {
      const std::string add = "add(" + file + ") " + state;
      return add + " at pos(4)\n" + add + " -> next at pos(4)\n" + add + " -> output at pos(4)\n";
    }, r);
    auto model = Model::create(r.graph, error);
    EXPECT_TRUE(model) << error;
    model->initParameters(5);
    Tensor out = model->forward(batch(base, base, 3), layout(0, -1)).to(at::kDouble);
    std::vector<double> sums;
    for (int64_t c = 0; c < 3; ++c)
      sums.push_back((w.to(at::kDouble) * out.slice(0, (2 + c) * kDocs, (3 + c) * kDocs)).sum().item<double>());
    return sums;
  };
  const std::vector<double> plus = m(1), minus = m(-1);
  // Tolerance on the scale of the three (the state's gradient is the sum of
  // its two readers', which can cancel): float32 central differences.
  double scale = 0;
  for (int c = 0; c < 3; ++c)
    scale = std::max(scale, std::abs(plus[c] - minus[c]) / (2 * eps));
  const char *cells[] = {"@c0", "@c1", "@c2"}; // the state, -> next, -> output
  for (int c = 0; c < 3; ++c) {
    SCOPED_TRACE(cells[c]);
    Tensor g;
    for (auto &[name, v] : probe)
      if (name.find(cells[c]) != std::string::npos)
        g = v.grad();
    ASSERT_TRUE(g.defined());
    const double directional = (g.select(1, p).to(at::kDouble) * u).sum().item<double>();
    const double difference = (plus[c] - minus[c]) / (2 * eps);
    EXPECT_NEAR(directional, difference, 2e-2 * scale + 1e-6);
  }
}
