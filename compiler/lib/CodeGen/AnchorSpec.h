//===- AnchorSpec.h - one mixer primitive as the kernel back ends call it ---===//
//
// Each GeneratedAnchor op (MixOps.td) has one AnchorSpec: which operand
// roles it takes, how many floats of its own it keeps in `saved` for the
// backward, and its forward and backward calls into the kernel templates
// (templates/cpu_primitives.h, templates/cuda_primitives.cuh). Everything
// the back ends know about an anchor is here, in one entry per op.
//
//===----------------------------------------------------------------------===//
#ifndef MIX_CODEGEN_ANCHORSPEC_H
#define MIX_CODEGEN_ANCHORSPEC_H

#include "RegionPlan.h"

#include <functional>
#include <string>

namespace mix::codegen {

/// The names a printer gives the anchor's buffers, for writing its calls.
struct AnchorCall {
  std::function<std::string(unsigned)> in, gin; // operand i's buffer, its gradient
  std::function<int64_t(unsigned)> n;            // operand i's inner size
  std::function<const Shape &(unsigned)> shape;  // operand i's inner shape
  unsigned numOperands = 0;
  std::string y, gy;          // the result's buffer and gradient
  std::string batch, time;    // C++ expressions of B and T
  std::string last;           // the last argument: OpenMP threads, or the CUDA stream
  bool cuda = false;
  double eps = 0;             // the op's eps (ODS default unless set)
  std::string dims(std::initializer_list<std::string> sizes) const;
  std::string ins(unsigned count) const;  // "in(0), ..., in(count-1)"
  std::string gins(unsigned count) const; // "gin(0), ..., gin(count-1)"
  /// CUDA templates take the state's inner size as a template argument
  /// (it sizes registers); the CPU ones take it as a run-time size.
  std::string tmpl(int64_t size) const;
};

struct AnchorSpec {
  virtual ~AnchorSpec() = default;
  /// "" when the plan gives the operands the roles the template needs.
  virtual std::string checkOperands(RegionPlan &plan) const = 0;
  /// Floats of the anchor's own state in `saved` (a C++ expression of
  /// dims[0] = B and dims[1] = T).
  virtual std::string savedFloats(RegionPlan &) const { return "0"; }
  /// One statement calling the primitive's forward or backward.
  virtual std::string forward(const AnchorCall &c) const = 0;
  virtual std::string backward(const AnchorCall &c) const = 0;
};

/// The spec of a GeneratedAnchor op; null for any other op.
const AnchorSpec *anchorSpecFor(mlir::Operation &op);

} // namespace mix::codegen

#endif
