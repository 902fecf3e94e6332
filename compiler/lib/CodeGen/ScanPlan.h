//===- ScanPlan.h - a DSL scan's step, planned for the kernel back ends -----===//
//
// A `mix.fused` region of kind "scan" holds one mix.scan (Fuse.cpp). Its
// kernels (ScanPrinter.cpp) run the step's ops on small arrays of their
// static inner shapes, one batch row b at a time (OpenMP over b on the CPU,
// a thread per b in CUDA):
//
//   forward   S = 0; for t < T: every kScanChunk steps keep S in `saved`;
//             (S, y_t) = step(S, x_t)
//   backward  the adjoint recurrence, derived from the step: gS = 0; for each
//             chunk from the last, its states are recomputed from its
//             checkpoint, then for t in reverse the step is recomputed and
//             its ops' adjoints (OpBodies' rules, as in the fused regions)
//             run in reverse order, seeded with gS and ∂L/∂y_t; they give
//             ∂L/∂x_t, the invariants' gradients, and gS for step t − 1.
//
// The plan gives every step value its inner shape (the shape after the
// leading batch dim; the whole shape for a loop-invariant input) and
// records which values only re-view another (reshape, tap: no code, the
// same storage and gradient as the value they view).
//
//===----------------------------------------------------------------------===//
#ifndef MIX_CODEGEN_SCANPLAN_H
#define MIX_CODEGEN_SCANPLAN_H

#include "RegionPlan.h"

#include "llvm/ADT/DenseSet.h"

namespace mix::codegen {

/// Steps between the forward's state checkpoints (the backward recomputes
/// at most this many states from one).
constexpr int64_t kScanChunk = 16;

/// Ops the kernels compute together: element ops of one result shape in
/// one loop (`loop`; values only they read stay in registers), or one other
/// op (a sum, a norm, a constant) on its own.
struct ScanGroup {
  Shape shape;
  std::vector<mlir::Operation *> ops;
  bool loop = false;
};

struct ScanPlan {
  mix::ScanOp scan;
  RegionPlan values; // each step value's inner shape and size (`values.at(v)`)
  std::vector<mlir::Value> states, inputs; // the step's arguments: states, then one per region input
  std::vector<bool> sliced;                // per input: step t of a [B, T, ...] value, else invariant
  std::vector<mlir::Operation *> ops;      // the step's ops that compute (not aliases), in order
  llvm::DenseMap<mlir::Value, mlir::Value> alias; // a reshape's or tap's result -> the value it views
  std::vector<mlir::Value> next, emitted;         // what the step yields
  std::vector<int64_t> stateOffset;               // state k's floats start here in a checkpoint
  int64_t stateFloats = 0;                        // floats of all states of one row
  std::vector<ScanGroup> groups;                  // `ops`, scheduled into groups, in order
  llvm::DenseMap<mlir::Operation *, int> groupOf; // each op's group
  llvm::DenseSet<mlir::Value> stored;             // op values read outside their loop: kept in arrays
  // The backward (ScanPrinter): its adjoint reads only the values the ops'
  // gradients name (a, b, y) and what recomputing those needs; the taped
  // step keeps the stored and costly ones (ElementCode::cppCostly) in a
  // step's slice of the tape and computes only what the tape and the next
  // states need.
  llvm::DenseSet<mlir::Value> adjointReads;    // op values the adjoint reads: from the tape, or recomputed
  llvm::DenseMap<mlir::Value, int64_t> tapeAt; // those the taped step keeps -> offset in a step's slice
  int64_t tapeFloats = 0;                      // floats of a step's slice of the tape
  llvm::DenseSet<mlir::Operation *> tapedOps;  // ops the taped step computes

  /// The value `v` views (itself unless it is an alias).
  mlir::Value root(mlir::Value v) const;
  /// Whether `op` (in a loop group) reads operand `i` as a register of the
  /// same loop, not from an array.
  bool inRegister(mlir::Operation *op, unsigned i) const;
};

/// Whether op `o`'s gradient formulas (ElementCode::cppGradient) read the
/// float `name` ('a', 'b' the operands, 'y' the result).
bool gradientReads(mlir::Operation *o, char name);

/// Plans the scan region `op` into `plan`; "" or why it cannot have kernels.
std::string planScan(mix::FusedOp op, ScanPlan &plan);

/// Prints the region's three entry points (abi/KernelAbi.h) for the CPU or
/// CUDA back end.
void printScan(ScanPlan &plan, const std::string &sym, bool cuda, llvm::raw_ostream &os);

} // namespace mix::codegen

#endif
