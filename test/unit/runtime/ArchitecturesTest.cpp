// The stdlib architectures, compiled and run: shapes, gradients reaching
// every parameter, causality, determinism, and a tiny instance learning.
#include "CompileStdlib.h"
#include "runtime/core/Model.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sstream>

using mixc::rt::Model;

namespace {
// The last three are written with the DSL's scan (no built-in recurrence).
const char *kArchitectures[] = {"attention", "baseconv", "based", "mamba",          "deltanet",
                                "h3",        "hyena",    "gla",   "gated_deltanet", "retnet"};

std::unique_ptr<Model> compile(const std::string &arch,
                               std::vector<mixc::dsl::ConfigEntry> config) {
  mix::CompileResult result = compileStdlib(arch, config);
  std::string error;
  auto model = Model::create(result.graph, error);
  EXPECT_TRUE(model) << error;
  return model;
}

class Architecture : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    at::set_num_threads(1);
    model = compile(GetParam(), {{"d", "16"}, {"vocab", "20"}});
    ASSERT_TRUE(model);
    model->initParameters(3);
  }
  std::unique_ptr<Model> model;
};
} // namespace

TEST_P(Architecture, ForwardBackwardReachEveryParameter) {
  at::Tensor tokens = at::randint(3, 20, {2, 12}, at::kLong);
  at::Tensor logits = model->forward(tokens);
  EXPECT_EQ(logits.sizes(), (at::IntArrayRef{2, 12, 20}));
  logits.pow(2).mean().backward();
  for (size_t i = 0; i < model->tensors().size(); ++i) {
    const auto &[name, t] = model->tensors()[i];
    if (!model->graph().params[i].trainable)
      continue;
    ASSERT_TRUE(t.grad().defined()) << name << " got no gradient";
    EXPECT_TRUE(at::isfinite(t.grad()).all().item<bool>()) << name;
  }
}

TEST_P(Architecture, IsCausal) {
  torch::NoGradGuard noGrad;
  at::Tensor a = at::randint(3, 20, {2, 12}, at::kLong);
  at::Tensor b = a.clone();
  b.slice(1, 7).random_(3, 20); // change the future of position 6
  at::Tensor la = model->forward(a), lb = model->forward(b);
  EXPECT_LT((la.slice(1, 0, 7) - lb.slice(1, 0, 7)).abs().max().item<double>(), 1e-5);
  EXPECT_GT((la.slice(1, 7) - lb.slice(1, 7)).abs().max().item<double>(), 1e-7);
}

TEST_P(Architecture, ReadoutEqualsFullLogitsAtThatPosition) {
  torch::NoGradGuard noGrad;
  at::Tensor tokens = at::randint(3, 20, {3, 10}, at::kLong);
  at::Tensor pos = at::tensor({9, 0, 4}, at::kLong);
  Model::Options o;
  o.readout = pos;
  at::Tensor some = model->forward(tokens, o).squeeze(1);
  at::Tensor all = model->forward(tokens);
  for (int b = 0; b < 3; ++b)
    EXPECT_LT((some[b] - all[b][pos[b].item<int64_t>()]).abs().max().item<double>(), 1e-5);
}

TEST_P(Architecture, SameSeedSameWeights) {
  auto other = compile(GetParam(), {{"d", "16"}, {"vocab", "20"}});
  other->initParameters(3);
  // Bit-exact by construction: the same generator, seed and draws in the same order.
  for (size_t i = 0; i < model->tensors().size(); ++i)
    EXPECT_TRUE(at::equal(model->tensors()[i].second, other->tensors()[i].second))
        << model->tensors()[i].first;
  other->initParameters(4);
  EXPECT_FALSE(at::equal(model->tensors()[0].second, other->tensors()[0].second));
}

TEST_P(Architecture, TinyInstanceLearns) {
  // Memorise 8 fixed sequences' next tokens: the loss must fall well below
  // its starting value.
  at::manual_seed(0);
  at::Tensor tokens = at::randint(3, 20, {8, 10}, at::kLong);
  at::Tensor targets = at::randint(3, 20, {8}, at::kLong);
  Model::Options o;
  o.readout = at::full({8}, 9, at::kLong);
  torch::optim::AdamW opt(model->trainable(), torch::optim::AdamWOptions(1e-2).weight_decay(0));
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    at::Tensor loss = at::cross_entropy_loss(model->forward(tokens, o).squeeze(1), targets);
    opt.zero_grad();
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, 0.5 * first) << "loss " << first << " -> " << last;
}

INSTANTIATE_TEST_SUITE_P(Stdlib, Architecture, ::testing::ValuesIn(kArchitectures),
                         [](const auto &info) { return std::string(info.param); });

// A model whose weights do not fit in the machine (each tensor within the
// per-tensor limit, 2 TiB in all) is refused with both figures before any
// weight is allocated, instead of growing until the OOM killer ends it.
TEST(ModelSize, LargerThanTheMachineIsRefusedBeforeAllocating) {
  mix::CompileResult result =
      compileStdlib("attention", {{"d", "16384"}, {"vocab", "20"}, {"n_layers", "160"}});
  double weights = 0;
  for (const auto &p : result.graph.params) {
    double n = 4;
    for (int64_t d : p.shape)
      n *= static_cast<double>(d);
    weights += n;
  }
  ASSERT_GT(weights, 1.5 * (1ull << 40)) << "the model is meant to be larger than any test machine";
  std::string error;
  auto model = Model::create(result.graph, error);
  EXPECT_FALSE(model);
  EXPECT_NE(error.find("the model's weights need"), std::string::npos) << error;
  EXPECT_NE(error.find("and this machine has"), std::string::npos) << error;
}
