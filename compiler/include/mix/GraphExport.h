//===- GraphExport.h - mix dialect -> runtime graph -------------*- C++ -*-===//
#ifndef MIX_GRAPHEXPORT_H
#define MIX_GRAPHEXPORT_H

#include "abi/Graph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mix {

/// Translates an inlined, shape-inferred model function. Fails (with an
/// error at the op) on anything but mix ops.
mlir::LogicalResult exportGraph(mlir::func::FuncOp model,
                                const std::vector<std::string> &inputNames,
                                mixc::graph::Graph &graph);

} // namespace mix

#endif
