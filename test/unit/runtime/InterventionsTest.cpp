// Interventions against hand-built equivalents: `remove` of Mamba's conv is
// the spec written without it; `zero` at a node is the graph with that node
// multiplied by 0; patching from an identical source changes nothing.
#include "TestModels.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <fstream>
#include <sstream>

using mixc::rt::Model;
namespace graph = mixc::graph;

namespace {
graph::Graph compileGraph(const std::string &arch, std::vector<mixc::dsl::ConfigEntry> config) {
  return compileStdlib(arch, config).graph;
}

/// Three blocks (source, base, cell 0) of the same documents.
Model::Options layout(int64_t docs, int64_t T) {
  Model::Options o;
  Model::Interventions iv;
  iv.docs = docs;
  iv.roles["key"] = at::full({docs}, 1, at::kLong);
  iv.roles["value"] = at::full({docs}, 2, at::kLong);
  o.interventions = iv;
  return o;
}
} // namespace

TEST(Interventions, RemovingMambasConvIsTheSpecWithoutIt) {
  at::set_num_threads(1);
  graph::Graph removed = rewrite(compileGraph("mamba", {{"d", "16"}, {"vocab", "20"}}),
                                 "remove layers[*].mixer.conv\n");
  graph::Graph noConv = compileGraph("mamba", {{"d", "16"}, {"vocab", "20"}, {"d_conv", "0"}});
  auto a = model(removed), b = model(noConv);
  ASSERT_EQ(a->tensors().size(), b->tensors().size()) << "the conv's weights are gone";
  a->initParameters(5);
  b->initParameters(6);
  copyWeights(*a, *b);
  torch::NoGradGuard noGrad;
  at::Tensor tokens = at::randint(3, 20, {3, 11}, at::kLong);
  // The same function through different nodes (an identity where the conv
  // was): equal up to float rounding, not bit for bit.
  EXPECT_LT(relativeDifference(a->forward(tokens), b->forward(tokens)), 1e-6);
}

/// `g` with the tap `node` turned into `op(node's input, constant value)`.
graph::Graph withConstant(graph::Graph g, const std::string &node, const std::string &op,
                          double value) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].name == node) {
      graph::Node c;
      c.name = "hand_constant";
      c.op = "constant";
      c.attrs["value"].kind = graph::AttrValue::Kind::Float;
      c.attrs["value"].f = value;
      c.shapes = {{}};
      g.nodes[i].op = op;
      g.nodes[i].inputs.push_back("hand_constant");
      g.nodes.insert(g.nodes.begin() + i, c);
      break;
    }
  return g;
}

TEST(Interventions, AddEqualsTheNodePlusTheVector) {
  at::set_num_threads(1);
  graph::Graph g = compileGraph("based", {{"d", "16"}, {"vocab", "20"}});
  std::string dir = ::testing::TempDir();
  {
    std::ofstream v(dir + "/quarter.txt");
    for (int i = 0; i < 16; ++i)
      v << "0.25 ";
  }
  graph::Graph added = rewrite(g, "add(quarter.txt) layers[0].mixer_output at all\n", dir + "/t.rw");
  graph::Graph hand = withConstant(g, "layers[0].mixer_output", "add", 0.25);
  auto a = model(added), b = model(hand);
  a->initParameters(1);
  copyWeights(*a, *b);
  torch::NoGradGuard noGrad;
  at::Tensor docs = at::randint(3, 20, {4, 9}, at::kLong);
  at::Tensor out = a->forward(at::cat({docs, docs, docs}, 0), layout(4, 9));
  EXPECT_LT((out.slice(0, 8, 12) - b->forward(docs)).abs().max().item<double>(), 1e-6);
}

