//===- OpBodies.cpp - per-element and per-row ops as C++ on small arrays ---===//
#include "OpBodies.h"

#include <cmath>
#include <cstdio>

using namespace mlir;

namespace mix::codegen {

void replaceAll(std::string &s, const std::string &from, const std::string &to) {
  for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size())
    s.replace(p, from.size(), to);
}

std::string floatLiteral(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos)
    s += ".0";
  return s + "f";
}

double epsOf(Operation &op) {
  NamedAttrList attrs(op.getAttrDictionary());
  op.getName().populateDefaultAttrs(attrs);
  auto f = attrs.get("eps").dyn_cast_or_null<FloatAttr>();
  return f ? f.getValueAsDouble() : 0.0;
}

namespace {
/// Index into an operand of shape `s` broadcast (numpy rules, right-aligned)
/// to `out`, for flat output index `j` (named `var`).
std::string indexExpr(const Shape &out, Shape s, const std::string &j = "j") {
  if (numel(s) == 1)
    return "0";
  s.insert(s.begin(), out.size() - s.size(), 1);
  if (s == out)
    return j;
  std::string expr;
  int64_t outStride = 1, inStride = 1;
  for (int k = static_cast<int>(out.size()) - 1; k >= 0; --k) {
    if (s[k] != 1) {
      std::string term = outStride == 1 ? j : j + " / " + std::to_string(outStride);
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

/// Writes the per-row op's body over each group of the last dim m.
struct RowOpPrinter {
  RegionPlan &plan;
  Operation &op;
  llvm::raw_ostream &os;
  ValueNames &names;
  std::string ind, in2, M, X;
  int64_t m, groups;

  RowOpPrinter(RegionPlan &plan, Operation &op, llvm::raw_ostream &os, ValueNames &names,
               const std::string &ind)
      : plan(plan), op(op), os(os), names(names), ind(ind), in2(ind + "  ") {
    const Shape &xs = plan.at(op.getOperand(0)).shape;
    m = xs.back();
    groups = numel(xs) / m;
    M = std::to_string(m);
    X = names.val(op.getOperand(0));
    os << ind << "for (int64_t gi = 0; gi < " << groups << "; ++gi) {\n";
  }
  ~RowOpPrinter() { os << ind << "}\n"; }

  std::string val(unsigned i) { return names.val(op.getOperand(i)); }
  std::string grad(unsigned i) { return names.grad(op.getOperand(i)); }

  /// The statistics a norm's forward and backward both start from, over the
  /// row `x`: mu and rs for layernorm, rs for rmsnorm / l2norm.
  void stats() {
    double eps = epsOf(op);
    if (isa<mix::LayerNormOp>(op)) {
      os << in2 << "float mu = 0.f, var = 0.f;\n";
      os << in2 << "for (int64_t j = 0; j < " << M << "; ++j) mu += x[j];\n";
      os << in2 << "mu /= " << M << ";\n";
      os << in2 << "for (int64_t j = 0; j < " << M << "; ++j) var += (x[j] - mu) * (x[j] - mu);\n";
      os << in2 << "float rs = 1.f / std::sqrt(var / " << M << " + " << floatLiteral(eps) << ");\n";
      return;
    }
    bool rms = isa<mix::RMSNormOp>(op);
    os << in2 << "float ss = 0.f;\n";
    os << in2 << "for (int64_t j = 0; j < " << M << "; ++j) ss += x[j] * x[j];\n";
    os << in2 << "float rs = 1.f / std::sqrt(ss" << (rms ? " / " + M : std::string()) << " + "
       << floatLiteral(eps) << ");\n";
  }

  // Based's feature map [1, x / F^¼, (x ⊗ x) / (√2·√F)] (docs/protocol.md §3).
  double linearScale() const { return 1.0 / std::pow(double(m), 0.25); }
  double quadScale() const { return 1.0 / (std::sqrt(2.0) * std::sqrt(double(m))); }

  void taylorForward(const std::string &Y) {
    int64_t outM = 1 + m + m * m;
    os << in2 << "const float *x = " << X << " + gi * " << M << "; float *y = " << Y << " + gi * " << outM
       << ";\n";
    os << in2 << "y[0] = 1.f;\n";
    os << in2 << "for (int64_t i = 0; i < " << M << "; ++i) {\n";
    os << in2 << "  y[1 + i] = x[i] * " << floatLiteral(linearScale()) << ";\n";
    os << in2 << "  for (int64_t k = 0; k < " << M << "; ++k) y[1 + " << M << " + i * " << M
       << " + k] = x[i] * x[k] * " << floatLiteral(quadScale()) << ";\n";
    os << in2 << "}\n";
  }

  void taylorBackward(const std::string &GY) {
    int64_t outM = 1 + m + m * m;
    os << in2 << "const float *x = " << X << " + gi * " << M << "; const float *gy = " << GY << " + gi * "
       << outM << "; float *gx = " << grad(0) << " + gi * " << M << ";\n";
    os << in2 << "for (int64_t i = 0; i < " << M << "; ++i) {\n";
    os << in2 << "  float acc = gy[1 + i] * " << floatLiteral(linearScale()) << ";\n";
    os << in2 << "  for (int64_t k = 0; k < " << M << "; ++k) acc += (gy[1 + " << M << " + i * " << M
       << " + k] + gy[1 + " << M << " + k * " << M << " + i]) * x[k] * " << floatLiteral(quadScale())
       << ";\n";
    os << in2 << "  gx[i] += acc;\n" << in2 << "}\n";
  }

  void normForward(const std::string &Y) {
    os << in2 << "const float *x = " << X << " + gi * " << M << "; float *y = " << Y << " + gi * " << M
       << ";\n";
    stats();
    if (isa<mix::LayerNormOp>(op)) {
      os << in2 << "for (int64_t j = 0; j < " << M << "; ++j) y[j] = (x[j] - mu) * rs * " << val(1)
         << "[j] + " << val(2) << "[j];\n";
      return;
    }
    bool rms = isa<mix::RMSNormOp>(op);
    os << in2 << "for (int64_t j = 0; j < " << M << "; ++j) y[j] = x[j] * rs"
       << (rms ? " * " + val(1) + "[j]" : std::string()) << ";\n";
  }

  void normBackward(const std::string &GY) {
    os << in2 << "const float *x = " << X << " + gi * " << M << "; const float *gy = " << GY << " + gi * "
       << M << "; float *gx = " << grad(0) << " + gi * " << M << ";\n";
    stats();
    if (isa<mix::LayerNormOp>(op)) {
      os << in2 << "float m1 = 0.f, m2 = 0.f;\n";
      os << in2 << "for (int64_t j = 0; j < " << M << "; ++j) { float xh = (x[j] - mu) * rs, gh = gy[j] * "
         << val(1) << "[j]; " << grad(1) << "[j] += gy[j] * xh; " << grad(2)
         << "[j] += gy[j]; m1 += gh; m2 += gh * xh; }\n";
      os << in2 << "m1 /= " << M << "; m2 /= " << M << ";\n";
      os << in2 << "for (int64_t j = 0; j < " << M << "; ++j) gx[j] += rs * (gy[j] * " << val(1)
         << "[j] - m1 - (x[j] - mu) * rs * m2);\n";
      return;
    }
    bool rms = isa<mix::RMSNormOp>(op);
    std::string h = rms ? "gy[j] * " + val(1) + "[j]" : "gy[j]";
    os << in2 << "float dot = 0.f;\n";
    os << in2 << "for (int64_t j = 0; j < " << M << "; ++j) { dot += " << h << " * x[j];"
       << (rms ? " " + grad(1) + "[j] += gy[j] * x[j] * rs;" : std::string()) << " }\n";
    os << in2 << "for (int64_t j = 0; j < " << M << "; ++j) gx[j] += rs * " << h
       << " - x[j] * rs * rs * rs * dot" << (rms ? " / " + M : std::string()) << ";\n";
  }
};
} // namespace

ElementLoop elementLoop(const Shape &out, const std::vector<Shape> &ins) {
  ElementLoop l;
  bool flat = out.size() < 2;
  if (!flat) {
    flat = true;
    for (const Shape &s : ins)
      if (std::string e = indexExpr(out, s); e != "j" && e != "0")
        flat = false;
  }
  if (flat) {
    l.head = "for (int64_t j = 0; j < " + std::to_string(numel(out)) + "; ++j)";
    l.out = "j";
    for (const Shape &s : ins)
      l.index.push_back(indexExpr(out, s));
    return l;
  }
  const Shape rows(out.begin(), out.end() - 1);
  const std::string inner = std::to_string(out.back());
  l.head = "for (int64_t o = 0; o < " + std::to_string(numel(rows)) + "; ++o) for (int64_t i = 0; i < " + inner +
           "; ++i)";
  l.out = "o * " + inner + " + i";
  for (Shape s : ins) {
    if (numel(s) == 1) {
      l.index.push_back("0");
      continue;
    }
    s.insert(s.begin(), out.size() - s.size(), 1);
    const bool alongRow = s.back() != 1;
    const std::string row = indexExpr(rows, Shape(s.begin(), s.end() - 1), "o");
    if (row == "0")
      l.index.push_back(alongRow ? "i" : "0");
    else
      l.index.push_back(alongRow ? "(" + row + ") * " + inner + " + i" : row);
  }
  return l;
}

void printForward(RegionPlan &plan, Operation &op, llvm::raw_ostream &os, ValueNames &names,
                  const std::string &ind) {
  Value res = op.getResult(0);
  const PlannedValue &y = plan.at(res);
  std::string Y = names.val(res);
  if (auto code = dyn_cast<mix::ElementCode>(op)) {
    std::vector<Shape> ins;
    for (Value v : op.getOperands())
      ins.push_back(plan.at(v).shape);
    ElementLoop loop = elementLoop(y.shape, ins);
    std::string e = code.cppForward().str();
    for (unsigned i = 0; i < op.getNumOperands(); ++i)
      replaceAll(e, "$" + std::to_string(i), names.val(op.getOperand(i)) + "[" + loop.index[i] + "]");
    os << ind << loop.head << " " << Y << "[" << loop.out << "] = " << e << ";\n";
    return;
  }
  RowOpPrinter p(plan, op, os, names, ind);
  if (isa<mix::TaylorMapOp>(op))
    p.taylorForward(Y);
  else
    p.normForward(Y);
}

void printBackward(RegionPlan &plan, Operation &op, llvm::raw_ostream &os, ValueNames &names,
                   const std::string &ind) {
  Value res = op.getResult(0);
  const PlannedValue &y = plan.at(res);
  std::string GY = names.grad(res);
  if (auto code = dyn_cast<mix::ElementCode>(op)) {
    std::vector<Shape> ins;
    for (Value v : op.getOperands())
      ins.push_back(plan.at(v).shape);
    ElementLoop loop = elementLoop(y.shape, ins);
    auto idx = [&](unsigned i) { return "[" + loop.index[i] + "]"; };
    os << ind << loop.head << " { float ";
    const char *local[] = {"a", "b"};
    for (unsigned i = 0; i < op.getNumOperands(); ++i)
      os << local[i] << " = " << names.val(op.getOperand(i)) << idx(i) << ", ";
    os << "y = " << names.val(res) << "[" << loop.out << "], g = " << GY << "[" << loop.out << "];";
    for (unsigned i = 0; i < op.getNumOperands(); ++i)
      os << " (void)" << local[i] << ";";
    os << " (void)y;";
    for (unsigned i = 0; i < op.getNumOperands(); ++i)
      os << " " << names.grad(op.getOperand(i)) << idx(i) << " += " << code.cppGradient(i) << ";";
    os << " }\n";
    return;
  }
  RowOpPrinter p(plan, op, os, names, ind);
  if (isa<mix::TaylorMapOp>(op))
    p.taylorBackward(GY);
  else
    p.normBackward(GY);
}

} // namespace mix::codegen
