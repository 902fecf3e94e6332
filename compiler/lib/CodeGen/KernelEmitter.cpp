//===- KernelEmitter.cpp - fused regions -> C++/CUDA forward/backward kernels -===//
//
// A region is emitted in phases:
//
//   hoisted   ops on parameters only (no B, T dims): computed once per call
//   prologue  per-row ops the anchor primitive depends on
//   anchor    the mixer primitive (a call into templates/cpu_primitives.h)
//   epilogue  the remaining per-row ops
//
// A row phase is one loop over the region's rows (the leading dynamic dims,
// B·T); inside it every value is a small stack array of its static inner
// shape, so an elementwise chain or a norm never leaves the cache. Values
// that cross phases (the anchor's operands and result, prologue values
// the epilogue reads) are "materialised" in the `saved` buffer, which the
// backward reads again. The backward recomputes each row phase's values
// from its inputs and runs the adjoint of every op in reverse; gradients of
// parameters (invariant values) are summed in per-thread partials.
//
//   before (mix dialect):                       after (C++, abridged):
//     %f = mix.fused "..y" kind "selective_scan"   for r: v0[j] = softplus(in0r[j]) -> saved
//       %d = mix.softplus %dt                       v1h[j] = -exp(in1[j])
//       %y = mix.selective_scan %x, %d, ...         selectiveScanForward(in2, v0m, v1h, ...)
//       %o = mix.mul %y, %g                         for r: out0r[j] = v2r[j] * silu(in6r[j])
//
// The CUDA target writes the same phases as device kernels: a row phase is
// a grid-stride loop with one thread per row (parameter gradients summed in
// registers, then atomicAdd), the hoisted phase a one-thread kernel, and
// the anchor a call into templates/cuda_primitives.cuh; buffers that the
// CPU code keeps in std::vector live in one `scratch` allocation
// (cudaMallocAsync on the caller's stream).
//
//===----------------------------------------------------------------------===//
#include "mix/KernelEmitter.h"
#include "mix/MixOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

using namespace mlir;

namespace {
#include "CpuTemplates.inc" // kKernelAbi, kKernelMath, kCpuPrimitives, kCudaPrimitives, kCudaOnHost

using Shape = std::vector<int64_t>;

int64_t numel(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

std::string lit(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos)
    s += ".0";
  return s + "f";
}

/// The statistics a norm's forward and backward both start from, over the
/// row `x` of M floats: mu and rs for layernorm, rs for rmsnorm / l2norm.
void emitNormStats(llvm::raw_ostream &os, const std::string &in2, llvm::StringRef name,
                   const std::string &M, double eps) {
  if (name == "layernorm") {
    os << in2 << "float mu = 0.f, var = 0.f;\n";
    os << in2 << "for (int64_t j = 0; j < " << M << "; ++j) mu += x[j];\n";
    os << in2 << "mu /= " << M << ";\n";
    os << in2 << "for (int64_t j = 0; j < " << M << "; ++j) var += (x[j] - mu) * (x[j] - mu);\n";
    os << in2 << "float rs = 1.f / std::sqrt(var / " << M << " + " << lit(eps) << ");\n";
    return;
  }
  bool rms = name == "rmsnorm";
  os << in2 << "float ss = 0.f;\n";
  os << in2 << "for (int64_t j = 0; j < " << M << "; ++j) ss += x[j] * x[j];\n";
  os << in2 << "float rs = 1.f / std::sqrt(ss" << (rms ? " / " + M : std::string()) << " + " << lit(eps)
     << ");\n";
}

/// Index into an operand of shape `s` broadcast (numpy rules, right-aligned)
/// to `out`, for flat output index `j`.
std::string indexExpr(const Shape &out, Shape s) {
  if (numel(s) == 1)
    return "0";
  s.insert(s.begin(), out.size() - s.size(), 1);
  if (s == out)
    return "j";
  std::string expr;
  int64_t outStride = 1, inStride = 1;
  for (int k = static_cast<int>(out.size()) - 1; k >= 0; --k) {
    if (s[k] != 1) {
      std::string term = outStride == 1 ? "j" : "j / " + std::to_string(outStride);
      if (k > 0)
        term = "(" + term + " % " + std::to_string(out[k]) + ")";
      if (inStride != 1)
        term += " * " + std::to_string(inStride);
      expr = expr.empty() ? term : term + " + " + expr;
    }
    outStride *= out[k];
    inStride *= s[k];
  }
  return expr;
}

enum class Phase { Hoisted, Prologue, Anchor, Epilogue };

struct Val {
  std::string id;
  bool row = false;
  // A long conv's filter [L, C]: one run-time dim (L ≥ T) where row values
  // have two; read by the anchor alone, which indexes it itself.
  bool filter = false;
  Shape shape; // the inner shape of a row value; the full shape of an invariant
  int64_t n = 1;
  int input = -1;  // block argument index
  int output = -1; // yield index
  Operation *def = nullptr;
  Phase phase = Phase::Hoisted;
  bool mat = false; // kept in `saved`
};

// The op categories are traits (MixOps.td); only anchors with kernel
// templates (GeneratedAnchor) are emitted.
bool isElementwise(Operation &o) { return o.hasTrait<mix::OpTrait::PerElement>(); }
bool isRowWise(Operation &o) { return o.hasTrait<mix::OpTrait::PerRow>(); }
bool isGeneratedAnchor(Operation &o) { return o.hasTrait<mix::OpTrait::GeneratedAnchor>(); }

/// An op's eps: as set, else its ODS default (MixOps.td, the one home).
double epsOf(Operation &op) {
  NamedAttrList attrs(op.getAttrDictionary());
  op.getName().populateDefaultAttrs(attrs);
  auto f = attrs.get("eps").dyn_cast_or_null<FloatAttr>();
  return f ? f.getValueAsDouble() : 0.0;
}

/// Where the code being written reads a value and adds its gradient.
struct Ctx {
  std::function<std::string(Value)> val, grad;
};

class RegionEmitter {
public:
  RegionEmitter(mix::FusedOp op, std::string sym, bool cuda)
      : op(op), sym(std::move(sym)), cuda(cuda) {}

