//===- RegionPrinter.cpp - the phases of a region, for any target ----------===//
//
//   before (mix dialect):                       after (C++, abridged):
//     %f = mix.fused "..y" kind "selective_scan"   for r: v0[j] = softplus(in0r[j]) -> saved
//       %d = mix.softplus %dt                       v1h[j] = -exp(in1[j])
//       %y = mix.selective_scan %x, %d, ...         selectiveScanForward(in2, v0m, v1h, ...)
//       %o = mix.mul %y, %g                         for r: out0r[j] = v2r[j] * silu(in6r[j])
//
//===----------------------------------------------------------------------===//
#include "RegionPrinter.h"
#include "AnchorSpec.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace mix::codegen {

std::string RegionPrinter::full(Value v) {
  PlannedValue &x = plan.at(v);
  if (x.input >= 0)
    return "in" + std::to_string(x.input);
  return x.id + (x.row() ? "m" : "h");
}

std::string RegionPrinter::gfull(Value v) {
  PlannedValue &x = plan.at(v);
  return x.input >= 0 ? "gin" + std::to_string(x.input) : "g" + full(v);
}

std::string RegionPrinter::rows() const {
  std::string s;
  for (int i = 0; i < plan.rowRank; ++i)
    s += (i ? " * a->dims[" : "a->dims[") + std::to_string(i) + "]";
  return s.empty() ? "1" : s;
}

void RegionPrinter::printDeclarations(llvm::raw_ostream &os, bool backward) {
  os << "  const int64_t rows = " << rows() << ";\n";
  os << "  const int th = a->threads > 0 ? a->threads : 1;\n";
  for (Value v : plan.args)
    os << "  const float *" << full(v) << " = a->in[" << plan.at(v).input << "];\n";
  if (!backward)
    for (Value v : plan.results)
      os << "  float *out" << plan.at(v).output << " = a->out[" << plan.at(v).output << "];\n";
  else {
    for (Value v : plan.args)
      os << "  float *" << gfull(v) << " = a->gin[" << plan.at(v).input << "];\n";
    for (Value v : plan.results)
      os << "  const float *go" << plan.at(v).output << " = a->gout[" << plan.at(v).output << "];\n";
  }
  // `saved`: each materialised value [rows, n], then the anchor's own state.
  std::string off = "0";
  for (Value m : plan.saved) {
    os << "  float *" << full(m) << " = a->saved + " << off << ";\n";
    off += " + rows * " + std::to_string(plan.at(m).n);
  }
  os << "  float *anchor_saved = a->saved + " << off << ";\n";
  os << "  (void)anchor_saved;\n";
  if (!backward) // the recurrences' state interventions (abi/KernelAbi.h)
    os << "  const mixk_state *anchor_state = a->state;\n  (void)anchor_state;\n";
  // Hoisted values, their gradients, the materialised values' gradients.
  for (Operation *o : plan.opsIn(Phase::Hoisted)) {
    Value r = o->getResult(0);
    printBuffer(os, full(r), std::to_string(plan.at(r).n));
    if (backward)
      printBuffer(os, gfull(r), std::to_string(plan.at(r).n));
  }
  if (backward)
    for (Value m : plan.saved)
      printBuffer(os, gfull(m), "rows * " + std::to_string(plan.at(m).n));
}

/// One loop over rows. Forward: compute, store materialised values and
/// outputs. Backward: recompute, seed the adjoints, run the ops in reverse.
void RegionPrinter::printRowPhase(llvm::raw_ostream &os, Phase p, bool backward) {
  std::vector<Operation *> ops = plan.opsIn(p);
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
      if (!plan.at(in).row() && seen.insert(in).second)
        invariants.push_back(in);
  ValueNames names;
  names.val = [&](Value v) {
    if (local.count(v))
      return plan.at(v).id;
    return plan.at(v).row() ? full(v) + "_r" : full(v);
  };
  names.grad = [&](Value v) {
    if (local.count(v))
      return "g_" + plan.at(v).id;
    return plan.at(v).row() ? gfull(v) + "_r" : "p_" + full(v);
  };
  std::string innerText;
  llvm::raw_string_ostream in(innerText);
  std::string ind = "      ";
  // Row pointers into every whole-buffer row value.
  llvm::DenseSet<Value> rowRefs;
  for (Operation *o : ops)
    for (Value v : o->getOperands())
      if (plan.at(v).row() && !local.count(v) && rowRefs.insert(v).second) {
        in << ind << "const float *" << full(v) << "_r = " << full(v) << " + r * " << plan.at(v).n << ";\n";
        if (backward)
          in << ind << "float *" << gfull(v) << "_r = " << gfull(v) << " + r * " << plan.at(v).n << ";\n";
      }
  for (Operation *o : ops) {
    PlannedValue &y = plan.at(o->getResult(0));
    in << ind << "float " << y.id << "[" << y.n << "];\n";
    printForward(plan, *o, in, names, ind);
    if (!backward) {
      if (y.saved)
        in << ind << "std::memcpy(" << full(o->getResult(0)) << " + r * " << y.n << ", " << y.id
           << ", sizeof " << y.id << ");\n";
      if (y.output >= 0)
        in << ind << "std::memcpy(out" << y.output << " + r * " << y.n << ", " << y.id << ", sizeof "
           << y.id << ");\n";
    }
  }
  if (backward) {
    for (Operation *o : ops) {
      PlannedValue &y = plan.at(o->getResult(0));
      in << ind << "float g_" << y.id << "[" << y.n << "] = {};\n";
      if (y.output >= 0)
        in << ind << "for (int64_t j = 0; j < " << y.n << "; ++j) g_" << y.id << "[j] += go" << y.output
           << "[r * " << y.n << " + j];\n";
      if (y.saved)
        in << ind << "for (int64_t j = 0; j < " << y.n << "; ++j) g_" << y.id << "[j] += "
           << gfull(o->getResult(0)) << "[r * " << y.n << " + j];\n";
    }
    for (auto it = ops.rbegin(); it != ops.rend(); ++it)
      printBackward(plan, **it, in, names, ind);
  }
  in.flush();
  printRowLoop(os, innerText, invariants, backward);
}

