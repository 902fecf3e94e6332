//===- KernelEmitter.h - fused regions -> C++ and CUDA kernels ---*- C++ -*-===//
//
// The kernel back ends: each `mix.fused` region of a lowered model becomes a
// forward and a backward C function (abi/KernelAbi.h).
//   CPU   plain loops the host compiler vectorises, OpenMP over rows
//   CUDA  the same code as device kernels (one thread per row), launched on
//         the caller's stream by the same C entry points; compiled by nvcc
// A region is planned once (lib/CodeGen/RegionPlan.h) and printed per target
// (RegionPrinter.h). A region a back end cannot take (an anchor without a
// template, shapes it cannot index) is left to the interpreter, with the
// reason recorded.
//
//===----------------------------------------------------------------------===//
#ifndef MIX_KERNELEMITTER_H
#define MIX_KERNELEMITTER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>
#include <string>
#include <vector>

namespace mix {

/// How a kernel indexes one of its inputs (the graph records it per region
/// input, so the runtime does not re-derive it from shapes):
///   Row        leads with the region's run-time dims ([B, T, ...]); one row per r
///   Filter     a long conv's [L, C] filter, L ≥ T; the anchor indexes it itself
///   Invariant  no run-time dims (a parameter or a value computed from them)
enum class InputRole { Row, Filter, Invariant };
const char *roleName(InputRole role); // "row", "filter", "invariant"

struct RegionKernel {
  std::string symbol;  // "mixk_3": <symbol>_forward, _backward, _saved; empty when skipped
  int rowRank = 0;     // leading dynamic dims the kernel iterates over ([B, T] -> 2)
  std::vector<InputRole> inputRoles; // one per region input; empty when the plan failed
  std::string skipped; // why the region has no kernel
};

struct RegionKernels {
  std::string source;                          // one translation unit, self-contained
  std::map<std::string, RegionKernel> regions; // by region name
};

enum class KernelTarget { Cpu, Cuda };

/// Emits every fused region under `root` (a model's function, or a module
/// of them) for `target`, in order, as one translation unit: C++17 for the
/// CPU, CUDA C++ for nvcc. A region has the same symbol on every target.
RegionKernels emitKernels(mlir::Operation *root, KernelTarget target);

} // namespace mix

#endif