TEST(Interventions, ZeroEqualsTheNodeTimesZero) {
  at::set_num_threads(1);
  graph::Graph g = compileGraph("based", {{"d", "16"}, {"vocab", "20"}});
  graph::Graph zeroed = rewrite(g, "zero layers[0].mixer_output at all\n");
  // Hand-built: the tap `layers[0].mixer_output` becomes a multiplication by 0.
  graph::Graph hand = g;
  for (size_t i = 0; i < hand.nodes.size(); ++i)
    if (hand.nodes[i].name == "layers[0].mixer_output") {
      graph::Node zero;
      zero.name = "hand_zero";
      zero.op = "constant";
      zero.attrs["value"].kind = graph::AttrValue::Kind::Float;
      zero.attrs["value"].f = 0;
      zero.shapes = {{}};
      hand.nodes[i].op = "mul";
      hand.nodes[i].inputs.push_back("hand_zero");
      hand.nodes.insert(hand.nodes.begin() + i, zero);
      break;
    }
  auto a = model(zeroed), b = model(hand);
  a->initParameters(1);
  copyWeights(*a, *b);
  torch::NoGradGuard noGrad;
  at::Tensor docs = at::randint(3, 20, {4, 9}, at::kLong);
  at::Tensor batch = at::cat({docs, docs, docs}, 0);
  at::Tensor out = a->forward(batch, layout(4, 9));
  at::Tensor expected = b->forward(docs);
  EXPECT_LT((out.slice(0, 8, 12) - expected).abs().max().item<double>(), 1e-6);
  // The source and base blocks are untouched (up to batch-size rounding).
  auto original = model(g);
  copyWeights(*a, *original);
  EXPECT_LT((out.slice(0, 4, 8) - original->forward(docs)).abs().max().item<double>(), 1e-6);
}

// `mean NODE at key` (issue 61 item 1): in the cell's rows, the node's value
// at each document's key becomes the source run's average of that node at
// the documents' keys (examples/interventions/ablations.rw), computed here
// by hand and applied to a plain model through its edit hook, an
// independent path; the other positions and the source and base blocks
// keep their values.
TEST(Interventions, MeanIsTheSourceRunsAverageAtTheRole) {
  at::set_num_threads(1);
  graph::Graph g = compileGraph("based", {{"d", "16"}, {"vocab", "20"}});
  graph::Graph meaned = rewrite(g, "mean layers[0].mixer_output at key\n");
  auto a = model(meaned), plain = model(g);
  a->initParameters(1);
  copyWeights(*a, *plain);
  torch::NoGradGuard noGrad;
  const int64_t docs = 4, T = 9;
  at::Tensor source = at::randint(3, 20, {docs, T}, at::kLong), base = at::randint(3, 20, {docs, T}, at::kLong);
  Model::Options o = layout(docs, T);
  at::Tensor keys = at::tensor({1, 3, 5, 2}, at::kLong);
  o.interventions->roles["key"] = keys;
  at::Tensor out = a->forward(at::cat({source, base, base}, 0), o);
  // The source run's values at the keys, their mean [D], by hand.
  at::Tensor seen;
  Model::Options observe;
  observe.observe = [&](const std::string &name, const at::Tensor &v) {
    if (name == "layers[0].mixer_output")
      seen = v.clone();
  };
  plain->forward(source, observe);
  at::Tensor mean = seen.index({at::arange(docs), keys}).mean(0); // [D]
  Model::Options edit;
  edit.edit = [&](const std::string &name, const at::Tensor &v) {
    if (name != "layers[0].mixer_output")
      return at::Tensor();
    at::Tensor r = v.clone();
    for (int64_t i = 0; i < docs; ++i)
      r[i][keys[i].item<int64_t>()] = mean;
    return r;
  };
  EXPECT_LT(relativeDifference(out.slice(0, 2 * docs, 3 * docs), plain->forward(base, edit)), 1e-5);
  EXPECT_LT(relativeDifference(out.slice(0, 0, docs), plain->forward(source)), 1e-5);
  EXPECT_LT(relativeDifference(out.slice(0, docs, 2 * docs), plain->forward(base)), 1e-5);
  // Not the base run's own mean, nor a no-op: the edit shows.
  EXPECT_GT((out.slice(0, 2 * docs, 3 * docs) - plain->forward(base)).abs().max().item<double>(), 1e-4);
}

TEST(Interventions, PatchingFromAnIdenticalSourceChangesNothing) {
  at::set_num_threads(1);
  graph::Graph g = compileGraph("mamba", {{"d", "16"}, {"vocab", "20"}});
  graph::Graph patched = rewrite(g, "patch layers[1].block_input at value\n"
                                    "patch layers[0].mixer.conv at all\n");
  auto a = model(patched), plain = model(g);
  a->initParameters(2);
  copyWeights(*a, *plain);
  torch::NoGradGuard noGrad;
  at::Tensor docs = at::randint(3, 20, {3, 9}, at::kLong);
  Model::Options o = layout(3, 9);
  at::Tensor out = a->forward(at::cat({docs, docs, docs, docs}, 0), o);
  // Within the batch the patched cells equal the untouched base up to
  // rounding (not bit for bit: the rows sit at other batch positions).
  for (int block = 2; block < 4; ++block)
    EXPECT_LT(relativeDifference(out.slice(0, 3 * block, 3 * block + 3), out.slice(0, 3, 6)), 1e-6)
        << "block " << block;
  // And, up to batch-size rounding, the plain model.
  EXPECT_LT((out.slice(0, 3, 6) - plain->forward(docs)).abs().max().item<double>(), 1e-6);
}

