// Front-end unit tests: lexer, parser, elaborator.
#include "dsl/Frontend.h"
#include "dsl/Lexer.h"
#include "dsl/Rewrite.h"

#include <gtest/gtest.h>
#include <sstream>

using namespace mixc::dsl;

namespace {
std::optional<Program> elaborateText(const std::string &text, std::string &errors,
                                     const std::vector<ConfigEntry> &config = {}) {
  Frontend fe({MIXC_SOURCE_ROOT});
  std::ostringstream err;
  std::optional<Program> p;
  if (fe.loadText("test.mix", text, err))
    p = fe.elaborate("", config, err);
  errors = err.str();
  return p;
}

const Func &entry(const Program &p) { return p.funcs[p.entry]; }

int countOps(const Func &f, const std::string &op) {
  int n = 0;
  for (const Node &node : f.nodes)
    n += node.op == op;
  return n;
}
} // namespace

TEST(Lexer, TokensAndLocations) {
  std::vector<Token> t = lex("let x = 0..4 // comment\n  y2 = 1.5e-3 \"s\"", 0);
  ASSERT_EQ(t.size(), 11u);
  EXPECT_EQ(t[0].kind, Tok::KwLet);
  EXPECT_EQ(t[1].kind, Tok::Ident);
  EXPECT_EQ(t[1].text, "x");
  EXPECT_EQ(t[3].kind, Tok::Int); // `0..4` is 0, .., 4 — not the float 0.
  EXPECT_EQ(t[4].kind, Tok::DotDot);
  EXPECT_EQ(t[5].intValue, 4);
  EXPECT_EQ(t[6].text, "y2");
  EXPECT_EQ(t[6].loc.line, 2);
  EXPECT_EQ(t[6].loc.col, 3);
  EXPECT_EQ(t[8].kind, Tok::Float);
  EXPECT_DOUBLE_EQ(t[8].floatValue, 1.5e-3);
  EXPECT_EQ(t[9].kind, Tok::String);
  EXPECT_EQ(t[9].text, "s");
  EXPECT_EQ(t.back().kind, Tok::Eof);
}

TEST(Lexer, RejectsHugeNumbers) {
  try {
    lex("99999999999999999999999", 0);
    FAIL() << "expected an error";
  } catch (const DslError &e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos);
    EXPECT_EQ(e.loc.col, 1);
  }
}

TEST(Parser, PrecedenceAndKeywordsAsNames) {
  auto m = parseModule("mixer mixer(model: int = 1 + 2 * 3 - 4) { return model }", 0, "t.mix");
  ASSERT_EQ(m->defs.size(), 1u);
  EXPECT_EQ(m->defs[0]->name, "mixer"); // contextual keyword used as a name
  const Expr &e = *m->defs[0]->params[0].defaultValue;
  // ((1 + (2 * 3)) - 4)
  ASSERT_EQ(e.kind, Expr::Kind::Binary);
  EXPECT_EQ(e.text, "-");
  EXPECT_EQ(e.operands[0]->text, "+");
  EXPECT_EQ(e.operands[0]->operands[1]->text, "*");
}

TEST(Parser, ErrorHasLocation) {
  try {
    parseModule("model m() {\n  let = 3\n}", 0, "t.mix");
    FAIL() << "expected an error";
  } catch (const DslError &e) {
    EXPECT_EQ(e.loc.line, 2);
    EXPECT_EQ(e.loc.col, 7);
  }
}

TEST(Elaborator, LoopsUnrollIntoScopedNames) {
  std::string errors;
  auto p = elaborateText(R"(
model m(vocab: int = 10, d: int = 4, n: int = 3) {
  input tokens: [B, T] int
  let wte = param([vocab, d])
  let h = embedding(tokens, wte)
  for l in 0..n as layers {
    let act = silu(h)
    h = act
  }
  return h
})", errors);
  ASSERT_TRUE(p) << errors;
  const Func &f = entry(*p);
  EXPECT_EQ(countOps(f, "silu"), 3);
  std::vector<std::string> names;
  for (const Node &n : f.nodes)
    if (n.op == "silu")
      names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"layers[0].act", "layers[1].act", "layers[2].act"}));
  // Symbolic dimensions flow through: [B, T, 4].
  EXPECT_EQ(shapeStr(f.resultTypes[0].shape), "[B, T, 4]");
}

TEST(Elaborator, IntegerDivisionIsExactOrFails) {
  std::string errors;
  auto ok = elaborateText(R"(
model m(vocab: int = 10, d: int = 64) {
  input tokens: [B, T] int
  let wte = param([vocab, ceil(d / 16) + d / 32])
  return embedding(tokens, wte)
})", errors);
  ASSERT_TRUE(ok) << errors;
  EXPECT_EQ(shapeStr(entry(*ok).resultTypes[0].shape), "[B, T, 6]");

  auto bad = elaborateText(R"(
model m(vocab: int = 10, d: int = 66) {
  input tokens: [B, T] int
  let wte = param([vocab, d / 16])
  return embedding(tokens, wte)
})", errors);
  EXPECT_FALSE(bad);
  EXPECT_NE(errors.find("test.mix:4:"), std::string::npos) << errors;
  EXPECT_NE(errors.find("4.125"), std::string::npos) << errors;
}

