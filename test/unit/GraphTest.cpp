// Runtime graph: JSON round trip and validation of malformed files.
#include "abi/Flops.h"
#include "abi/Graph.h"

#include <gtest/gtest.h>

using namespace mixc::graph;

namespace {
Graph tiny() {
  Graph g;
  g.model = "tiny";
  g.config = {{"d", "4"}};
  g.inputs.push_back({"tokens", {kDynamic, kDynamic}, "i64"});
  g.params.push_back({"wte", {10, 4}, "normal(0.02)", true});
  g.params.push_back({"z", {16, 3}, "implicit_pos(0.0001)", false});
  Node e;
  e.name = "embed";
  e.op = "embedding";
  e.inputs = {"tokens", "wte"};
  e.shapes = {{kDynamic, kDynamic, 4}};
  Node s;
  s.name = "split";
  s.op = "split";
  s.inputs = {"embed"};
  s.attrs["sizes"].kind = AttrValue::Kind::Ints;
  s.attrs["sizes"].ints = {1, 3};
  s.shapes = {{kDynamic, kDynamic, 1}, {kDynamic, kDynamic, 3}};
  Node t;
  t.name = "second";
  t.op = "tap";
  t.inputs = {"split#1"};
  t.shapes = {{kDynamic, kDynamic, 3}};
  t.attrs["eps"].kind = AttrValue::Kind::Float;
  t.attrs["eps"].f = 1e-5;
  g.nodes = {e, s, t};
  g.outputs = {"second"};
  return g;
}
} // namespace

TEST(Graph, RoundTrip) {
  Graph g = tiny();
  std::string text = toJson(g);
  Graph back;
  std::string error;
  ASSERT_TRUE(fromJson(text, back, error)) << error;
  EXPECT_EQ(back.model, "tiny");
  ASSERT_EQ(back.nodes.size(), 3u);
  EXPECT_EQ(back.nodes[1].attrs.at("sizes"), g.nodes[1].attrs.at("sizes"));
  EXPECT_DOUBLE_EQ(back.nodes[2].attrs.at("eps").f, 1e-5);
  EXPECT_EQ(back.params[1].trainable, false);
  EXPECT_EQ(toJson(back), text);
}

TEST(Graph, ParameterCountSkipsBuffers) { EXPECT_EQ(parameterCount(tiny()), 40); }

TEST(Graph, RejectsUseBeforeDefinition) {
  Graph g = tiny();
  std::swap(g.nodes[0], g.nodes[1]);
  EXPECT_NE(validate(g).find("node 'split' uses 'embed', which is not defined before it"),
            std::string::npos)
      << validate(g);
}

TEST(Graph, RejectsDuplicateNames) {
  Graph g = tiny();
  g.nodes[2].name = "embed";
  EXPECT_EQ(validate(g), "name 'embed' is defined twice");
}

TEST(Graph, RejectsOtherVersionsAndGarbage) {
  Graph g;
  std::string error;
  std::string text = toJson(tiny());
  const std::string now = "\"version\": " + std::to_string(kFormatVersion);
  const std::string next = std::to_string(kFormatVersion + 1);
  std::string other = text;
  other.replace(other.find(now), now.size(), "\"version\": " + next);
  EXPECT_FALSE(fromJson(other, g, error));
  EXPECT_NE(error.find("version " + next + " is not supported"), std::string::npos) << error;
  EXPECT_FALSE(fromJson(text.substr(0, text.size() / 2), g, error));
  EXPECT_NE(error.find("malformed graph file"), std::string::npos) << error;
  EXPECT_FALSE(fromJson("{\"format\": \"other\"}", g, error));
  EXPECT_NE(error.find("not a mixc graph"), std::string::npos) << error;
}

// --resume compares models, not files: what the compiler derived (regions,
// kernels, `fused` tags), source locations and the format version may
// differ between mixc versions; a node's op or shape may not.
TEST(Graph, ModelIdentityIgnoresWhatTheCompilerDerived) {
  Graph a = tiny();
  std::string base = toJson(a);
  Graph b = a;
  b.regions.push_back({"r", "elementwise", {}, {}, {}, 2, {{kTargetCpu, {"mixk_0", ""}}}});
  b.source = "/elsewhere/model.mix";
  for (Node &n : b.nodes) {
    n.loc = "moved.mix:99:1";
    n.attrs["fused"] = AttrValue{};
    n.attrs["fused"].kind = AttrValue::Kind::Str;
    n.attrs["fused"].s = "r";
  }
  std::string other = toJson(b);
  other.replace(other.find("\"version\": " + std::to_string(kFormatVersion)),
                std::string("\"version\": ").size() + std::to_string(kFormatVersion).size(), "\"version\": 1");
  EXPECT_NE(base, other);
  EXPECT_EQ(modelIdentity(base), modelIdentity(other));
  Graph c = a;
  c.nodes.back().shapes[0].back() += 1;
  EXPECT_NE(modelIdentity(base), modelIdentity(toJson(c)));
  Graph d = a;
  d.nodes.back().op = d.nodes.back().op == "add" ? "mul" : "add";
  EXPECT_NE(modelIdentity(base), modelIdentity(toJson(d)));
}