namespace {
/// The value of `node` (its patched copy `node@c0` when intervened) for one
/// forward of `m`.
at::Tensor observed(const Model &m, const at::Tensor &tokens, Model::Options o, const std::string &node) {
  at::Tensor value;
  o.observe = [&](const std::string &name, const at::Tensor &v) {
    if (name == node)
      value = v.clone();
  };
  m.forward(tokens, o);
  return value;
}
} // namespace

// NODE[a:b]: only channels a..b−1 at the position come from the source run;
// the other channels and positions keep the base run's values.
TEST(Interventions, AChannelRangePatchesThoseChannelsOnly) {
  at::set_num_threads(1);
  graph::Graph g = compileGraph("based", {{"d", "16"}, {"vocab", "20"}});
  graph::Graph patched = rewrite(g, "patch layers[1].block_input[4:10] at key\n");
  auto a = model(patched);
  a->initParameters(3);
  torch::NoGradGuard noGrad;
  at::Tensor source = at::randint(3, 20, {4, 9}, at::kLong), base = at::randint(3, 20, {4, 9}, at::kLong);
  Model::Options o = layout(4, 9); // key at position 1
  at::Tensor before = observed(*a, at::cat({source, base, base}, 0), o, "layers[1].block_input");
  at::Tensor after = observed(*a, at::cat({source, base, base}, 0), o, "layers[1].block_input@c0");
  ASSERT_TRUE(before.defined() && after.defined());
  at::Tensor src = before.slice(0, 0, 4), b = before.slice(0, 4, 8), cell = after.slice(0, 8, 12);
  at::Tensor want = b.clone();
  want.select(1, 1).narrow(-1, 4, 6).copy_(src.select(1, 1).narrow(-1, 4, 6));
  EXPECT_LT(relativeDifference(cell, want), 1e-6);
  EXPECT_GT(relativeDifference(cell, b), 1e-3) << "the patch changed nothing";
}

// NODE[head=h] on H3's per-head outer products [B, T, H, head_dim²]; and
// add(FILE) spans the head's values.
TEST(Interventions, AHeadPatchesThatHeadOnly) {
  at::set_num_threads(1);
  graph::Graph g = compileGraph("h3", {{"d", "16"}, {"vocab", "20"}});
  std::string dir = ::testing::TempDir();
  {
    std::ofstream v(dir + "/head.txt");
    for (int i = 0; i < 4; ++i) // head_dim² = 4
      v << 0.5 * (i + 1) << " ";
  }
  graph::Graph patched = rewrite(g, "patch layers[0].mixer.kv[head=3] at all\n"
                                    "add(head.txt) layers[0].mixer.kv[head=1] at value\n",
                                 dir + "/h.rw");
  auto a = model(patched);
  a->initParameters(4);
  torch::NoGradGuard noGrad;
  at::Tensor source = at::randint(3, 20, {2, 9}, at::kLong), base = at::randint(3, 20, {2, 9}, at::kLong);
  Model::Options o = layout(2, 9); // value at position 2
  at::Tensor tokens = at::cat({source, base, base, base}, 0);
  at::Tensor before = observed(*a, tokens, o, "layers[0].mixer.kv");
  at::Tensor patch = observed(*a, tokens, o, "layers[0].mixer.kv@c0");
  at::Tensor add = observed(*a, tokens, o, "layers[0].mixer.kv@c1");
  ASSERT_TRUE(before.defined() && patch.defined() && add.defined());
  ASSERT_EQ(before.dim(), 4);
  at::Tensor src = before.slice(0, 0, 2), b = before.slice(0, 2, 4);
  at::Tensor want = b.clone();
  want.select(2, 3).copy_(src.select(2, 3));
  EXPECT_LT(relativeDifference(patch.slice(0, 4, 6), want), 1e-6);
  // Cell 1's rows (block 3) of its own copy: head 1 at the value shifted by 1..4 × 0.5.
  at::Tensor shifted = b.clone();
  shifted.select(1, 2).select(1, 1).add_(at::tensor({0.5, 1.0, 1.5, 2.0}, at::kFloat));
  EXPECT_LT(relativeDifference(add.slice(0, 6, 8), shifted), 1e-6);
}

