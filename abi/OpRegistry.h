//===- OpRegistry.h - what each mix op is, for code without MLIR -*- C++ -*-===//
//
// One entry per op of the `mix` dialect, generated from its ODS definition
// (compiler/include/mix/MixOps.td) by mix-tblgen: its operands, attributes
// with their defaults, categories, recurrent state and cost. The DSL, the
// runtime and the graph tools read an op's facts here; the dialect reads the
// same definitions through MLIR's own generated classes. Nothing here is
// written by hand per op: change MixOps.td.
//
// The generated table is abi/generated/OpRegistry.inc. Builds with the
// compiler regenerate it from MixOps.td and compile that copy; the committed
// copy serves runtime-only builds (no TableGen there), and the test
// `abi/op-registry-fresh` fails when it is stale.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_ABI_OPREGISTRY_H
#define MIXC_ABI_OPREGISTRY_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mixc::ops {

/// Op categories (the ODS traits of the same names, MixOps.td).
enum Category : unsigned {
  kPerElement = 1u << 0,      // each output element from the same element of each operand
  kPerRow = 1u << 1,          // each position from the same position, over the last dimension
  kMixerAnchor = 1u << 2,     // mixes across time; anchors at most one fused region
  kGeneratedAnchor = 1u << 3, // a MixerAnchor with generated CPU and CUDA kernels
};

/// How an op runs on K replicas of a model at once when an operand is per
/// replica (the ODS field `batching`, MixDialect.td; runtime/core/Replicas.h).
enum class Batching { Loop, Broadcast, Matmul, Gather, NormAffine, Channels };

struct OperandSpec {
  const char *name;
  bool optional; // may be absent (a trailing bias)
  bool variadic; // any number, including none
};

/// An attribute other than the node name every op carries.
struct AttrSpec {
  const char *name;
  const char *kind;         // the ODS attribute: "F32Attr", "I64Attr", "StrAttr", ...
  const char *defaultValue; // as written in ODS ("1e-5", "false", "-1"), or nullptr
  bool optional;            // may be absent with no default (OptionalAttr)
  bool required() const { return defaultValue == nullptr && !optional; }
};

/// An op's operand and result shapes on a concrete batch (every dimension
/// known), as its cost and state formulas see them. Unknown: an empty shape.
struct OpShapes {
  std::vector<std::vector<int64_t>> in; // operand shapes, in ODS order
  std::vector<int64_t> out;             // the first result's shape
  int64_t time = 0;                     // T, the sequence length
  int64_t readoutRows = -1;             // unembed: rows read (−1: all of them)

  double numel(size_t i) const { return i < in.size() ? product(in[i]) : 0; }
  double outNumel() const { return product(out); }
  /// Product of all dims of operand i but the last: the rows a per-row op sees.
  double rows(size_t i) const;
  /// Operand i's dimension `fromEnd` counted from the end (1: last); 0 when unknown.
  double dim(size_t i, size_t fromEnd) const;
  /// Operand i's last dimension, −1 when unknown (state sizes need it known).
  int64_t last(size_t i) const { return i < in.size() && !in[i].empty() ? in[i].back() : -1; }
  static double product(const std::vector<int64_t> &s);
};

/// A causal convolution of `sequences` sequences of length T with a T-tap
/// filter: the cheaper of the direct sum (T(T+1) flops) and the FFT route
/// (size 2T: three real transforms of 2.5·n·log2 n and a complex product).
double causalLongConvFlops(double sequences, int64_t T);

struct OpSpec {
  const char *name;    // the mnemonic: "causal_conv"
  const char *summary; // ODS summary
  std::vector<OperandSpec> operands;
  std::vector<AttrSpec> attrs;
  unsigned categories; // Category bits
  bool variadicResults;
  /// The forward's floating-point work (a multiply-add counts 2).
  double (*flops)(const OpShapes &);
  /// An explicit recurrent state S_t that state interventions reach: its
  /// layout for messages ("[D, N]") and its floats per batch row from the
  /// operand shapes (their last dimensions must be known); null when none.
  const char *stateLayout;
  int64_t (*stateSize)(const OpShapes &);
  /// Why a state intervention cannot act on this op ("" when it can).
  const char *stateRefusal;
  /// How the op runs on replicas (packed training).
  Batching batching;

  bool is(Category c) const { return (categories & c) != 0; }
  bool hasState() const { return stateSize != nullptr; }
  /// The operand counts a node of this op may have.
  size_t minOperands() const;
  size_t maxOperands() const;
  const AttrSpec *attr(std::string_view attrName) const;
};

/// Every op, in ODS order.
const std::vector<OpSpec> &allOps();
/// The op named `name`, or nullptr.
const OpSpec *findOp(std::string_view name);
/// Attribute `attr` of op `op`'s ODS default as a number ("1e-5", "-1",
/// "false" reads 0); throws std::out_of_range when it has none.
double defaultNumber(std::string_view op, std::string_view attr);
/// The names of the ops with `pred`, joined "a, b and c" (for messages).
std::string describeOps(bool (*pred)(const OpSpec &));

} // namespace mixc::ops

#endif
