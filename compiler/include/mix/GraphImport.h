//===- GraphImport.h - runtime graph -> mix dialect -------------*- C++ -*-===//
#ifndef MIX_GRAPHIMPORT_H
#define MIX_GRAPHIMPORT_H

#include "abi/Graph.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mix {

/// Rebuilds the inlined, shape-inferred model function from a runtime graph
/// (e.g. the one stored in a checkpoint), so rewrite passes can run on it.
mlir::OwningOpRef<mlir::ModuleOp> importGraph(mlir::MLIRContext &ctx,
                                              const mixc::graph::Graph &graph);

} // namespace mix

#endif
