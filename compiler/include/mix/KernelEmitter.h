//===- KernelEmitter.h - fused regions -> C++ and CUDA kernels ---*- C++ -*-===//
//
// The kernel back ends: each `mix.fused` region of a lowered model becomes a
// forward and a backward C function (runtime/kernels/KernelAbi.h).
//   CPU   plain loops the host compiler vectorises, OpenMP over rows
//   CUDA  the same code as device kernels (one thread per row), launched on
//         the caller's stream by the same C entry points; compiled by nvcc
// A region a back end cannot take (an anchor without a template, shapes it
// cannot index) is left to the interpreter, with the reason recorded.
//
//===----------------------------------------------------------------------===//
#ifndef MIX_KERNELEMITTER_H
#define MIX_KERNELEMITTER_H

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

enum class KernelTarget { Cpu, Cuda };

/// Emits every fused region of `model` for `target` (one translation unit:
/// C++17 for the CPU, CUDA C++ for nvcc).
CpuKernels emitKernels(mlir::func::FuncOp model, KernelTarget target);
inline CpuKernels emitCpuKernels(mlir::func::FuncOp model) { return emitKernels(model, KernelTarget::Cpu); }

} // namespace mix

#endif
