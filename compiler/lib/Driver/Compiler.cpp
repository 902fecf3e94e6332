//===- Compiler.cpp - import, pipeline, export ------------------------------===//
#include "mix/Compiler.h"
#include "mix/GraphExport.h"
#include "mix/MLIRGen.h"
#include "mix/MixDialect.h"
#include "mix/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {
/// Adds the standard lowering pipeline: inline, infer shapes, canonicalise,
/// check names.
void buildPipeline(PassManager &pm) {
  pm.addPass(mix::createInlinePass());
  pm.addNestedPass<func::FuncOp>(mix::createShapeInferencePass());
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(mix::createCheckNamesPass());
}
} // namespace

bool mix::compileProgram(const mixc::dsl::Program &program,
                         const mixc::dsl::SourceManager &sources, Stage stage,
                         CompileResult &result, std::ostream &err) {
  MLIRContext ctx;
  ctx.getOrLoadDialect<mix::MixDialect>();
  ctx.getOrLoadDialect<func::FuncDialect>();

  // MLIR's own diagnostics, printed like the front end's: file:line:col,
  // the source line and a caret.
  llvm::SourceMgr sourceMgr;
  std::vector<std::string> paths;
  for (int i = 0; i < sources.size(); ++i) {
    paths.push_back(sources.path(i));
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(sources.text(i), sources.path(i)), llvm::SMLoc());
  }
  std::string diagText;
  llvm::raw_string_ostream diagStream(diagText);
  SourceMgrDiagnosticHandler handler(sourceMgr, &ctx, diagStream);

  OwningOpRef<ModuleOp> module = importProgram(ctx, program, paths);
  bool ok = true;
  if (stage == Stage::Import) {
    ok = succeeded(verify(*module));
  } else {
    PassManager pm(&ctx);
    buildPipeline(pm);
    ok = succeeded(pm.run(*module));
  }
  if (ok) {
    llvm::raw_string_ostream out(result.mlir);
    module->print(out);
  }
  if (ok && stage == Stage::Lowered) {
    const mixc::dsl::Func &entry = program.funcs[program.entry];
    auto model = module->lookupSymbol<func::FuncOp>(entry.symbol);
    result.graph = mixc::graph::Graph{};
    result.graph.model = entry.defName;
    result.graph.source = entry.loc.file >= 0 ? sources.path(entry.loc.file) : "";
    result.graph.config = entry.params;
    ok = model && succeeded(exportGraph(model, entry.argNames, result.graph));
    if (ok) {
      std::string problem = mixc::graph::validate(result.graph);
      if (!problem.empty()) {
        diagStream << "error: exported graph is malformed: " << problem << "\n";
        ok = false;
      }
    }
  }
  diagStream.flush();
  err << diagText;
  return ok;
}
