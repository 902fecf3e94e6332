// Distributed alignment search: the Cayley rotation stays orthogonal and its
// gradient matches finite differences; the interchange equals a naive
// per-coordinate reference, inside a compiled model too; and on a synthetic
// model whose variable lives in a known rotated 2-d subspace, a trained
// rotation recovers it (IIA ≈ 1) where the node's own channels do not.
#include "TestModels.h"
#include "runtime/core/Interventions.h"
#include "runtime/core/Model.h"
#include "runtime/analysis/Rotation.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <sstream>

using mixc::rt::Model;
using mixc::analysis::Rotation;
namespace graph = mixc::graph;

namespace {
at::Generator generator(uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

/// base + Σ_i q_i ⟨q_i, source − base⟩ over the rows q_i of `rows`, one
/// document and one row at a time.
at::Tensor naiveInterchange(const at::Tensor &base, const at::Tensor &source, const at::Tensor &rows) {
  at::Tensor out = base.to(at::kDouble).clone();
  at::Tensor q = rows.to(at::kDouble), diff = (source - base).to(at::kDouble);
  for (int64_t n = 0; n < base.size(0); ++n)
    for (int64_t i = 0; i < q.size(0); ++i) {
      double coord = 0;
      for (int64_t w = 0; w < q.size(1); ++w)
        coord += q[i][w].item<double>() * diff[n][w].item<double>();
      for (int64_t w = 0; w < q.size(1); ++w)
        out[n][w] += coord * q[i][w].item<double>();
    }
  return out;
}
} // namespace

TEST(Das, RotationStaysOrthogonalWhileTraining) {
  Rotation r(12, 3, generator(1));
  EXPECT_LT(r.orthogonalityError(), 1e-5) << "R₀";
  at::manual_seed(2);
  at::Tensor target = at::randn({3, 12});
  torch::optim::Adam adam({r.parameter()}, torch::optim::AdamOptions(0.1));
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    at::Tensor loss = (r.rows() - target).pow(2).sum();
    (step == 0 ? first : last) = loss.item<double>();
    adam.zero_grad();
    loss.backward();
    adam.step();
  }
  EXPECT_LT(last, first) << "the rotation did not move toward the target";
  EXPECT_GT(r.parameter().abs().max().item<double>(), 0.01);
  EXPECT_LT(r.orthogonalityError(), 1e-5) << "after training";
}

TEST(Das, RotationGradientMatchesFiniteDifferences) {
  Rotation r(6, 2, generator(3));
  at::manual_seed(4);
  at::Tensor w = at::randn({2, 6});
  {
    torch::NoGradGuard noGrad;
    const_cast<at::Tensor &>(r.parameter()).copy_(0.3 * at::randn({6, 6}));
  }
  (r.rows() * w).sum().backward();
  at::Tensor grad = r.parameter().grad().clone();
  const double eps = 1e-3;
  for (auto [i, j] : std::vector<std::pair<int, int>>{{0, 1}, {2, 5}, {4, 3}, {5, 5}}) {
    double side[2];
    for (int s = 0; s < 2; ++s) {
      torch::NoGradGuard noGrad;
      at::Tensor p = r.parameter();
      const double old = p[i][j].item<double>();
      p[i][j] = old + (s ? eps : -eps);
      side[s] = (r.rows() * w).sum().item<double>();
      p[i][j] = old;
    }
    const double fd = (side[1] - side[0]) / (2 * eps);
    EXPECT_NEAR(grad[i][j].item<double>(), fd, 2e-3 * std::max(1.0, std::abs(fd))) << i << "," << j;
  }
}

TEST(Das, InterchangeMatchesTheNaiveReference) {
  at::manual_seed(5);
  at::Tensor base = at::randn({4, 10}), source = at::randn({4, 10});
  at::Tensor rows = mixc::analysis::randomOrthogonal(10, generator(6)).narrow(0, 0, 3);
  at::Tensor mixed = mixc::rt::interchangeSubspace(base, source, rows);
  EXPECT_LT((mixed.to(at::kDouble) - naiveInterchange(base, source, rows)).abs().max().item<double>(), 1e-5);
  // In the subspace the source's coordinates, outside it the base's.
  EXPECT_LT((at::matmul(mixed - source, rows.t())).abs().max().item<double>(), 1e-5);
  at::Tensor complement = mixc::analysis::randomOrthogonal(10, generator(6)).narrow(0, 3, 7);
  EXPECT_LT((at::matmul(mixed - base, complement.t())).abs().max().item<double>(), 1e-5);
  // The whole space: the source itself.
  EXPECT_LT((mixc::rt::interchangeSubspace(base, source, at::eye(10)) - source).abs().max().item<double>(), 1e-6);
}

namespace {
graph::Graph dasGraph(const std::string &script) {
  return rewrite(compileStdlib("based", {{"d", "16"}, {"vocab", "20"}}).graph, script, "das.rw");
}
} // namespace

