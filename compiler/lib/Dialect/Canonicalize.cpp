//===- Canonicalize.cpp - mix canonicalisation patterns ---------------------===//
//
// Small rewrites that remove no-op nodes. Node names are API: a pattern only
// erases a node whose name the compiler made up (last segment starts with
// `_`), never one the user named.
//
//===----------------------------------------------------------------------===//
#include "mix/MixOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mix;

namespace {
/// True for compiler-made names such as `layers[0]._add3`.
bool isAutoNamed(StringRef name) {
  size_t dot = name.rfind('.');
  StringRef last = dot == StringRef::npos ? name : name.drop_front(dot + 1);
  return last.startswith("_");
}

/// The scalar value of a `mix.constant`, if `v` is one.
std::optional<float> constantValue(Value v) {
  if (auto c = v.getDefiningOp<ConstantOp>())
    return c.getValue().convertToFloat();
  return std::nullopt;
}

/// x ∘ c → x where c is the operation's identity element (0 for +, 1 for ·).
template <typename OpT>
struct DropIdentityOperand : OpRewritePattern<OpT> {
  DropIdentityOperand(MLIRContext *ctx, float identity)
      : OpRewritePattern<OpT>(ctx), identity(identity) {}

  LogicalResult matchAndRewrite(OpT op, PatternRewriter &rewriter) const override {
    if (!isAutoNamed(op.getName()))
      return failure();
    for (auto [kept, dropped] : {std::pair(op.getLhs(), op.getRhs()),
                                 std::pair(op.getRhs(), op.getLhs())}) {
      if (constantValue(dropped) == identity &&
          kept.getType() == op.getType()) {
        rewriter.replaceOp(op, kept);
        return success();
      }
    }
    return failure();
  }
  float identity;
};

/// reshape(reshape(x)) → reshape(x) when the inner one is compiler-named and
/// keeps at least as many leading dimensions as the outer one.
struct FoldReshapeChain : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op, PatternRewriter &rewriter) const override {
    auto inner = op.getX().getDefiningOp<ReshapeOp>();
    if (!inner || !isAutoNamed(inner.getName()) || inner.getKeep() < op.getKeep())
      return failure();
    rewriter.updateRootInPlace(op, [&] { op.getXMutable().assign(inner.getX()); });
    return success();
  }
};

/// A compiler-named reshape to its input's own type is the identity.
struct DropIdentityReshape : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op, PatternRewriter &rewriter) const override {
    auto type = op.getType().dyn_cast<RankedTensorType>();
    if (!isAutoNamed(op.getName()) || !type || type != op.getX().getType())
      return failure();
    rewriter.replaceOp(op, op.getX());
    return success();
  }
};
} // namespace

void AddOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<DropIdentityOperand<AddOp>>(ctx, 0.0f);
}

void MulOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<DropIdentityOperand<MulOp>>(ctx, 1.0f);
}

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<FoldReshapeChain, DropIdentityReshape>(ctx);
}
