//===- StateLayout.h - the recurrent states interventions reach -*- C++ -*-===//
//
// Which ops hold an explicit recurrent state S_t, and its size per batch row
// in the layout of abi/KernelAbi.h's mixk_state. The rewrite pass (add(FILE)
// lengths), `mixc names`, the runtime's reference sweeps and the generated
// kernels all follow this one description.
//
//   selective_scan(x [B,T,D], delta, A [D,N], B, C, D)   s_t      [D, N]
//   delta_rule(q [B,T,K], k, v [B,T,V], beta)            S_t      [V, K]
//   linear_attention(q [B,T,F], k, v [B,T,D])            S_t [F, D], then z_t [F]
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_ABI_STATELAYOUT_H
#define MIXC_ABI_STATELAYOUT_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mixc::graph {

/// The state's floats per row from the op's operand shapes (their last
/// dimensions must be known); 0 when `op` keeps no explicit state.
inline int64_t stateSize(const std::string &op, const std::vector<std::vector<int64_t>> &operands) {
  auto last = [&](size_t i) { return i < operands.size() && !operands[i].empty() ? operands[i].back() : -1; };
  if (op == "selective_scan" && operands.size() > 2 && operands[2].size() == 2)
    return operands[2][0] * operands[2][1]; // A [D, N]
  if (op == "delta_rule")
    return last(2) * last(0); // V × K
  if (op == "linear_attention")
    return last(0) * last(2) + last(0); // F × D + F
  return 0;
}

/// The layout above, for messages: "[D, N]".
inline std::string stateLayout(const std::string &op) {
  return op == "selective_scan" ? "[D, N]" : op == "delta_rule" ? "[V, K]" : "[F, D] then [F]";
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
  // A DSL scan's states are its own: each is [B, ...] as declared.
  if (op == "selective_scan" || op == "delta_rule" || op == "linear_attention" || op == "scan")
    return "";
  if (op == "diag_ssm")
    return "its state is implicit: the diagonal SSM runs as one long convolution over a kernel "
           "computed from (A, B, C), and no per-step state is ever formed";
  return "'" + op + "' keeps no recurrent state";
}

} // namespace mixc::graph

#endif
