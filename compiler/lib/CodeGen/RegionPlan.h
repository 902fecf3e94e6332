//===- RegionPlan.h - what a fused region's kernels compute, before printing -===//
//
// The plan is the target-independent half of the kernel back ends: which
// values a `mix.fused` region has, how each is stored, and in which phase
// each op runs. The CPU and CUDA printers (RegionPrinter.h) only print it.
//
//   hoisted   ops on parameters only (no B, T dims): computed once per call
//   prologue  per-row ops the anchor primitive depends on
//   anchor    the mixer primitive (one call into the kernel templates)
//   epilogue  the remaining per-row ops
//
// A row phase is one loop over the region's rows (the leading run-time
// dims, B·T); inside it every value is a small stack array of its static
// inner shape. Values that cross phases (the anchor's operands and result,
// prologue values the epilogue reads) are materialised in the `saved`
// buffer, which the backward reads again.
//
//===----------------------------------------------------------------------===//
#ifndef MIX_CODEGEN_REGIONPLAN_H
#define MIX_CODEGEN_REGIONPLAN_H

#include "mix/KernelEmitter.h"
#include "mix/MixOps.h"

#include "llvm/ADT/DenseMap.h"

#include <string>
#include <vector>

namespace mix::codegen {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape &s);

enum class Phase { Hoisted, Prologue, Anchor, Epilogue };

struct AnchorSpec;

/// One value of the region: a block argument (an input) or an op result.
struct PlannedValue {
  std::string id;  // "v3" for op results; inputs are named by index
  InputRole role = InputRole::Invariant;
  Shape shape;     // the inner (static) shape of a row value; the full shape otherwise
  int64_t n = 1;   // elements of `shape`
  int input = -1;  // block argument index
  int output = -1; // yield index
  mlir::Operation *def = nullptr;
  Phase phase = Phase::Hoisted;
  bool saved = false; // materialised in `saved` (crosses phases)

  bool row() const { return role == InputRole::Row; }
  bool filter() const { return role == InputRole::Filter; }
};

struct RegionPlan {
  mix::FusedOp op;
  llvm::DenseMap<mlir::Value, PlannedValue> values;
  std::vector<mlir::Value> args, results; // block arguments; yielded values
  std::vector<mlir::Operation *> order;   // the body's ops, in order
  std::vector<mlir::Value> saved;         // materialised values, in `saved` order
  mlir::Operation *anchor = nullptr;
  const AnchorSpec *anchorSpec = nullptr;
  int rowRank = 0; // leading run-time dims of row values ([B, T] -> 2)

  PlannedValue &at(mlir::Value v) { return values[v]; }
  std::vector<mlir::Operation *> opsIn(Phase p);
  std::vector<InputRole> inputRoles();
  /// Floats per row of the materialised values.
  int64_t savedPerRow();
};

/// Plans `op` into `plan` (a fresh one); returns "" or why the region cannot have a kernel on any
/// target (a printer may refuse more: RegionPrinter::refuses).
std::string planRegion(mix::FusedOp op, RegionPlan &plan);

} // namespace mix::codegen

#endif
