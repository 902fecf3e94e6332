//===- Scripts.cpp - intervention scripts on a trained run ------------------===//
#include "app/Scripts.h"
#include "runtime/train/Checkpoint.h"

#include <filesystem>

namespace mixc::app {

support::Status openScriptRun(const std::string &run, const std::string &scriptPath, ScriptRun &out,
                              std::ostream &diagnostics, bool edges) {
  std::string graphJson, error;
  graph::Graph graph;
  if (!analysis::checkpointGraph(run, graphJson, out.checkpoint, error) || !graph::fromJson(graphJson, graph, error))
    return support::Status::failed(error);
  LoadedScript script;
  if (scriptPath.empty()) {
    script.script = edges ? everyEdge(graph) : everyPoint(graph);
  } else if (support::Status st = loadScript(scriptPath, script, diagnostics); !st.isOk()) {
    return st;
  }
  std::error_code ec;
  out.runDir = std::filesystem::is_directory(run, ec) ? run
                                                      : std::filesystem::path(out.checkpoint).parent_path().string();
  if (scriptPath.empty() && !compiler().canCompile()) // everyPoint's script is in no bundle
    return support::Status::failed(needsCompiler(edges ? "attribute --edges (every edge)"
                                                       : "attribute without a script (every named node)"));
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
