//===- MlirCompiler.cpp - compiling with MLIR (full builds) -----------------===//
#include "app/Compile.h"
#include "dsl/Frontend.h"

#include <llvm/Config/llvm-config.h>

namespace mixc::app {
namespace {
class MlirCompiler final : public Compiler {
public:
  bool canCompile() const override { return true; }
  std::string version() const override { return std::string("compiler: MLIR/LLVM ") + LLVM_VERSION_STRING; }

  support::Status compile(const ModelRequest &request, mix::CompileResult &out, std::ostream &diagnostics) override {
    dsl::Frontend fe(searchPath(request.includeDirs));
    if (!fe.load(request.file, diagnostics))
      return support::Status::failed("");
    std::optional<dsl::Program> program = fe.elaborate(request.model, request.config, diagnostics);
    if (!program)
      return support::Status::failed("");
    dsl::SourceManager sources = fe.sources();
    dsl::RwScript script;
    if (!request.rewrite.empty() && !dsl::loadRewrite(request.rewrite, sources, script, diagnostics))
      return support::Status::failed("");
    if (!mix::compileProgram(*program, sources, request.stage, out, diagnostics,
                             request.rewrite.empty() ? nullptr : &script, request.linearityRemarks))
      return support::Status::failed("");
    return support::Status::ok();
  }

  support::Status rewrite(const graph::Graph &graph, const LoadedScript &script, const std::string &,
                          mix::CompileResult &out, std::ostream &diagnostics) override {
    return mix::rewriteGraph(graph, script.script, script.sources, out, diagnostics) ? support::Status::ok()
                                                                                    : support::Status::failed("");
  }
};
} // namespace

Compiler &compiler() {
  static MlirCompiler c;
  return c;
}
} // namespace mixc::app