  /// "" when the region can be emitted, else why not.
  std::string classify();
  void emit(llvm::raw_ostream &os);
  int rowRank() const { return std::max(R, 0); }

private:
  std::string addValue(Value v, std::string id, int input, Operation *def);
  std::string checkOp(Operation &o);
  std::string checkAnchor();
  Val &V(Value v) { return vals[v]; }
  std::string rows() const;
  // Storage names: a whole buffer, and a row of it.
  std::string full(Value v) {
    Val &x = V(v);
    if (x.input >= 0)
      return "in" + std::to_string(x.input);
    return x.id + (x.row ? "m" : "h");
  }
  std::string gfull(Value v) {
    Val &x = V(v);
    return x.input >= 0 ? "gin" + std::to_string(x.input) : "g" + full(v);
  }
  void emitSavedLayout(llvm::raw_ostream &os);
  // CUDA: a kernel of `body` (after the prelude) launched over `count`
  // threads; `serial` runs on one thread; `flat` is `stmt` for i < count.
  void launch(llvm::raw_ostream &os, const std::string &body, const std::string &count);
  void serial(llvm::raw_ostream &os, const std::string &body);
  void flat(llvm::raw_ostream &os, const std::string &count, const std::string &stmt);
  void emitHost(llvm::raw_ostream &os, bool backward);
  void emitCommon(llvm::raw_ostream &os, bool backward);
  void emitForwardOp(Operation &o, llvm::raw_ostream &os, Ctx &c, const std::string &ind);
  void emitBackwardOp(Operation &o, llvm::raw_ostream &os, Ctx &c, const std::string &ind);
  void emitRowPhase(llvm::raw_ostream &os, Phase p, bool backward);
  void emitHoisted(llvm::raw_ostream &os, bool backward);
  void emitAnchor(llvm::raw_ostream &os, bool backward);
  std::vector<Operation *> opsIn(Phase p) {
    std::vector<Operation *> out;
    for (Operation *o : order)
      if (V(o->getResult(0)).phase == p)
        out.push_back(o);
    return out;
  }

