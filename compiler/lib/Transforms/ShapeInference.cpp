//===- ShapeInference.cpp - infer ranked types from the inputs --------------===//
//
// Toy-style (chapter 4) worklist: an op is ready when all its operands are
// ranked; it then applies its shape rule. Function results take the inferred
// types of what they return.
//
//===----------------------------------------------------------------------===//
#include "mix/MixOps.h"
#include "mix/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

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
      if (failed(shaped.inferShapes()))
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
