//===- Compiler.h - the compiler's plain-C++ entry point --------*- C++ -*-===//
//
// What `mixc` (built with exceptions, linking LibTorch) calls: no MLIR types
// cross this header, so the driver never includes MLIR and MLIR code never
// sees a torch exception.
//
//===----------------------------------------------------------------------===//
#ifndef MIX_COMPILER_H
#define MIX_COMPILER_H

#include "dsl/Diagnostics.h"
#include "dsl/Program.h"
#include "dsl/Rewrite.h"
#include "abi/Graph.h"

#include <ostream>
#include <string>

namespace mix {

enum class Stage {
  Import,   // the mix dialect as imported: calls, unranked results
  Lowered,  // after inlining, shape inference, canonicalisation, name checks
};

struct CompileResult {
  std::string mlir;           // textual IR at the requested stage
  mixc::graph::Graph graph;   // filled when stage == Lowered
  std::string cpuKernels;     // the CPU back end's source (graph.regions name its kernels)
  std::string cudaKernels;    // the CUDA back end's source (same symbols, for nvcc)
};

/// Imports `program` and runs the pipeline up to `stage`. Errors are printed
/// to `err` as `file:line:col: error: ...` with the source line and a caret;
/// with `linearityRemarks`, also a remark for each scan that keeps its
/// sequential form, saying why (mix/ScanLinearity.h).
bool compileProgram(const mixc::dsl::Program &program, const mixc::dsl::SourceManager &sources,
                    Stage stage, CompileResult &result, std::ostream &err,
                    const mixc::dsl::RwScript *rewrites = nullptr, bool linearityRemarks = false);

/// Applies an intervention script to a compiled graph (a checkpoint's):
/// graph -> mix dialect -> -mix-apply-rewrites -> canonicalise -> graph.
/// `sources` holds the script's text, for error locations.
bool rewriteGraph(const mixc::graph::Graph &graph, const mixc::dsl::RwScript &script,
                  const mixc::dsl::SourceManager &sources, CompileResult &result,
                  std::ostream &err);

} // namespace mix

#endif