  mix::FusedOp op;
  std::string sym;
  llvm::DenseMap<Value, Val> vals;
  std::vector<Value> args, results; // block arguments; yielded values
  std::vector<Operation *> order;
  std::vector<Value> mats;
  Operation *anchor = nullptr;
  int R = -1;
  bool cuda;
  // CUDA: kernels written so far (before the host functions), the prelude
  // every kernel repeats, and the scratch floats the prelude carves up.
  std::string kernelText, prelude, scratch;
  int kernelCount = 0;
};

/// Whether every use of `v` is as the filter (operand 1) of a long conv.
bool isLongConvFilter(Value v) {
  if (v.use_empty())
    return false;
  for (OpOperand &use : v.getUses())
    if (!isa<mix::LongConvOp>(use.getOwner()) || use.getOperandNumber() != 1)
      return false;
  return true;
}

std::string RegionEmitter::addValue(Value v, std::string id, int input, Operation *def) {
  auto t = v.getType().dyn_cast<RankedTensorType>();
  if (!t || !t.getElementType().isF32())
    return "a value is not an f32 tensor";
  Val x;
  x.id = std::move(id);
  x.input = input;
  x.def = def;
  auto shape = t.getShape();
  size_t lead = 0;
  while (lead < shape.size() && ShapedType::isDynamic(shape[lead]))
    ++lead;
  for (size_t i = lead; i < shape.size(); ++i)
    if (ShapedType::isDynamic(shape[i]))
      return "a dynamic dimension follows a static one";
  if (lead == 1 && shape.size() == 2 && input >= 0 && isLongConvFilter(v)) {
    x.filter = true;
    x.shape.assign(shape.begin() + 1, shape.end());
    x.n = numel(x.shape);
    vals[v] = x;
    return "";
  }
  if (lead > 0) {
    if (R >= 0 && R != static_cast<int>(lead))
      return "values with different numbers of run-time dims";
    R = static_cast<int>(lead);
    x.row = true;
  }
  x.shape.assign(shape.begin() + lead, shape.end());
  x.n = numel(x.shape);
  vals[v] = x;
  return "";
}

std::string RegionEmitter::checkOp(Operation &o) {
  llvm::StringRef name = o.getName().stripDialect();
  bool anchorOp = isGeneratedAnchor(o);
  if (!isElementwise(o) && !isRowWise(o) && !anchorOp)
    return "no CPU code for mix." + name.str();
  if (o.getNumResults() != 1)
    return "mix." + name.str() + " has several results";
  if (anchorOp)
    return "";
  Val &y = V(o.getResult(0));
  for (Value in : o.getOperands()) {
    Val &a = V(in);
    if (a.row && a.shape.size() != y.shape.size())
      return "mix." + name.str() + " broadcasts a row value of another rank";
    if (!a.row && y.row && a.shape.size() > y.shape.size())
      return "mix." + name.str() + " broadcasts a parameter over the run-time dims";
  }
  if (isRowWise(o)) {
    Val &x = V(o.getOperand(0));
    if (x.shape.empty() || x.shape != (name == "taylor_map" ? x.shape : y.shape))
      return "mix." + name.str() + " on a scalar";
    for (unsigned i = 1; i < o.getNumOperands(); ++i) {
      Val &w = V(o.getOperand(i));
      if (w.row || w.shape != Shape{x.shape.back()})
        return "mix." + name.str() + " with a weight that is not [last dim]";
    }
  }
  return "";
}

std::string RegionEmitter::checkAnchor() {
  if (R != 2)
    return "the anchor needs [B, T] rows";
  llvm::StringRef name = anchor->getName().stripDialect();
  auto row = [&](unsigned i) { return V(anchor->getOperand(i)).row; };
  if (name == "causal_conv")
    return row(0) && !row(1) && (anchor->getNumOperands() < 3 || !row(2)) ? "" : "causal_conv operands";
  if (name == "selective_scan")
    return row(0) && row(1) && !row(2) && row(3) && row(4) && !row(5) ? "" : "selective_scan operands";
  if (name == "linear_attention")
    return row(0) && row(1) && row(2) && V(anchor->getOperand(0)).n == V(anchor->getOperand(1)).n
               ? ""
               : "linear_attention operands";
  if (name == "long_conv")
    return row(0) && V(anchor->getOperand(1)).filter && V(anchor->getOperand(1)).n == V(anchor->getOperand(0)).n
               ? ""
               : "long_conv operands (a [B, T, C] input and a [L, C] filter, a region input)";
  return row(0) && row(1) && row(2) && row(3) && V(anchor->getOperand(3)).n == 1 ? ""
                                                                                 : "delta_rule operands";
}

std::string RegionEmitter::classify() {
  Block &body = op.getBody().front();
  for (BlockArgument a : body.getArguments()) {
    args.push_back(a);
    if (std::string e = addValue(a, "", a.getArgNumber(), nullptr); !e.empty())
      return e;
  }
  int k = 0;
  for (Operation &o : body.without_terminator()) {
    if (o.getNumResults() != 1)
      return "mix." + o.getName().stripDialect().str() + " has several results";
    if (std::string e = addValue(o.getResult(0), "v" + std::to_string(k++), -1, &o); !e.empty())
      return e;
    if (std::string e = checkOp(o); !e.empty())
      return e;
    if (isGeneratedAnchor(o)) {
      if (anchor)
        return "two anchors";
      anchor = &o;
    }
    order.push_back(&o);
  }
  for (auto [i, v] : llvm::enumerate(body.getTerminator()->getOperands())) {
    Val &x = V(v);
    if (!x.def || x.output >= 0)
      return "the region returns an input, or one value twice";
    x.output = static_cast<int>(i);
    results.push_back(v);
  }
  if (anchor)
    if (std::string e = checkAnchor(); !e.empty())
      return e;
  if (cuda && (args.size() > 24 || results.size() > 8))
    return "more than 24 inputs or 8 outputs (the CUDA argument block)";
  // Phases: the anchor's per-row ancestors form the prologue.
  llvm::DenseSet<Operation *> ancestors;
  if (anchor) {
    llvm::SmallVector<Operation *> stack = {anchor};
    while (!stack.empty()) {
      Operation *o = stack.pop_back_val();
      for (Value in : o->getOperands())
        if (Operation *d = in.getDefiningOp(); d && ancestors.insert(d).second)
          stack.push_back(d);
    }
  }
  for (Operation *o : order) {
    Val &y = V(o->getResult(0));
    y.phase = o == anchor ? Phase::Anchor
              : !y.row    ? Phase::Hoisted
              : ancestors.count(o) ? Phase::Prologue
                                   : Phase::Epilogue;
  }
  // Materialise what crosses phases.
  for (Operation *o : order) {
    Val &y = V(o->getResult(0));
    if (y.phase == Phase::Anchor)
      y.mat = true;
    for (Value in : o->getOperands()) {
      Val &a = V(in);
      if (a.row && a.def && a.phase == Phase::Prologue && y.phase != Phase::Prologue)
        a.mat = true;
    }
  }
  for (Operation *o : order)
    if (V(o->getResult(0)).mat)
      mats.push_back(o->getResult(0));
  return "";
}

std::string RegionEmitter::rows() const {
  std::string s;
  for (int i = 0; i < R; ++i)
    s += (i ? " * a->dims[" : "a->dims[") + std::to_string(i) + "]";
  return s.empty() ? "1" : s;
}

/// `saved`: each materialised value [rows, n], then the anchor's own state.
void RegionEmitter::emitSavedLayout(llvm::raw_ostream &os) {
  std::string off = "0";
  for (Value m : mats) {
    os << "  float *" << full(m) << " = a->saved + " << off << ";\n";
    off += " + rows * " + std::to_string(V(m).n);
  }
  os << "  float *anchor_saved = a->saved + " << off << ";\n";
  os << "  (void)anchor_saved;\n";
}

void RegionEmitter::emitCommon(llvm::raw_ostream &os, bool backward) {
  os << "  const int64_t rows = " << rows() << ";\n";
  os << "  const int th = a->threads > 0 ? a->threads : 1;\n";
  for (Value v : args)
    os << "  const float *" << full(v) << " = a->in[" << V(v).input << "];\n";
  if (!backward)
    for (Value v : results)
      os << "  float *out" << V(v).output << " = a->out[" << V(v).output << "];\n";
  else {
    for (Value v : args)
      os << "  float *" << gfull(v) << " = a->gin[" << V(v).input << "];\n";
    for (Value v : results)
      os << "  const float *go" << V(v).output << " = a->gout[" << V(v).output << "];\n";
  }
  emitSavedLayout(os);
  // Hoisted values, their gradients, the materialised values' gradients.
  std::string off = "0";
  auto buffer = [&](const std::string &name, const std::string &count) {
    if (cuda) {
      os << "  float *" << name << " = a->scratch + " << off << ";\n";
      off += " + " + count;
    } else {
      os << "  std::vector<float> " << name << "_(" << count << ", 0.f); float *" << name << " = "
         << name << "_.data();\n";
    }
  };
  for (Operation *o : opsIn(Phase::Hoisted)) {
    Value r = o->getResult(0);
    buffer(full(r), std::to_string(V(r).n));
    if (backward)
      buffer(gfull(r), std::to_string(V(r).n));
  }
  if (backward)
    for (Value m : mats)
      buffer(gfull(m), "rows * " + std::to_string(V(m).n));
  scratch = off;
}

void RegionEmitter::launch(llvm::raw_ostream &os, const std::string &body, const std::string &count) {
  std::string name = sym + "_k" + std::to_string(kernelCount++);
  kernelText += "__global__ void " + name + "(mixk_dev dv) {\n  const mixk_dev *a = &dv;\n" +
                prelude + body + "}\n\n";
  os << "  MIXK_LAUNCH(" << name << ", mixk::blocksFor(" << count << "), mixk::kThreads, stream)(dv);\n";
}

void RegionEmitter::serial(llvm::raw_ostream &os, const std::string &body) {
  if (body.empty())
    return;
  if (!cuda)
    os << body;
  else
    launch(os, "  if (blockIdx.x == 0 && threadIdx.x == 0) {\n" + body + "  }\n", "1");
}

void RegionEmitter::flat(llvm::raw_ostream &os, const std::string &count, const std::string &stmt) {
  if (!cuda)
    os << "  for (int64_t i = 0; i < " << count << "; ++i) " << stmt << ";\n";
  else
    launch(os, "  MIXK_GRID_LOOP(i, " + count + ") " + stmt + ";\n", count);
}

void RegionEmitter::emitForwardOp(Operation &o, llvm::raw_ostream &os, Ctx &c,
                                  const std::string &ind) {
  llvm::StringRef name = o.getName().stripDialect();
  Value res = o.getResult(0);
  Val &y = V(res);
  std::string Y = c.val(res);
  auto A = [&](unsigned i) {
    return c.val(o.getOperand(i)) + "[" + indexExpr(y.shape, V(o.getOperand(i)).shape) + "]";
  };
  std::string loop = ind + "for (int64_t j = 0; j < " + std::to_string(y.n) + "; ++j) ";
  static const std::map<std::string, std::string> binary = {
      {"add", "+"}, {"sub", "-"}, {"mul", "*"}, {"div", "/"}};
  static const std::map<std::string, std::string> unary = {
      {"neg", "-(%)"}, {"abs", "std::fabs(%)"}, {"exp", "mixk::fexp(%)"}, {"sin", "std::sin(%)"},
      {"silu", "(%) * mixk::sigmoid(%)"}, {"gelu", "mixk::gelu(%)"}, {"relu", "std::max(%, 0.f)"},
      {"softplus", "mixk::softplus(%)"}, {"sigmoid", "mixk::sigmoid(%)"}};
  if (auto it = binary.find(name.str()); it != binary.end()) {
    os << loop << Y << "[j] = " << A(0) << " " << it->second << " " << A(1) << ";\n";
    return;
  }
  if (auto it = unary.find(name.str()); it != unary.end()) {
    std::string e = it->second, a = A(0);
    for (size_t p; (p = e.find('%')) != std::string::npos;)
      e.replace(p, 1, a);
    os << loop << Y << "[j] = " << e << ";\n";
    return;
  }
  // Row ops: over groups of the last dim m.
  const Shape &xs = V(o.getOperand(0)).shape;
  int64_t m = xs.back(), groups = numel(xs) / m;
  std::string X = c.val(o.getOperand(0)), M = std::to_string(m);
  os << ind << "for (int64_t gi = 0; gi < " << groups << "; ++gi) {\n";
  std::string in2 = ind + "  ";
  if (name == "taylor_map") {
    int64_t outM = 1 + m + m * m;
    os << in2 << "const float *x = " << X << " + gi * " << M << "; float *y = " << Y << " + gi * "
       << outM << ";\n";
    os << in2 << "y[0] = 1.f;\n";
    os << in2 << "for (int64_t i = 0; i < " << M << "; ++i) {\n";
    os << in2 << "  y[1 + i] = x[i] * " << lit(1.0 / std::pow(double(m), 0.25)) << ";\n";
    os << in2 << "  for (int64_t k = 0; k < " << M << "; ++k) y[1 + " << M << " + i * " << M
       << " + k] = x[i] * x[k] * " << lit(1.0 / (std::sqrt(2.0) * std::sqrt(double(m)))) << ";\n";
    os << in2 << "}\n" << ind << "}\n";
    return;
  }
  os << in2 << "const float *x = " << X << " + gi * " << M << "; float *y = " << Y << " + gi * " << M
     << ";\n";
  emitNormStats(os, in2, name, M, epsOf(o));
  if (name == "layernorm") {
    os << in2 << "for (int64_t j = 0; j < " << M << "; ++j) y[j] = (x[j] - mu) * rs * "
       << c.val(o.getOperand(1)) << "[j] + " << c.val(o.getOperand(2)) << "[j];\n";
  } else {
    bool rms = name == "rmsnorm";
    os << in2 << "for (int64_t j = 0; j < " << M << "; ++j) y[j] = x[j] * rs"
       << (rms ? " * " + c.val(o.getOperand(1)) + "[j]" : std::string()) << ";\n";
  }
  os << ind << "}\n";
}

void RegionEmitter::emitBackwardOp(Operation &o, llvm::raw_ostream &os, Ctx &c,
                                   const std::string &ind) {
  llvm::StringRef name = o.getName().stripDialect();
  Value res = o.getResult(0);
  Val &y = V(res);
  std::string Y = c.val(res), GY = c.grad(res);
  auto idx = [&](unsigned i) { return "[" + indexExpr(y.shape, V(o.getOperand(i)).shape) + "]"; };
  auto A = [&](unsigned i) { return c.val(o.getOperand(i)) + idx(i); };
  auto GA = [&](unsigned i) { return c.grad(o.getOperand(i)) + idx(i); };
  std::string loop = ind + "for (int64_t j = 0; j < " + std::to_string(y.n) + "; ++j) ";
  std::string g = GY + "[j]";
  if (name == "add" || name == "sub") {
    os << loop << "{ " << GA(0) << " += " << g << "; " << GA(1) << (name == "add" ? " += " : " -= ")
       << g << "; }\n";
    return;
  }
  if (name == "mul") {
    os << loop << "{ float a0 = " << A(0) << ", a1 = " << A(1) << "; " << GA(0) << " += " << g
       << " * a1; " << GA(1) << " += " << g << " * a0; }\n";
    return;
  }
  if (name == "div") {
    os << loop << "{ float a0 = " << A(0) << ", a1 = " << A(1) << "; " << GA(0) << " += " << g
       << " / a1; " << GA(1) << " -= " << g << " * a0 / (a1 * a1); }\n";
    return;
  }
  static const std::map<std::string, std::string> unary = {
      {"neg", "-g"},
      {"abs", "g * (a > 0.f ? 1.f : (a < 0.f ? -1.f : 0.f))"},
      {"exp", "g * y"},
      {"sin", "g * std::cos(a)"},
      {"silu", "g * mixk::sigmoid(a) * (1.f + a * (1.f - mixk::sigmoid(a)))"},
      {"gelu", "g * mixk::geluGrad(a)"},
      {"relu", "(a > 0.f ? g : 0.f)"},
      {"softplus", "g * (a > 20.f ? 1.f : mixk::sigmoid(a))"},
      {"sigmoid", "g * y * (1.f - y)"}};
  if (auto it = unary.find(name.str()); it != unary.end()) {
    os << loop << "{ float a = " << A(0) << ", y = " << Y << "[j], g = " << g << "; (void)y; "
       << GA(0) << " += " << it->second << "; }\n";
    return;
  }
  const Shape &xs = V(o.getOperand(0)).shape;
  int64_t m = xs.back(), groups = numel(xs) / m;
  std::string X = c.val(o.getOperand(0)), GX = c.grad(o.getOperand(0)), M = std::to_string(m);
  os << ind << "for (int64_t gi = 0; gi < " << groups << "; ++gi) {\n";
  std::string in2 = ind + "  ";
  if (name == "taylor_map") {
    int64_t outM = 1 + m + m * m;
    os << in2 << "const float *x = " << X << " + gi * " << M << "; const float *gy = " << GY
       << " + gi * " << outM << "; float *gx = " << GX << " + gi * " << M << ";\n";
    os << in2 << "for (int64_t i = 0; i < " << M << "; ++i) {\n";
    os << in2 << "  float acc = gy[1 + i] * " << lit(1.0 / std::pow(double(m), 0.25)) << ";\n";
    os << in2 << "  for (int64_t k = 0; k < " << M << "; ++k) acc += (gy[1 + " << M << " + i * " << M
       << " + k] + gy[1 + " << M << " + k * " << M << " + i]) * x[k] * "
       << lit(1.0 / (std::sqrt(2.0) * std::sqrt(double(m)))) << ";\n";
    os << in2 << "  gx[i] += acc;\n" << in2 << "}\n" << ind << "}\n";
    return;
  }
  os << in2 << "const float *x = " << X << " + gi * " << M << "; const float *gy = " << GY
     << " + gi * " << M << "; float *gx = " << GX << " + gi * " << M << ";\n";
  if (name == "layernorm") {
    std::string W = c.val(o.getOperand(1)), GW = c.grad(o.getOperand(1)),
                GB = c.grad(o.getOperand(2));
    emitNormStats(os, in2, name, M, epsOf(o));
    os << in2 << "float m1 = 0.f, m2 = 0.f;\n";
    os << in2 << "for (int64_t j = 0; j < " << M << "; ++j) { float xh = (x[j] - mu) * rs, gh = gy[j] * "
       << W << "[j]; " << GW << "[j] += gy[j] * xh; " << GB << "[j] += gy[j]; m1 += gh; m2 += gh * xh; }\n";
    os << in2 << "m1 /= " << M << "; m2 /= " << M << ";\n";
    os << in2 << "for (int64_t j = 0; j < " << M << "; ++j) gx[j] += rs * (gy[j] * " << W
       << "[j] - m1 - (x[j] - mu) * rs * m2);\n";
  } else {
    bool rms = name == "rmsnorm";
    emitNormStats(os, in2, name, M, epsOf(o));
    std::string h = rms ? "gy[j] * " + c.val(o.getOperand(1)) + "[j]" : "gy[j]";
    os << in2 << "float dot = 0.f;\n";
    os << in2 << "for (int64_t j = 0; j < " << M << "; ++j) { dot += " << h << " * x[j];"
       << (rms ? " " + c.grad(o.getOperand(1)) + "[j] += gy[j] * x[j] * rs;" : std::string())
       << " }\n";
    os << in2 << "for (int64_t j = 0; j < " << M << "; ++j) gx[j] += rs * " << h
       << " - x[j] * rs * rs * rs * dot" << (rms ? " / " + M : std::string()) << ";\n";
  }
  os << ind << "}\n";
}

/// One loop over rows. Forward: compute, store materialised values and
/// outputs. Backward: recompute, seed the adjoints, run the ops in reverse.
void RegionEmitter::emitRowPhase(llvm::raw_ostream &os, Phase p, bool backward) {
  std::vector<Operation *> ops = opsIn(p);
  if (ops.empty())
    return;
  llvm::DenseSet<Value> local;
  for (Operation *o : ops)
    local.insert(o->getResult(0));
  // Invariant values this phase reads (their gradients need partials).
  std::vector<Value> invariants;
  llvm::DenseSet<Value> seen;
  for (Operation *o : ops)
    for (Value in : o->getOperands())
      if (!V(in).row && seen.insert(in).second)
        invariants.push_back(in);
  Ctx c;
  c.val = [&](Value v) {
    if (local.count(v))
      return V(v).id;
    return V(v).row ? full(v) + "_r" : full(v);
  };
  c.grad = [&](Value v) {
    if (local.count(v))
      return "g_" + V(v).id;
    return V(v).row ? gfull(v) + "_r" : "p_" + full(v);
  };
  std::string innerText;
  llvm::raw_string_ostream in(innerText);
  std::string ind = "      ";
  // Row pointers into every whole-buffer row value.
  llvm::DenseSet<Value> rowRefs;
  for (Operation *o : ops)
    for (Value v : o->getOperands())
      if (V(v).row && !local.count(v) && rowRefs.insert(v).second) {
        in << ind << "const float *" << full(v) << "_r = " << full(v) << " + r * " << V(v).n << ";\n";
        if (backward)
          in << ind << "float *" << gfull(v) << "_r = " << gfull(v) << " + r * " << V(v).n << ";\n";
      }
  for (Operation *o : ops) {
    Val &y = V(o->getResult(0));
    in << ind << "float " << y.id << "[" << y.n << "];\n";
    emitForwardOp(*o, in, c, ind);
    if (!backward) {
      if (y.mat)
        in << ind << "std::memcpy(" << full(o->getResult(0)) << " + r * " << y.n << ", " << y.id
           << ", sizeof " << y.id << ");\n";
      if (y.output >= 0)
        in << ind << "std::memcpy(out" << y.output << " + r * " << y.n << ", " << y.id << ", sizeof "
           << y.id << ");\n";
    }
  }
  if (backward) {
    for (Operation *o : ops) {
      Val &y = V(o->getResult(0));
      in << ind << "float g_" << y.id << "[" << y.n << "] = {};\n";
      if (y.output >= 0)
        in << ind << "for (int64_t j = 0; j < " << y.n << "; ++j) g_" << y.id << "[j] += go"
           << y.output << "[r * " << y.n << " + j];\n";
      if (y.mat)
        in << ind << "for (int64_t j = 0; j < " << y.n << "; ++j) g_" << y.id << "[j] += "
           << gfull(o->getResult(0)) << "[r * " << y.n << " + j];\n";
    }
    for (auto it = ops.rbegin(); it != ops.rend(); ++it)
      emitBackwardOp(**it, in, c, ind);
  }
  in.flush();
  if (cuda) {
    // Parameter gradients: summed per thread, then one atomicAdd each.
    std::string body;
    if (backward)
      for (Value v : invariants)
        body += "  float p_" + full(v) + "[" + std::to_string(V(v).n) + "] = {};\n";
    body += "  MIXK_GRID_LOOP(r, rows) {\n" + innerText + "  }\n";
    if (backward)
      for (Value v : invariants)
        body += "  for (int64_t j = 0; j < " + std::to_string(V(v).n) + "; ++j) if (p_" + full(v) +
                "[j] != 0.f) atomicAdd(&" + gfull(v) + "[j], p_" + full(v) + "[j]);\n";
    launch(os, body, "rows");
    return;
  }
  os << "  {\n";
  if (backward)
    for (Value v : invariants)
      os << "    mixk::Partials P_" << full(v) << "(th, " << V(v).n << ");\n";
  os << "#pragma omp parallel num_threads(th)\n  {\n";
  if (backward)
    for (Value v : invariants)
      os << "    float *p_" << full(v) << " = P_" << full(v) << ".mine();\n";
  os << "#pragma omp for schedule(static)\n";
  os << "    for (int64_t r = 0; r < rows; ++r) {\n";
  os << innerText;
  os << "    }\n  }\n";
  if (backward)
    for (Value v : invariants)
      os << "    P_" << full(v) << ".addTo(" << gfull(v) << ");\n";
  os << "  }\n";
}

void RegionEmitter::emitHoisted(llvm::raw_ostream &os, bool backward) {
  std::string text;
  llvm::raw_string_ostream body(text);
  Ctx c;
  c.val = [&](Value v) { return full(v); };
  c.grad = [&](Value v) { return gfull(v); };
  for (Operation *o : opsIn(Phase::Hoisted)) {
    Value r = o->getResult(0);
    emitForwardOp(*o, body, c, "  ");
    if (!backward && V(r).output >= 0)
      body << "  for (int64_t j = 0; j < " << V(r).n << "; ++j) out" << V(r).output << "[j] = "
           << full(r) << "[j];\n";
  }
  body.flush();
  serial(os, text);
}

void RegionEmitter::emitAnchor(llvm::raw_ostream &os, bool backward) {
  if (!anchor)
    return;
  llvm::StringRef name = anchor->getName().stripDialect();
  Value res = anchor->getResult(0);
  auto in = [&](unsigned i) { return full(anchor->getOperand(i)); };
  auto gin = [&](unsigned i) { return gfull(anchor->getOperand(i)); };
  auto n = [&](unsigned i) { return std::to_string(V(anchor->getOperand(i)).n); };
  std::string Y = full(res), GY = gfull(res), B = "a->dims[0]", T = "a->dims[1]";
  std::string count = "rows * " + std::to_string(V(res).n);
  // The last argument: OpenMP threads, or the stream; CUDA templates take
  // the state's inner size as a template argument (it sizes registers).
  std::string last = cuda ? "stream" : "th";
  if (backward && V(res).output >= 0)
    flat(os, count, GY + "[i] += go" + std::to_string(V(res).output) + "[i]");
  if (name == "causal_conv") {
    const Shape &w = V(anchor->getOperand(1)).shape;
    bool bias = anchor->getNumOperands() > 2;
    std::string dims = B + ", " + T + ", " + std::to_string(w[0]) + ", " + std::to_string(w[1]) + ", " + last;
    if (!backward)
      os << "  mixk::causalConvForward(" << in(0) << ", " << in(1) << ", "
         << (bias ? in(2) : "nullptr") << ", " << Y << ", " << dims << ");\n";
    else
      os << "  mixk::causalConvBackward(" << in(0) << ", " << in(1) << ", " << GY << ", " << gin(0)
         << ", " << gin(1) << ", " << (bias ? gin(2) : "nullptr") << ", " << dims << ");\n";
  } else if (name == "selective_scan") {
    std::string dims = cuda ? B + ", " + T + ", " + n(0) + ", " + last
                            : B + ", " + T + ", " + n(0) + ", " + n(3) + ", " + last;
    std::string tmpl = cuda ? "<" + n(3) + ">" : "";
    std::string ins = in(0) + ", " + in(1) + ", " + in(2) + ", " + in(3) + ", " + in(4) + ", " + in(5);
    if (!backward)
      os << "  mixk::selectiveScanForward" << tmpl << "(" << ins << ", " << Y << ", anchor_saved, "
         << dims << ");\n";
    else
      os << "  mixk::selectiveScanBackward" << tmpl << "(" << ins << ", anchor_saved, " << GY << ", "
         << gin(0) << ", " << gin(1) << ", " << gin(2) << ", " << gin(3) << ", " << gin(4) << ", "
         << gin(5) << ", " << dims << ");\n";
  } else if (name == "long_conv") {
    // The filter has L ≥ T rows (the runtime checks); the first T are used.
    std::string dims = B + ", " + T + ", " + n(0) + ", " + last;
    if (!backward)
      os << "  mixk::longConvForward(" << in(0) << ", " << in(1) << ", " << Y << ", " << dims << ");\n";
    else
      os << "  mixk::longConvBackward(" << in(0) << ", " << in(1) << ", " << GY << ", " << gin(0) << ", "
         << gin(1) << ", " << dims << ");\n";
  } else if (name == "linear_attention") {
    // The backward reads the forward's result (Y, kept in `saved`) for gden.
    std::string eps = lit(epsOf(*anchor));
    std::string tmpl = cuda ? "<" + n(0) + ">" : "";
    std::string dims = cuda ? B + ", " + T + ", " + n(2) : B + ", " + T + ", " + n(0) + ", " + n(2);
    std::string ins = in(0) + ", " + in(1) + ", " + in(2);
    if (!backward)
      os << "  mixk::linearAttentionForward" << tmpl << "(" << ins << ", " << Y << ", anchor_saved, "
         << dims << ", " << eps << ", " << last << ");\n";
    else
      os << "  mixk::linearAttentionBackward" << tmpl << "(" << ins << ", " << Y << ", anchor_saved, "
         << GY << ", " << gin(0) << ", " << gin(1) << ", " << gin(2) << ", " << dims << ", " << last
         << ");\n";
  } else { // delta_rule
    std::string dims = cuda ? B + ", " + T + ", " + n(2) + ", " + last
                            : B + ", " + T + ", " + n(0) + ", " + n(2) + ", " + last;
    std::string tmpl = cuda ? "<" + n(0) + ">" : "";
    std::string ins = in(0) + ", " + in(1) + ", " + in(2) + ", " + in(3);
    if (!backward)
      os << "  mixk::deltaRuleForward" << tmpl << "(" << ins << ", " << Y << ", anchor_saved, " << dims
         << ");\n";
    else
      os << "  mixk::deltaRuleBackward" << tmpl << "(" << ins << ", anchor_saved, " << GY << ", "
         << gin(0) << ", " << gin(1) << ", " << gin(2) << ", " << gin(3) << ", " << dims << ");\n";
  }
  if (!backward && V(res).output >= 0)
    flat(os, count, "out" + std::to_string(V(res).output) + "[i] = " + Y + "[i]");
}

/// The body of `<sym>_forward` / `_backward`: the phases in order (reverse
/// for the backward, each recomputing what it needs).
void RegionEmitter::emitHost(llvm::raw_ostream &os, bool backward) {
  emitHoisted(os, backward);
  if (!backward) {
    emitRowPhase(os, Phase::Prologue, false);
    emitAnchor(os, false);
    emitRowPhase(os, Phase::Epilogue, false);
    return;
  }
  // Hoisted outputs are seeded before the row phases add to them.
  std::string seed;
  for (Operation *o : opsIn(Phase::Hoisted))
    if (V(o->getResult(0)).output >= 0)
      seed += "  for (int64_t i = 0; i < " + std::to_string(V(o->getResult(0)).n) + "; ++i) " +
              gfull(o->getResult(0)) + "[i] += go" + std::to_string(V(o->getResult(0)).output) + "[i];\n";
  serial(os, seed);
  emitRowPhase(os, Phase::Epilogue, true);
  emitAnchor(os, true);
  emitRowPhase(os, Phase::Prologue, true);
  std::string text;
  llvm::raw_string_ostream adj(text);
  Ctx c;
  c.val = [&](Value v) { return full(v); };
  c.grad = [&](Value v) { return gfull(v); };
  std::vector<Operation *> hoisted = opsIn(Phase::Hoisted);
  for (auto it = hoisted.rbegin(); it != hoisted.rend(); ++it)
    emitBackwardOp(**it, adj, c, "  ");
  adj.flush();
  serial(os, text);
}

void RegionEmitter::emit(llvm::raw_ostream &os) {
  os << "\n// region \"" << op.getName() << "\" (kind " << op.getKind() << "), rows = " << rows()
     << "\n";
  // Saved size.
  os << "extern \"C\" int64_t " << sym << "_saved(const int64_t *dims) {\n";
  os << "  int64_t rows = 1;\n  for (int i = 0; i < " << rowRank() << "; ++i) rows *= dims[i];\n";
  int64_t perRow = 0;
  for (Value m : mats)
    perRow += V(m).n;
  os << "  int64_t anchor = ";
  if (anchor && anchor->getName().stripDialect() == "selective_scan")
    os << "mixk::scanSaved(dims[0], dims[1], " << V(anchor->getOperand(0)).n << ", "
       << V(anchor->getOperand(3)).n << ")";
  else if (anchor && anchor->getName().stripDialect() == "delta_rule")
    os << "mixk::deltaSaved(dims[0], dims[1], " << V(anchor->getOperand(0)).n << ", "
       << V(anchor->getOperand(2)).n << ")";
  else if (anchor && anchor->getName().stripDialect() == "linear_attention")
    os << "mixk::linearAttentionSaved(dims[0], dims[1])";
  else
    os << "0";
  os << ";\n  return rows * " << perRow << " + anchor;\n}\n\n";

  for (bool backward : {false, true}) {
    std::string entry = "extern \"C\" void " + sym + (backward ? "_backward" : "_forward");
    if (!cuda) {
      os << entry << "(const mixk_args *a) {\n";
      emitCommon(os, backward);
      emitHost(os, backward);
      os << "}\n";
      continue;
    }
    llvm::raw_string_ostream pre(prelude);
    prelude.clear();
    emitCommon(pre, backward);
    pre.flush();
    std::string hostText;
    llvm::raw_string_ostream host(hostText);
    emitHost(host, backward);
    host.flush();
    os << kernelText;
    kernelText.clear();
    os << entry << "(const mixk_args *args) {\n";
    os << "  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);\n";
    os << "  mixk_dev dv{};\n";
    os << "  for (int i = 0; i < 4; ++i) dv.dims[i] = args->dims[i];\n";
    os << "  dv.ndims = args->ndims; dv.threads = args->threads; dv.saved = args->saved;\n";
    os << "  for (int i = 0; i < " << args.size() << "; ++i) dv.in[i] = args->in[i];\n";
    if (!backward)
      os << "  for (int i = 0; i < " << results.size() << "; ++i) dv.out[i] = args->out[i];\n";
    else
      os << "  for (int i = 0; i < " << args.size() << "; ++i) dv.gin[i] = args->gin[i];\n"
         << "  for (int i = 0; i < " << results.size() << "; ++i) dv.gout[i] = args->gout[i];\n";
    os << "  {\n    const mixk_dev *a = &dv;\n    const int64_t rows = " << rows() << ";\n"
       << "    const int64_t n = " << scratch << ";\n    (void)rows;\n"
       << "    if (n > 0) {\n"
       << "      cudaMallocAsync(reinterpret_cast<void **>(&dv.scratch), n * sizeof(float), stream);\n"
       << "      cudaMemsetAsync(dv.scratch, 0, n * sizeof(float), stream);\n    }\n  }\n";
    os << "  const mixk_dev *a = &dv;\n" << prelude << hostText;
    os << "  if (dv.scratch) cudaFreeAsync(dv.scratch, stream);\n}\n\n";
  }
}
} // namespace

