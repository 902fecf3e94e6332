//===- GraphJson.cpp - runtime graph <-> JSON -------------------------------===//
#include "abi/Graph.h"
#include "support/Digest.h"
#include "support/Limits.h"

#include <nlohmann/json.hpp>
#include <algorithm>
#include <set>
#include <stdexcept>

namespace mixc::graph {
using nlohmann::json;

namespace {
json attrToJson(const AttrValue &a) {
  switch (a.kind) {
  case AttrValue::Kind::Int: return a.i;
  case AttrValue::Kind::Float: return a.f;
  case AttrValue::Kind::Bool: return a.b;
  case AttrValue::Kind::Str: return a.s;
  case AttrValue::Kind::Ints: return a.ints;
  case AttrValue::Kind::Floats: return a.floats;
  }
  return nullptr;
}

AttrValue attrFromJson(const json &j) {
  AttrValue a;
  if (j.is_boolean()) {
    a.kind = AttrValue::Kind::Bool;
    a.b = j.get<bool>();
  } else if (j.is_number_integer()) {
    a.kind = AttrValue::Kind::Int;
    a.i = j.get<int64_t>();
  } else if (j.is_number()) {
    a.kind = AttrValue::Kind::Float;
    a.f = j.get<double>();
  } else if (j.is_string()) {
    a.kind = AttrValue::Kind::Str;
    a.s = j.get<std::string>();
  } else if (j.is_array() && std::all_of(j.begin(), j.end(), [](const json &e) { return e.is_number_integer(); })) {
    a.kind = AttrValue::Kind::Ints;
    a.ints = j.get<std::vector<int64_t>>();
  } else if (j.is_array()) {
    a.kind = AttrValue::Kind::Floats;
    a.floats = j.get<std::vector<double>>();
  } else {
    throw std::runtime_error("unsupported attribute value " + j.dump());
  }
  return a;
}
} // namespace

namespace {
nlohmann::ordered_json nodeToJson(const Node &n) {
  nlohmann::ordered_json node = {{"name", n.name}, {"op", n.op}, {"inputs", n.inputs}, {"shapes", n.shapes}};
  if (!n.attrs.empty()) {
    nlohmann::ordered_json attrs = nlohmann::ordered_json::object();
    for (const auto &[k, v] : n.attrs)
      attrs[k] = attrToJson(v);
    node["attrs"] = attrs;
  }
  if (!n.loc.empty())
    node["loc"] = n.loc;
  if (!n.body.empty() || !n.bodyArgs.empty()) { // a scan's step
    nlohmann::ordered_json body = {{"args", json::array()}, {"nodes", json::array()}, {"results", n.bodyResults}};
    for (const Input &a : n.bodyArgs)
      body["args"].push_back({{"name", a.name}, {"shape", a.shape}, {"dtype", a.dtype}});
    for (const Node &inner : n.body)
      body["nodes"].push_back(nodeToJson(inner));
    node["body"] = body;
  }
  return node;
}
} // namespace

std::string toJson(const Graph &g) {
  // Insertion order, so the file reads top-down: header, inputs, params, nodes.
  nlohmann::ordered_json j;
  j["format"] = kFormatName;
  j["version"] = g.version;
  j["model"] = g.model;
  j["source"] = g.source;
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  for (const auto &[k, v] : g.config)
    config[k] = v;
  j["config"] = config;
  j["inputs"] = json::array();
  for (const Input &in : g.inputs)
    j["inputs"].push_back({{"name", in.name}, {"shape", in.shape}, {"dtype", in.dtype}});
  j["params"] = json::array();
  for (const Param &p : g.params)
    j["params"].push_back({{"name", p.name}, {"shape", p.shape}, {"init", p.init},
                           {"trainable", p.trainable}});
  j["nodes"] = json::array();
  for (const Node &n : g.nodes)
    j["nodes"].push_back(nodeToJson(n));
  j["outputs"] = g.outputs;
  if (!g.regions.empty()) {
    j["regions"] = json::array();
    for (const Region &r : g.regions) {
      nlohmann::ordered_json region = {{"name", r.name},     {"kind", r.kind},
                                       {"inputs", r.inputs}, {"outputs", r.outputs},
                                       {"row_rank", r.rowRank}};
      if (!r.inputRoles.empty())
        region["input_roles"] = r.inputRoles;
      nlohmann::ordered_json targets = nlohmann::ordered_json::object();
      for (const auto &[target, k] : r.targets) {
        nlohmann::ordered_json t = nlohmann::ordered_json::object();
        if (!k.kernel.empty())
          t["kernel"] = k.kernel;
        if (!k.skipped.empty())
          t["skipped"] = k.skipped;
        targets[target] = t;
      }
      if (!targets.empty())
        region["targets"] = targets;
      j["regions"].push_back(region);
    }
  }
  return j.dump(1) + "\n";
}

namespace {
// nlohmann converts a JSON number of any kind to an integer when asked;
// a float out of range (say 1e80) is then undefined behaviour. Integers
// are checked to be integers first.
int64_t intOf(const json &j, const char *what) {
  if (!j.is_number_integer())
    throw std::runtime_error(std::string(what) + " must be an integer");
  return j.get<int64_t>();
}
std::vector<int64_t> intsOf(const json &j, const char *what) {
  if (!j.is_array())
    throw std::runtime_error(std::string(what) + " must be an array of integers");
  std::vector<int64_t> out;
  for (const json &e : j)
    out.push_back(intOf(e, what));
  return out;
}
} // namespace

namespace {
Node nodeFromJson(const json &n, int depth) {
  Node node;
  node.name = n.at("name").get<std::string>();
  node.op = n.at("op").get<std::string>();
  node.inputs = n.at("inputs").get<std::vector<std::string>>();
  for (const json &shape : n.at("shapes"))
    node.shapes.push_back(intsOf(shape, "a shape"));
  if (n.contains("attrs"))
    for (auto &[k, v] : n.at("attrs").items())
      node.attrs[k] = attrFromJson(v);
  node.loc = n.value("loc", "");
  if (n.contains("body")) {
    if (depth > 0) // the DSL does not nest scans; a deep file must not blow the stack
      throw std::runtime_error("node '" + node.name + "': a scan inside a scan's body");
    const json &body = n.at("body");
    for (const json &a : body.at("args"))
      node.bodyArgs.push_back({a.at("name").get<std::string>(), intsOf(a.at("shape"), "a shape"),
                               a.at("dtype").get<std::string>()});
    for (const json &inner : body.at("nodes"))
      node.body.push_back(nodeFromJson(inner, depth + 1));
    node.bodyResults = body.at("results").get<std::vector<std::string>>();
  }
  return node;
}
} // namespace

namespace {
/// A scan's step: its nodes read only its arguments and earlier nodes of
/// the body, and its results name those.
std::string validateBody(const Node &scan) {
  std::set<std::string> defined;
  for (const Input &a : scan.bodyArgs)
    if (a.name.empty() || !defined.insert(a.name).second)
      return "scan '" + scan.name + "': its step's argument '" + a.name + "' is empty or named twice";
  for (const Node &n : scan.body) {
    for (const std::string &in : n.inputs)
      if (!defined.count(in))
        return "scan '" + scan.name + "': node '" + n.name + "' of its step uses '" + in +
               "', which is not defined before it in the step";
    if (n.shapes.empty() || !n.body.empty() || n.op == kStateEditOp)
      return "scan '" + scan.name + "': node '" + n.name + "' of its step has no result or is a scan or state edit";
    if (!defined.insert(n.name).second)
      return "scan '" + scan.name + "': name '" + n.name + "' is defined twice in its step";
    for (size_t i = 1; i < n.shapes.size(); ++i)
      defined.insert(n.name + "#" + std::to_string(i));
  }
  for (const std::string &r : scan.bodyResults)
    if (!defined.count(r))
      return "scan '" + scan.name + "': its step returns '" + r + "', which it does not define";
  return "";
}
} // namespace

std::string modelIdentity(const std::string &graphJson) {
  try {
    nlohmann::json j = nlohmann::json::parse(graphJson);
    if (j.is_object()) {
      for (const char *derived : {"regions", "version", "source"})
        j.erase(derived);
      if (j.contains("nodes") && j["nodes"].is_array())
        for (nlohmann::json &n : j["nodes"]) {
          if (!n.is_object())
            continue;
          n.erase("loc"); // where in the .mix file: moving a line changes no weight
          if (n.contains("body") && n["body"].is_object() && n["body"].contains("nodes") &&
              n["body"]["nodes"].is_array())
            for (nlohmann::json &inner : n["body"]["nodes"])
              if (inner.is_object())
                inner.erase("loc");
          if (n.contains("attrs") && n["attrs"].is_object()) {
            n["attrs"].erase("fused");
            if (n["attrs"].empty()) // as a node that never had attributes is written
              n.erase("attrs");
          }
        }
    }
    return j.dump();
  } catch (const std::exception &) {
    return graphJson;
  }
}

bool fromJson(const std::string &text, Graph &g, std::string &error) {
  try {
    json j = json::parse(text);
    if (!j.is_object() || j.value("format", "") != kFormatName) {
      error = "not a mixc graph file (missing \"format\": \"mixc-graph\")";
      return false;
    }
    int64_t version = intOf(j.at("version"), "version");
    if (version != kFormatVersion) {
      error = "graph format version " + std::to_string(version) + " is not supported (this build reads version " +
              std::to_string(kFormatVersion) + "); recompile the model";
      return false;
    }
    g = Graph{};
    g.version = static_cast<int>(version);
    g.model = j.at("model").get<std::string>();
    g.source = j.value("source", "");
    for (auto &[k, v] : j.at("config").items())
      g.config.push_back({k, v.get<std::string>()});
    for (const json &in : j.at("inputs"))
      g.inputs.push_back({in.at("name").get<std::string>(), intsOf(in.at("shape"), "a shape"),
                          in.at("dtype").get<std::string>()});
    for (const json &p : j.at("params"))
      g.params.push_back({p.at("name").get<std::string>(), intsOf(p.at("shape"), "a shape"),
                          p.at("init").get<std::string>(), p.at("trainable").get<bool>()});
    for (const json &n : j.at("nodes"))
      g.nodes.push_back(nodeFromJson(n, 0));
    g.outputs = j.at("outputs").get<std::vector<std::string>>();
    if (j.contains("regions"))
      for (const json &r : j.at("regions")) {
        Region region;
        region.name = r.at("name").get<std::string>();
        region.kind = r.at("kind").get<std::string>();
        region.inputs = r.at("inputs").get<std::vector<std::string>>();
        region.outputs = r.at("outputs").get<std::vector<std::string>>();
        region.rowRank = static_cast<int>(r.contains("row_rank") ? intOf(r.at("row_rank"), "row_rank") : 0);
        if (r.contains("input_roles")) {
          region.inputRoles = r.at("input_roles").get<std::vector<std::string>>();
          if (region.inputRoles.size() != region.inputs.size()) {
            error = "region '" + region.name + "': " + std::to_string(region.inputRoles.size()) +
                    " input roles for " + std::to_string(region.inputs.size()) + " inputs";
            return false;
          }
          for (const std::string &role : region.inputRoles)
            if (role != kRoleRow && role != kRoleFilter && role != kRoleInvariant) {
              error = "region '" + region.name + "': unknown input role '" + role +
                      "' (row, filter or invariant)";
              return false;
            }
        }
        if (r.contains("targets"))
          for (auto &[target, t] : r.at("targets").items())
            region.targets[target] = {t.value("kernel", ""), t.value("skipped", "")};
        g.regions.push_back(std::move(region));
      }
  } catch (const std::exception &e) {
    error = std::string("malformed graph file: ") + e.what();
    return false;
  }
  error = validate(g);
  return error.empty();
}

std::string validate(const Graph &g) {
  std::set<std::string> defined;
  auto define = [&](const std::string &n) -> std::string {
    if (n.empty())
      return "a value has an empty name";
    if (!defined.insert(n).second)
      return "name '" + n + "' is defined twice";
    return "";
  };
  for (const Input &in : g.inputs)
    if (std::string e = define(in.name); !e.empty())
      return e;
  for (const Param &p : g.params) {
    if (std::string e = define(p.name); !e.empty())
      return e;
    int64_t elements = 1;
    for (int64_t d : p.shape) {
      if (d <= 0)
        return "parameter '" + p.name + "' has a non-positive dimension";
      // Checked, so that parameterCount() and allocation sizes never wrap.
      if (__builtin_mul_overflow(elements, d, &elements) || elements > support::kMaxTensorElements)
        return "parameter '" + p.name + "' has more than " + std::to_string(support::kMaxTensorElements) +
               " elements";
    }
  }
  for (const Node &n : g.nodes) {
    for (const std::string &in : n.inputs)
      if (!defined.count(in))
        return "node '" + n.name + "' uses '" + in + "', which is not defined before it";
    if (n.op == kStateEditOp) { // no result: its target recurrence reads it (checked below)
      if (!n.shapes.empty() || !n.inputs.empty() || !n.attrs.count("target"))
        return "state edit '" + n.name + "' must have a target and no inputs or results";
      if (std::string e = define(n.name); !e.empty())
        return e;
      continue;
    }
    if (n.shapes.empty())
      return "node '" + n.name + "' has no results";
    if (n.op == "scan" || !n.body.empty())
      if (std::string e = validateBody(n); !e.empty())
        return e;
    if (std::string e = define(n.name); !e.empty())
      return e;
    for (size_t i = 1; i < n.shapes.size(); ++i)
      defined.insert(n.name + "#" + std::to_string(i));
  }
  for (const std::string &o : g.outputs)
    if (!defined.count(o))
      return "output '" + o + "' is not defined";
  for (const Node &n : g.nodes)
    if (n.op == kStateEditOp && !defined.count(n.attrs.at("target").s))
      return "state edit '" + n.name + "' targets '" + n.attrs.at("target").s + "', which is no node";
  return "";
}

std::map<std::string, std::vector<int64_t>> valueShapes(const Graph &g) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const Input &in : g.inputs)
    shapes[in.name] = in.shape;
  for (const Param &p : g.params)
    shapes[p.name] = p.shape;
  for (const Node &n : g.nodes)
    for (size_t r = 0; r < n.shapes.size(); ++r)
      shapes[r == 0 ? n.name : n.name + "#" + std::to_string(r)] = n.shapes[r];
  return shapes;
}

int64_t parameterCount(const Graph &g) {
  int64_t total = 0;
  for (const Param &p : g.params) {
    if (!p.trainable)
      continue;
    int64_t n = 1;
    for (int64_t d : p.shape)
      n *= d;
    total += n;
  }
  return total;
}

double parameterFloats(const Graph &g, bool trainableOnly) {
  double total = 0;
  for (const Param &p : g.params) {
    if (trainableOnly && !p.trainable)
      continue;
    double n = 1;
    for (int64_t d : p.shape)
      n *= static_cast<double>(d);
    total += n;
  }
  return total;
}

std::string graphDigest(const Graph &g) {
  // Of the JSON with its objects' keys sorted: a graph read back from JSON
  // (a checkpoint's) lists its config in another order than the compiler.
  return support::hexDigest(support::fnv1a(nlohmann::json::parse(toJson(g)).dump()));
}

} // namespace mixc::graph
