//===- ShapeRule.h - shape rules and op categories (traits) -----*- C++ -*-===//
//
// Every shaped mix op implements `shapeRule` once. This trait runs it in the
// verifier (when all operands are ranked) and checks the declared result
// types are compatible; shape inference runs the same rule to set them.
//
//===----------------------------------------------------------------------===//
#ifndef MIX_SHAPERULE_H
#define MIX_SHAPERULE_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"

namespace mix {

/// True once every operand has a ranked tensor type.
bool operandsRanked(mlir::Operation *op);

/// Checks `op`'s result types against `expected` (compatible shapes).
mlir::LogicalResult checkResultTypes(mlir::Operation *op,
                                     llvm::ArrayRef<mlir::Type> expected);

namespace OpTrait {
template <typename ConcreteType>
class HasShapeRule
    : public mlir::OpTrait::TraitBase<ConcreteType, HasShapeRule> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    if (!operandsRanked(op))
      return mlir::success();
    llvm::SmallVector<mlir::Type> expected;
    if (mlir::failed(llvm::cast<ConcreteType>(op).shapeRule(expected)))
      return mlir::failure();
    return checkResultTypes(op, expected);
  }
};

// Op categories (MixOps.td): markers with nothing to verify.
template <typename ConcreteType>
class PerElement : public mlir::OpTrait::TraitBase<ConcreteType, PerElement> {};
template <typename ConcreteType>
class PerRow : public mlir::OpTrait::TraitBase<ConcreteType, PerRow> {};
template <typename ConcreteType>
class MixerAnchor : public mlir::OpTrait::TraitBase<ConcreteType, MixerAnchor> {};
template <typename ConcreteType>
class GeneratedAnchor : public mlir::OpTrait::TraitBase<ConcreteType, GeneratedAnchor> {};
} // namespace OpTrait
} // namespace mix

#endif // MIX_SHAPERULE_H
