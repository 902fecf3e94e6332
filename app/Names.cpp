//===- Names.cpp - a compiled model's intervention points -------------------===//
#include "app/Names.h"

#include "abi/Actions.h"
#include "abi/StateLayout.h"
#include "dsl/Rewrite.h"
#include "support/Suggest.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace mixc::app {

std::vector<NamedPoint> namedPoints(const graph::Graph &g) {
  std::vector<NamedPoint> out;
  for (const auto &in : g.inputs)
    out.push_back({"input", in.name, "", {}, ""});
  for (const auto &p : g.params)
    out.push_back({p.trainable ? "param" : "buffer", p.name, "", {}, ""});
  const auto shapes = graph::valueShapes(g);
  for (const auto &n : g.nodes) {
    const std::vector<int64_t> *first = nullptr;
    if (!n.inputs.empty())
      if (auto it = shapes.find(n.inputs[0]); it != shapes.end())
        first = &it->second;
    dsl::NodeActions can = dsl::nodeActions(n.shapes, first);
    NamedPoint node{"node", n.name, n.op, {}, ""};
    if (can.intervene)
      node.actions.push_back("intervene");
    if (can.remove)
      node.actions.push_back("remove");
    out.push_back(std::move(node));
    if (n.op == "scan") { // a DSL scan's states, as declared
      const int64_t states = static_cast<int64_t>(std::min<size_t>(n.attrs.at("num_states").i, n.bodyArgs.size()));
      for (int64_t k = 0; k < states; ++k) {
        const graph::Input &arg = n.bodyArgs[k];
        auto [layout, size] = graph::scanStateLayout(arg.shape);
        out.push_back({"state", arg.name, n.op, {"intervene"}, layout + " = " + std::to_string(size) + " floats"});
      }
      // The step's own values, [B, ...] once a step: P is the step.
      for (const auto &inner : n.body) {
        const bool perRow = inner.shapes.size() == 1 && !inner.shapes[0].empty() && inner.shapes[0][0] < 0;
        out.push_back({"node", inner.name, inner.op, perRow ? std::vector<std::string>{"intervene"} : std::vector<std::string>{}, ""});
      }
      continue;
    }
    auto it = n.attrs.find("state_name");
    if (it == n.attrs.end())
      continue;
    NamedPoint state{"state", it->second.s, n.op, {}, graph::stateRefusal(n.op)};
    if (state.note.empty()) {
      std::vector<std::vector<int64_t>> operands;
      for (const std::string &in : n.inputs)
        operands.push_back(shapes.count(in) ? shapes.at(in) : std::vector<int64_t>{});
      state.note = graph::stateLayout(n.op) + " = " +
                   std::to_string(graph::stateSize(n.op, operands)) + " floats";
      state.actions.push_back("intervene");
    }
    out.push_back(std::move(state));
  }
  return out;
}

std::string formatNamedPoints(const std::vector<NamedPoint> &points) {
  std::ostringstream ss;
  for (const NamedPoint &p : points) {
    std::string actions;
    for (const std::string &a : p.actions)
      actions += (actions.empty() ? "" : ",") + a;
    if (p.kind == "state") {
      ss << "state  " << p.name << (actions.empty() ? "  [none: " + p.note + "]" : " " + p.note + "  [" + actions + "]")
         << "\n";
      continue;
    }
    ss << p.kind << std::string(7 - p.kind.size(), ' ') << p.name; // columns as before: "buffer " is the widest
    if (p.kind == "node")
      ss << " " << p.op << (actions.empty() ? "" : "  [" + actions + "]");
    ss << "\n";
  }
  return ss.str();
}

