//===- ScanPlan.cpp - the values of a scan's step and what each op needs ----===//
#include "ScanPlan.h"

#include <cctype>

using namespace mlir;

namespace mix::codegen {

Value ScanPlan::root(Value v) const {
  for (auto it = alias.find(v); it != alias.end(); it = alias.find(v))
    v = it->second;
  return v;
}

bool ScanPlan::inRegister(Operation *op, unsigned i) const {
  Value u = op->getOperand(i), r = root(u);
  Operation *def = r.getDefiningOp();
  if (!def || !groupOf.count(def) || groupOf.lookup(def) != groupOf.lookup(op))
    return false;
  return values.values.find(u)->second.shape == groups[groupOf.lookup(op)].shape;
}

namespace {
bool isLoopOp(Operation *o) { return isa<mix::ElementCode>(o) && o->hasTrait<mix::OpTrait::PerElement>(); }

/// List scheduling of the step's ops into groups: an open loop group takes
/// the next ready element op of its shape; when none is ready it closes and
/// the smallest ready op starts the next group (small vectors first, so the
/// state-sized loops that read them find them computed).
void schedule(ScanPlan &p) {
  std::vector<Operation *> remaining = p.ops;
  llvm::DenseSet<Operation *> done;
  auto ready = [&](Operation *o) {
    for (Value u : o->getOperands())
      if (Operation *d = p.root(u).getDefiningOp(); d && !done.count(d))
        return false;
    return true;
  };
  auto take = [&](size_t k) {
    Operation *o = remaining[k];
    remaining.erase(remaining.begin() + static_cast<long>(k));
    done.insert(o);
    p.groups.back().ops.push_back(o);
    p.groupOf[o] = static_cast<int>(p.groups.size()) - 1;
  };
  while (!remaining.empty()) {
    if (!p.groups.empty() && p.groups.back().loop) {
      bool grew = false;
      const int open = static_cast<int>(p.groups.size()) - 1;
      // It joins the loop when what it reads from the loop is of the loop's
      // shape (a register of the same element), not a re-viewed array.
      auto fits = [&](Operation *o) {
        if (!isLoopOp(o) || !ready(o) || p.values.at(o->getResult(0)).shape != p.groups.back().shape)
          return false;
        for (Value u : o->getOperands())
          if (Operation *d = p.root(u).getDefiningOp();
              d && p.groupOf.lookup(d) == open && p.values.at(u).shape != p.groups.back().shape)
            return false;
        return true;
      };
      for (size_t k = 0; k < remaining.size() && !grew; ++k)
        if (fits(remaining[k])) {
          take(k);
          grew = true;
        }
      if (grew)
        continue;
    }
    size_t best = remaining.size();
    for (size_t k = 0; k < remaining.size(); ++k)
      if (ready(remaining[k]) && (best == remaining.size() || p.values.at(remaining[k]->getResult(0)).n <
                                                                 p.values.at(remaining[best]->getResult(0)).n))
        best = k;
    assert(best < remaining.size() && "the step's ops form no cycle");
    ScanGroup g;
    g.shape = p.values.at(remaining[best]->getResult(0)).shape;
    g.loop = isLoopOp(remaining[best]);
    p.groups.push_back(g);
    take(best);
  }
  // What is read outside its loop (another group, a yield) is stored.
  for (Operation *o : p.ops)
    for (unsigned i = 0; i < o->getNumOperands(); ++i)
      if (!p.groups[p.groupOf[o]].loop || !p.inRegister(o, i))
        if (Value r = p.root(o->getOperand(i)); r.getDefiningOp())
          p.stored.insert(r);
  for (Value v : p.next)
    if (Value r = p.root(v); r.getDefiningOp())
      p.stored.insert(r);
  for (Value v : p.emitted)
    if (Value r = p.root(v); r.getDefiningOp())
      p.stored.insert(r);
  for (const ScanGroup &g : p.groups) // an op printed alone writes an array
    if (!g.loop)
      p.stored.insert(g.ops[0]->getResult(0));
}

bool isCostly(Operation *o) {
  auto code = dyn_cast<mix::ElementCode>(o);
  return code && code.cppCostly();
}

/// The adjoint's reads, the tape and the taped step's ops (ScanPlan.h),
/// from the last op to the first (an op's users are seen before it).
void planTape(ScanPlan &p) {
  auto need = [&](Value v) {
    if (Value r = p.root(v); r.getDefiningOp())
      p.adjointReads.insert(r);
  };
  for (Operation *o : llvm::reverse(p.ops)) {
    Value y = o->getResult(0);
    if (isa<mix::ConstantOp, mix::SumOp>(o)) // a sum's adjoint reads no value
      continue;
    if (!p.groups[p.groupOf.lookup(o)].loop) { // OpBodies' backward: all it touches
      need(y);
      for (Value u : o->getOperands())
        need(u);
      continue;
    }
    if (gradientReads(o, 'y'))
      need(y);
    for (unsigned i = 0; i < o->getNumOperands() && i < 2; ++i)
      if (gradientReads(o, i == 0 ? 'a' : 'b'))
        need(o->getOperand(i));
    // A value the adjoint's loop computes again reads its operands.
    if (p.adjointReads.count(y) && !p.stored.count(y) && !isCostly(o))
      for (Value u : o->getOperands())
        need(u);
  }
  std::vector<Operation *> live;
  for (const ScanGroup &g : p.groups)
    for (Operation *o : g.ops)
      if (Value y = o->getResult(0); p.adjointReads.count(y) && (p.stored.count(y) || isCostly(o))) {
        p.tapeAt[y] = p.tapeFloats;
        p.tapeFloats += p.values.at(y).n;
        live.push_back(o);
      }
  for (Value v : p.next)
    if (Operation *d = p.root(v).getDefiningOp())
      live.push_back(d);
  while (!live.empty()) {
    Operation *o = live.back();
    live.pop_back();
    if (!p.tapedOps.insert(o).second)
      continue;
    for (Value u : o->getOperands())
      if (Operation *d = p.root(u).getDefiningOp())
        live.push_back(d);
  }
}

class ScanPlanner {
public:
  explicit ScanPlanner(ScanPlan &plan) : p(plan) {}
  std::string run(mix::FusedOp op);

private:
  /// Records `v` with its inner shape: after the one leading batch dim
  /// (`row`), or the whole static shape (an invariant).
  std::string addValue(Value v, bool row, std::string id, int input);
  std::string checkOp(Operation &o);

