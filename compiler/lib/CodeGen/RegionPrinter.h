//===- RegionPrinter.h - a region plan as C++ or CUDA C++ ------------------===//
//
// Prints a RegionPlan as three C entry points (abi/KernelAbi.h):
// <sym>_saved (floats of `saved` for given dims), <sym>_forward and
// <sym>_backward. The phases, the op bodies and the anchor calls are
// printed here once; a target supplies how a row loop, a serial block, a
// flat loop and a temporary buffer are written (CpuPrinter.cpp,
// CudaPrinter.cpp).
//
// The backward recomputes each row phase's values from its inputs and runs
// the adjoint of every op in reverse; gradients of parameters (invariant
// values) are summed per thread, then added once.
//
//===----------------------------------------------------------------------===//
#ifndef MIX_CODEGEN_REGIONPRINTER_H
#define MIX_CODEGEN_REGIONPRINTER_H

#include "OpBodies.h"
#include "RegionPlan.h"

#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>
#include <vector>

namespace mix::codegen {

class RegionPrinter {
public:
  RegionPrinter(RegionPlan &plan, std::string sym) : plan(plan), sym(std::move(sym)) {}
  virtual ~RegionPrinter() = default;

  /// "" when this target can take the plan, else why not.
  virtual std::string refuses() { return ""; }
  /// The region's three entry points.
  void print(llvm::raw_ostream &os);

protected:
  /// One entry point: its signature, the declarations, the phases.
  virtual void printEntry(llvm::raw_ostream &os, bool backward) = 0;
  /// A zeroed float buffer `name` of `count` floats, local to one call.
  virtual void printBuffer(llvm::raw_ostream &os, const std::string &name, const std::string &count) = 0;
  /// `body` run once (not per row).
  virtual void printSerial(llvm::raw_ostream &os, const std::string &body) = 0;
  /// `stmt` for every i < count.
  virtual void printFlat(llvm::raw_ostream &os, const std::string &count, const std::string &stmt) = 0;
  /// A loop over rows r < rows whose body is `inner`; in the backward,
  /// each of `invariants` has a per-thread partial gradient p_<name>.
  virtual void printRowLoop(llvm::raw_ostream &os, const std::string &inner,
                            const std::vector<mlir::Value> &invariants, bool backward) = 0;
  /// The anchor call's last argument: OpenMP threads or the CUDA stream.
  virtual std::string anchorLastArgument() const = 0;
  virtual bool cuda() const = 0;

  // Storage names: a whole buffer, its gradient.
  std::string full(mlir::Value v);
  std::string gfull(mlir::Value v);
  /// The number of rows: the product of the leading run-time dims.
  std::string rows() const;
  /// Pointers into `saved`, inputs, outputs and gradients; buffers for
  /// hoisted values and the saved values' gradients.
  void printDeclarations(llvm::raw_ostream &os, bool backward);
  /// The phases in order (forward) or reverse (backward).
  void printPhases(llvm::raw_ostream &os, bool backward);

  RegionPlan &plan;
  std::string sym;

private:
  void printSavedSize(llvm::raw_ostream &os);
  void printRowPhase(llvm::raw_ostream &os, Phase p, bool backward);
  void printHoisted(llvm::raw_ostream &os, bool backward);
  void printAnchor(llvm::raw_ostream &os, bool backward);
};

std::unique_ptr<RegionPrinter> makeCpuPrinter(RegionPlan &plan, std::string sym);
std::unique_ptr<RegionPrinter> makeCudaPrinter(RegionPlan &plan, std::string sym);

/// CUDA: the argument block kernels receive by value (struct mixk_dev),
/// and the sizes of its pointer arrays.
std::string cudaArgumentBlock();
constexpr size_t kCudaMaxInputs = 24, kCudaMaxOutputs = 8;

} // namespace mix::codegen

#endif