namespace {
/// The edges from `sender` to each of `nodes` that reads it.
void edgesToReaders(const std::string &sender, const std::vector<graph::Node> &nodes,
                    std::vector<std::pair<std::string, std::string>> &out) {
  for (const graph::Node &reader : nodes)
    if (std::find(reader.inputs.begin(), reader.inputs.end(), sender) != reader.inputs.end())
      out.emplace_back(sender, reader.name);
}

/// The edges inside scan `scan`'s step: from each of its values that takes
/// edits to each node of the step that reads it, and to each state it is
/// handed on as (the state after P, for the steps after P).
void stepEdges(const graph::Node &scan, const std::set<std::string> &senders,
               std::vector<std::pair<std::string, std::string>> &out) {
  const size_t states = std::min<size_t>(scan.attrs.at("num_states").i, scan.bodyArgs.size());
  for (const graph::Node &sender : scan.body) {
    if (!senders.count(sender.name))
      continue;
    edgesToReaders(sender.name, scan.body, out);
    for (size_t k = 0; k < states && k < scan.bodyResults.size(); ++k)
      if (scan.bodyResults[k] == sender.name)
        out.emplace_back(sender.name, scan.bodyArgs[k].name);
  }
}
} // namespace

std::vector<std::pair<std::string, std::string>> edges(const graph::Graph &g) {
  std::set<std::string> senders;
  std::set<std::string> states; // the built-in recurrences' states that take edits
  for (const NamedPoint &p : namedPoints(g)) {
    const bool intervenes = std::find(p.actions.begin(), p.actions.end(), "intervene") != p.actions.end();
    if (p.kind == "node" && intervenes)
      senders.insert(p.name);
    if (p.kind == "state" && intervenes && p.op != "scan")
      states.insert(p.name);
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (const graph::Node &sender : g.nodes) {
    if (senders.count(sender.name))
      edgesToReaders(sender.name, g.nodes, out);
    if (sender.op == "scan")
      stepEdges(sender, senders, out);
    // A built-in recurrence's state: its two readers, the next step and the
    // output at the step (a scan's state has one, its next step).
    auto state = sender.attrs.find("state_name");
    if (state != sender.attrs.end() && states.count(state->second.s))
      for (StateReader r : {StateReader::NextStep, StateReader::Output})
        out.emplace_back(state->second.s, stateReaderName(r));
  }
  return out;
}

std::string formatEdges(const std::vector<std::pair<std::string, std::string>> &edges) {
  std::ostringstream ss;
  for (const auto &[sender, receiver] : edges)
    ss << "edge   " << sender << " -> " << receiver << "\n";
  return ss.str();
}

bool hookTargets(const graph::Graph &g, const std::vector<std::string> &patterns,
                 std::vector<std::vector<std::string>> &nodesPerPattern, std::string &error) {
  const std::vector<NamedPoint> points = namedPoints(g);
  std::map<std::string, std::string> scanOf; // a value inside a scan's step -> the scan
  for (const graph::Node &n : g.nodes)
    for (const graph::Node &inner : n.body)
      scanOf[inner.name] = n.name;
  std::vector<std::string> hookable;
  for (const NamedPoint &p : points)
    if (p.kind == "node" && std::count(p.actions.begin(), p.actions.end(), "intervene") && !scanOf.count(p.name))
      hookable.push_back(p.name);
  nodesPerPattern.assign(patterns.size(), {});
  for (size_t i = 0; i < patterns.size(); ++i) {
    for (const NamedPoint &p : points)
      if (p.kind == "state" && dsl::matchesStatePattern(patterns[i], p.name, p.op == "scan")) {
        if (p.actions.empty()) {
          error = "'" + p.name + "' cannot be hooked: " + p.note;
          return false;
        }
        nodesPerPattern[i].push_back(p.name);
      }
    for (const NamedPoint &p : points) // values inside a scan's step: per-row ones (marked intervene)
      if (scanOf.count(p.name) && std::count(p.actions.begin(), p.actions.end(), "intervene") &&
          dsl::matchesPattern(patterns[i], p.name))
        nodesPerPattern[i].push_back(p.name);
    for (const std::string &name : hookable)
      if (dsl::matchesPattern(patterns[i], name))
        nodesPerPattern[i].push_back(name);
    if (nodesPerPattern[i].empty()) {
      for (const NamedPoint &p : points)
        if (p.kind == "state")
          hookable.push_back(p.name);
      error = "no node matches '" + patterns[i] + "'" + support::didYouMean(patterns[i], hookable) +
              " (mixc.names(model) lists them)";
      return false;
    }
  }
  return true;
}

} // namespace mixc::app
