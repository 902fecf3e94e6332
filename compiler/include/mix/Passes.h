//===- Passes.h - mix dialect passes ----------------------------*- C++ -*-===//
#ifndef MIX_PASSES_H
#define MIX_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "dsl/Rewrite.h"
#include "mlir/Pass/Pass.h"
#include <memory>

namespace mix {
class MixDialect;

std::unique_ptr<mlir::Pass> createInlinePass();
std::unique_ptr<mlir::Pass> createShapeInferencePass();
std::unique_ptr<mlir::Pass> createCheckNamesPass();
std::unique_ptr<mlir::Pass> createFusePass();
/// mix/ScanLinearity.h on every scan; `remarks`: say why a scan stays sequential.
std::unique_ptr<mlir::Pass> createScanLinearityPass(bool remarks = false);
/// The kernel back ends as passes that print (compiler/lib/CodeGen).
std::unique_ptr<mlir::Pass> createMixToCppPass();
std::unique_ptr<mlir::Pass> createMixToCuPass();

/// With a parsed script (whose locations index `paths`), as the driver uses it.
std::unique_ptr<mlir::Pass> createApplyRewritesPass();
std::unique_ptr<mlir::Pass> createApplyRewritesPass(const mixc::dsl::RwScript &script,
                                                    const std::vector<std::string> &paths);

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "mix/Passes.h.inc"

} // namespace mix

#endif // MIX_PASSES_H
