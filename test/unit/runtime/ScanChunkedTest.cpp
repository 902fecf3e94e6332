// The chunked form of a linear scan (runtime/core/ScanChunked.h) against the
// scan's sequential loop (runScan) and against naive loops written here:
// values and gradients, for T from 1 to 37 (not multiples of the chunk
// included), chunks of 1 to 64 steps, and decays near 0 and near 1.
#include "TestModels.h"
#include "runtime/core/Scan.h"
#include "runtime/core/ScanChunked.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace graph = mixc::graph;
using mixc::rt::Model;

namespace {
/// The first scan node of `file` compiled with `config`.
graph::Node firstScan(const std::string &file, const std::vector<mixc::dsl::ConfigEntry> &config) {
  graph::Graph g = compileMixFile(file, config).graph;
  for (const graph::Node &n : g.nodes)
    if (n.op == "scan")
      return n;
  ADD_FAILURE() << file << " has no scan";
  return {};
}

/// Random inputs for `scan` over [B, T]: the step arguments that the plan
/// uses as decay factors uniform in [lo, hi], the others in [−1, 1].
std::vector<at::Tensor> randomInputs(const graph::Node &scan, const graph::ChunkPlan &plan, int64_t B, int64_t T,
                                     double lo, double hi) {
  std::set<std::string> decays;
  for (const graph::ChunkState &s : plan.states)
    for (const graph::ChunkFactor &f : s.decay)
      decays.insert(f.value);
  const size_t numStates = plan.states.size();
  std::vector<at::Tensor> inputs;
  for (size_t i = numStates; i < scan.bodyArgs.size(); ++i) {
    std::vector<int64_t> shape = scan.bodyArgs[i].shape;
    shape[0] = B;
    shape.insert(shape.begin() + 1, T);
    const bool decay = decays.count("#" + std::to_string(i)) > 0;
    inputs.push_back((decay ? at::rand(shape) * (hi - lo) + lo : at::rand(shape) * 2 - 1).set_requires_grad(true));
  }
  return inputs;
}

/// Σ out_j · w_j's gradient with respect to every input.
std::vector<at::Tensor> gradients(const std::vector<at::Tensor> &outs, const std::vector<at::Tensor> &inputs,
                                  const std::vector<at::Tensor> &weights) {
  at::Tensor loss = at::zeros({}, at::kFloat);
  for (size_t j = 0; j < outs.size(); ++j)
    loss = loss + (outs[j] * weights[j]).sum();
  return torch::autograd::grad({loss}, inputs);
}

struct Regime {
  const char *name;
  double lo, hi;
};
const Regime kRegimes[] = {{"mixed", 0.05, 0.999}, {"near 0", 1e-6, 1e-3}, {"near 1", 1 - 1e-4, 1.0}};

using Inputs = std::vector<at::Tensor>;

/// Chunked = sequential (values 1e-5, gradients 1e-4 relative) over T, C and
/// the decay regimes; `naive` (optional) is a third opinion on the values;
/// `shape` (optional) maps the random inputs into the model's range first.
void expectChunkedMatchesSequential(const graph::Node &scan, const std::function<Inputs(const Inputs &)> &naive = nullptr,
                                    const std::function<Inputs(const Inputs &)> &shape = nullptr) {
  std::optional<graph::ChunkPlan> plan = mixc::rt::chunkPlanOf(scan);
  ASSERT_TRUE(plan) << scan.name << " has no chunk plan";
  at::manual_seed(7);
  for (const Regime &regime : kRegimes)
    for (int64_t T : {1, 5, 16, 37})
      for (int64_t C : {1, 4, 16, 64}) {
        SCOPED_TRACE(std::string(regime.name) + " T=" + std::to_string(T) + " C=" + std::to_string(C));
        std::vector<at::Tensor> in = randomInputs(scan, *plan, 3, T, regime.lo, regime.hi);
        if (shape) { // new leaves, in range
          in = shape(in);
          for (at::Tensor &t : in)
            t = t.detach().set_requires_grad(true);
        }
        std::vector<at::Tensor> seq = mixc::rt::runScan(in, scan), chunked = mixc::rt::runScanChunked(in, scan, *plan, C);
        ASSERT_EQ(seq.size(), chunked.size());
        std::vector<at::Tensor> weights;
        for (size_t j = 0; j < seq.size(); ++j) {
          EXPECT_LT(relativeDifference(chunked[j], seq[j]), 1e-5) << "emitted value " << j;
          weights.push_back(at::randn_like(seq[j]));
        }
        if (naive) {
          std::vector<at::Tensor> byHand = naive(in);
          for (size_t j = 0; j < byHand.size(); ++j)
            EXPECT_LT(relativeDifference(chunked[j], byHand[j]), 1e-5) << "emitted value " << j << " by hand";
        }
        std::vector<at::Tensor> gs = gradients(seq, in, weights), gc = gradients(chunked, in, weights);
        for (size_t i = 0; i < in.size(); ++i)
          EXPECT_LT(relativeDifference(gc[i], gs[i]), 1e-4) << "gradient of input " << i;
      }
}
} // namespace

