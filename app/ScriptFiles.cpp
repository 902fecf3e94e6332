//===- ScriptFiles.cpp - intervention scripts read and named ---------------===//
#include "app/ScriptFiles.h"
#include "app/Names.h"
#include "support/Digest.h"
#include "support/TextFile.h"

#include <algorithm>
#include <set>
#include <cstdio>

namespace mixc::app {

std::string scriptDigest(const std::string &text, const dsl::RwScript &script) {
  uint64_t h = support::fnv1a(text);
  for (const auto &cell : script.cells)
    for (const auto &a : cell.actions)
      for (double v : a.vector) {
        char num[40];
        std::snprintf(num, sizeof num, " %.17g", v);
        h = support::fnv1a(num, h);
      }
  return support::hexDigest(h);
}

support::Status loadScript(const std::string &path, LoadedScript &out, std::ostream &diagnostics) {
  std::string text, error;
  if (!support::readTextFile(path, text, error, dsl::kMaxRewriteBytes))
    return support::Status::failed("rewrite script: " + error); // as dsl::loadRewrite says it
  out.path = path;
  if (!dsl::parseRewrite(text, path, out.sources, out.script, diagnostics))
    return support::Status::failed("");
  out.digest = scriptDigest(text, out.script);
  return support::Status::ok();
}

namespace {
/// A node every-point and every-edge attribution patch: one that takes
/// interventions (a value of a scan's step too), not the compiler's own `_`
/// nodes, not the LM head.
bool attributable(const NamedPoint &p) {
  const bool intervenes = std::find(p.actions.begin(), p.actions.end(), "intervene") != p.actions.end();
  return p.kind == "node" && intervenes && p.op != "unembed" && p.name[0] != '_' &&
         p.name.find("._") == std::string::npos;
}
} // namespace

dsl::RwScript everyEdge(const graph::Graph &g) {
  std::set<std::string> senders; // and a built-in recurrence's state, into `next` and `output`
  for (const NamedPoint &p : namedPoints(g))
    if (attributable(p) || (p.kind == "state" && p.op != "scan" && !p.actions.empty()))
      senders.insert(p.name);
  dsl::RwScript s;
  for (const auto &[sender, receiver] : edges(g)) {
    if (!senders.count(sender))
      continue;
    for (const char *role : {"key", "value", "divider", "query"}) {
      dsl::RwCell cell;
      const std::string edge = sender + " -> " + receiver;
      cell.label = "edge=" + edge + " position=" + role;
      cell.coords = {{"edge", edge}, {"position", role}};
      dsl::RwAction a;
      a.kind = Action::Patch;
      a.pattern = sender;
      a.receiver = receiver;
      a.position.role = role;
      cell.actions.push_back(a);
      s.cells.push_back(cell);
    }
  }
  return s;
}

dsl::RwScript everyPoint(const graph::Graph &g) {
  dsl::RwScript s;
  for (const NamedPoint &p : namedPoints(g)) {
    if (!attributable(p))
      continue;
    for (const char *role : {"key", "value", "divider", "query"}) {
      dsl::RwCell cell;
      cell.label = "node=" + p.name + " position=" + role;
      cell.coords = {{"node", p.name}, {"position", role}};
      dsl::RwAction a;
      a.kind = Action::Patch;
      a.pattern = p.name;
      a.position.role = role;
      cell.actions.push_back(a);
      s.cells.push_back(cell);
    }
  }
  return s;
}

std::vector<std::string> splitCommas(const std::string &list) {
  std::vector<std::string> pieces;
  for (size_t start = 0;;) {
    size_t comma = list.find(',', start);
    pieces.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos)
      return pieces;
    start = comma + 1;
  }
}

} // namespace mixc::app