// Attribution's probes (Model::Options::probes): a patch node passes its
// input through, and the gradient at its observed value is the metric's
// derivative in that node's value, checked here against central finite
// differences made with add(FILE) of ±ε on one channel at one position.
TEST(Interventions, ProbeGradientsMatchFiniteDifferences) {
  at::set_num_threads(1);
  graph::Graph g = compileGraph("based", {{"d", "16"}, {"vocab", "20"}});
  auto probed = model(rewrite(g, "patch layers[1].block_input at value\n"));
  probed->initParameters(7);
  at::manual_seed(8);
  at::Tensor docs = at::randint(3, 20, {3, 9}, at::kLong), w = at::randn({3, 9, 20});
  Model::Options o;
  o.probes = true;
  at::Tensor value;
  o.observe = [&](const std::string &name, const at::Tensor &v) {
    if (name == "layers[1].block_input@c0") {
      const_cast<at::Tensor &>(v).retain_grad();
      value = v;
    }
  };
  at::Tensor plain = probed->forward(docs, o);
  (plain * w).sum().backward();
  ASSERT_TRUE(value.defined() && value.grad().defined());
  // The probe changed nothing: the plain model's logits.
  auto original = model(g);
  copyWeights(*probed, *original);
  {
    torch::NoGradGuard noGrad;
    EXPECT_LT(relativeDifference(plain.detach(), original->forward(docs)), 1e-6);
  }
  const std::string dir = ::testing::TempDir();
  const double eps = 1e-2;
  for (auto [t, j] : std::vector<std::pair<int, int>>{{2, 0}, {4, 7}, {8, 15}}) {
    double metric[2];
    for (int side = 0; side < 2; ++side) {
      {
        std::ofstream v(dir + "/eps.txt");
        for (int k = 0; k < 16; ++k)
          v << (k == j ? (side ? eps : -eps) : 0.0) << " ";
      }
      auto shifted = model(rewrite(g, "add(eps.txt) layers[1].block_input at pos(" + std::to_string(t) + ")\n",
                                   dir + "/fd.rw"));
      copyWeights(*probed, *shifted);
      torch::NoGradGuard noGrad;
      at::Tensor out = shifted->forward(at::cat({docs, docs, docs}, 0), layout(3, 9));
      metric[side] = (out.slice(0, 6, 9) * w).sum().item<double>(); // cell 0's rows
    }
    const double fd = (metric[1] - metric[0]) / (2 * eps);
    const double grad = value.grad().select(1, t).select(1, j).sum().item<double>(); // Σ over documents
    EXPECT_NEAR(grad, fd, 2e-2 * std::max(1.0, std::abs(fd))) << "position " << t << ", channel " << j;
  }
}

// A graph whose intervention names an action the op does not take (an
// edited graph.json, a newer writer) is refused where the model is built:
// run, it would be some other ablation, a silent wrong answer.
TEST(Interventions, AnUnknownActionKindIsRefused) {
  graph::Graph g = compileGraph("based", {{"d", "16"}, {"vocab", "20"}});
  graph::Graph zeroed = rewrite(g, "zero layers[0].mixer_output at all\n");
  auto ablate = std::find_if(zeroed.nodes.begin(), zeroed.nodes.end(),
                             [](const graph::Node &n) { return n.op == "ablate"; });
  ASSERT_NE(ablate, zeroed.nodes.end());
  for (const char *kind : {"bogus", "patch", "das", "remove"}) { // patch is a patch op's, not an ablate's
    ablate->attrs["kind"].s = kind;
    std::string error;
    EXPECT_EQ(Model::create(zeroed, error), nullptr) << kind;
    EXPECT_NE(error.find("has kind '" + std::string(kind) + "'"), std::string::npos) << error;
  }
  ablate->attrs["kind"].s = "mean";
  std::string error;
  EXPECT_NE(Model::create(zeroed, error), nullptr) << error;
}
