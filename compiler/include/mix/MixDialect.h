//===- MixDialect.h - the mix dialect ---------------------------*- C++ -*-===//
#ifndef MIX_MIXDIALECT_H
#define MIX_MIXDIALECT_H

#include "mlir/IR/Dialect.h"

#include "mix/MixOpsDialect.h.inc"

#endif // MIX_MIXDIALECT_H
