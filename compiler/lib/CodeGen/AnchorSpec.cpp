//===- AnchorSpec.cpp - the generated mixer primitives, one entry each ------===//
//
// Formulas (docs/protocol.md §3): causal conv (Mamba's short conv), long
// conv (Hyena), linear attention (Based), selective scan (Mamba), delta
// rule (DeltaNet), causal softmax attention. The templates they call are in templates/.
//
//===----------------------------------------------------------------------===//
#include "AnchorSpec.h"
#include "OpBodies.h"

#include "llvm/ADT/DenseMap.h"
#include "mlir/Support/TypeID.h"

#include <memory>

using namespace mlir;

namespace mix::codegen {

std::string AnchorCall::dims(std::initializer_list<std::string> sizes) const {
  std::string s = batch + ", " + time;
  for (const std::string &x : sizes)
    s += ", " + x;
  return s;
}

std::string AnchorCall::ins(unsigned count) const {
  std::string s;
  for (unsigned i = 0; i < count; ++i)
    s += (i ? ", " : "") + in(i);
  return s;
}

std::string AnchorCall::gins(unsigned count) const {
  std::string s;
  for (unsigned i = 0; i < count; ++i)
    s += (i ? ", " : "") + gin(i);
  return s;
}

std::string AnchorCall::tmpl(int64_t size) const {
  return cuda ? "<" + std::to_string(size) + ">" : "";
}

namespace {
std::string num(int64_t v) { return std::to_string(v); }

/// The plan's view of the anchor's operand i.
PlannedValue &operand(RegionPlan &p, unsigned i) { return p.at(p.anchor->getOperand(i)); }

/// y = causal depthwise conv(x, w[C, K]) + bias: Mamba's short conv.
struct CausalConv : AnchorSpec {
  std::string checkOperands(RegionPlan &p) const override {
    bool ok = operand(p, 0).row() && !operand(p, 1).row() &&
              (p.anchor->getNumOperands() < 3 || !operand(p, 2).row());
    return ok ? "" : "causal_conv operands";
  }
  std::string forward(const AnchorCall &c) const override {
    bool bias = c.numOperands > 2;
    return "mixk::causalConvForward(" + c.ins(2) + ", " + (bias ? c.in(2) : "nullptr") + ", " + c.y +
           ", " + sizes(c) + ");";
  }
  std::string backward(const AnchorCall &c) const override {
    bool bias = c.numOperands > 2;
    return "mixk::causalConvBackward(" + c.ins(2) + ", " + c.gy + ", " + c.gins(2) + ", " +
           (bias ? c.gin(2) : "nullptr") + ", " + sizes(c) + ");";
  }
  static std::string sizes(const AnchorCall &c) {
    const Shape &w = c.shape(1); // [C, K]
    return c.dims({num(w[0]), num(w[1]), c.last});
  }
};

/// y = x[B, T, C] * filter[L, C] over time (Hyena); the filter has L ≥ T
/// rows (the runtime checks) and the first T are used.
struct LongConv : AnchorSpec {
  std::string checkOperands(RegionPlan &p) const override {
    bool ok = operand(p, 0).row() && operand(p, 1).filter() && operand(p, 1).n == operand(p, 0).n;
    return ok ? "" : "long_conv operands (a [B, T, C] input and a [L, C] filter, a region input)";
  }
  std::string forward(const AnchorCall &c) const override {
    return "mixk::longConvForward(" + c.ins(2) + ", " + c.y + ", " + c.dims({num(c.n(0)), c.last}) + ");";
  }
  std::string backward(const AnchorCall &c) const override {
    return "mixk::longConvBackward(" + c.ins(2) + ", " + c.gy + ", " + c.gins(2) + ", " +
           c.dims({num(c.n(0)), c.last}) + ");";
  }
};

/// Causal linear attention over feature maps q, k [B, T, F] and values
/// v [B, T, D] (Based). The backward reads the forward's result (kept in
/// `saved`) for the normaliser's gradient.
struct LinearAttention : AnchorSpec {
  std::string checkOperands(RegionPlan &p) const override {
    bool ok = operand(p, 0).row() && operand(p, 1).row() && operand(p, 2).row() &&
              operand(p, 0).n == operand(p, 1).n;
    return ok ? "" : "linear_attention operands";
  }
  std::string savedFloats(RegionPlan &) const override {
    return "mixk::linearAttentionSaved(dims[0], dims[1])";
  }
  std::string sizes(const AnchorCall &c) const {
    return c.cuda ? c.dims({num(c.n(2))}) : c.dims({num(c.n(0)), num(c.n(2))});
  }
  std::string forward(const AnchorCall &c) const override {
    return "mixk::linearAttentionForward" + c.tmpl(c.n(0)) + "(" + c.ins(3) + ", " + c.y +
           ", anchor_saved, anchor_state, " + sizes(c) + ", " + floatLiteral(c.eps) + ", " + c.last + ");";
  }
  std::string backward(const AnchorCall &c) const override {
    return "mixk::linearAttentionBackward" + c.tmpl(c.n(0)) + "(" + c.ins(3) + ", " + c.y +
           ", anchor_saved, " + c.gy + ", " + c.gins(3) + ", " + sizes(c) + ", " + c.last + ");";
  }
};

/// Mamba's selective scan over x, dt [B, T, C], A [C, N], B, C [B, T, N],
/// D [C]; the state [C, N] per step is in `saved` for the backward.
struct SelectiveScan : AnchorSpec {
  std::string checkOperands(RegionPlan &p) const override {
    bool ok = operand(p, 0).row() && operand(p, 1).row() && !operand(p, 2).row() &&
              operand(p, 3).row() && operand(p, 4).row() && !operand(p, 5).row();
    return ok ? "" : "selective_scan operands";
  }
  std::string savedFloats(RegionPlan &p) const override {
    return "mixk::scanSaved(dims[0], dims[1], " + num(operand(p, 0).n) + ", " + num(operand(p, 3).n) + ")";
  }
  std::string sizes(const AnchorCall &c) const {
    return c.cuda ? c.dims({num(c.n(0)), c.last}) : c.dims({num(c.n(0)), num(c.n(3)), c.last});
  }
  std::string forward(const AnchorCall &c) const override {
    return "mixk::selectiveScanForward" + c.tmpl(c.n(3)) + "(" + c.ins(6) + ", " + c.y +
           ", anchor_saved, anchor_state, " + sizes(c) + ");";
  }
  std::string backward(const AnchorCall &c) const override {
    return "mixk::selectiveScanBackward" + c.tmpl(c.n(3)) + "(" + c.ins(6) + ", anchor_saved, " + c.gy +
           ", " + c.gins(6) + ", " + sizes(c) + ");";
  }
};

/// DeltaNet's delta rule over q, k [B, T, K], v [B, T, V], beta [B, T, 1].
struct DeltaRule : AnchorSpec {
  std::string checkOperands(RegionPlan &p) const override {
    bool ok = operand(p, 0).row() && operand(p, 1).row() && operand(p, 2).row() && operand(p, 3).row() &&
              operand(p, 3).n == 1;
    return ok ? "" : "delta_rule operands";
  }
  std::string savedFloats(RegionPlan &p) const override {
    return "mixk::deltaSaved(dims[0], dims[1], " + num(operand(p, 0).n) + ", " + num(operand(p, 2).n) + ")";
  }
  std::string sizes(const AnchorCall &c) const {
    return c.cuda ? c.dims({num(c.n(2)), c.last}) : c.dims({num(c.n(0)), num(c.n(2)), c.last});
  }
  std::string forward(const AnchorCall &c) const override {
    return "mixk::deltaRuleForward" + c.tmpl(c.n(0)) + "(" + c.ins(4) + ", " + c.y +
           ", anchor_saved, anchor_state, " + sizes(c) + ");";
  }
  std::string backward(const AnchorCall &c) const override {
    return "mixk::deltaRuleBackward" + c.tmpl(c.n(0)) + "(" + c.ins(4) + ", anchor_saved, " + c.gy + ", " +
           c.gins(4) + ", " + sizes(c) + ");";
  }
};

/// Causal softmax attention, one head: q, k [B, T, K], v [B, T, V]. The
/// backward reads the forward's result and the rows' log-normalisers
/// (kept in `saved`).
struct SoftmaxAttention : AnchorSpec {
  std::string checkOperands(RegionPlan &p) const override {
    bool ok = operand(p, 0).row() && operand(p, 1).row() && operand(p, 2).row() &&
              operand(p, 0).n == operand(p, 1).n;
    return ok ? "" : "softmax_attention operands";
  }
  std::string savedFloats(RegionPlan &) const override {
    return "mixk::softmaxAttentionSaved(dims[0], dims[1])";
  }
  std::string sizes(const AnchorCall &c) const { return c.dims({num(c.n(0)), num(c.n(2)), c.last}); }
  std::string forward(const AnchorCall &c) const override {
    return "mixk::softmaxAttentionForward(" + c.ins(3) + ", " + c.y + ", anchor_saved, " + sizes(c) + ");";
  }
  std::string backward(const AnchorCall &c) const override {
    return "mixk::softmaxAttentionBackward(" + c.ins(3) + ", " + c.y + ", anchor_saved, " + c.gy + ", " +
           c.gins(3) + ", " + sizes(c) + ");";
  }
};

template <typename Op, typename Spec>
void add(llvm::DenseMap<TypeID, std::unique_ptr<AnchorSpec>> &m) {
  m[TypeID::get<Op>()] = std::make_unique<Spec>();
}
} // namespace

const AnchorSpec *anchorSpecFor(Operation &op) {
  static const auto specs = [] {
    llvm::DenseMap<TypeID, std::unique_ptr<AnchorSpec>> m;
    add<mix::CausalConvOp, CausalConv>(m);
    add<mix::LongConvOp, LongConv>(m);
    add<mix::LinearAttentionOp, LinearAttention>(m);
    add<mix::SelectiveScanOp, SelectiveScan>(m);
    add<mix::DeltaRuleOp, DeltaRule>(m);
    add<mix::SoftmaxAttentionOp, SoftmaxAttention>(m);
    return m;
  }();
  if (!op.hasTrait<mix::OpTrait::GeneratedAnchor>())
    return nullptr;
  auto it = specs.find(op.getName().getTypeID());
  return it == specs.end() ? nullptr : it->second.get();
}

} // namespace mix::codegen
