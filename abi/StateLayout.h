//===- StateLayout.h - the recurrent states interventions reach -*- C++ -*-===//
//
// Which ops hold an explicit recurrent state S_t, and its size per batch row
// in the layout of abi/KernelAbi.h's mixk_state: the `stateLayout` and
// `stateSize` fields of each op's ODS definition (MixOps.td), read through
// abi/OpRegistry.h. The rewrite pass (add(FILE) lengths), `mixc names`, the
// runtime's reference sweeps and the generated kernels all follow them.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_ABI_STATELAYOUT_H
#define MIXC_ABI_STATELAYOUT_H

#include "abi/OpRegistry.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mixc::graph {

/// The state's floats per row from the op's operand shapes (their last
/// dimensions must be known); 0 when `op` keeps no explicit state.
inline int64_t stateSize(const std::string &op, const std::vector<std::vector<int64_t>> &operands) {
  const ops::OpSpec *spec = ops::findOp(op);
  return spec && spec->hasState() ? spec->stateSize(ops::OpShapes{operands, {}}) : 0;
}

/// The layout, for messages: "[D, N]".
inline std::string stateLayout(const std::string &op) {
  const ops::OpSpec *spec = ops::findOp(op);
  return spec && spec->stateLayout ? spec->stateLayout : "";
}

/// A DSL scan's state as declared, from its per-step shape [B, ...]: its
/// layout ("[d_k, d_v]") and floats per row.
inline std::pair<std::string, int64_t> scanStateLayout(const std::vector<int64_t> &stepShape) {
  std::string layout = "[";
  int64_t size = 1;
  for (size_t i = 1; i < stepShape.size(); ++i) {
    layout += (i > 1 ? ", " : "") + std::to_string(stepShape[i]);
    size *= stepShape[i];
  }
  return {layout + "]", size};
}

/// "" when a state intervention can act on `op`'s state; else why not.
inline std::string stateRefusal(const std::string &op) {
  const ops::OpSpec *spec = ops::findOp(op);
  return spec ? spec->stateRefusal : "'" + op + "' keeps no recurrent state";
}

} // namespace mixc::graph

#endif
