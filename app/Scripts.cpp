//===- Scripts.cpp - intervention scripts on a trained run ------------------===//
#include "app/Scripts.h"
#include "app/Names.h"
#include "runtime/train/Checkpoint.h"
#include "support/Digest.h"
#include "support/TextFile.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

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

dsl::RwScript everyPoint(const graph::Graph &g) {
  dsl::RwScript s;
  for (const NamedPoint &p : namedPoints(g)) {
    const bool intervenes = std::find(p.actions.begin(), p.actions.end(), "intervene") != p.actions.end();
    if (p.kind != "node" || !intervenes || p.op == "unembed" || p.name[0] == '_' ||
        p.name.find("._") != std::string::npos)
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

support::Status openScriptRun(const std::string &run, const std::string &scriptPath, ScriptRun &out,
                              std::ostream &diagnostics) {
  std::string graphJson, error;
  graph::Graph graph;
  if (!analysis::checkpointGraph(run, graphJson, out.checkpoint, error) || !graph::fromJson(graphJson, graph, error))
    return support::Status::failed(error);
  LoadedScript script;
  if (scriptPath.empty()) {
    script.script = everyPoint(graph);
  } else if (support::Status st = loadScript(scriptPath, script, diagnostics); !st.isOk()) {
    return st;
  }
  std::error_code ec;
  out.runDir = std::filesystem::is_directory(run, ec) ? run
                                                      : std::filesystem::path(out.checkpoint).parent_path().string();
  if (scriptPath.empty() && !compiler().canCompile()) // everyPoint's script is in no bundle
    return support::Status::failed(needsCompiler("attribute without a script (every named node)"));
  if (support::Status st = compiler().rewrite(graph, script, out.runDir, out.rewritten, diagnostics); !st.isOk())
    return st;
  const dsl::RwScript &s = script.script;
  out.spec.corrupt = s.corrupt;
  out.spec.swap = s.swap;
  out.spec.readout = s.readout;
  for (const auto &cell : s.cells)
    out.spec.cells.push_back({cell.label, cell.coords});
  return support::Status::ok();
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

support::Status resolveSaveList(const std::string &list, const graph::Graph &g, std::set<std::string> &out) {
  std::vector<std::string> patterns;
  for (const std::string &p : splitCommas(list))
    if (!p.empty())
      patterns.push_back(p);
  std::string error;
  return analysis::resolveSaveNames(patterns, g, out, error) ? support::Status::ok()
                                                          : support::Status::failed("--save: " + error);
}

} // namespace mixc::app
