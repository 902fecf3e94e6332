//===- StoredCompiler.cpp - runtime-only builds: what bundles hold ----------===//
//
// Without MLIR nothing is compiled here: models come as bundles (a config's
// model.file), and intervention scripts as the rewrites compiled into the
// bundle, which training copied into the run folder.
//
//===----------------------------------------------------------------------===//
#include "app/Compile.h"
#include "abi/Bundle.h"

namespace mixc::app {
namespace {
class StoredCompiler final : public Compiler {
public:
  bool canCompile() const override { return false; }
  std::string version() const override {
    return "compiler: none (a runtime-only build: it trains and intervenes on compiled bundles)";
  }

  support::Status compile(const ModelRequest &request, mix::CompileResult &, std::ostream &) override {
    return support::Status::failed(needsCompiler("compiling " + request.file));
  }

  support::Status rewrite(const graph::Graph &graph, const LoadedScript &script, const std::string &runDir,
                          mix::CompileResult &out, std::ostream &) override {
    graph::CompiledRewrite r;
    std::string error;
    if (!graph::readRewrite(runDir, script.digest, r, error))
      return support::Status::failed(!error.empty() ? error
                                                    : needsCompiler("applying " + script.path +
                                                                    " (it is not among the scripts compiled into " +
                                                                    runDir + "/rewrites from the run's bundle)"));
    if (r.baseDigest != graph::graphDigest(graph))
      return support::Status::failed(script.path + " was compiled into " + runDir +
                                     "/rewrites against another graph than the run's: compile the bundle again");
    out.graph = std::move(r.graph);
    out.cpuKernels = std::move(r.cpuKernels);
    out.cudaKernels = std::move(r.cudaKernels);
    return support::Status::ok();
  }
};
} // namespace

Compiler &compiler() {
  static StoredCompiler c;
  return c;
}
} // namespace mixc::app
