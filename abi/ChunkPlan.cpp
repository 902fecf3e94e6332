//===- ChunkPlan.cpp - the chunk plan's JSON --------------------------------===//
#include "abi/ChunkPlan.h"

#include <nlohmann/json.hpp>

namespace mixc::graph {
namespace {
using nlohmann::json;

json factorsJson(const std::vector<ChunkFactor> &factors) {
  json out = json::array();
  for (const ChunkFactor &f : factors)
    out.push_back({{"value", f.value}, {"axes", f.axes}, {"inverse", f.inverse}});
  return out;
}

json termsJson(const std::vector<ChunkTerm> &terms) {
  json out = json::array();
  for (const ChunkTerm &t : terms)
    out.push_back({{"coef", t.coef}, {"state", t.state}, {"previous", t.previous},
                   {"factors", factorsJson(t.factors)}, {"out", t.out}});
  return out;
}

std::vector<ChunkFactor> factorsOf(const json &j) {
  std::vector<ChunkFactor> out;
  for (const json &f : j)
    out.push_back({f.at("value").get<std::string>(), f.at("axes").get<std::string>(), f.at("inverse").get<bool>()});
  return out;
}

std::vector<ChunkTerm> termsOf(const json &j) {
  std::vector<ChunkTerm> out;
  for (const json &t : j)
    out.push_back({t.at("coef").get<double>(), t.at("state").get<int>(), t.at("previous").get<bool>(),
                   factorsOf(t.at("factors")), t.at("out").get<std::string>()});
  return out;
}
} // namespace

std::string chunkPlanToJson(const ChunkPlan &plan) {
  json states = json::array(), emits = json::array();
  for (const ChunkState &s : plan.states) {
    json state = {{"decay", factorsJson(s.decay)}, {"writes", termsJson(s.writes)}};
    if (!s.correctionAxis.empty())
      state["correction"] = {{"axis", s.correctionAxis}, {"beta_coef", s.betaCoef},
                             {"beta", factorsJson(s.beta)}, {"key", factorsJson(s.key)}};
    states.push_back(state);
  }
  for (const std::vector<ChunkTerm> &e : plan.emits)
    emits.push_back(termsJson(e));
  return json{{"free", plan.freeNodes}, {"states", states}, {"emits", emits}}.dump();
}

std::string chunkPlanFromJson(const std::string &text, ChunkPlan &plan) {
  try {
    json j = json::parse(text);
    plan = ChunkPlan{};
    plan.freeNodes = j.at("free").get<std::vector<std::string>>();
    for (const json &s : j.at("states")) {
      ChunkState state{factorsOf(s.at("decay")), termsOf(s.at("writes")), "", 1, {}, {}};
      if (s.contains("correction")) {
        const json &c = s.at("correction");
        state.correctionAxis = c.at("axis").get<std::string>();
        state.betaCoef = c.at("beta_coef").get<double>();
        state.beta = factorsOf(c.at("beta"));
        state.key = factorsOf(c.at("key"));
        if (state.correctionAxis != "r" && state.correctionAxis != "c")
          return "malformed chunk plan: a correction's axis is 'r' or 'c', not '" + state.correctionAxis + "'";
      }
      plan.states.push_back(std::move(state));
    }
    for (const json &e : j.at("emits"))
      plan.emits.push_back(termsOf(e));
  } catch (const std::exception &e) {
    return std::string("malformed chunk plan: ") + e.what();
  }
  return "";
}

} // namespace mixc::graph
