//===- CheckNames.cpp - node names are unique -------------------------------===//
#include "mix/MixOps.h"
#include "mix/Passes.h"

#include "llvm/ADT/StringMap.h"

namespace mix {
#define GEN_PASS_DEF_MIXCHECKNAMES
#include "mix/Passes.h.inc"
} // namespace mix

using namespace mlir;
using namespace mix;

namespace {
struct CheckNamesPass : mix::impl::MixCheckNamesBase<CheckNamesPass> {
  void runOnOperation() override {
    llvm::StringMap<Operation *> seen;
    WalkResult walk = getOperation().walk([&](Operation *op) -> WalkResult {
      if (op->getDialect() == nullptr || !isa<MixDialect>(op->getDialect()) ||
          isa<CallOp, FusedOp, YieldOp>(op)) // a region's name is its anchor's
        return WalkResult::advance();
      auto name = op->getAttrOfType<StringAttr>("name");
      if (!name || name.getValue().empty()) {
        op->emitOpError() << "has no node name";
        return WalkResult::interrupt();
      }
      auto [it, inserted] = seen.try_emplace(name.getValue(), op);
      if (!inserted) {
        InFlightDiagnostic diag = op->emitOpError()
                                  << "reuses node name '" << name.getValue() << "'";
        diag.attachNote(it->second->getLoc()) << "first used here";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace

std::unique_ptr<Pass> mix::createCheckNamesPass() {
  return std::make_unique<CheckNamesPass>();
}