// GLA (stdlib/gla.mix): inputs α [B, T, d_k], k [B, T, d_k], v [B, T, d], q [B, T, d_k];
//   S_t = diag(α_t) S_{t−1} + k_t v_tᵀ,  o_t = S_tᵀ q_t.
TEST(ScanChunked, GlaMatchesTheLoopAndANaiveRecurrence) {
  graph::Node scan = firstScan("stdlib/gla.mix", {{"d", "8"}});
  expectChunkedMatchesSequential(scan, [](const std::vector<at::Tensor> &in) {
    at::Tensor alpha = in[0].to(at::kDouble), k = in[1].to(at::kDouble), v = in[2].to(at::kDouble),
               q = in[3].to(at::kDouble);
    at::Tensor S = at::zeros({k.size(0), k.size(2), v.size(2)}, at::kDouble);
    std::vector<at::Tensor> o;
    for (int64_t t = 0; t < k.size(1); ++t) {
      S = alpha.select(1, t).unsqueeze(2) * S + k.select(1, t).unsqueeze(2) * v.select(1, t).unsqueeze(1);
      o.push_back((q.select(1, t).unsqueeze(2) * S).sum(1));
    }
    return std::vector<at::Tensor>{at::stack(o, 1)};
  });
}

// RetNet (stdlib/retnet.mix): a constant scalar decay, a node of the step.
TEST(ScanChunked, RetNetMatchesTheLoop) {
  expectChunkedMatchesSequential(firstScan("stdlib/retnet.mix", {{"d", "8"}}));
}

// A row gate times a column gate (test/Transforms/Inputs/scan-linearity.mix, kind 0).
TEST(ScanChunked, RowAndColumnGatesMatchTheLoop) {
  expectChunkedMatchesSequential(firstScan("test/Transforms/Inputs/scan-linearity.mix", {{"kind", "0"}}));
}

// Kind 9: inputs k, g, v [B, T, d] (in the order the step first reads them); S_t = S_{t−1} diag(g_t) + v_t k_tᵀ;
//   before_t = S_{t−1} k_t (read before the update, S's rows kept), after_t = S_tᵀ k_t.
TEST(ScanChunked, ColumnDecayReadBeforeAndAfterTheUpdate) {
  graph::Node scan = firstScan("test/Transforms/Inputs/scan-linearity.mix", {{"kind", "9"}});
  expectChunkedMatchesSequential(scan, [](const std::vector<at::Tensor> &in) {
    at::Tensor k = in[0].to(at::kDouble), g = in[1].to(at::kDouble), v = in[2].to(at::kDouble);
    const int64_t d = k.size(2);
    at::Tensor S = at::zeros({k.size(0), d, d}, at::kDouble);
    std::vector<at::Tensor> before, after;
    for (int64_t t = 0; t < k.size(1); ++t) {
      before.push_back(at::matmul(S, k.select(1, t).unsqueeze(2)).squeeze(2));
      S = S * g.select(1, t).unsqueeze(1) + v.select(1, t).unsqueeze(2) * k.select(1, t).unsqueeze(1);
      after.push_back(at::matmul(k.select(1, t).unsqueeze(1), S).squeeze(1));
    }
    return std::vector<at::Tensor>{at::stack(before, 1), at::stack(after, 1)};
  });
}

