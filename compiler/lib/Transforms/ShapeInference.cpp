//===- ShapeInference.cpp - infer ranked types from the inputs --------------===//
//
// Toy-style (chapter 4) worklist: an op is ready when all its operands are
// ranked; it then applies its shape rule. Function results take the inferred
// types of what they return. Where the importer attached the DSL front end's
// own result types, they must agree with the rule's (checkFrontEndTypes).
//
//===----------------------------------------------------------------------===//
#include "mix/MixOps.h"
#include "mix/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/TypeUtilities.h"

namespace mix {
#define GEN_PASS_DEF_MIXSHAPEINFERENCE
#include "mix/Passes.h.inc"
} // namespace mix

using namespace mlir;
using namespace mix;

namespace {
bool returnsUnranked(Operation *op) {
  return llvm::any_of(op->getResultTypes(),
                      [](Type t) { return !t.isa<RankedTensorType>(); });
}

/// The DSL front end computed the op's result types with its own rules
/// (dsl/Builtins.cpp); the op's shape rule must give the same. A mismatch is
/// a bug in one of the two rules, reported at the op's source location.
LogicalResult checkFrontEndTypes(Operation *op) {
  auto expected = op->getAttrOfType<ArrayAttr>(kFrontEndTypesAttr);
  if (!expected)
    return success();
  op->removeAttr(kFrontEndTypesAttr);
  if (expected.size() != op->getNumResults())
    return op->emitOpError() << "the front end gave " << expected.size() << " result types for "
                             << op->getNumResults() << " results";
  for (auto [i, pair] : llvm::enumerate(llvm::zip(op->getResultTypes(), expected))) {
    auto [actual, attr] = pair;
    auto want = attr.dyn_cast<TypeAttr>();
    if (!want || failed(verifyCompatibleShape(actual, want.getValue())))
      return op->emitOpError() << "result #" << i << ": the DSL front end computed "
                               << (want ? want.getValue() : Type()) << " but the op's shape rule gives " << actual
                               << " (the two shape rules disagree: a compiler bug)";
  }
  return success();
}

struct ShapeInferencePass : mix::impl::MixShapeInferenceBase<ShapeInferencePass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    // Ops are in dependence order (single block, SSA), so one pass suffices.
    WalkResult walk = fn.walk([&](Operation *op) -> WalkResult {
      auto shaped = dyn_cast<ShapeInference>(op);
      if (!shaped)
        return WalkResult::advance();
      if (!operandsRanked(op)) {
        if (returnsUnranked(op)) {
          op->emitOpError() << "cannot infer its shape: an operand is unranked";
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      }
      if (failed(shaped.inferShapes()) || failed(checkFrontEndTypes(op)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    // Update the signature to what the body returns.
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    fn.setType(FunctionType::get(&getContext(), fn.getArgumentTypes(),
                                 ret.getOperandTypes()));
  }
};
} // namespace

std::unique_ptr<Pass> mix::createShapeInferencePass() {
  return std::make_unique<ShapeInferencePass>();
}
