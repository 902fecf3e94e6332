//===- mix-opt.cpp - mlir-opt with the mix dialect and passes ---------------===//
#include "mix/MixDialect.h"
#include "mix/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mix::registerMixPasses();

  mlir::DialectRegistry registry;
  registry.insert<mix::MixDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "mix optimizer driver\n", registry));
}
