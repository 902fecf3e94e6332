// The primitives that map straight onto LibTorch calls, through the
// interpreter's op table: each against a plain reference (explicit loops or
// scalar formulas) and, where differentiable, finite differences.
#include "runtime/core/Model.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>

using namespace mixc;
using at::Tensor;

namespace {
at::TensorOptions f64() { return at::TensorOptions().dtype(at::kDouble); }

graph::Node node(const std::string &op) {
  graph::Node n;
  n.name = op;
  n.op = op;
  return n;
}

graph::Node withFloat(graph::Node n, const std::string &k, double v) {
  n.attrs[k].kind = graph::AttrValue::Kind::Float;
  n.attrs[k].f = v;
  return n;
}

graph::Node withInts(graph::Node n, const std::string &k, std::vector<int64_t> v) {
  n.attrs[k].kind = graph::AttrValue::Kind::Ints;
  n.attrs[k].ints = std::move(v);
  return n;
}

graph::Node withInt(graph::Node n, const std::string &k, int64_t v) {
  n.attrs[k].kind = graph::AttrValue::Kind::Int;
  n.attrs[k].i = v;
  return n;
}

Tensor run(const graph::Node &n, std::vector<Tensor> in) { return rt::runPrimitive(n, in)[0]; }

/// Central differences of sum(op(inputs) · g) against autograd.
void gradcheck(const graph::Node &n, std::vector<Tensor> inputs) {
  for (Tensor &t : inputs)
    t = t.detach().clone().set_requires_grad(true);
  Tensor out = run(n, inputs);
  Tensor g = at::randn_like(out);
  auto grads = torch::autograd::grad({(out * g).sum()}, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor flat = inputs[i].detach().view({-1});
    for (int64_t j = 0; j < flat.numel(); ++j) {
      double orig = flat[j].item<double>(), h = 1e-6;
      std::vector<Tensor> args;
      for (const Tensor &t : inputs)
        args.push_back(t.detach());
      flat[j] = orig + h;
      double up = (run(n, args) * g).sum().item<double>();
      flat[j] = orig - h;
      double down = (run(n, args) * g).sum().item<double>();
      flat[j] = orig;
      EXPECT_NEAR(grads[i].view({-1})[j].item<double>(), (up - down) / (2 * h), 1e-5)
          << n.op << " input " << i << " element " << j;
    }
  }
}

class OpTable : public ::testing::Test {
protected:
  void SetUp() override { at::manual_seed(11); }
};
} // namespace

