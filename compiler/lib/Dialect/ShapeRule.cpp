//===- ShapeRule.cpp - helpers of the shape-rule trait ----------------------===//
#include "mix/ShapeRule.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

bool mix::operandsRanked(Operation *op) {
  return llvm::all_of(op->getOperandTypes(),
                      [](Type t) { return t.isa<RankedTensorType>(); });
}

LogicalResult mix::checkResultTypes(Operation *op, ArrayRef<Type> expected) {
  if (expected.size() != op->getNumResults())
    return op->emitOpError() << "shape rule gives " << expected.size()
                             << " results, op has " << op->getNumResults();
  for (auto [i, pair] : llvm::enumerate(llvm::zip(op->getResultTypes(), expected))) {
    auto [actual, want] = pair;
    if (!actual.isa<RankedTensorType>())
      continue; // not inferred yet
    if (failed(verifyCompatibleShape(actual, want)) ||
        getElementTypeOrSelf(actual) != getElementTypeOrSelf(want))
      return op->emitOpError() << "result #" << i << " has type " << actual
                               << " but its operands imply " << want;
  }
  return success();
}