// Gated DeltaNet (stdlib/gated_deltanet.mix): inputs α, β [B, T, 1], k, v, q [B, T, d];
//   S_t = α_t S_{t−1}(I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ,  o_t = S_t q_t;
// k unit-norm and β in (0, 1) as the model makes them (the recurrence stays bounded).
TEST(ScanChunked, GatedDeltaNetMatchesTheLoopAndANaiveRecurrence) {
  graph::Node scan = firstScan("stdlib/gated_deltanet.mix", {{"d", "8"}});
  auto shape = [](const Inputs &in) {
    return Inputs{in[0], (in[1] + 1) / 2, in[2] / in[2].norm(2, -1, true), in[3], in[4]};
  };
  expectChunkedMatchesSequential(
      scan,
      [](const Inputs &in) {
        at::Tensor alpha = in[0].to(at::kDouble), beta = in[1].to(at::kDouble), k = in[2].to(at::kDouble),
                   v = in[3].to(at::kDouble), q = in[4].to(at::kDouble);
        const int64_t d = k.size(2);
        at::Tensor S = at::zeros({k.size(0), d, d}, at::kDouble), I = at::eye(d, at::kDouble);
        std::vector<at::Tensor> o;
        for (int64_t t = 0; t < k.size(1); ++t) {
          at::Tensor kt = k.select(1, t).unsqueeze(2), bt = beta.select(1, t).unsqueeze(2); // [B, d, 1], [B, 1, 1]
          S = alpha.select(1, t).unsqueeze(2) * at::matmul(S, I - bt * at::matmul(kt, kt.transpose(1, 2))) +
              bt * at::matmul(v.select(1, t).unsqueeze(2), kt.transpose(1, 2));
          o.push_back(at::matmul(S, q.select(1, t).unsqueeze(2)).squeeze(2));
        }
        return Inputs{at::stack(o, 1)};
      },
      shape);
}

// The delta rule written as a scan (test/DSL/Inputs/scan-equivalents.mix, kind 0): no decay.
TEST(ScanChunked, DeltaRuleScanMatchesTheLoop) {
  graph::Node scan = firstScan("test/DSL/Inputs/scan-equivalents.mix", {{"kind", "0"}, {"use_scan", "true"}});
  expectChunkedMatchesSequential(scan, nullptr, [](const Inputs &in) { // v, k, β, q
    return Inputs{in[0], in[1] / in[1].norm(2, -1, true), (in[2] + 1) / 2, in[3]};
  });
}

// What has no chunked form yet says so by having no plan (the loop runs).
TEST(ScanChunked, ScansWithoutAChunkedFormHaveNoPlan) {
  EXPECT_FALSE(mixc::rt::chunkPlanOf(firstScan("test/Transforms/Inputs/scan-linearity.mix", {{"kind", "1"}})))
      << "a rank-1 correction with a decay along an axis";
  EXPECT_FALSE(mixc::rt::chunkPlanOf(firstScan("test/Transforms/Inputs/scan-linearity.mix", {{"kind", "3"}})))
      << "non-linear";
}

// A decay below zero is refused, not computed wrongly through its logarithm.
TEST(ScanChunked, RefusesANegativeDecay) {
  graph::Node scan = firstScan("stdlib/gla.mix", {{"d", "8"}});
  std::optional<graph::ChunkPlan> plan = mixc::rt::chunkPlanOf(scan);
  ASSERT_TRUE(plan);
  std::vector<at::Tensor> in = randomInputs(scan, *plan, 2, 5, -0.5, 0.5);
  try {
    mixc::rt::runScanChunked(in, scan, *plan, 4);
    FAIL() << "a negative decay was taken";
  } catch (const c10::Error &e) {
    EXPECT_NE(std::string(e.what()).find("negative decay factor"), std::string::npos) << e.what();
  }
}