// CUDA: the argument block kernels receive by value (a mixk_args holds
// host arrays of pointers, which a kernel cannot read).
static const char kCudaArgs[] = R"(
struct mixk_dev {
  int64_t dims[4];
  int32_t ndims, threads;
  const float *in[24];
  float *out[8];
  float *saved;
  const float *gout[8];
  float *gin[24];
  float *scratch;
};
)";

mix::CpuKernels mix::emitKernels(func::FuncOp model, KernelTarget target) {
  const bool cuda = target == KernelTarget::Cuda;
  CpuKernels out;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "// Generated by mixc's " << (cuda ? "CUDA" : "CPU")
     << " back end (compiler/lib/CodeGen/KernelEmitter.cpp)\n";
  os << "// for model " << model.getSymName() << ". Do not edit.\n";
  os << kKernelAbi << "\n" << kKernelMath << "\n";
  if (cuda)
    os << "#ifdef MIXK_CUDA_ON_HOST\n" << kCudaOnHost << "#endif\n"
       << kCudaPrimitives << "\n" << kCudaArgs << "\n";
  else
    os << kCpuPrimitives << "\n";
  os << "extern \"C\" int mixk_abi_version() { return MIXK_ABI_VERSION; }\n";
  if (cuda)
    os << "#ifdef MIXK_CUDA_ON_HOST\n"
          "extern \"C\" int mixk_target() { return MIXK_TARGET_CPU; } // run on the host (tests)\n"
          "#else\n"
          "extern \"C\" int mixk_target() { return MIXK_TARGET_CUDA; }\n"
          "#endif\n";
  else
    os << "extern \"C\" int mixk_target() { return MIXK_TARGET_CPU; }\n";
  int next = 0;
  model.walk([&](mix::FusedOp fused) {
    RegionKernel &rk = out.regions[fused.getName().str()];
    // Numbered over all regions, so a region has one symbol on every target.
    RegionEmitter e(fused, "mixk_" + std::to_string(next++), cuda);
    rk.skipped = e.classify();
    rk.rowRank = e.rowRank();
    if (!rk.skipped.empty()) {
      os << "\n// region \"" << fused.getName() << "\": not generated (" << rk.skipped << ")\n";
      return;
    }
    rk.symbol = "mixk_" + std::to_string(next - 1);
    e.emit(os);
  });
  os.flush();
  out.source = std::move(text);
  return out;
}
