//===- Compiler.cpp - import, pipeline, export ------------------------------===//
#include "mix/Compiler.h"
#include "mix/KernelEmitter.h"
#include "mix/GraphExport.h"
#include "mix/GraphImport.h"
#include "mix/MLIRGen.h"
#include "mix/MixDialect.h"
#include "mix/Passes.h"
#include "abi/Graph.h"
#include "support/Format.h"

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
/// check names; then the intervention script, if any; then the scans'
/// linearity (remarks: why one stays sequential); then fusion.
void buildPipeline(PassManager &pm, const mixc::dsl::RwScript *rewrites,
                   const std::vector<std::string> &paths, bool remarks) {
  pm.addPass(mix::createInlinePass());
  pm.addNestedPass<func::FuncOp>(mix::createShapeInferencePass());
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(mix::createCheckNamesPass());
  if (rewrites) {
    pm.addNestedPass<func::FuncOp>(mix::createApplyRewritesPass(*rewrites, paths));
    pm.addPass(createCanonicalizerPass());
  }
  pm.addNestedPass<func::FuncOp>(mix::createScanLinearityPass(remarks));
  pm.addNestedPass<func::FuncOp>(mix::createFusePass());
}

/// MLIR diagnostics printed like the front end's: file:line:col, the source
/// line and a caret.
struct Diagnostics {
  Diagnostics(MLIRContext &ctx, const mixc::dsl::SourceManager &sources)
      : stream(text), handler(sourceMgr, &ctx, stream) {
    for (int i = 0; i < sources.size(); ++i) {
      paths.push_back(sources.path(i));
      sourceMgr.AddNewSourceBuffer(
          llvm::MemoryBuffer::getMemBufferCopy(sources.text(i), sources.path(i)), llvm::SMLoc());
    }
  }
  llvm::SourceMgr sourceMgr;
  std::vector<std::string> paths;
  std::string text;
  llvm::raw_string_ostream stream;
  SourceMgrDiagnosticHandler handler;
};

/// Runs the kernel back ends over the exported model and records, per
/// region, its input roles and each target's kernel (or why it has none).
void runBackEnds(func::FuncOp model, mix::CompileResult &result) {
  mix::RegionKernels cpu = mix::emitKernels(model, mix::KernelTarget::Cpu);
  mix::RegionKernels cuda = mix::emitKernels(model, mix::KernelTarget::Cuda);
  result.cpuKernels = std::move(cpu.source);
  result.cudaKernels = std::move(cuda.source);
  for (mixc::graph::Region &r : result.graph.regions) {
    const mix::RegionKernel &c = cpu.regions[r.name], &g = cuda.regions[r.name];
    r.rowRank = c.rowRank;
    r.inputRoles.clear();
    for (mix::InputRole role : c.inputRoles)
      r.inputRoles.push_back(mix::roleName(role));
    r.targets[mixc::graph::kTargetCpu] = {c.symbol, c.skipped};
    r.targets[mixc::graph::kTargetCuda] = {g.symbol, g.skipped};
  }
  // The graph is complete now: the kernels say which one they belong to.
  const std::string digest = "extern \"C\" const char *mixk_graph_digest() { return \"" +
                             mixc::graph::graphDigest(result.graph) + "\"; }\n";
  result.cpuKernels += digest;
  result.cudaKernels += digest;
}

void loadDialects(MLIRContext &ctx) {
  ctx.getOrLoadDialect<mix::MixDialect>();
  ctx.getOrLoadDialect<func::FuncDialect>();
}
} // namespace

bool mix::rewriteGraph(const mixc::graph::Graph &graph, const mixc::dsl::RwScript &script,
                       const mixc::dsl::SourceManager &sources, CompileResult &result,
                       std::ostream &err) {
  MLIRContext ctx;
  loadDialects(ctx);
  Diagnostics diags(ctx, sources);
  OwningOpRef<ModuleOp> module = importGraph(ctx, graph);
  PassManager pm(&ctx);
  pm.addNestedPass<func::FuncOp>(mix::createApplyRewritesPass(script, diags.paths));
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(mix::createScanLinearityPass()); // read again: an edit may break it
  pm.addNestedPass<func::FuncOp>(mix::createFusePass()); // after the interventions
  bool ok = succeeded(verify(*module)) && succeeded(pm.run(*module));
  if (ok) {
    llvm::raw_string_ostream out(result.mlir);
    module->print(out);
    result.graph = mixc::graph::Graph{};
    result.graph.model = graph.model;
    result.graph.source = graph.source;
    result.graph.config = graph.config;
    std::vector<std::string> inputs;
    for (const auto &in : graph.inputs)
      inputs.push_back(in.name);
    auto fn = *module->getOps<func::FuncOp>().begin();
    ok = succeeded(exportGraph(fn, inputs, result.graph));
    if (ok)
      runBackEnds(fn, result);
  }
  diags.stream.flush();
  err << mixc::support::clipLongLines(diags.text);
  return ok;
}

bool mix::compileProgram(const mixc::dsl::Program &program,
                         const mixc::dsl::SourceManager &sources, Stage stage,
                         CompileResult &result, std::ostream &err,
                         const mixc::dsl::RwScript *rewrites, bool linearityRemarks) {
  MLIRContext ctx;
  loadDialects(ctx);
  Diagnostics diags(ctx, sources);
  std::vector<std::string> &paths = diags.paths;
  llvm::raw_string_ostream &diagStream = diags.stream;

  OwningOpRef<ModuleOp> module = importProgram(ctx, program, paths);
  bool ok = true;
  if (stage == Stage::Import) {
    ok = succeeded(verify(*module));
  } else {
    PassManager pm(&ctx);
    buildPipeline(pm, rewrites, paths, linearityRemarks);
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
    if (ok)
      runBackEnds(model, result);
    if (ok) {
      std::string problem = mixc::graph::validate(result.graph);
      if (!problem.empty()) {
        diagStream << "error: exported graph is malformed: " << problem << "\n";
        ok = false;
      }
    }
  }
  diagStream.flush();
  err << mixc::support::clipLongLines(diags.text);
  return ok;
}