TEST_F(OpTable, ElementwiseUnary) {
  Tensor x = at::randn({2, 3, 4}, f64());
  std::vector<std::pair<std::string, std::function<double(double)>>> ops = {
      {"silu", [](double v) { return v / (1 + std::exp(-v)); }},
      {"gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
      {"relu", [](double v) { return v > 0 ? v : 0; }},
      {"softplus", [](double v) { return std::log1p(std::exp(v)); }},
      {"sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"sin", [](double v) { return std::sin(v); }},
      {"exp", [](double v) { return std::exp(v); }},
      {"abs", [](double v) { return std::fabs(v); }},
      {"neg", [](double v) { return -v; }},
      {"tap", [](double v) { return v; }}};
  for (const auto &[op, f] : ops) {
    Tensor y = run(node(op), {x});
    Tensor flat = x.view({-1}), got = y.reshape({-1});
    for (int64_t i = 0; i < flat.numel(); ++i)
      EXPECT_NEAR(got[i].item<double>(), f(flat[i].item<double>()), 1e-12) << op;
    if (op != "relu" && op != "abs")
      gradcheck(node(op), {x});
  }
}

TEST_F(OpTable, BroadcastingBinary) {
  Tensor a = at::randn({2, 3, 4}, f64()), b = at::randn({3, 1}, f64()).abs() + 0.5;
  std::vector<std::pair<std::string, std::function<double(double, double)>>> ops = {
      {"add", [](double p, double q) { return p + q; }}, {"sub", [](double p, double q) { return p - q; }},
      {"mul", [](double p, double q) { return p * q; }}, {"div", [](double p, double q) { return p / q; }}};
  for (const auto &[op, f] : ops) {
    Tensor y = run(node(op), {a, b});
    for (int i = 0; i < 2; ++i)
      for (int t = 0; t < 3; ++t)
        for (int c = 0; c < 4; ++c)
          EXPECT_NEAR(y[i][t][c].item<double>(), f(a[i][t][c].item<double>(), b[t][0].item<double>()), 1e-12) << op;
    gradcheck(node(op), {a, b});
  }
}

TEST_F(OpTable, LinearEmbeddingUnembed) {
  Tensor x = at::randn({2, 3, 4}, f64()), w = at::randn({5, 4}, f64()), b = at::randn({5}, f64());
  Tensor y = run(node("linear"), {x, w, b}), yNoBias = run(node("linear"), {x, w});
  for (int i = 0; i < 2; ++i)
    for (int t = 0; t < 3; ++t)
      for (int o = 0; o < 5; ++o) {
        double acc = 0;
        for (int k = 0; k < 4; ++k)
          acc += x[i][t][k].item<double>() * w[o][k].item<double>();
        EXPECT_NEAR(yNoBias[i][t][o].item<double>(), acc, 1e-12);
        EXPECT_NEAR(y[i][t][o].item<double>(), acc + b[o].item<double>(), 1e-12);
      }
  gradcheck(node("linear"), {x, w, b});

  Tensor table = at::randn({6, 4}, f64());
  Tensor ids = at::tensor({0, 5, 2, 2, 1, 3}, at::kLong).view({2, 3});
  Tensor e = run(node("embedding"), {ids, table});
  for (int i = 0; i < 2; ++i)
    for (int t = 0; t < 3; ++t)
      // Bit-exact by construction: an embedding is a row copy.
      EXPECT_TRUE(at::equal(e[i][t], table[ids[i][t].item<int64_t>()]));
  Tensor logits = run(node("unembed"), {x, table});
  for (int v = 0; v < 6; ++v)
    EXPECT_NEAR(logits[1][2][v].item<double>(), (x[1][2] * table[v]).sum().item<double>(), 1e-12);
  gradcheck(node("unembed"), {x, table});
}

TEST_F(OpTable, LayerNorm) {
  Tensor x = at::randn({2, 3, 4}, f64()), w = at::randn({4}, f64()), b = at::randn({4}, f64());
  // eps is always in the graph (export writes the op's default); 1e-3 here
  // so that a runtime ignoring it would show.
  Tensor y = run(withFloat(node("layernorm"), "eps", 1e-3), {x, w, b});
  for (int i = 0; i < 2; ++i)
    for (int t = 0; t < 3; ++t) {
      double mean = 0, var = 0;
      for (int c = 0; c < 4; ++c)
        mean += x[i][t][c].item<double>() / 4;
      for (int c = 0; c < 4; ++c)
        var += std::pow(x[i][t][c].item<double>() - mean, 2) / 4; // biased, as nn.LayerNorm
      for (int c = 0; c < 4; ++c)
        EXPECT_NEAR(y[i][t][c].item<double>(),
                    (x[i][t][c].item<double>() - mean) / std::sqrt(var + 1e-3) * w[c].item<double>() +
                        b[c].item<double>(),
                    1e-12);
    }
  gradcheck(withFloat(node("layernorm"), "eps", 1e-5), {x, w, b});
}

TEST_F(OpTable, Layout) {
  // Layout ops copy values and `x` holds small integers (sums exact in
  // f64), so the EXPECT_EQs below are exact by construction.
  Tensor x = at::arange(2 * 3 * 6, f64()).view({2, 3, 6});
  std::vector<Tensor> parts = rt::runPrimitive(withInts(node("split"), "sizes", {2, 4}), {x});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1][1][2][0].item<double>(), x[1][2][2].item<double>());
  Tensor cat = run(node("concat"), {parts[1], parts[0]});
  EXPECT_EQ(cat[0][1][4].item<double>(), x[0][1][0].item<double>());
  Tensor r = run(withInts(withInt(node("reshape"), "keep", 2), "shape", {3, 2}), {x});
  EXPECT_EQ(r.sizes(), (at::IntArrayRef{2, 3, 3, 2}));
  EXPECT_EQ(r[1][2][2][1].item<double>(), x[1][2][5].item<double>());
  Tensor p = run(withInts(node("permute"), "perm", {0, 2, 1}), {x});
  EXPECT_EQ(p[1][5][2].item<double>(), x[1][2][5].item<double>());
  Tensor s = run(withInt(node("sum"), "axis", 1), {x});
  EXPECT_EQ(s[1][3].item<double>(), x[1][0][3].item<double>() + x[1][1][3].item<double>() + x[1][2][3].item<double>());
  Tensor table = at::randn({10, 4}, f64());
  Tensor ts = run(node("time_slice"), {table, x});
  EXPECT_TRUE(at::equal(ts, table.slice(0, 0, 3))); // a slice copies: bit-exact by construction
  EXPECT_THROW(run(node("time_slice"), {table.slice(0, 0, 2), x}), c10::Error);
}
