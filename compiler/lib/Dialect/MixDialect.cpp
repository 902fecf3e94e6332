//===- MixDialect.cpp - the mix dialect -----------------------------------===//
#include "mix/MixDialect.h"
#include "mix/MixOps.h"

using namespace mlir;
using namespace mix;

#include "mix/MixOpsDialect.cpp.inc"

void MixDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "mix/MixOps.cpp.inc"
      >();
}