void RegionPrinter::printHoisted(llvm::raw_ostream &os, bool backward) {
  std::string text;
  llvm::raw_string_ostream body(text);
  ValueNames names;
  names.val = [&](Value v) { return full(v); };
  names.grad = [&](Value v) { return gfull(v); };
  for (Operation *o : plan.opsIn(Phase::Hoisted)) {
    Value r = o->getResult(0);
    printForward(plan, *o, body, names, "  ");
    if (!backward && plan.at(r).output >= 0)
      body << "  for (int64_t j = 0; j < " << plan.at(r).n << "; ++j) out" << plan.at(r).output
           << "[j] = " << full(r) << "[j];\n";
  }
  body.flush();
  printSerial(os, text);
}

void RegionPrinter::printAnchor(llvm::raw_ostream &os, bool backward) {
  if (!plan.anchor)
    return;
  Operation *anchor = plan.anchor;
  Value res = anchor->getResult(0);
  AnchorCall c;
  c.in = [&](unsigned i) { return full(anchor->getOperand(i)); };
  c.gin = [&](unsigned i) { return gfull(anchor->getOperand(i)); };
  c.n = [&](unsigned i) { return plan.at(anchor->getOperand(i)).n; };
  c.shape = [&](unsigned i) -> const Shape & { return plan.at(anchor->getOperand(i)).shape; };
  c.numOperands = anchor->getNumOperands();
  c.y = full(res);
  c.gy = gfull(res);
  c.batch = "a->dims[0]";
  c.time = "a->dims[1]";
  c.last = anchorLastArgument();
  c.cuda = cuda();
  c.eps = epsOf(*anchor);
  std::string count = "rows * " + std::to_string(plan.at(res).n);
  int output = plan.at(res).output;
  if (backward && output >= 0)
    printFlat(os, count, c.gy + "[i] += go" + std::to_string(output) + "[i]");
  os << "  " << (backward ? plan.anchorSpec->backward(c) : plan.anchorSpec->forward(c)) << "\n";
  if (!backward && output >= 0)
    printFlat(os, count, "out" + std::to_string(output) + "[i] = " + c.y + "[i]");
}

void RegionPrinter::printPhases(llvm::raw_ostream &os, bool backward) {
  printHoisted(os, backward);
  if (!backward) {
    printRowPhase(os, Phase::Prologue, false);
    printAnchor(os, false);
    printRowPhase(os, Phase::Epilogue, false);
    return;
  }
  // Hoisted outputs are seeded before the row phases add to them.
  std::string seed;
  for (Operation *o : plan.opsIn(Phase::Hoisted)) {
    PlannedValue &y = plan.at(o->getResult(0));
    if (y.output >= 0)
      seed += "  for (int64_t i = 0; i < " + std::to_string(y.n) + "; ++i) " + gfull(o->getResult(0)) +
              "[i] += go" + std::to_string(y.output) + "[i];\n";
  }
  printSerial(os, seed);
  printRowPhase(os, Phase::Epilogue, true);
  printAnchor(os, true);
  printRowPhase(os, Phase::Prologue, true);
  std::string text;
  llvm::raw_string_ostream adj(text);
  ValueNames names;
  names.val = [&](Value v) { return full(v); };
  names.grad = [&](Value v) { return gfull(v); };
  std::vector<Operation *> hoisted = plan.opsIn(Phase::Hoisted);
  for (auto it = hoisted.rbegin(); it != hoisted.rend(); ++it)
    printBackward(plan, **it, adj, names, "  ");
  adj.flush();
  printSerial(os, text);
}

void RegionPrinter::printSavedSize(llvm::raw_ostream &os) {
  os << "extern \"C\" int64_t " << sym << "_saved(const int64_t *dims) {\n";
  os << "  int64_t rows = 1;\n  for (int i = 0; i < " << plan.rowRank << "; ++i) rows *= dims[i];\n";
  os << "  int64_t anchor = " << (plan.anchorSpec ? plan.anchorSpec->savedFloats(plan) : "0") << ";\n";
  os << "  return rows * " << plan.savedPerRow() << " + anchor;\n}\n\n";
}

void RegionPrinter::print(llvm::raw_ostream &os) {
  os << "\n// region \"" << plan.op.getName() << "\" (kind " << plan.op.getKind() << "), rows = " << rows()
     << ", inputs:";
  for (auto [i, role] : llvm::enumerate(plan.inputRoles()))
    os << (i ? ", " : " ") << roleName(role);
  os << "\n";
  printSavedSize(os);
  printEntry(os, false);
  printEntry(os, true);
}

} // namespace mix::codegen
