//===- ScanPrinter.cpp - a scan's step as a fused forward and derived backward -===//
//
//   before (mix dialect):                      after (C++, abridged):
//     %y = mix.fused "..scan" kind "scan"(..)    step(s0, x0, x1, n0, e0):
//       mix.scan (%k, %v) {num_states = 1}         v0 = outer(x0, x1); n0 = s0 + v0; e0 = ...
//         S' = S + outer(k[t], v[t]); emit ..      adjoint(s0, x0, x1, gn0, ge0 -> gs0, gx0, gx1):
//                                                  recompute v0 ..; g_v0 += gn0 ..; reverse
//                                                forward_row(b): for t: [checkpoint] step
//                                                backward_row(b): per chunk, recompute, adjoint
//
// The same text for both targets, but where each row keeps its arrays:
// on the CPU on the stack (small, static sizes the compiler vectorises),
// in CUDA in a `work` slice of global scratch per row (a thread's stack
// is too small for a d × d state, and local memory is reserved for every
// resident thread).
//
//===----------------------------------------------------------------------===//
#include "OpBodies.h"
#include "RegionPrinter.h"
#include "ScanPlan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace mlir;

namespace mix::codegen {
namespace {
std::string str(int64_t v) { return std::to_string(v); }

class ScanPrinter {
public:
  ScanPrinter(ScanPlan &plan, std::string sym, bool cuda) : p(plan), sym(std::move(sym)), cuda(cuda) {}
  void print(llvm::raw_ostream &os);

private:
  // Arrays of one function: stack arrays (base empty), or consecutive
  // slices of the buffer `base` points to (CUDA's per-row `work`, or the
  // tape the backward keeps a chunk's step values in). `used` counts floats.
  struct Locals {
    std::string base;
    int64_t used = 0;
    std::string decl(const std::string &name, int64_t count, bool zero, const std::string &ind) {
      if (base.empty())
        return ind + "float " + name + "[" + str(count) + "]" + (zero ? " = {}" : "") + ";\n";
      std::string s = ind + "float *__restrict__ " + name + " = " + base + " + " + str(used) + ";\n";
      if (zero)
        s += ind + "for (int64_t j = 0; j < " + str(count) + "; ++j) " + name + "[j] = 0.f;\n";
      used += count;
      return s;
    }
  };
  Locals work() const { return Locals{cuda ? "work" : ""}; }

  int64_t n(Value v) { return p.values.at(v).n; }
  int index(Value v) { return static_cast<int>(v.cast<BlockArgument>().getArgNumber()); }
  ValueNames names();
  /// The step's parameters: states, inputs, then `extra`.
  std::string stepParams(const std::string &extra);
  /// The arguments of a call to the step at row b, step t; states from `states`.
  std::string stepArgs(const std::string &states);
  struct LoopReads;
  LoopReads loopReads(const ScanGroup &g);
  std::string operand(Operation *o, unsigned i, LoopReads &reads, ValueNames &nm);
  std::string formula(Operation *o, LoopReads &reads, ValueNames &nm);
  void printOps(llvm::raw_ostream &os, Locals &locals, ValueNames &nm, bool taped);
  struct SumLoop;
  SumLoop sumLoop(mix::SumOp sum);
  void printSumForward(llvm::raw_ostream &os, mix::SumOp sum, ValueNames &nm);
  void printSumBackward(llvm::raw_ostream &os, mix::SumOp sum, ValueNames &nm);
  int64_t printStep(llvm::raw_ostream &os, bool taped);
  int64_t printAdjoint(llvm::raw_ostream &os);
  int64_t printForwardRow(llvm::raw_ostream &os, int64_t stepWork);
  int64_t printBackwardRow(llvm::raw_ostream &os, int64_t stepWork);
  void printEntries(llvm::raw_ostream &os, int64_t forwardWork, int64_t backwardWork);