// A whole model under Model::ScanForm: the same logits and parameter
// gradients as its loop, on the LibTorch back end (GLA, T = 37: chunks of 16).
TEST(ScanChunked, ModelUnderTheChunkedFormMatchesTheLoop) {
  graph::Graph g = compileMixFile("stdlib/gla.mix", {{"d", "16"}, {"vocab", "30"}}).graph;
  auto sequential = model(g), chunked = model(g);
  ASSERT_TRUE(sequential && chunked);
  chunked->setScanForm({true, 16});
  for (const auto &[scan, why] : chunked->scanFormStatus())
    EXPECT_EQ(why, "") << scan;
  sequential->initParameters(3);
  copyWeights(*sequential, *chunked);
  at::manual_seed(5);
  at::Tensor tokens = at::randint(0, 30, {3, 37}, at::kLong), w = at::randn({3, 37, 30});
  at::Tensor a = sequential->forward(tokens), b = chunked->forward(tokens);
  EXPECT_LT(relativeDifference(b, a), 1e-5);
  (a * w).sum().backward();
  (b * w).sum().backward();
  for (size_t i = 0; i < chunked->tensors().size(); ++i) {
    const at::Tensor &gb = chunked->tensors()[i].second, &ga = sequential->tensors()[i].second;
    if (ga.requires_grad()) {
      EXPECT_LT(relativeDifference(gb.grad(), ga.grad()), 1e-4) << chunked->tensors()[i].first;
    }
  }
  // The chunked form did run: a chunk of 0 steps reaches it and is refused.
  chunked->setScanForm({true, 0});
  EXPECT_THROW(chunked->forward(tokens), c10::Error);
  // What keeps its loop says why.
  auto left = model(compileMixFile("test/Transforms/Inputs/scan-linearity.mix", {{"kind", "1"}}).graph);
  ASSERT_TRUE(left);
  for (const auto &[scan, why] : left->scanFormStatus())
    EXPECT_NE(why.find("rank-1 correction and a decay along an axis"), std::string::npos) << scan << ": " << why;
}

// Interventions keep their meaning under the chunked form (issue 57 item 6):
// a scan that an edit reaches runs its loop, so a chunked-form model gives the
// sequential model's logits under a state patch, a state zeroing and a patch
// of a step value, on GLA and Gated DeltaNet; and each edit changes the output
// (the comparison is not of two unedited runs). Unedited scans in the same
// model (the other layer) still run chunkwise.
TEST(ScanChunked, InterventionsGiveTheSequentialFormsResults) {
  at::set_num_threads(1);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"stdlib/gla.mix", "patch layers[0].mixer.S at key\n"},
      {"stdlib/gla.mix", "zero layers[1].mixer.S at key\n"},
      {"stdlib/gla.mix", "patch layers[0].mixer.scan._add5 at key\n"},
      {"stdlib/gated_deltanet.mix", "patch layers[1].mixer.S at key\n"},
      {"stdlib/gated_deltanet.mix", "patch layers[0].mixer.scan.decayed at key\n"},
  };
  for (const auto &[file, script] : cases) {
    SCOPED_TRACE(file + ": " + script);
    graph::Graph g = rewrite(compileMixFile(file, {{"d", "8"}, {"vocab", "20"}}).graph, script);
    auto sequential = model(g), chunked = model(g);
    ASSERT_TRUE(sequential && chunked);
    chunked->setScanForm({true, 4});
    sequential->initParameters(11);
    copyWeights(*sequential, *chunked);
    torch::NoGradGuard noGrad;
    at::manual_seed(12);
    const int64_t docs = 3, T = 9;
    at::Tensor source = at::randint(3, 20, {docs, T}, at::kLong), base = at::randint(3, 20, {docs, T}, at::kLong);
    at::Tensor tokens = at::cat({source, base, base}, 0); // [source, base, one cell]
    Model::Options options;
    Model::Interventions iv;
    iv.docs = docs;
    iv.roles["key"] = at::tensor(std::vector<int64_t>{1, 3, 5}, at::kLong);
    options.interventions = iv;
    at::Tensor a = sequential->forward(tokens, options), b = chunked->forward(tokens, options);
    EXPECT_LT(relativeDifference(b, a), 1e-6);
    EXPECT_GT(relativeDifference(b.slice(0, 2 * docs), b.slice(0, docs, 2 * docs)), 1e-4) << "the edit changed nothing";
    chunked->setScanForm({true, 0}); // the other layer's scan reaches the chunked form: 0 steps are refused there
    EXPECT_THROW(chunked->forward(tokens, options), c10::Error);
  }
}