  ScanPlan &p;
};

std::string ScanPlanner::addValue(Value v, bool row, std::string id, int input) {
  auto t = v.getType().dyn_cast<RankedTensorType>();
  if (!t || !t.getElementType().isF32())
    return "a step value is not an f32 tensor";
  auto shape = t.getShape();
  const size_t lead = row ? 1 : 0;
  if (row && (shape.empty() || !ShapedType::isDynamic(shape[0])))
    return "a step value does not lead with the batch dim";
  for (size_t i = lead; i < shape.size(); ++i)
    if (ShapedType::isDynamic(shape[i]))
      return row ? "a step value has a run-time dim after the batch dim"
                 : "an input that is not sliced over time has run-time dims";
  PlannedValue x;
  x.id = std::move(id);
  x.input = input;
  x.role = row ? InputRole::Row : InputRole::Invariant;
  x.shape.assign(shape.begin() + lead, shape.end());
  x.n = numel(x.shape);
  x.def = v.getDefiningOp();
  p.values.values[v] = x;
  return "";
}

std::string ScanPlanner::checkOp(Operation &o) {
  const std::string name = "mix." + o.getName().stripDialect().str();
  if (o.getNumResults() != 1)
    return name + " has several results";
  if (isa<mix::ReshapeOp, mix::TapOp>(o)) {
    if (auto r = dyn_cast<mix::ReshapeOp>(o); r && r.getKeep() < 1)
      return "a reshape in the step that does not keep the batch dim";
    return "";
  }
  if (isa<mix::ConstantOp>(o))
    return "";
  PlannedValue &y = p.values.at(o.getResult(0));
  if (auto sum = dyn_cast<mix::SumOp>(o)) {
    const int64_t rank = static_cast<int64_t>(p.values.at(sum.getX()).shape.size()) + 1;
    const int64_t axis = static_cast<int64_t>(sum.getAxis()) < 0 ? static_cast<int64_t>(sum.getAxis()) + rank
                                                                 : static_cast<int64_t>(sum.getAxis());
    if (axis < 1 || axis >= rank)
      return "a sum over the batch dim in the step";
    if (!p.values.at(sum.getX()).row())
      return name + " of a loop-invariant value";
    return "";
  }
  const bool element = o.hasTrait<mix::OpTrait::PerElement>() && isa<mix::ElementCode>(o);
  const bool rowWise = o.hasTrait<mix::OpTrait::PerRow>();
  if (!element && !rowWise)
    return "no kernel code for " + name + " in a scan's step";
  for (Value in : o.getOperands()) {
    PlannedValue &a = p.values.at(in);
    if (a.row() && a.shape.size() != y.shape.size())
      return name + " broadcasts a step value of another rank";
    if (!a.row() && a.shape.size() > y.shape.size())
      return name + " broadcasts a loop-invariant value over the batch dim";
  }
  if (rowWise) {
    PlannedValue &x = p.values.at(o.getOperand(0));
    if (x.shape.empty() || (!isa<mix::TaylorMapOp>(o) && x.shape != y.shape))
      return name + " on a scalar";
    for (unsigned i = 1; i < o.getNumOperands(); ++i) {
      PlannedValue &w = p.values.at(o.getOperand(i));
      if (w.row() || w.shape != Shape{x.shape.back()})
        return name + " with a weight that is not [last dim]";
    }
  }
  return "";
}

std::string ScanPlanner::run(mix::FusedOp op) {
  Block &body = op.getBody().front();
  p.scan = cast<mix::ScanOp>(body.front());
  Block &step = p.scan.getBody().front();
  const unsigned numStates = static_cast<unsigned>(p.scan.getNumStates());
  for (BlockArgument a : step.getArguments()) {
    const bool isState = a.getArgNumber() < numStates;
    const int input = isState ? -1 : static_cast<int>(a.getArgNumber() - numStates);
    const bool sliced = isState || p.scan.getSliced()[input] != 0;
    if (std::string e = addValue(a, sliced, "", input); !e.empty())
      return e;
    (isState ? p.states : p.inputs).push_back(a);
    if (!isState)
      p.sliced.push_back(sliced);
  }
  int k = 0;
  for (Operation &o : step.without_terminator()) {
    bool row = true;
    if (o.getNumResults() == 1)
      if (auto t = o.getResult(0).getType().dyn_cast<RankedTensorType>())
        row = t.getRank() > 0 && ShapedType::isDynamic(t.getDimSize(0));
    if (o.getNumResults() != 1)
      return "mix." + o.getName().stripDialect().str() + " has several results";
    if (std::string e = addValue(o.getResult(0), row, "v" + std::to_string(k++), -1); !e.empty())
      return e;
    if (std::string e = checkOp(o); !e.empty())
      return e;
    if (isa<mix::ReshapeOp, mix::TapOp>(o))
      p.alias[o.getResult(0)] = o.getOperand(0);
    else
      p.ops.push_back(&o);
  }
  auto yield = step.getTerminator()->getOperands();
  for (auto [i, v] : llvm::enumerate(yield)) {
    if (!p.values.at(v).row())
      return "the step yields a loop-invariant value";
    (i < numStates ? p.next : p.emitted).push_back(v);
  }
  for (Value s : p.states) {
    p.stateOffset.push_back(p.stateFloats);
    p.stateFloats += p.values.at(s).n;
  }
  schedule(p);
  planTape(p);
  return "";
}
} // namespace

bool gradientReads(Operation *o, char name) {
  auto code = dyn_cast<mix::ElementCode>(o);
  if (!code)
    return true;
  auto isWord = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':' || c == '.'; };
  for (unsigned i = 0; i < o->getNumOperands(); ++i) {
    llvm::StringRef e = code.cppGradient(i);
    for (size_t at = 0; at < e.size(); ++at)
      if (e[at] == name && (at == 0 || !isWord(e[at - 1])) && (at + 1 == e.size() || !isWord(e[at + 1])))
        return true;
  }
  return false;
}

std::string planScan(mix::FusedOp op, ScanPlan &plan) { return ScanPlanner(plan).run(op); }

} // namespace mix::codegen
