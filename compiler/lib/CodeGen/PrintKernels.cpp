//===- PrintKernels.cpp - -mix-to-cpp / -mix-to-cu: kernels to stdout -------===//
#include "mix/KernelEmitter.h"
#include "mix/Passes.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/raw_ostream.h"

namespace mix {
#define GEN_PASS_DEF_MIXTOCPP
#define GEN_PASS_DEF_MIXTOCU
#include "mix/Passes.h.inc"
} // namespace mix

namespace {
struct MixToCppPass : public mix::impl::MixToCppBase<MixToCppPass> {
  void runOnOperation() override { llvm::outs() << mix::emitKernels(getOperation().getOperation(), mix::KernelTarget::Cpu).source; }
};
struct MixToCuPass : public mix::impl::MixToCuBase<MixToCuPass> {
  void runOnOperation() override { llvm::outs() << mix::emitKernels(getOperation().getOperation(), mix::KernelTarget::Cuda).source; }
};
} // namespace

std::unique_ptr<mlir::Pass> mix::createMixToCppPass() { return std::make_unique<MixToCppPass>(); }
std::unique_ptr<mlir::Pass> mix::createMixToCuPass() { return std::make_unique<MixToCuPass>(); }
