//===- MixOps.h - mix dialect operations ------------------------*- C++ -*-===//
#ifndef MIX_MIXOPS_H
#define MIX_MIXOPS_H

#include "llvm/ADT/StringRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "mix/MixDialect.h"
#include "mix/ShapeRule.h"
#include "mix/ShapeInferenceOpInterfaces.h.inc"
#include "mix/ElementCodeOpInterfaces.h.inc"

#define GET_OP_CLASSES
#include "mix/MixOps.h.inc"

#endif // MIX_MIXOPS_H
