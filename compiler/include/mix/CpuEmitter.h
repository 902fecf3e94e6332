//===- CpuEmitter.h - fused regions -> C++ kernels ---------------*- C++ -*-===//
//
// The CPU back end: each `mix.fused` region of a lowered model becomes a
// forward and a backward C function (runtime/kernels/KernelAbi.h), written
// as plain loops that the host compiler vectorises. A region the back end
// cannot take (an anchor without a CPU template, shapes it cannot index)
// is left to the interpreter, with the reason recorded.
//
//===----------------------------------------------------------------------===//
#ifndef MIX_CPUEMITTER_H
#define MIX_CPUEMITTER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>
#include <string>

namespace mix {

struct RegionKernel {
  std::string symbol;  // "mixk_3": <symbol>_forward, _backward, _saved; empty when skipped
  int rowRank = 0;     // leading dynamic dims the kernel iterates over ([B, T] -> 2)
  std::string skipped; // why the region has no kernel
};

struct CpuKernels {
  std::string source;                          // one translation unit, self-contained
  std::map<std::string, RegionKernel> regions; // by region name
};

/// Emits every fused region of `model`.
CpuKernels emitCpuKernels(mlir::func::FuncOp model);

} // namespace mix

#endif
