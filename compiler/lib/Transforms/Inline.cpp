//===- Inline.cpp - inline mixer/block calls with scoped names --------------===//
//
// MLIR's generic inliner cannot rename what it inlines; node names must get
// the call's scope as prefix, so this pass clones callee bodies itself.
//
//===----------------------------------------------------------------------===//
#include "mix/MixOps.h"
#include "mix/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

namespace mix {
#define GEN_PASS_DEF_MIXINLINE
#include "mix/Passes.h.inc"
} // namespace mix

using namespace mlir;
using namespace mix;

namespace {
/// Attributes that hold node names (or name prefixes) and so get the scope.
constexpr llvm::StringLiteral kNameAttrs[] = {"name", "scope", "state_name"};

std::string join(StringRef scope, StringRef name) {
  if (scope.empty())
    return name.str();
  if (name.empty())
    return scope.str();
  return (scope + "." + name).str();
}

/// Replaces `call` with a copy of `callee`'s body, prefixing names.
LogicalResult inlineCall(CallOp call, func::FuncOp callee) {
  if (callee.getBody().getBlocks().size() != 1)
    return call.emitOpError() << "callee @" << callee.getName()
                              << " must have a single block";
  Block &body = callee.getBody().front();
  IRMapping mapping;
  for (auto [arg, operand] : llvm::zip(body.getArguments(), call.getInputs()))
    mapping.map(arg, operand);

  OpBuilder builder(call);
  StringRef scope = call.getScope();
  for (Operation &op : body.without_terminator()) {
    Operation *copy = builder.clone(op, mapping);
    // Nested ops too: a scan's step keeps names of the enclosing scope.
    copy->walk([&](Operation *inner) {
      for (StringRef attr : kNameAttrs)
        if (auto name = inner->getAttrOfType<StringAttr>(attr))
          inner->setAttr(attr, builder.getStringAttr(join(scope, name.getValue())));
      if (auto names = inner->getAttrOfType<ArrayAttr>("state_names")) {
        SmallVector<Attribute> scoped;
        for (Attribute a : names)
          scoped.push_back(builder.getStringAttr(join(scope, a.cast<StringAttr>().getValue())));
        inner->setAttr("state_names", builder.getArrayAttr(scoped));
      }
    });
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Value> results;
  for (Value v : ret.getOperands())
    results.push_back(mapping.lookupOrDefault(v));
  if (results.size() != call.getNumResults())
    return call.emitOpError() << "callee @" << callee.getName() << " returns "
                              << results.size() << " values, call expects "
                              << call.getNumResults();
  for (auto [old, now] : llvm::zip(call.getResults(), results)) {
    // Before shape inference call results are unranked; keep the callee's
    // (possibly more precise) type.
    old.replaceAllUsesWith(now);
  }
  call.erase();
  return success();
}

struct InlinePass : mix::impl::MixInlineBase<InlinePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    // Inline until no call is left: inlined bodies may contain calls.
    // The DSL elaborator rejects recursion, so this terminates; the bound
    // protects against hand-written recursive IR.
    for (int round = 0; round < 1000; ++round) {
      SmallVector<CallOp> calls;
      module.walk([&](CallOp c) { calls.push_back(c); });
      if (calls.empty())
        break;
      for (CallOp call : calls) {
        auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
        if (!callee) {
          call.emitOpError() << "calls unknown function @" << call.getCallee();
          return signalPassFailure();
        }
        if (failed(inlineCall(call, callee)))
          return signalPassFailure();
      }
      if (round == 999) {
        module.emitError() << "mix-inline: calls nest too deeply (recursion?)";
        return signalPassFailure();
      }
    }
    // Private callees are dead now.
    for (auto fn : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (fn.isPrivate())
        fn.erase();
  }
};
} // namespace

std::unique_ptr<Pass> mix::createInlinePass() {
  return std::make_unique<InlinePass>();
}
