//===- MLIRGen.h - elaborated program -> mix dialect ------------*- C++ -*-===//
#ifndef MIX_MLIRGEN_H
#define MIX_MLIRGEN_H

#include "dsl/Program.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mix {

/// One func.func per mixer/block/model instance; the model is public, the
/// rest private. Results of primitives are unranked (tensor<*xf32>) until
/// shape inference; parameters are static; the model's inputs have dynamic
/// B and T. `paths[i]` names source file i in op locations.
mlir::OwningOpRef<mlir::ModuleOp> importProgram(mlir::MLIRContext &ctx,
                                                const mixc::dsl::Program &program,
                                                const std::vector<std::string> &paths);

} // namespace mix

#endif
