// Runtime graph: JSON round trip and validation of malformed files.
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