  ScanPlan &p;
  std::string sym;
  bool cuda;
  const std::string ind = "  ";
};

ValueNames ScanPrinter::names() {
  ValueNames nm;
  nm.val = [this](Value v) {
    v = p.root(v);
    const PlannedValue &x = p.values.at(v);
    if (x.def)
      return x.id;
    if (x.input < 0)
      return "s" + str(index(v));
    return (p.sliced[x.input] ? "x" : "in") + str(x.input);
  };
  nm.grad = [this](Value v) {
    v = p.root(v);
    const PlannedValue &x = p.values.at(v);
    if (x.def)
      return "g_" + x.id;
    if (x.input < 0)
      return "gs" + str(index(v));
    return (p.sliced[x.input] ? "gx" : "p") + str(x.input);
  };
  return nm;
}

std::string ScanPrinter::stepParams(const std::string &extra) {
  std::vector<std::string> params;
  for (size_t k = 0; k < p.states.size(); ++k)
    params.push_back("const float *__restrict__ s" + str(k));
  for (size_t i = 0; i < p.inputs.size(); ++i)
    params.push_back(std::string("const float *__restrict__ ") + (p.sliced[i] ? "x" : "in") + str(i));
  // Every buffer a step writes is its own (restrict lets the compiler keep
  // a broadcast operand's gradient in a register across a row).
  std::string s = llvm::join(params, ", ") + extra + (cuda ? ", float *__restrict__ work" : "");
  return s.rfind(", ", 0) == 0 ? s.substr(2) : s;
}

std::string ScanPrinter::stepArgs(const std::string &states) {
  std::vector<std::string> args;
  for (size_t k = 0; k < p.states.size(); ++k)
    args.push_back(states + " + " + str(p.stateOffset[k]));
  for (size_t i = 0; i < p.inputs.size(); ++i)
    args.push_back("in[" + str(i) + "]" + (p.sliced[i] ? " + (b * T + t) * " + str(n(p.inputs[i])) : std::string()));
  return llvm::join(args, ", ");
}

/// A sum's loops: x [outer, m, inner] -> y [outer, inner], summing over m
/// (the reduced axis in the value's inner shape), and the header that
/// runs o, k, i with i innermost (contiguous).
struct ScanPrinter::SumLoop {
  int64_t outer = 1, m = 1, inner = 1;
  std::string head() const {
    return "for (int64_t o = 0; o < " + str(outer) + "; ++o) for (int64_t k = 0; k < " + str(m) +
           "; ++k) for (int64_t i = 0; i < " + str(inner) + "; ++i) ";
  }
  std::string x() const { return "[(o * " + str(m) + " + k) * " + str(inner) + " + i]"; }
  std::string y() const { return "[o * " + str(inner) + " + i]"; }
};

ScanPrinter::SumLoop ScanPrinter::sumLoop(mix::SumOp sum) {
  const Shape &xs = p.values.at(sum.getX()).shape;
  const int64_t rank = static_cast<int64_t>(xs.size()) + 1, a = static_cast<int64_t>(sum.getAxis());
  const int64_t ax = (a < 0 ? a + rank : a) - 1; // in the inner shape
  SumLoop l;
  l.m = xs[ax];
  for (int64_t i = 0; i < ax; ++i)
    l.outer *= xs[i];
  for (int64_t i = ax + 1; i < static_cast<int64_t>(xs.size()); ++i)
    l.inner *= xs[i];
  return l;
}

void ScanPrinter::printSumForward(llvm::raw_ostream &os, mix::SumOp sum, ValueNames &nm) {
  const SumLoop l = sumLoop(sum);
  const std::string Y = nm.val(sum.getResult());
  os << ind << "for (int64_t j = 0; j < " << l.outer * l.inner << "; ++j) " << Y << "[j] = 0.f;\n";
  os << ind << l.head() << Y << l.y() << " += " << nm.val(sum.getX()) << l.x() << ";\n";
}

void ScanPrinter::printSumBackward(llvm::raw_ostream &os, mix::SumOp sum, ValueNames &nm) {
  const SumLoop l = sumLoop(sum);
  os << ind << l.head() << nm.grad(sum.getX()) << l.x() << " += " << nm.grad(sum.getResult()) << l.y() << ";\n";
}

/// The reads of a loop group's ops that come from arrays (not registers of
/// the same loop), and the loop over the group's shape that indexes them.
struct ScanPrinter::LoopReads {
  ElementLoop loop;
  llvm::DenseMap<std::pair<Operation *, unsigned>, std::string> index; // (op, operand) -> index
};

ScanPrinter::LoopReads ScanPrinter::loopReads(const ScanGroup &g) {
  std::vector<Shape> shapes;
  std::vector<std::pair<Operation *, unsigned>> reads;
  for (Operation *o : g.ops)
    for (unsigned i = 0; i < o->getNumOperands(); ++i)
      if (!p.inRegister(o, i)) {
        shapes.push_back(p.values.at(o->getOperand(i)).shape);
        reads.push_back({o, i});
      }
  LoopReads r{elementLoop(g.shape, shapes), {}};
  for (auto [k, read] : llvm::enumerate(reads))
    r.index[read] = r.loop.index[k];
  return r;
}

/// Operand `i` of `o` inside its group's loop: a register or an array read.
std::string ScanPrinter::operand(Operation *o, unsigned i, LoopReads &reads, ValueNames &nm) {
  if (p.inRegister(o, i))
    return "r_" + p.values.at(p.root(o->getOperand(i))).id;
  return nm.val(o->getOperand(i)) + "[" + reads.index[{o, i}] + "]";
}

/// A loop op's value from its operands (ODS's C++ formula).
std::string ScanPrinter::formula(Operation *o, LoopReads &reads, ValueNames &nm) {
  std::string e = cast<mix::ElementCode>(o).cppForward().str();
  for (unsigned i = 0; i < o->getNumOperands(); ++i)
    replaceAll(e, "$" + std::to_string(i), operand(o, i, reads, nm));
  return e;
}

/// Declares and computes every op's value, group by group: a loop group's
/// values in registers of one loop, written to arrays where they are read
/// outside it. The taped step computes only its ops (ScanPlan::tapedOps)
/// and writes the values the adjoint reads into the `tape`.
void ScanPrinter::printOps(llvm::raw_ostream &os, Locals &locals, ValueNames &nm, bool taped) {
  auto computes = [&](Operation *o) { return !taped || p.tapedOps.count(o); };
  auto written = [&](Value r) { return p.stored.count(r) || (taped && p.tapeAt.count(r)); };
  for (const ScanGroup &g : p.groups) {
    if (llvm::none_of(g.ops, computes))
      continue;
    for (Operation *o : g.ops) {
      Value r = o->getResult(0);
      if (!computes(o) || !written(r))
        continue;
      if (taped && p.tapeAt.count(r))
        os << ind << "float *__restrict__ " << nm.val(r) << " = tape + " << p.tapeAt.lookup(r) << ";\n";
      else
        os << locals.decl(nm.val(r), n(r), false, ind);
    }
    if (!g.loop) {
      Operation *o = g.ops[0];
      Value r = o->getResult(0);
      if (auto c = dyn_cast<mix::ConstantOp>(o))
        os << ind << nm.val(r) << "[0] = " << floatLiteral(c.getValue().convertToDouble()) << ";\n";
      else if (auto sum = dyn_cast<mix::SumOp>(o))
        printSumForward(os, sum, nm);
      else
        printForward(p.values, *o, os, nm, ind);
      continue;
    }
    LoopReads reads = loopReads(g);
    os << ind << reads.loop.head << " {\n";
    for (Operation *o : g.ops) {
      if (!computes(o))
        continue;
      const std::string &id = p.values.at(o->getResult(0)).id;
      os << ind << "  const float r_" << id << " = " << formula(o, reads, nm) << ";\n";
      if (written(o->getResult(0)))
        os << ind << "  " << nm.val(o->getResult(0)) << "[" << reads.loop.out << "] = r_" << id << ";\n";
    }
    os << ind << "}\n";
  }
}

/// step(states, inputs at t) -> next states n<k>, emitted e<j>. The taped
/// step (the backward's recomputation) gives the next states and leaves
/// what the adjoint reads in `tape` (ScanPlan::tapeAt); it emits nothing.
/// Returns the floats of `work` it uses.
int64_t ScanPrinter::printStep(llvm::raw_ostream &os, bool taped) {
  std::string extra;
  for (size_t k = 0; k < p.next.size(); ++k)
    extra += ", float *__restrict__ n" + str(k);
  if (taped)
    extra += ", float *__restrict__ tape";
  else
    for (size_t j = 0; j < p.emitted.size(); ++j)
      extra += ", float *__restrict__ e" + str(j);
  os << "MIXK_HD inline void " << sym << (taped ? "_step_taped(" : "_step(") << stepParams(extra) << ") {\n";
  Locals locals = work();
  ValueNames nm = names();
  printOps(os, locals, nm, taped);
  for (auto [k, v] : llvm::enumerate(p.next))
    os << ind << "for (int64_t j = 0; j < " << n(v) << "; ++j) n" << k << "[j] = " << nm.val(v) << "[j];\n";
  if (!taped)
    for (auto [j, v] : llvm::enumerate(p.emitted))
      os << ind << "for (int64_t j = 0; j < " << n(v) << "; ++j) e" << j << "[j] = " << nm.val(v) << "[j];\n";
  os << "}\n\n";
  return locals.used;
}

/// The step's adjoint: from ∂L/∂(next states) gn<k> and ∂L/∂(emitted) ge<j>,
/// sets ∂L/∂(states) gs<k> and ∂L/∂(sliced inputs at t) gx<i>, and adds the
/// invariant inputs' gradients into p<i>; the step's values are read from
/// the taped step's `tape`, or computed again from it. The ops' adjoints
/// are OpBodies' (the fused regions' own); the sum's is here.
int64_t ScanPrinter::printAdjoint(llvm::raw_ostream &os) {
  std::string extra;
  for (size_t k = 0; k < p.next.size(); ++k)
    extra += ", const float *__restrict__ gn" + str(k);
  for (size_t j = 0; j < p.emitted.size(); ++j)
    extra += ", const float *__restrict__ ge" + str(j);
  for (size_t k = 0; k < p.states.size(); ++k)
    extra += ", float *__restrict__ gs" + str(k);
  for (size_t i = 0; i < p.inputs.size(); ++i)
    extra += std::string(", float *__restrict__ ") + (p.sliced[i] ? "gx" : "p") + str(i);
  extra += ", const float *__restrict__ tape";
  os << "MIXK_HD inline void " << sym << "_adjoint(" << stepParams(extra) << ") {\n";
  Locals locals = work();
  ValueNames nm = names();
  for (Value s : p.states)
    os << ind << "for (int64_t j = 0; j < " << n(s) << "; ++j) " << nm.grad(s) << "[j] = 0.f;\n";
  for (auto [i, x] : llvm::enumerate(p.inputs))
    if (p.sliced[i])
      os << ind << "for (int64_t j = 0; j < " << n(x) << "; ++j) " << nm.grad(x) << "[j] = 0.f;\n";
  for (const ScanGroup &g : p.groups)
    for (Operation *o : g.ops)
      if (Value r = o->getResult(0); p.tapeAt.count(r))
        os << ind << "const float *__restrict__ " << nm.val(r) << " = tape + " << p.tapeAt.lookup(r) << ";\n";
  // Gradients cross groups in arrays; inside a loop they stay in registers.
  for (const ScanGroup &g : p.groups)
    for (Operation *o : g.ops)
      if (p.stored.count(o->getResult(0)))
        os << locals.decl(nm.grad(o->getResult(0)), n(o->getResult(0)), true, ind);
  for (auto [k, v] : llvm::enumerate(p.next))
    os << ind << "for (int64_t j = 0; j < " << n(v) << "; ++j) " << nm.grad(v) << "[j] += gn" << k << "[j];\n";
  for (auto [j, v] : llvm::enumerate(p.emitted))
    os << ind << "for (int64_t j = 0; j < " << n(v) << "; ++j) " << nm.grad(v) << "[j] += ge" << j << "[j];\n";
  for (const ScanGroup &g : llvm::reverse(p.groups)) {
    if (!g.loop) {
      Operation *o = g.ops[0];
      if (isa<mix::ConstantOp>(o))
        continue;
      if (auto sum = dyn_cast<mix::SumOp>(o))
        printSumBackward(os, sum, nm);
      else
        printBackward(p.values, *o, os, nm, ind);
      continue;
    }
    // One loop: each value it reads (from the tape, or computed again) and
    // each gradient (from later groups' arrays, or 0) in registers; the ops'
    // adjoints in reverse add to the registers of what they read in the loop
    // and to the arrays of what they read outside.
    LoopReads reads = loopReads(g);
    const std::string &out = reads.loop.out;
    os << ind << reads.loop.head << " {\n";
    for (Operation *o : g.ops) {
      Value r = o->getResult(0);
      const std::string &id = p.values.at(r).id;
      if (p.tapeAt.count(r))
        os << ind << "  const float r_" << id << " = " << nm.val(r) << "[" << out << "];\n";
      else if (p.adjointReads.count(r))
        os << ind << "  const float r_" << id << " = " << formula(o, reads, nm) << ";\n";
      os << ind << "  float gr_" << id << " = "
         << (p.stored.count(r) ? nm.grad(r) + "[" + out + "]" : std::string("0.f")) << ";\n";
    }
    for (Operation *o : llvm::reverse(g.ops)) {
      auto code = cast<mix::ElementCode>(o);
      const std::string &id = p.values.at(o->getResult(0)).id;
      const char local[] = {'a', 'b'};
      os << ind << "  { ";
      for (unsigned i = 0; i < o->getNumOperands(); ++i)
        if (gradientReads(o, local[i]))
          os << "const float " << local[i] << " = " << operand(o, i, reads, nm) << "; ";
      if (gradientReads(o, 'y'))
        os << "const float y = r_" << id << "; ";
      os << "const float g = gr_" << id << ";";
      for (unsigned i = 0; i < o->getNumOperands(); ++i) {
        std::string target = p.inRegister(o, i) ? "gr_" + p.values.at(p.root(o->getOperand(i))).id
                                                : nm.grad(o->getOperand(i)) + "[" + reads.index[{o, i}] + "]";
        os << " " << target << " += " << code.cppGradient(i) << ";";
      }
      os << " }\n";
    }
    os << ind << "}\n";
  }
  os << "}\n\n";
  return locals.used;
}

/// One batch row's forward: checkpoints every kScanChunk steps, then the
/// step; with a state access (abi/KernelAbi.h) the state the step hands on
/// is edited after step edit_pos[b], and captured.
int64_t ScanPrinter::printForwardRow(llvm::raw_ostream &os, int64_t stepWork) {
  const std::string SF = str(p.stateFloats), K = str(kScanChunk);
  os << "MIXK_HD inline void " << sym << "_forward_row(const float *const *in, float *const *out, float *saved, "
     << "int64_t b, int64_t T, const mixk_state st" << (cuda ? ", float *work" : "") << ") {\n";
  Locals locals = work();
  // The state entering the step and the one it hands on: two buffers
  // that trade places after each step.
  os << locals.decl("st_a", p.stateFloats, true, ind) << locals.decl("st_b", p.stateFloats, false, ind);
  os << ind << "float *st_now = st_a, *nx = st_b;\n";
  os << ind << "float *ck = saved + b * ((T + " << K << " - 1) / " << K << ") * " << SF << ";\n";
  os << ind << "const int64_t edit_at = st.edit_pos ? st.edit_pos[b] : -1;\n";
  os << ind << "for (int64_t t = 0; t < T; ++t) {\n";
  os << ind << "  if (t % " << K << " == 0) for (int64_t j = 0; j < " << SF << "; ++j) ck[(t / " << K << ") * "
     << SF << " + j] = st_now[j];\n";
  std::string outs;
  for (size_t k = 0; k < p.next.size(); ++k)
    outs += ", nx + " + str(p.stateOffset[k]);
  for (auto [j, v] : llvm::enumerate(p.emitted))
    outs += ", out[" + str(j) + "] + (b * T + t) * " + str(n(v));
  os << ind << "  " << sym << "_step(" << stepArgs("st_now") << outs << (cuda ? ", work + " + str(locals.used) : "")
     << ");\n";
  os << ind << "  if (t == edit_at) {\n"
     << ind << "    const int64_t first = st.edit_range ? st.edit_range[2 * b] : 0;\n"
     << ind << "    const int64_t last = st.edit_range ? first + st.edit_range[2 * b + 1] : " << SF << ";\n"
     << ind << "    const float *v = st.edit_value + b * " << SF << ";\n"
     << ind << "    if (st.edit_add && st.edit_add[b]) for (int64_t j = first; j < last; ++j) nx[j] += v[j];\n"
     << ind << "    else for (int64_t j = first; j < last; ++j) nx[j] = v[j];\n"
     << ind << "  }\n";
  os << ind << "  if (st.capture) for (int64_t j = 0; j < " << SF << "; ++j) st.capture[(b * T + t) * " << SF
     << " + j] = nx[j];\n";
  os << ind << "  float *const was = st_now;\n" << ind << "  st_now = nx;\n" << ind << "  nx = was;\n";
  os << ind << "}\n}\n\n";
  return locals.used + stepWork;
}

/// One batch row's backward: chunks from the last; in each, the taped step
/// runs over the chunk from its checkpoint, keeping the states entering its
/// steps in `chunk` ([kScanChunk + 1, states]) and what the adjoint reads
/// in `tape` ([kScanChunk, ScanPlan::tapeFloats]); then the adjoint runs
/// from its last step to its first.
int64_t ScanPrinter::printBackwardRow(llvm::raw_ostream &os, int64_t stepWork) {
  const std::string SF = str(p.stateFloats), K = str(kScanChunk), W = str(p.tapeFloats);
  os << "MIXK_HD inline void " << sym << "_backward_row(const float *const *in, const float *saved, "
     << "const float *const *gout, float *const *gin, float *const *part, int64_t b, int64_t T, float *chunk, "
     << "float *tape" << (cuda ? ", float *work" : "") << ") {\n";
  Locals locals = work();
  // ∂L/∂(state after step t) and ∂L/∂(state before it): two buffers that
  // trade places after each step.
  os << locals.decl("g_a", p.stateFloats, true, ind) << locals.decl("g_b", p.stateFloats, false, ind);
  os << ind << "float *gn = g_a, *gs = g_b;\n";
  for (auto [i, x] : llvm::enumerate(p.inputs))
    if (p.sliced[i])
      os << locals.decl("gx" + str(i), n(x), false, ind);
  const std::string rest = cuda ? ", work + " + str(locals.used) : "";
  os << ind << "const int64_t chunks = (T + " << K << " - 1) / " << K << ";\n";
  os << ind << "const float *ck = saved + b * chunks * " << SF << ";\n";
  os << ind << "for (int64_t c = chunks - 1; c >= 0; --c) {\n";
  os << ind << "  const int64_t t0 = c * " << K << ", t1 = t0 + " << K << " < T ? t0 + " << K << " : T;\n";
  os << ind << "  for (int64_t j = 0; j < " << SF << "; ++j) chunk[j] = ck[c * " << SF << " + j];\n";
  std::string outs;
  for (size_t k = 0; k < p.next.size(); ++k)
    outs += ", chunk + (t - t0 + 1) * " + SF + " + " + str(p.stateOffset[k]);
  os << ind << "  for (int64_t t = t0; t < t1; ++t)\n";
  os << ind << "    " << sym << "_step_taped(" << stepArgs("chunk + (t - t0) * " + SF) << outs << ", tape + (t - t0) * "
     << W << rest << ");\n";
  std::string grads;
  for (size_t k = 0; k < p.next.size(); ++k)
    grads += ", gn + " + str(p.stateOffset[k]);
  for (auto [j, v] : llvm::enumerate(p.emitted))
    grads += ", gout[" + str(j) + "] + (b * T + t) * " + str(n(v));
  for (size_t k = 0; k < p.states.size(); ++k)
    grads += ", gs + " + str(p.stateOffset[k]);
  for (size_t i = 0; i < p.inputs.size(); ++i)
    grads += (p.sliced[i] ? ", gx" : ", part[") + str(i) + (p.sliced[i] ? "" : "]");
  os << ind << "  for (int64_t t = t1 - 1; t >= t0; --t) {\n";
  os << ind << "    " << sym << "_adjoint(" << stepArgs("chunk + (t - t0) * " + SF) << grads << ", tape + (t - t0) * "
     << W << rest << ");\n";
  for (auto [i, x] : llvm::enumerate(p.inputs))
    if (p.sliced[i])
      os << ind << "    for (int64_t j = 0; j < " << n(x) << "; ++j) gin[" << i << "][(b * T + t) * " << n(x)
         << " + j] += gx" << i << "[j];\n";
  os << ind << "    float *const was = gn;\n" << ind << "    gn = gs;\n" << ind << "    gs = was;\n";
  os << ind << "  }\n" << ind << "}\n}\n\n";
  return locals.used + stepWork;
}

void ScanPrinter::printEntries(llvm::raw_ostream &os, int64_t forwardWork, int64_t backwardWork) {
  // A row's backward buffers: the chunk's states, then its tape.
  const int64_t chunkFloats = (kScanChunk + 1) * p.stateFloats, buffers = chunkFloats + kScanChunk * p.tapeFloats;
  const std::string SF = str(p.stateFloats), K = str(kScanChunk);
  const size_t numIn = p.inputs.size(), numOut = p.emitted.size();
  os << "extern \"C\" int64_t " << sym << "_saved(const int64_t *dims) {\n"
     << "  return dims[0] * ((dims[1] + " << K << " - 1) / " << K << ") * " << SF << ";\n}\n\n";
  if (!cuda) {
    os << "extern \"C\" void " << sym << "_forward(const mixk_args *a) {\n"
       << "  const int64_t B = a->dims[0], T = a->dims[1];\n"
       << "  const int th = a->threads > 0 ? a->threads : 1;\n"
       << "  const mixk_state st = a->state ? *a->state : mixk_state{};\n"
       << "#pragma omp parallel for num_threads(th) schedule(static)\n"
       << "  for (int64_t b = 0; b < B; ++b) " << sym << "_forward_row(a->in, a->out, a->saved, b, T, st);\n}\n\n";
    os << "extern \"C\" void " << sym << "_backward(const mixk_args *a) {\n"
       << "  const int64_t B = a->dims[0], T = a->dims[1];\n"
       << "  const int th = a->threads > 0 ? a->threads : 1;\n";
    for (auto [i, x] : llvm::enumerate(p.inputs))
      if (!p.sliced[i])
        os << "  mixk::Partials P" << i << "(th, " << n(x) << ");\n";
    os << "#pragma omp parallel num_threads(th)\n  {\n"
       << "    float *part[" << numIn << "] = {};\n";
    for (size_t i = 0; i < numIn; ++i)
      if (!p.sliced[i])
        os << "    part[" << i << "] = P" << i << ".mine();\n";
    os << "    std::vector<float> buffers(" << buffers << ");\n"
       << "#pragma omp for schedule(static)\n"
       << "    for (int64_t b = 0; b < B; ++b) " << sym
       << "_backward_row(a->in, a->saved, a->gout, a->gin, part, b, T, buffers.data(), buffers.data() + "
       << chunkFloats << ");\n  }\n";
    for (size_t i = 0; i < numIn; ++i)
      if (!p.sliced[i])
        os << "  P" << i << ".addTo(a->gin[" << i << "]);\n";
    os << "}\n";
    return;
  }
  // CUDA: a thread per row b; its arrays in a slice of one scratch buffer:
  // forward [work]; backward [partials, chunk, tape, work] (partials then
  // added to the gradients with one atomicAdd each).
  int64_t partials = 0;
  for (auto [i, x] : llvm::enumerate(p.inputs))
    if (!p.sliced[i])
      partials += n(x);
  const int64_t perRowBackward = partials + buffers + backwardWork;
  // The state access travels by value (its pointers are device memory;
  // dv.state points to host memory).
  os << "__global__ void " << sym << "_forward_kernel(mixk_dev dv, mixk_state st) {\n"
     << "  const mixk_dev *a = &dv;\n"
     << "  MIXK_GRID_LOOP(b, a->dims[0]) " << sym << "_forward_row(a->in, a->out, a->saved, b, a->dims[1], st, "
     << "a->scratch + b * " << forwardWork << ");\n}\n\n";
  os << "__global__ void " << sym << "_backward_kernel(mixk_dev dv) {\n"
     << "  const mixk_dev *a = &dv;\n"
     << "  MIXK_GRID_LOOP(b, a->dims[0]) {\n"
     << "    float *row = a->scratch + b * " << perRowBackward << ";\n"
     << "    float *part[" << numIn << "] = {};\n";
  int64_t off = 0;
  for (auto [i, x] : llvm::enumerate(p.inputs))
    if (!p.sliced[i]) {
      os << "    part[" << i << "] = row + " << off << ";\n";
      off += n(x);
    }
  os << "    " << sym << "_backward_row(a->in, a->saved, a->gout, a->gin, part, b, a->dims[1], row + " << off
     << ", row + " << off + chunkFloats << ", row + " << off + buffers << ");\n";
  for (auto [i, x] : llvm::enumerate(p.inputs))
    if (!p.sliced[i])
      os << "    for (int64_t j = 0; j < " << n(x) << "; ++j) if (part[" << i << "][j] != 0.f) atomicAdd(&a->gin["
         << i << "][j], part[" << i << "][j]);\n";
  os << "  }\n}\n\n";
  for (bool backward : {false, true}) {
    const int64_t perRow = backward ? perRowBackward : forwardWork;
    os << "extern \"C\" void " << sym << (backward ? "_backward" : "_forward") << "(const mixk_args *args) {\n"
       << "  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);\n"
       << "  mixk_dev dv{};\n"
       << "  for (int i = 0; i < 4; ++i) dv.dims[i] = args->dims[i];\n"
       << "  dv.ndims = args->ndims; dv.threads = args->threads; dv.saved = args->saved;\n"
       << "  for (int i = 0; i < " << numIn << "; ++i) dv.in[i] = args->in[i];\n";
    if (backward)
      os << "  for (int i = 0; i < " << numIn << "; ++i) dv.gin[i] = args->gin[i];\n"
         << "  for (int i = 0; i < " << numOut << "; ++i) dv.gout[i] = args->gout[i];\n";
    else
      os << "  for (int i = 0; i < " << numOut << "; ++i) dv.out[i] = args->out[i];\n";
    os << "  const int64_t B = args->dims[0];\n"
       << "  cudaMallocAsync(reinterpret_cast<void **>(&dv.scratch), B * " << perRow << " * sizeof(float), stream);\n";
    if (backward) // the partials start at zero
      os << "  cudaMemsetAsync(dv.scratch, 0, B * " << perRow << " * sizeof(float), stream);\n";
    os << "  MIXK_LAUNCH(" << sym << (backward ? "_backward_kernel" : "_forward_kernel")
       << ", mixk::blocksFor(B), mixk::kThreads, stream)(dv"
       << (backward ? "" : ", args->state ? *args->state : mixk_state{}") << ");\n"
       << "  cudaFreeAsync(dv.scratch, stream);\n}\n\n";
  }
}

void ScanPrinter::print(llvm::raw_ostream &os) {
  os << "\n// scan \"" << p.scan.getName() << "\": " << p.states.size() << " state(s), " << p.stateFloats
     << " floats a row; inputs:";
  for (auto [i, x] : llvm::enumerate(p.inputs))
    os << (i ? ", " : " ") << (p.sliced[i] ? "sliced" : "invariant") << " [" << n(x) << "]";
  os << "\n";
  const int64_t stepWork = printStep(os, false);
  const int64_t tapedWork = printStep(os, true);
  const int64_t adjointWork = printAdjoint(os);
  const int64_t forwardWork = printForwardRow(os, stepWork);
  // The taped step and the adjoint run one after the other on the same work.
  const int64_t backwardWork = printBackwardRow(os, std::max(tapedWork, adjointWork));
  printEntries(os, forwardWork, backwardWork);
}
} // namespace

void printScan(ScanPlan &plan, const std::string &sym, bool cuda, llvm::raw_ostream &os) {
  ScanPrinter(plan, sym, cuda).print(os);
}

} // namespace mix::codegen