// Exact token-to-token contributions (issue 58 item 4, scanContributions):
// Σ_i c[:, t, i] = o_t, and c[:, :, i] is what step i's write alone gives
// (each scan is linear in its writes: the loop run with every other step's
// value input zeroed). `value` is the index of the input that scales the
// write and nothing else. Decays mixed, T = 11.
TEST(ScanChunked, ContributionsSumToTheOutputAndAreEachStepsShare) {
  struct Case {
    const char *file;
    std::vector<mixc::dsl::ConfigEntry> config;
    size_t value;
    std::function<Inputs(const Inputs &)> shape;
  };
  auto unitKeys = [](size_t k, size_t beta) {
    return [k, beta](const Inputs &in) {
      Inputs out = in;
      out[k] = in[k] / in[k].norm(2, -1, true);
      out[beta] = (in[beta] + 1) / 2;
      return out;
    };
  };
  const std::vector<Case> cases = {
      {"stdlib/gla.mix", {{"d", "8"}}, 2, nullptr},
      {"stdlib/retnet.mix", {{"d", "8"}}, 1, nullptr},
      {"test/Transforms/Inputs/scan-linearity.mix", {{"kind", "9"}}, 2, nullptr},
      {"stdlib/gated_deltanet.mix", {{"d", "8"}}, 3, unitKeys(2, 1)},
      {"test/DSL/Inputs/scan-equivalents.mix", {{"kind", "0"}, {"use_scan", "true"}}, 0, unitKeys(1, 2)},
  };
  torch::NoGradGuard noGrad;
  for (const Case &c : cases) {
    SCOPED_TRACE(c.file);
    graph::Node scan = firstScan(c.file, c.config);
    std::optional<graph::ChunkPlan> plan = mixc::rt::chunkPlanOf(scan);
    ASSERT_TRUE(plan);
    at::manual_seed(21);
    const int64_t T = 11;
    Inputs in = randomInputs(scan, *plan, 2, T, 0.05, 0.999);
    if (c.shape)
      in = c.shape(in);
    const Inputs out = mixc::rt::runScan(in, scan);
    const Inputs contributions = mixc::rt::scanContributions(in, scan, *plan);
    ASSERT_EQ(contributions.size(), out.size());
    for (size_t j = 0; j < out.size(); ++j) {
      ASSERT_EQ(contributions[j].size(2), T);
      EXPECT_LT(relativeDifference(contributions[j].sum(2), out[j]), 1e-5) << "emitted value " << j;
    }
    for (int64_t i : {0L, 4L, 10L}) {
      Inputs alone = in;
      at::Tensor keep = at::zeros({1, T}, at::kFloat);
      keep[0][i] = 1;
      std::vector<int64_t> shape(alone[c.value].dim(), 1);
      shape[1] = T;
      alone[c.value] = alone[c.value] * keep.view(shape);
      const Inputs byItself = mixc::rt::runScan(alone, scan);
      for (size_t j = 0; j < out.size(); ++j)
        EXPECT_LT((contributions[j].select(2, i) - byItself[j]).abs().max().item<double>(),
                  1e-5 * out[j].abs().max().item<double>())
            << "emitted value " << j << ", step " << i;
    }
  }
}

// A damaged chunk plan (an edited graph.json) is refused when the model is
// built, naming the scan, not at some later forward.
TEST(ScanChunked, ADamagedPlanIsRefusedAtCreate) {
  graph::Graph g = compileMixFile("stdlib/gla.mix", {{"d", "8"}}).graph;
  auto damaged = [&](const std::function<void(std::string &)> &edit) {
    graph::Graph copy = g;
    for (graph::Node &n : copy.nodes)
      if (n.op == "scan" && n.name == "layers[1].mixer.scan")
        edit(n.attrs.at("chunk_plan").s);
    std::string error;
    EXPECT_FALSE(Model::create(copy, error));
    return error;
  };
  std::string error;
  ASSERT_TRUE(Model::create(g, error)) << error;
  EXPECT_NE(damaged([](std::string &s) { s = "{not json"; }).find("scan 'layers[1].mixer.scan': malformed chunk plan"),
            std::string::npos);
  EXPECT_NE(damaged([](std::string &s) { s.replace(s.find("\"#1\""), 4, "\"#9\""); })
                .find("its chunk plan names '#9', not a step input or node of it"),
            std::string::npos);
  EXPECT_NE(damaged([](std::string &s) { s.replace(s.find("\"state\":0"), 9, "\"state\":3"); }).find("reads state 3"),
            std::string::npos);
}
