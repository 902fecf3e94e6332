//===- MixDialect.h - the mix dialect ---------------------------*- C++ -*-===//
#ifndef MIX_MIXDIALECT_H
#define MIX_MIXDIALECT_H

#include "mlir/IR/Dialect.h"

#include "mix/MixOpsDialect.h.inc"

#include "llvm/ADT/StringRef.h"

namespace mix {
/// The result types the DSL front end computed for an op (dsl/Builtins.cpp),
/// attached at import and checked against the op's own shape rule by
/// -mix-shape-inference, which then drops the attribute: the front end and
/// the dialect each state every shape rule, and this keeps them equal.
constexpr llvm::StringLiteral kFrontEndTypesAttr = "mix.front_end_types";
} // namespace mix

#endif // MIX_MIXDIALECT_H
