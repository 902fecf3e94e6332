//===- OpBodies.h - per-element and per-row ops as C++ on small arrays -----===//
//
// The loop bodies of the ops that run inside a region's phases, the same
// text for CPU and CUDA (both compile it as plain C++ on float arrays).
// Per-element ops take their formula from ODS (ElementCodeInterface.td);
// the per-row ops (norms, Based's feature map) are written here, one
// function each.
//
//===----------------------------------------------------------------------===//
#ifndef MIX_CODEGEN_OPBODIES_H
#define MIX_CODEGEN_OPBODIES_H

#include "RegionPlan.h"

#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <string>

namespace mix::codegen {

/// Where the code being written reads a value and adds its gradient.
struct ValueNames {
  std::function<std::string(mlir::Value)> val, grad;
};

/// `v` as a C++ float literal ("0.5f", "1.0f").
std::string floatLiteral(double v);

/// `s` with every `from` replaced by `to` (code templates' placeholders).
void replaceAll(std::string &s, const std::string &from, const std::string &to);

/// An op's eps: as set, else its ODS default (MixOps.td, the one home).
double epsOf(mlir::Operation &op);

/// The loop of a per-element op with result shape `out` over operands of
/// shapes `ins`: flat over j when each operand is read at j or is a scalar;
/// otherwise rows o of the last dim and i along it, so the inner loop reads
/// contiguously (it vectorises) and a broadcast costs a division per row,
/// not per element (outer products, column scalings in scan steps).
struct ElementLoop {
  std::string head;               // the loop header(s), ending where the body goes
  std::string out;                // the result's index
  std::vector<std::string> index; // each operand's index
};
ElementLoop elementLoop(const Shape &out, const std::vector<Shape> &ins);

/// The statements computing `op`'s result (a per-element or per-row op)
/// from its operands, each line indented by `ind`.
void printForward(RegionPlan &plan, mlir::Operation &op, llvm::raw_ostream &os, ValueNames &names,
                  const std::string &ind);

/// The statements adding `op`'s operand gradients from its result's.
void printBackward(RegionPlan &plan, mlir::Operation &op, llvm::raw_ostream &os, ValueNames &names,
                   const std::string &ind);

} // namespace mix::codegen

#endif
