//===- RegionPlan.cpp - values, roles and phases of a fused region ---------===//
#include "RegionPlan.h"
#include "AnchorSpec.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;

namespace mix::codegen {

int64_t numel(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

std::vector<Operation *> RegionPlan::opsIn(Phase p) {
  std::vector<Operation *> out;
  for (Operation *o : order)
    if (at(o->getResult(0)).phase == p)
      out.push_back(o);
  return out;
}

std::vector<InputRole> RegionPlan::inputRoles() {
  std::vector<InputRole> roles;
  for (Value a : args)
    roles.push_back(at(a).role);
  return roles;
}

int64_t RegionPlan::savedPerRow() {
  int64_t n = 0;
  for (Value m : saved)
    n += at(m).n;
  return n;
}

namespace {
/// Whether every use of `v` is as the filter (operand 1) of a long conv:
/// [L, C] with L ≥ T, one run-time dim where row values have two.
bool isLongConvFilter(Value v) {
  if (v.use_empty())
    return false;
  for (OpOperand &use : v.getUses())
    if (!isa<mix::LongConvOp>(use.getOwner()) || use.getOperandNumber() != 1)
      return false;
  return true;
}

bool isElementwise(Operation &o) { return o.hasTrait<mix::OpTrait::PerElement>(); }
bool isRowWise(Operation &o) { return o.hasTrait<mix::OpTrait::PerRow>(); }

class Planner {
public:
  explicit Planner(RegionPlan &plan) : p(plan) {}
  std::string run();

private:
  std::string addValue(Value v, std::string id, int input, Operation *def);
  std::string checkOp(Operation &o);
  void assignPhases();

  RegionPlan &p;
  int R = -1; // row rank seen so far
};

std::string Planner::addValue(Value v, std::string id, int input, Operation *def) {
  auto t = v.getType().dyn_cast<RankedTensorType>();
  if (!t || !t.getElementType().isF32())
    return "a value is not an f32 tensor";
  PlannedValue x;
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
    x.role = InputRole::Filter;
  } else if (lead > 0) {
    if (R >= 0 && R != static_cast<int>(lead))
      return "values with different numbers of run-time dims";
    R = static_cast<int>(lead);
    x.role = InputRole::Row;
  }
  x.shape.assign(shape.begin() + lead, shape.end());
  x.n = numel(x.shape);
  p.values[v] = x;
  return "";
}

std::string Planner::checkOp(Operation &o) {
  std::string name = o.getName().stripDialect().str();
  const bool anchorOp = o.hasTrait<mix::OpTrait::GeneratedAnchor>();
  if (!isElementwise(o) && !isRowWise(o) && !anchorOp)
    return "no kernel code for mix." + name;
  if (anchorOp)
    return "";
  PlannedValue &y = p.at(o.getResult(0));
  for (Value in : o.getOperands()) {
    PlannedValue &a = p.at(in);
    if (a.row() && a.shape.size() != y.shape.size())
      return "mix." + name + " broadcasts a row value of another rank";
    if (!a.row() && y.row() && a.shape.size() > y.shape.size())
      return "mix." + name + " broadcasts a parameter over the run-time dims";
  }
  if (isRowWise(o)) {
    PlannedValue &x = p.at(o.getOperand(0));
    // A feature map changes the row's size; a norm keeps it.
    if (x.shape.empty() || (!isa<mix::TaylorMapOp>(o) && x.shape != y.shape))
      return "mix." + name + " on a scalar";
    for (unsigned i = 1; i < o.getNumOperands(); ++i) {
      PlannedValue &w = p.at(o.getOperand(i));
      if (w.row() || w.shape != Shape{x.shape.back()})
        return "mix." + name + " with a weight that is not [last dim]";
    }
  }
  return "";
}

/// The anchor's per-row ancestors form the prologue; what crosses phases is
/// materialised.
void Planner::assignPhases() {
  llvm::DenseSet<Operation *> ancestors;
  if (p.anchor) {
    llvm::SmallVector<Operation *> stack = {p.anchor};
    while (!stack.empty()) {
      Operation *o = stack.pop_back_val();
      for (Value in : o->getOperands())
        if (Operation *d = in.getDefiningOp(); d && ancestors.insert(d).second)
          stack.push_back(d);
    }
  }
  for (Operation *o : p.order) {
    PlannedValue &y = p.at(o->getResult(0));
    y.phase = o == p.anchor          ? Phase::Anchor
              : !y.row()             ? Phase::Hoisted
              : ancestors.count(o)   ? Phase::Prologue
                                     : Phase::Epilogue;
  }
  for (Operation *o : p.order) {
    PlannedValue &y = p.at(o->getResult(0));
    if (y.phase == Phase::Anchor)
      y.saved = true;
    for (Value in : o->getOperands()) {
      PlannedValue &a = p.at(in);
      if (a.row() && a.def && a.phase == Phase::Prologue && y.phase != Phase::Prologue)
        a.saved = true;
    }
  }
  for (Operation *o : p.order)
    if (p.at(o->getResult(0)).saved)
      p.saved.push_back(o->getResult(0));
}

std::string Planner::run() {
  Block &body = p.op.getBody().front();
  for (BlockArgument a : body.getArguments()) {
    p.args.push_back(a);
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
    if (o.hasTrait<mix::OpTrait::GeneratedAnchor>()) {
      if (p.anchor)
        return "two anchors";
      p.anchor = &o;
    }
    p.order.push_back(&o);
  }
  for (auto [i, v] : llvm::enumerate(body.getTerminator()->getOperands())) {
    PlannedValue &x = p.at(v);
    if (!x.def || x.output >= 0)
      return "the region returns an input, or one value twice";
    x.output = static_cast<int>(i);
    p.results.push_back(v);
  }
  p.rowRank = std::max(R, 0);
  if (p.anchor) {
    p.anchorSpec = anchorSpecFor(*p.anchor);
    if (!p.anchorSpec)
      return "no kernel template for mix." + p.anchor->getName().stripDialect().str();
    if (R != 2)
      return "the anchor needs [B, T] rows";
    if (std::string e = p.anchorSpec->checkOperands(p); !e.empty())
      return e;
  }
  assignPhases();
  return "";
}
} // namespace

std::string planRegion(mix::FusedOp op, RegionPlan &plan) {
  plan.op = op;
  return Planner(plan).run();
}

} // namespace mix::codegen