// das(3) at the value in a compiled Based: the cell's rows at the value's
// position are the naive interchange of the base and source values; other
// positions and blocks are untouched; the subspace's rows get a gradient.
TEST(Das, ADasNodeInterchangesItsSubspaceInTheModel) {
  at::set_num_threads(1);
  std::string error;
  auto m = Model::create(dasGraph("corrupt key\ndas(3) layers[1].block_input at value\n"), error);
  ASSERT_TRUE(m) << error;
  m->initParameters(9);
  at::manual_seed(10);
  at::Tensor source = at::randint(3, 20, {4, 9}, at::kLong), base = at::randint(3, 20, {4, 9}, at::kLong);
  Model::Options o;
  Model::Interventions iv;
  iv.docs = 4;
  iv.roles["value"] = at::tensor({2, 3, 5, 7}, at::kLong);
  at::Tensor rows = mixc::analysis::randomOrthogonal(16, generator(11)).narrow(0, 0, 3).clone().set_requires_grad(true);
  iv.rotations["layers[1].block_input@c0"] = rows;
  o.interventions = iv;
  at::Tensor before, after;
  o.observe = [&](const std::string &name, const at::Tensor &v) {
    if (name == "layers[1].block_input")
      before = v.detach().clone();
    if (name == "layers[1].block_input@c0")
      after = v.detach().clone();
  };
  at::Tensor logits = m->forward(at::cat({source, base, base}, 0), o);
  ASSERT_TRUE(before.defined() && after.defined());
  at::Tensor want = before.slice(0, 8, 12).clone(); // the cell's rows before the intervention
  for (int64_t n = 0; n < 4; ++n) {
    const int64_t p = iv.roles["value"][n].item<int64_t>();
    want[n][p] = naiveInterchange(before[4 + n][p].unsqueeze(0), before[n][p].unsqueeze(0), rows.detach())[0]
                     .to(at::kFloat);
  }
  EXPECT_LT((after.slice(0, 8, 12) - want).abs().max().item<double>(), 1e-5);
  EXPECT_GT((after.slice(0, 8, 12) - before.slice(0, 8, 12)).abs().max().item<double>(), 1e-3)
      << "the interchange changed nothing";
  EXPECT_EQ((after.slice(0, 0, 8) - before.slice(0, 0, 8)).abs().max().item<double>(), 0.0)
      << "the source and base blocks changed";
  logits.slice(0, 8, 12).sum().backward();
  ASSERT_TRUE(rows.grad().defined());
  EXPECT_GT(rows.grad().abs().max().item<double>(), 0.0);
  // Without a learned subspace the node says what trains it.
  o.interventions->rotations.clear();
  o.observe = nullptr;
  try {
    m->forward(at::cat({source, base, base}, 0), o);
    ADD_FAILURE() << "a das node without its subspace ran";
  } catch (const c10::Error &e) {
    EXPECT_NE(std::string(e.what()).find("mixc align"), std::string::npos) << e.what();
  }
}

namespace {
/// A synthetic model with a planted variable: class c ∈ {0..7} is the point
/// u_c = 3 (cos 2πc/8, sin 2πc/8); a hidden vector is h = P [u_c; z] with z
/// [14] Gaussian nuisance and P a fixed random rotation of R^16, and the
/// model reads the class back as logits_j = −|(Pᵀ h)[0:2] − u_j|². The
/// variable thus lives in the 2-d subspace spanned by P's first two columns,
/// aligned with none of h's channels.
struct Planted {
  at::Tensor P = mixc::analysis::randomOrthogonal(16, generator(12)), codes;
  Planted() {
    at::Tensor angle = at::arange(8, at::kFloat) * (2 * M_PI / 8);
    codes = 3 * at::stack({at::cos(angle), at::sin(angle)}, 1); // [8, 2]
  }
  at::Tensor hidden(const at::Tensor &cls) const { // [N] → [N, 16]
    at::Tensor latent = at::cat({codes.index_select(0, cls), at::randn({cls.size(0), 14})}, 1);
    return at::matmul(latent, P.t());
  }
  at::Tensor logits(const at::Tensor &h) const { // [N, 16] → [N, 8]
    at::Tensor u = at::matmul(h, P).narrow(1, 0, 2);
    return -(u.unsqueeze(1) - codes.unsqueeze(0)).pow(2).sum(-1);
  }
  /// The share of pairs whose interchanged base reads as the source's class.
  double iia(const at::Tensor &rows, int64_t n = 4000) const {
    torch::NoGradGuard noGrad;
    at::Tensor b = at::randint(0, 8, {n}, at::kLong), s = at::randint(0, 8, {n}, at::kLong);
    at::Tensor mixed = mixc::rt::interchangeSubspace(hidden(b), hidden(s), rows);
    return logits(mixed).argmax(1).eq(s).to(at::kDouble).mean().item<double>();
  }
};

/// Interchange intervention training of a k-dimensional rotation.
double trainedIia(const Planted &model, int64_t k) {
  Rotation r(16, k, generator(13 + k));
  torch::optim::Adam adam({r.parameter()}, torch::optim::AdamOptions(0.05));
  for (int step = 0; step < 300; ++step) {
    at::Tensor b = at::randint(0, 8, {256}, at::kLong), s = at::randint(0, 8, {256}, at::kLong);
    at::Tensor mixed = mixc::rt::interchangeSubspace(model.hidden(b), model.hidden(s), r.rows());
    at::Tensor loss = at::cross_entropy_loss(model.logits(mixed), s);
    adam.zero_grad();
    loss.backward();
    adam.step();
  }
  EXPECT_LT(r.orthogonalityError(), 1e-5);
  return model.iia(r.rows().detach());
}
} // namespace

TEST(Das, RecoversAPlantedRotatedVariable) {
  at::manual_seed(14);
  Planted model;
  const double planted = trainedIia(model, 2), one = trainedIia(model, 1);
  const double channels = model.iia(at::eye(16).narrow(0, 0, 2)), whole = model.iia(at::eye(16));
  EXPECT_GT(whole, 0.99) << "the whole vector carries the class";
  EXPECT_GT(planted, 0.95) << "DAS at the planted k";
  EXPECT_LT(channels, 0.5) << "two of h's own channels";
  EXPECT_LT(one, 0.85) << "one dimension cannot carry a 2-d variable";
}
