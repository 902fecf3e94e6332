// The DSL's `scan` construct against the hand-written recurrences: the delta
// rule, Based's linear attention and Mamba's selective scan, written as
// scans in test/DSL/Inputs/scan-equivalents.mix, give the primitives' outputs
// and the same gradients for every parameter (LibTorch's autograd through
// the scan's step loop against the primitives' hand-derived backward).
#include "TestModels.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <sstream>

using mixc::rt::Model;
namespace graph = mixc::graph;

namespace {
graph::Graph compileEquivalent(int kind, bool useScan) {
  return compileMixFile("test/DSL/Inputs/scan-equivalents.mix",
                        {{"kind", std::to_string(kind)}, {"use_scan", useScan ? "true" : "false"}})
      .graph;
}
} // namespace

class ScanEquivalence : public ::testing::TestWithParam<int> {};

TEST_P(ScanEquivalence, ValuesAndGradientsMatchThePrimitive) {
  at::set_num_threads(1);
  const int kind = GetParam();
  graph::Graph primitive = compileEquivalent(kind, false), scan = compileEquivalent(kind, true);
  int scans = 0;
  for (const graph::Node &n : scan.nodes)
    scans += n.op == "scan";
  ASSERT_EQ(scans, 2) << "one scan a layer";
  auto a = model(primitive), b = model(scan);
  ASSERT_TRUE(a && b);
  a->initParameters(11);
  ASSERT_EQ(a->tensors().size(), b->tensors().size()) << "the same parameters";
  copyWeights(*a, *b);
  at::manual_seed(12);
  at::Tensor tokens = at::randint(3, 20, {3, 11}, at::kLong), w = at::randn({3, 11, 20});
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

INSTANTIATE_TEST_SUITE_P(Recurrences, ScanEquivalence, ::testing::Values(0, 1, 2),
                         [](const ::testing::TestParamInfo<int> &i) {
                           return std::string(i.param == 0 ? "DeltaRule" : i.param == 1 ? "LinearAttention"
                                                                                         : "SelectiveScan");
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
  const int64_t docs = 3, T = 10;
  at::Tensor source = at::randint(3, 20, {docs, T}, at::kLong), base = at::randint(3, 20, {docs, T}, at::kLong);
  Model::Options o;
  Model::Interventions iv;
  iv.docs = docs;
  iv.roles["key"] = at::tensor({2, 4, 6}, at::kLong);
  o.interventions = iv;
  auto layer0 = [&](const Model &m) {
    at::Tensor value;
    Model::Options with = o;
    with.observe = [&](const std::string &name, const at::Tensor &v) {
      if (name == "layers[0].mixer.o")
        value = v.clone();
    };
    m.forward(at::cat({source, base, base}, 0), with);
    return value;
  };
  at::Tensor pa = layer0(*a), pb = layer0(*b);
  ASSERT_TRUE(pa.defined() && pb.defined());
  for (int64_t d = 0; d < docs; ++d) {
    const int64_t key = iv.roles["key"][d].item<int64_t>();
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
  const int64_t docs = 3, T = 9;
  at::Tensor source = at::randint(3, 20, {docs, T}, at::kLong), base = at::randint(3, 20, {docs, T}, at::kLong);
  Model::Options o;
  Model::Interventions iv;
  iv.docs = docs;
  iv.roles["key"] = at::tensor({1, 3, 5}, at::kLong);
  o.interventions = iv;
  at::Tensor tokens = at::cat({source, base, base}, 0);
  at::Tensor la = a->forward(tokens, o), lb = b->forward(tokens, o);
  EXPECT_LT(relativeDifference(la, lb), 1e-5);
  EXPECT_GT(relativeDifference(la.slice(0, 2 * docs), la.slice(0, docs, 2 * docs)), 1e-4) << "the patch changed nothing";
}