TEST(Elaborator, InstancesAreSharedPerParameters) {
  std::string errors;
  auto p = elaborateText(R"(
mixer gate(d: int) {
  input x: [B, T, d]
  return silu(x)
}
model m(vocab: int = 10, d: int = 4) {
  input tokens: [B, T] int
  let wte = param([vocab, d])
  let h = embedding(tokens, wte)
  for l in 0..4 as layers {
    h = gate(h, d)
  }
  return h
})", errors);
  ASSERT_TRUE(p) << errors;
  EXPECT_EQ(p->funcs.size(), 2u); // one gate instance, one model
  EXPECT_EQ(countOps(entry(*p), "call"), 4);
  for (const Node &n : entry(*p).nodes)
    if (n.op == "call")
      EXPECT_EQ(n.scope.rfind("layers[", 0), 0u) << n.scope;
}

TEST(Elaborator, MixerValuesAndPatternDimensions) {
  std::string errors;
  auto p = elaborateText(R"(
mixer widen(k: int) {
  input x: [B, T, d]
  return linear(x, k * d)
}
block apply(m: mixer) {
  input x: [B, T, d]
  let mixer_output = m(x)
  return mixer_output
}
model m(vocab: int = 10, d: int = 4) {
  input tokens: [B, T] int
  let wte = param([vocab, d])
  return apply(embedding(tokens, wte), widen(3))
})", errors);
  ASSERT_TRUE(p) << errors;
  // d is a pattern variable bound to 4 by the input; k = 3 from the closure.
  EXPECT_EQ(shapeStr(entry(*p).resultTypes[0].shape), "[B, T, 12]");
}

TEST(Elaborator, ConfigOverridesAndErrors) {
  std::string errors;
  const char *src = R"(
model m(vocab: int = 10, d: int = 4) {
  input tokens: [B, T] int
  let wte = param([vocab, d])
  return embedding(tokens, wte)
})";
  auto p = elaborateText(src, errors, {{"d", "32"}});
  ASSERT_TRUE(p) << errors;
  EXPECT_EQ(shapeStr(entry(*p).resultTypes[0].shape), "[B, T, 32]");
  EXPECT_FALSE(elaborateText(src, errors, {{"dd", "3"}}));
  EXPECT_NE(errors.find("unknown config key 'dd' (did you mean 'd'?)"), std::string::npos) << errors;
}

TEST(Elaborator, StdlibModelsElaborate) {
  for (const char *m : {"attention", "based", "baseconv", "mamba", "deltanet", "h3", "hyena"}) {
    Frontend fe({MIXC_SOURCE_ROOT});
    std::ostringstream err;
    ASSERT_TRUE(fe.load(std::string(MIXC_SOURCE_ROOT) + "/stdlib/" + m + ".mix", err)) << err.str();
    auto p = fe.elaborate("", {{"d", "16"}}, err);
    ASSERT_TRUE(p) << m << ": " << err.str();
    EXPECT_EQ(shapeStr(entry(*p).resultTypes[0].shape), "[B, T, 8196]") << m;
  }
}

TEST(Rewrite, StatePatternAliasReachesAScansStatesOnly) {
  using mixc::dsl::matchesStatePattern;
  // A scan's state answers to its own name and to PREFIX.state, wildcards included.
  EXPECT_TRUE(matchesStatePattern("layers[1].mixer.S", "layers[1].mixer.S", true));
  EXPECT_TRUE(matchesStatePattern("layers[1].mixer.state", "layers[1].mixer.S", true));
  EXPECT_TRUE(matchesStatePattern("layers[*].mixer.state", "layers[1].mixer.S_re", true));
  // Not under another prefix, not a deeper one, and only a pattern ending in .state.
  EXPECT_FALSE(matchesStatePattern("layers[0].mixer.state", "layers[1].mixer.S", true));
  EXPECT_FALSE(matchesStatePattern("layers[1].state", "layers[1].mixer.S", true));
  EXPECT_FALSE(matchesStatePattern("layers[1].mixer.states", "layers[1].mixer.S", true));
  EXPECT_FALSE(matchesStatePattern(".state", "S", true));
  // A built-in recurrence's state is reached by its own name alone.
  EXPECT_TRUE(matchesStatePattern("layers[*].mixer.state", "layers[0].mixer.state", false));
  EXPECT_FALSE(matchesStatePattern("layers[0].state", "layers[0].mixer.state", false));
}