// The FLOP counter (abi/Flops.h) on a small graph counted by hand at
// B = 2, T = 5: every kind of term (a matmul with bias, an activation, a
// causal conv, a DSL scan's step T times, the LM head in full and read out).
TEST(Flops, ASmallGraphCountedByHand) {
  Graph g;
  g.inputs.push_back({"tokens", {kDynamic, kDynamic}, "i64"});
  g.params = {{"wte", {10, 4}, "zeros", true},  {"w", {6, 4}, "zeros", true},   {"b", {6}, "zeros", true},
              {"cw", {6, 3}, "zeros", true},   {"head", {10, 6}, "zeros", true},
              {"filter", {8, 6}, "zeros", true}};
  auto node = [](std::string name, std::string op, std::vector<std::string> in, std::vector<int64_t> shape) {
    Node n;
    n.name = std::move(name);
    n.op = std::move(op);
    n.inputs = std::move(in);
    n.shapes = {std::move(shape)};
    return n;
  };
  const int64_t D = kDynamic;
  Node scan = node("scan", "scan", {"conv"}, {D, D, 1});
  scan.bodyArgs = {{"S", {D, 6}, "f32"}, {"conv[t]", {D, 6}, "f32"}};
  scan.body = {node("scan.m", "mul", {"conv[t]", "S"}, {D, 6}), node("scan.n", "add", {"S", "scan.m"}, {D, 6}),
               node("scan.y", "sum", {"scan.n"}, {D, 1})};
  scan.bodyResults = {"scan.n", "scan.y"};
  g.nodes = {node("embed", "embedding", {"tokens", "wte"}, {D, D, 4}),
             node("proj", "linear", {"embed", "w", "b"}, {D, D, 6}),
             node("act", "silu", {"proj"}, {D, D, 6}),
             node("conv", "causal_conv", {"act", "cw"}, {D, D, 6}),
             node("long", "long_conv", {"conv", "filter"}, {D, D, 6}),
             scan,
             node("logits", "unembed", {"conv", "head"}, {D, D, 10})};
  g.outputs = {"logits"};
  // linear 2·(2·5)·4·6 + 10·6 bias (its weight is [out, in] = [6, 4]); silu 60; conv 2·60·3; scan 5 steps of
  // (12 mul + 12 add + 12 summed); the head 2·10 rows·6·10.
  // The long conv: 12 sequences of 5 steps, directly 5·6 each (cheaper than
  // three real FFTs of size 10, 3·2.5·10·log2 10 ≈ 249, and the product).
  const double linear = 2 * 10 * 4 * 6 + 60, silu = 60, conv = 2 * 60 * 3, step = 12 + 12 + 12, head = 2 * 10 * 6 * 10,
               longConv = 12 * 5 * 6;
  FlopCount f = forwardFlops(g, 2, 5);
  EXPECT_DOUBLE_EQ(f.byOp["linear"], linear);
  EXPECT_DOUBLE_EQ(f.byOp["silu"], silu);
  EXPECT_DOUBLE_EQ(f.byOp["causal_conv"], conv);
  EXPECT_DOUBLE_EQ(f.byOp["long_conv"], longConv);
  EXPECT_DOUBLE_EQ(f.byOp["scan"], 5 * step);
  EXPECT_DOUBLE_EQ(f.byOp["unembed"], head);
  EXPECT_DOUBLE_EQ(f.byOp["embedding"], 0);
  EXPECT_EQ(f.byOp.count("mul"), 0u) << "a scan's step ops are the scan's";
  EXPECT_DOUBLE_EQ(f.total, linear + silu + conv + longConv + 5 * step + head);
  // Read out at one position a document: the head sees 2 rows.
  EXPECT_DOUBLE_EQ(forwardFlops(g, 2, 5, 2).byOp["unembed"], 2 * 2 * 6 * 10);
  // Twice the batch, twice the work; T² for nothing here but T for all.
  EXPECT_DOUBLE_EQ(forwardFlops(g, 4, 5).total, 2 * f.total);
}
