//===- ScanLinearity.cpp - the abstract interpretation of a scan's step ----===//
//
// See mix/ScanLinearity.h for the forms and the papers. Each step value gets
// an `Abstract`: free, non-linear in a state, or a sum of `Term`s. A term is
//
//   coef · Π_f factor_f[labels_f] · S_k[stateLabels]   → value[out]
//
// an index expression: labels are small integers, one per non-unit axis; a
// label that appears in `out` is an axis of the value, one that does not is
// summed over (a contraction). A term without a state (`state < 0`) is a
// product of free values: how W_t and the factors of L_t are read.
//
//===----------------------------------------------------------------------===//
#include "mix/ScanLinearity.h"
#include "abi/ChunkPlan.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

using namespace mlir;
namespace graph = mixc::graph;

namespace mix {
namespace {

using Labels = std::vector<int>; // per axis; -1 for a unit axis

/// A free value expands into at most this many products of free values.
constexpr size_t kMaxFreeTerms = 64;

struct Factor {
  Value root;          // a free value, after reshapes and taps
  Labels labels;       // per axis of `root`'s inner shape
  bool reciprocal = false;
};

struct Term {
  int state = -1;      // which state; -1: a product of free values
  bool fresh = false;  // reads the new state S_t (emits only)
  double coef = 1;
  Labels stateLabels;  // per axis of the state
  std::vector<Factor> factors;
  Labels out;          // per axis of the value
};

struct Abstract {
  enum Kind { Free, Linear, NonLinear } kind = Free;
  std::vector<Term> terms;     // Linear: their sum (free terms included)
  Operation *origin = nullptr; // NonLinear: the op that made it so
  std::string why;             // NonLinear: what that op did
};

/// The shape after the batch dimension (a step value is [B, ...]); the whole
/// shape of a loop-invariant value.
std::vector<int64_t> innerShape(Value v) {
  auto type = v.getType().dyn_cast<RankedTensorType>();
  if (!type)
    return {};
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  if (!shape.empty() && ShapedType::isDynamic(shape.front()))
    shape.erase(shape.begin());
  return shape;
}

bool batched(Value v) {
  auto type = v.getType().dyn_cast<RankedTensorType>();
  return type && type.getRank() > 0 && ShapedType::isDynamic(type.getShape().front());
}

std::string nodeName(Operation *op) {
  auto name = op->getAttrOfType<StringAttr>("name");
  return name ? name.getValue().str() : op->getName().getStringRef().str();
}

bool contains(const Labels &ls, int l) { return l >= 0 && llvm::is_contained(ls, l); }

/// Everything in a term that carries labels, for renaming and searching.
template <typename Fn> void forEachLabelList(Term &t, Fn fn) {
  fn(t.stateLabels);
  fn(t.out);
  for (Factor &f : t.factors)
    fn(f.labels);
}

void rename(Term &t, int from, int to) {
  forEachLabelList(t, [&](Labels &ls) { std::replace(ls.begin(), ls.end(), from, to); });
}

/// How many of the term's label lists name `l`.
int uses(Term &t, int l) {
  int n = 0;
  forEachLabelList(t, [&](Labels &ls) { n += static_cast<int>(std::count(ls.begin(), ls.end(), l)); });
  return n;
}

/// Gives every label of `t` a new number (the labels of one term are a
/// bound variable's: only which positions share one matters).
template <typename FreshFn> void freshenWith(Term &t, FreshFn fresh) {
  std::map<int, int> to;
  forEachLabelList(t, [&](Labels &ls) {
    for (int &l : ls)
      if (l >= 0) {
        auto [it, inserted] = to.try_emplace(l, 0);
        if (inserted)
          it->second = fresh();
        l = it->second;
      }
  });
}

class StepInterpreter {
public:
  /// `anchorNewStates`: the values the step yields as next states stand for
  /// S_t themselves (to read the emitted values in S_t), instead of being
  /// expanded in S_{t−1} (to read the update).
  StepInterpreter(ScanOp scan, bool anchorNewStates) : scan(scan), anchor(anchorNewStates) {}

  void run();
  const Abstract &of(Value v) { return values[v]; }
  /// The linear values that non-linear ops read (the readouts).
  const std::vector<Value> &readouts() const { return readValues; }
  /// A free value as a sum of products of free values.
  std::vector<Term> expand(Value v) { return freeTerms(v); }

private:
  int fresh() { return nextLabel++; }
  void freshen(Term &t) { freshenWith(t, [this] { return fresh(); }); }
  Labels freshLabels(const std::vector<int64_t> &shape);
  std::vector<Term> freeTerms(Value v);
  std::optional<std::vector<Term>> relabel(std::vector<Term> terms, Value from, Value to);
  std::vector<Term> broadcast(std::vector<Term> terms, Value from, Value to);
  std::vector<Term> termsOf(Value v, Value result);
  Abstract multiply(Operation *op, Value a, Value b, bool divide);
  Abstract addOrSub(Operation *op, Value a, Value b, double sign);
  Abstract sum(SumOp op);
  Abstract visit(Operation *op);
  Abstract nonLinear(Operation *op, std::string why);

  ScanOp scan;
  bool anchor;
  int nextLabel = 0;
  llvm::DenseMap<Value, Abstract> values;
  std::vector<Value> readValues;
};

Labels StepInterpreter::freshLabels(const std::vector<int64_t> &shape) {
  Labels ls;
  for (int64_t n : shape)
    ls.push_back(n == 1 ? -1 : fresh());
  return ls;
}

/// A term's labels moved from `from`'s inner shape to `to`'s when the two
/// differ only by unit axes (a reshape that adds or drops them); none else.
std::optional<std::vector<Term>> StepInterpreter::relabel(std::vector<Term> terms, Value from, Value to) {
  std::vector<int64_t> a = innerShape(from), b = innerShape(to);
  std::vector<int> nonUnitA, nonUnitB;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != 1)
      nonUnitA.push_back(static_cast<int>(i));
  for (size_t i = 0; i < b.size(); ++i)
    if (b[i] != 1)
      nonUnitB.push_back(static_cast<int>(i));
  if (nonUnitA.size() != nonUnitB.size() || batched(from) != batched(to))
    return std::nullopt;
  for (size_t i = 0; i < nonUnitA.size(); ++i)
    if (a[nonUnitA[i]] != b[nonUnitB[i]])
      return std::nullopt;
  for (Term &t : terms) {
    Labels out(b.size(), -1);
    for (size_t i = 0; i < nonUnitA.size(); ++i)
      out[nonUnitB[i]] = t.out[nonUnitA[i]];
    t.out = out;
  }
  return terms;
}

/// A free value as a sum of products of free values, looking through the
/// arithmetic that builds it (k vᵀ as k[i]·v[j], not one opaque [m, n]).
std::vector<Term> StepInterpreter::freeTerms(Value v) {
  Operation *def = v.getDefiningOp();
  if (def && isa<ReshapeOp, TapOp>(def))
    if (auto terms = relabel(freeTerms(def->getOperand(0)), def->getOperand(0), v))
      return *terms;
  if (def && isa<AddOp, SubOp, MulOp, DivOp, NegOp>(def)) {
    Abstract a = isa<NegOp>(def) ? addOrSub(def, def->getOperand(0), Value(), -1)
                 : isa<MulOp, DivOp>(def)
                     ? multiply(def, def->getOperand(0), def->getOperand(1), isa<DivOp>(def))
                     : addOrSub(def, def->getOperand(0), def->getOperand(1), isa<SubOp>(def) ? -1 : 1);
    if (a.terms.size() <= kMaxFreeTerms) // a long sum of products: read as one value
      return a.terms;
  }
  Term leaf;
  leaf.out = freshLabels(innerShape(v));
  leaf.factors.push_back({v, leaf.out, false});
  return {leaf};
}

/// `terms` of value `from`, broadcast to the shape of `to` (trailing axes
/// aligned); a new axis of size > 1 gets a label of its own (the value is
/// the same along it).
std::vector<Term> StepInterpreter::broadcast(std::vector<Term> terms, Value from, Value to) {
  std::vector<int64_t> a = innerShape(from), r = innerShape(to);
  const size_t lead = r.size() - std::min(r.size(), a.size());
  for (Term &t : terms) {
    Labels out(r.size(), -1);
    for (size_t i = 0; i < r.size(); ++i) {
      const int l = i >= lead && i - lead < t.out.size() ? t.out[i - lead] : -1;
      out[i] = l >= 0 ? l : (r[i] == 1 ? -1 : fresh());
    }
    t.out = out;
  }
  return terms;
}

/// The terms of operand `v` of an op whose result is `result`.
std::vector<Term> StepInterpreter::termsOf(Value v, Value result) {
  const Abstract &a = values[v];
  return broadcast(a.kind == Abstract::Linear ? a.terms : freeTerms(v), v, result);
}

Abstract StepInterpreter::nonLinear(Operation *op, std::string why) {
  for (Value v : op->getOperands())
    if (values[v].kind == Abstract::Linear && !llvm::is_contained(readValues, v))
      readValues.push_back(v);
  Abstract r;
  r.kind = Abstract::NonLinear;
  r.origin = op;
  r.why = std::move(why);
  return r;
}

Abstract StepInterpreter::addOrSub(Operation *op, Value a, Value b, double sign) {
  Abstract r;
  r.kind = Abstract::Linear;
  Value result = op->getResult(0);
  for (Term &t : termsOf(a, result))
    r.terms.push_back(t);
  if (!b) { // neg
    for (Term &t : r.terms)
      t.coef = -t.coef;
    return r;
  }
  for (Term t : termsOf(b, result)) {
    t.coef *= sign;
    r.terms.push_back(t);
  }
  return r;
}

/// a · b (or a / b): a product of every term of one with every term of the
/// other, the labels of the axes they share made one; a state times a
/// state is not linear, nor a division by one.
Abstract StepInterpreter::multiply(Operation *op, Value a, Value b, bool divide) {
  Value result = op->getResult(0);
  std::vector<Term> ta = termsOf(a, result), tb = termsOf(b, result);
  if (divide) { // 1 / b: one factor, the whole divisor
    Term inverse;
    inverse.out = freshLabels(innerShape(b));
    inverse.factors.push_back({b, inverse.out, true});
    tb = broadcast({inverse}, b, result);
  }
  Abstract r;
  r.kind = Abstract::Linear;
  for (const Term &x : ta)
    for (Term y : tb) {
      freshen(y); // x and y may come from one value: keep their labels apart
      Term p = x;
      for (size_t i = 0; i < p.out.size(); ++i)
        if (p.out[i] >= 0 && y.out[i] >= 0 && p.out[i] != y.out[i])
          rename(y, y.out[i], p.out[i]);
        else if (p.out[i] < 0)
          p.out[i] = y.out[i];
      if (y.state >= 0) {
        p.state = y.state;
        p.fresh = y.fresh;
        p.stateLabels = y.stateLabels;
      }
      p.coef *= y.coef;
      p.factors.insert(p.factors.end(), y.factors.begin(), y.factors.end());
      r.terms.push_back(p);
    }
  return r;
}

/// A sum over an axis: the axis' label leaves `out`; a label nothing else
/// carries (a broadcast axis) multiplies by the axis' size instead.
Abstract StepInterpreter::sum(SumOp op) {
  Abstract r = values[op.getX()];
  std::vector<int64_t> shape = innerShape(op.getX());
  auto type = op.getX().getType().cast<RankedTensorType>();
  const int64_t signedAxis = op.getAxisAttr().getInt(); // getAxis() is unsigned
  int64_t axis = signedAxis < 0 ? signedAxis + type.getRank() : signedAxis;
  if (batched(op.getX()))
    --axis;
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
    return nonLinear(op, "sums over the batch");
  for (Term &t : r.terms) {
    const int l = t.out[axis];
    if (op.getKeepdim())
      t.out[axis] = -1;
    else
      t.out.erase(t.out.begin() + axis);
    if (l >= 0 && uses(t, l) == 0)
      t.coef *= static_cast<double>(shape[axis]);
  }
  return r;
}

Abstract StepInterpreter::visit(Operation *op) {
  bool anyLinear = false;
  for (Value v : op->getOperands()) {
    const Abstract &a = values[v];
    if (a.kind == Abstract::NonLinear)
      return a; // the first op that broke linearity stays the culprit
    anyLinear |= a.kind == Abstract::Linear;
  }
  if (!anyLinear)
    return Abstract{};
  if (isa<TapOp>(op))
    return values[op->getOperand(0)];
  if (isa<ReshapeOp>(op)) {
    if (auto terms = relabel(values[op->getOperand(0)].terms, op->getOperand(0), op->getResult(0)))
      return Abstract{Abstract::Linear, *terms, nullptr, ""};
    return nonLinear(op, "reshapes a value that depends on the state across axes");
  }
  if (isa<AddOp, SubOp>(op))
    return addOrSub(op, op->getOperand(0), op->getOperand(1), isa<SubOp>(op) ? -1 : 1);
  if (isa<NegOp>(op))
    return addOrSub(op, op->getOperand(0), Value(), -1);
  if (isa<MulOp, DivOp>(op)) {
    const bool linearA = values[op->getOperand(0)].kind == Abstract::Linear;
    const bool linearB = values[op->getOperand(1)].kind == Abstract::Linear;
    if (isa<DivOp>(op) && linearB)
      return nonLinear(op, "divides by a value that depends on the state");
    if (linearA && linearB)
      return nonLinear(op, "multiplies two values that depend on the state");
    return multiply(op, op->getOperand(0), op->getOperand(1), isa<DivOp>(op));
  }
  if (auto s = dyn_cast<SumOp>(op))
    return sum(s);
  if (isa<PatchOp, AblateOp>(op)) // an intervention on a step value: the chunked form cannot see it
    return nonLinear(op, "is an intervention on a step value that depends on the state");
  return nonLinear(op, "applies " + op->getName().getStringRef().str() +
                           " to a value that depends on the state");
}

void StepInterpreter::run() {
  Block &step = scan.getBody().front();
  const unsigned numStates = static_cast<unsigned>(scan.getNumStates());
  Operation *yield = step.getTerminator();
  for (unsigned k = 0; k < numStates; ++k) {
    Value s = step.getArgument(k);
    Term t;
    t.state = static_cast<int>(k);
    t.stateLabels = freshLabels(innerShape(s));
    t.out = t.stateLabels;
    values[s] = Abstract{Abstract::Linear, {t}, nullptr, ""};
  }
  for (Operation &op : step.without_terminator()) {
    Abstract a = visit(&op);
    if (anchor)
      for (unsigned k = 0; k < numStates; ++k)
        if (yield->getOperand(k) == op.getResult(0)) { // S_t itself
          Term t;
          t.state = static_cast<int>(k);
          t.fresh = true;
          t.stateLabels = freshLabels(innerShape(op.getResult(0)));
          t.out = t.stateLabels;
          a = Abstract{Abstract::Linear, {t}, nullptr, ""};
        }
    for (Value r : op.getResults())
      values[r] = a;
  }
}

//===----------------------------------------------------------------------===//
// Reading the terms
//===----------------------------------------------------------------------===//

/// A factor's key for matching a decay's factors inside a correction: the
/// value, and which of the state's axes (row 'r', column 'c') each axis of
/// it follows.
std::string factorKey(const Factor &f, const Labels &stateLabels) {
  std::string key = std::to_string(reinterpret_cast<uintptr_t>(f.root.getAsOpaquePointer()));
  key += f.reciprocal ? "/" : "*";
  for (int l : f.labels)
    key += l < 0 ? '-' : l == stateLabels[0] ? 'r' : stateLabels.size() > 1 && l == stateLabels[1] ? 'c' : '?';
  return key;
}

std::multiset<std::string> keysOf(const Term &t) {
  std::multiset<std::string> keys;
  for (const Factor &f : t.factors)
    keys.insert(factorKey(f, t.stateLabels));
  return keys;
}

/// The decay of a sum of decay terms (the first one's alone when `first`).
DecayKind joinDecays(DecayKind a, DecayKind b, bool first) {
  if (first || a == b)
    return b;
  if (a == DecayKind::Element || b == DecayKind::Element)
    return DecayKind::Element;
  auto rowish = [](DecayKind d) { return d == DecayKind::Row || d == DecayKind::RowColumn; };
  auto colish = [](DecayKind d) { return d == DecayKind::Column || d == DecayKind::RowColumn; };
  if ((rowish(a) || rowish(b)) && (colish(a) || colish(b)))
    return DecayKind::Element; // a row factor plus a column factor does not factor
  return std::max(a, b);       // none < scalar < row or column
}

struct Reading {
  bool ok = false;
  std::string why;
};

/// The decay of a term that maps the state onto itself (no contraction).
std::optional<DecayKind> decayOf(const Term &t) {
  if (t.out != t.stateLabels)
    return std::nullopt;
  bool row = false, column = false, both = false;
  for (const Factor &f : t.factors) {
    const bool r = contains(f.labels, t.stateLabels[0]);
    const bool c = t.stateLabels.size() > 1 && contains(f.labels, t.stateLabels[1]);
    for (int l : f.labels)
      if (l >= 0 && !contains(t.stateLabels, l))
        return std::nullopt; // a factor summed over: not a decay
    row |= r;
    column |= c;
    both |= r && c;
  }
  if (t.stateLabels.size() == 1) // a vector state: one factor per entry
    return row ? DecayKind::Element : t.factors.empty() && t.coef == 1 ? DecayKind::None : DecayKind::Scalar;
  if (both)
    return DecayKind::Element;
  if (row && column)
    return DecayKind::RowColumn;
  if (row)
    return DecayKind::Row;
  if (column)
    return DecayKind::Column;
  return t.factors.empty() && t.coef == 1 ? DecayKind::None : DecayKind::Scalar;
}

/// A correction term −β (D ⊙ S) u wᵀ (right) or −β w uᵀ (D ⊙ S) (left), D
/// the decay term's factors, read apart: which side (the delta rule's when u
/// and w are one vector), and the indices of the term's factors that are β
/// (along no axis) and u (along the contracted one); D's own are left out.
struct CorrectionParts {
  Correction side = Correction::None;
  std::vector<size_t> beta, u;
};

std::optional<CorrectionParts> correctionOf(const Term &t, const Term &decay) {
  if (t.stateLabels.size() != 2 || t.out.size() != 2)
    return std::nullopt;
  const int r = t.stateLabels[0], c = t.stateLabels[1];
  int contracted, added;
  bool right;
  if (t.out[0] == r && !contains(t.out, c) && t.out[1] >= 0 && t.out[1] != c)
    right = true, contracted = c, added = t.out[1];
  else if (t.out[1] == c && !contains(t.out, r) && t.out[0] >= 0 && t.out[0] != r)
    right = false, contracted = r, added = t.out[0];
  else
    return std::nullopt;
  std::multiset<std::string> decayKeys = keysOf(decay);
  CorrectionParts parts;
  std::multiset<std::pair<const void *, bool>> u, w; // the vectors, as values (and 1 / value)
  for (size_t i = 0; i < t.factors.size(); ++i) {
    const Factor &f = t.factors[i];
    auto it = decayKeys.find(factorKey(f, t.stateLabels));
    if (it != decayKeys.end()) {
      decayKeys.erase(it);
      continue;
    }
    const bool onU = contains(f.labels, contracted), onW = contains(f.labels, added);
    bool other = false;
    for (int l : f.labels)
      other |= l >= 0 && l != contracted && l != added;
    if (other || (onU && onW))
      return std::nullopt; // β per row, or a factor of two axes
    if (onU) {
      u.insert({f.root.getAsOpaquePointer(), f.reciprocal});
      parts.u.push_back(i);
    } else if (onW) {
      w.insert({f.root.getAsOpaquePointer(), f.reciprocal});
    } else {
      parts.beta.push_back(i);
    }
  }
  if (!decayKeys.empty() || u.empty() || w.empty())
    return std::nullopt; // not (D ⊙ S) times the correction
  parts.side = u == w ? (right ? Correction::Right : Correction::Left)
                      : (right ? Correction::GeneralRight : Correction::GeneralLeft);
  return parts;
}

/// A state's update S_t, its terms sorted: the writes (no state), the decay
/// terms (S mapped onto itself), the rest (corrections, or worse); `other` a
/// term that reads another state, if any.
struct Update {
  std::vector<const Term *> writes, decays, rest;
  const Term *other = nullptr;
  DecayKind decay = DecayKind::None; // the decay terms' kinds joined
};

Update splitUpdate(const Abstract &next, unsigned k) {
  Update u;
  for (const Term &t : next.terms) {
    if (t.state < 0) {
      u.writes.push_back(&t);
    } else if (t.state != static_cast<int>(k)) {
      u.other = u.other ? u.other : &t;
    } else if (auto d = decayOf(t)) {
      u.decays.push_back(&t);
      u.decay = joinDecays(u.decay, *d, u.decays.size() == 1);
    } else {
      u.rest.push_back(&t);
    }
  }
  return u;
}

/// W_t: each free term a product of factors that each follow one axis.
bool outerWrite(const std::vector<const Term *> &terms, size_t rank) {
  for (const Term *t : terms) {
    if (rank < 2)
      continue;
    for (const Factor &f : t->factors) {
      std::set<int> own;
      for (int l : f.labels)
        if (l >= 0) {
          if (!contains(t->out, l))
            return false;
          own.insert(l);
        }
      if (own.size() > 1)
        return false;
    }
  }
  return true;
}

std::string stateText(ScanOp scan, unsigned k) {
  return scan.getStateNames()[k].cast<StringAttr>().getValue().str();
}

/// Reads state k's update from the expanded interpretation into `form`.
Reading readState(ScanOp scan, unsigned k, const Abstract &next, StateForm &form) {
  const std::string name = "the new " + stateText(scan, k);
  if (next.kind == Abstract::NonLinear)
    return {false, name + " is not affine in the old one: '" + nodeName(next.origin) + "' " + next.why};
  if (next.kind == Abstract::Free)
    return {false, name + " does not read the old one (nothing to carry between chunks)"};
  const Update u = splitUpdate(next, k);
  if (u.other)
    return {false, name + " reads another state, " + stateText(scan, u.other->state) + " (coupled states)"};
  if (u.decays.empty())
    return {false, name + " mixes the entries of the old one (neither a decay nor a rank-1 correction of one)"};
  form.decay = u.decay;
  for (const Term *t : u.rest) {
    std::optional<CorrectionParts> c = correctionOf(*t, *u.decays.front());
    if (!c || u.decays.size() > 1 || (form.correction != Correction::None && form.correction != c->side))
      return {false, name + " mixes the entries of the old one (neither a decay nor a rank-1 correction of one)"};
    form.correction = c->side;
  }
  form.outerWrite = outerWrite(u.writes, innerShape(scan.getBody().front().getArgument(k)).size());
  return {true, ""};
}

/// Reads an emitted value from the anchored interpretation.
Reading readEmit(const Abstract &a, StepInterpreter &anchored, EmitForm &form) {
  auto contractsState = [](const Abstract &v, bool &previous) {
    for (const Term &t : v.terms) {
      if (t.state < 0)
        continue;
      previous |= !t.fresh;
      bool contracted = t.stateLabels.size() < 2; // a vector state may be emitted whole
      for (int l : t.stateLabels)
        contracted |= l >= 0 && !contains(t.out, l);
      if (!contracted)
        return false;
    }
    return true;
  };
  if (a.kind == Abstract::Free)
    return {true, ""};
  if (a.kind == Abstract::Linear) {
    form.kind = llvm::any_of(a.terms, [](const Term &t) { return t.state < 0; }) ? EmitKind::Affine
                                                                                   : EmitKind::Linear;
    if (!contractsState(a, form.previous))
      return {false, "'" + form.name + "' emits a whole matrix state at every step"};
    return {true, ""};
  }
  form.kind = EmitKind::Readout;
  for (Value v : anchored.readouts())
    if (!contractsState(anchored.of(v), form.previous))
      return {false, "'" + nodeName(a.origin) + "' " + a.why + " without contracting it first"};
  return {true, ""};
}

const char *decayName(DecayKind d) {
  switch (d) {
  case DecayKind::None: return "identity";
  case DecayKind::Scalar: return "decay.scalar";
  case DecayKind::Row: return "decay.row";
  case DecayKind::Column: return "decay.column";
  case DecayKind::RowColumn: return "decay.row*column";
  case DecayKind::Element: return "decay.element";
  }
  return "";
}

const char *correctionName(Correction c) {
  switch (c) {
  case Correction::None: return "";
  case Correction::Right: return " * rank1.right";
  case Correction::Left: return " * rank1.left";
  case Correction::GeneralRight: return " * rank1.general.right";
  case Correction::GeneralLeft: return " * rank1.general.left";
  }
  return "";
}

/// Whether the chunked form covers a state so read (else why not).
std::string unchunkable(const StateForm &s) {
  if (s.decay == DecayKind::Element)
    return s.name + "'s decay varies along both axes and does not factor (no matrix form within a chunk)";
  if (s.correction == Correction::GeneralRight || s.correction == Correction::GeneralLeft)
    return s.name + "'s rank-1 correction has two different vectors (I - a b^T)";
  if (!s.outerWrite)
    return s.name + "'s write W_t is not a sum of outer products";
  return "";
}


//===----------------------------------------------------------------------===//
// The chunk plan (abi/ChunkPlan.h)
//===----------------------------------------------------------------------===//

/// Names a factor's value as the runtime finds it: "#N" for the step's
/// argument N, else the step node's name.
std::string valueRef(Value v) {
  if (auto arg = v.dyn_cast<BlockArgument>())
    return "#" + std::to_string(arg.getArgNumber());
  return nodeName(v.getDefiningOp());
}

/// Letters for one term's labels: the state's axes 'r' and 'c' (a free
/// term's own axes when it writes a state), others 'a', 'b', ...
class Letters {
public:
  Letters(const Labels &rc) {
    if (rc.size() > 0 && rc[0] >= 0)
      of[rc[0]] = 'r';
    if (rc.size() > 1 && rc[1] >= 0)
      of[rc[1]] = 'c';
  }
  char operator()(int label) {
    if (label < 0)
      return '-';
    auto [it, inserted] = of.try_emplace(label, next);
    if (inserted)
      next = next == 'b' ? 'd' : next == 'q' ? 's' : static_cast<char>(next + 1); // skip 'c', 'r'
    return it->second;
  }
  std::string operator()(const Labels &ls) {
    std::string s;
    for (int l : ls)
      s += (*this)(l);
    return s;
  }

private:
  std::map<int, char> of;
  char next = 'a';
};

graph::ChunkTerm planTerm(const Term &t, const Labels &rc) {
  Letters letters(rc);
  graph::ChunkTerm out;
  out.coef = t.coef;
  out.state = t.state;
  out.previous = t.state >= 0 && !t.fresh;
  for (const Factor &f : t.factors)
    out.factors.push_back({valueRef(f.root), letters(f.labels), f.reciprocal});
  out.out = letters(t.out);
  return out;
}

/// Whether every factor carries at most one letter, each of `allowed`.
bool singleLetters(const graph::ChunkTerm &t, const std::string &allowed) {
  for (const graph::ChunkFactor &f : t.factors) {
    std::set<char> own;
    for (char a : f.axes)
      if (a != '-') {
        if (allowed.find(a) == std::string::npos)
          return false;
        own.insert(a);
      }
    if (own.size() > 1)
      return false;
  }
  return true;
}

/// An emitted value's state term: one of S's axes contracted by a vector,
/// the other the value's one non-unit axis.
bool readoutTerm(const graph::ChunkTerm &t) {
  const bool keepsRow = t.out.find('r') != std::string::npos, keepsCol = t.out.find('c') != std::string::npos;
  std::string rest = t.out;
  rest.erase(std::remove(rest.begin(), rest.end(), '-'), rest.end());
  return keepsRow != keepsCol && rest.size() == 1 && singleLetters(t, "rc");
}

/// A free term of an emitted value: every letter of `out` carried by a factor.
bool evaluableTerm(const graph::ChunkTerm &t) {
  for (char a : t.out)
    if (a != '-' && llvm::none_of(t.factors, [&](const graph::ChunkFactor &f) {
          return f.axes.find(a) != std::string::npos;
        }))
      return false;
  return true;
}

std::multiset<std::string> valuesOf(const std::vector<graph::ChunkFactor> &factors) {
  std::multiset<std::string> out;
  for (const graph::ChunkFactor &f : factors)
    out.insert(f.value + (f.inverse ? "/" : ""));
  return out;
}

/// State k's update (the analysis found it chunkable) as the runtime takes
/// it: its decay's factors, its writes, and the delta rule's correction
/// (correctionOf's parts, in the plan's letters); "" or what is not built.
std::string planState(const Abstract &next, unsigned k, graph::ChunkState &state) {
  const std::string name = "state " + std::to_string(k);
  const Update u = splitUpdate(next, k);
  for (const Term *t : u.writes) {
    graph::ChunkTerm w = planTerm(*t, t->out);
    if (!singleLetters(w, "rc"))
      return "a write of " + name + " is not a product of a row and a column";
    state.writes.push_back(w);
  }
  if (u.decays.size() != 1 || u.decays.front()->coef != 1)
    return name + " has a decay of several terms or a constant factor (not built yet)";
  const Term &decay = *u.decays.front();
  state.decay = planTerm(decay, decay.stateLabels).factors;
  if (u.rest.empty())
    return "";
  if (u.rest.size() > 1)
    return name + " has two rank-1 corrections";
  for (const graph::ChunkFactor &f : state.decay)
    if (f.axes.find_first_not_of('-') != std::string::npos)
      return name + " has a rank-1 correction and a decay along an axis (not built yet)";
  const Term &c = *u.rest.front();
  const std::optional<CorrectionParts> parts = correctionOf(c, decay); // the analysis' reading
  if (!parts || (parts->side != Correction::Right && parts->side != Correction::Left))
    return name + " has a rank-1 correction of another shape";
  const graph::ChunkTerm pc = planTerm(c, c.stateLabels); // its factors, in the plan's letters
  state.correctionAxis = parts->side == Correction::Right ? "c" : "r";
  state.betaCoef = -c.coef;
  for (size_t i : parts->beta)
    state.beta.push_back(pc.factors[i]);
  for (size_t i : parts->u)
    state.key.push_back(pc.factors[i]);
  for (const graph::ChunkTerm &w : state.writes) { // each write x_t k_tᵀ along the key axis
    std::vector<graph::ChunkFactor> onKey;
    for (const graph::ChunkFactor &f : w.factors)
      if (f.axes.find(state.correctionAxis[0]) != std::string::npos)
        onKey.push_back(f);
    if (valuesOf(onKey) != valuesOf(state.key))
      return name + " has a write that is not x k^T (not built yet)";
  }
  return "";
}

/// The step nodes the plan's factors name and the nodes they read, in
/// order: what the runtime computes for every step at once.
std::vector<std::string> neededNodes(Block &step, const graph::ChunkPlan &plan) {
  std::set<std::string> named;
  auto add = [&](const std::vector<graph::ChunkFactor> &factors) {
    for (const graph::ChunkFactor &f : factors)
      if (f.value.empty() || f.value[0] != '#')
        named.insert(f.value);
  };
  for (const graph::ChunkState &s : plan.states) {
    add(s.decay);
    for (const graph::ChunkTerm &t : s.writes)
      add(t.factors);
  }
  for (const std::vector<graph::ChunkTerm> &e : plan.emits)
    for (const graph::ChunkTerm &t : e)
      add(t.factors);
  llvm::DenseSet<Operation *> needed;
  for (Operation &op : llvm::reverse(step.without_terminator())) // users come later: read first
    if (named.count(nodeName(&op)) || llvm::any_of(op.getUsers(), [&](Operation *u) { return needed.count(u); }))
      needed.insert(&op);
  std::vector<std::string> out;
  for (Operation &op : step.without_terminator())
    if (needed.count(&op))
      out.push_back(nodeName(&op));
  return out;
}

/// The plan of a chunkable scan, or why the runtime has no chunked form for it.
std::string buildPlan(ScanOp scan, StepInterpreter &expanded, StepInterpreter &anchored, std::string &json) {
  Block &step = scan.getBody().front();
  Operation *yield = step.getTerminator();
  const unsigned numStates = static_cast<unsigned>(scan.getNumStates());
  graph::ChunkPlan plan;
  for (unsigned k = 0; k < numStates; ++k) {
    if (innerShape(step.getArgument(k)).size() != 2)
      return "state " + std::to_string(k) + " is not a matrix (vector states are not built yet)";
    plan.states.emplace_back();
    if (std::string why = planState(expanded.of(yield->getOperand(k)), k, plan.states.back()); !why.empty())
      return why;
  }
  for (unsigned i = numStates; i < yield->getNumOperands(); ++i) {
    Value v = yield->getOperand(i);
    const Abstract &a = anchored.of(v);
    if (a.kind == Abstract::NonLinear)
      return "emitted value " + std::to_string(i - numStates) + " is a readout (not built yet)";
    std::vector<graph::ChunkTerm> terms;
    for (const Term &t : a.kind == Abstract::Linear ? a.terms : anchored.expand(v)) {
      graph::ChunkTerm c = planTerm(t, t.stateLabels);
      if (t.state >= 0 ? !readoutTerm(c) : !evaluableTerm(c))
        return "emitted value " + std::to_string(i - numStates) + " has a term of another shape";
      const std::string &axis = t.state >= 0 ? plan.states[t.state].correctionAxis : "";
      if (!axis.empty() && c.out.find(axis[0]) != std::string::npos)
        return "emitted value " + std::to_string(i - numStates) + " reads the delta rule's state along its values";
      terms.push_back(c);
    }
    plan.emits.push_back(terms);
  }
  plan.freeNodes = neededNodes(step, plan);
  json = graph::chunkPlanToJson(plan);
  return "";
}
} // namespace

std::string StateForm::text() const {
  return std::string(decayName(decay)) + correctionName(correction) +
         (!matrix ? ", write vector" : outerWrite ? ", write outer" : ", write general");
}

std::string EmitForm::text() const {
  const char *kinds[] = {"free", "linear", "affine", "readout"};
  return std::string(kinds[static_cast<int>(kind)]) + (previous ? " (reads S_{t-1})" : "");
}

ScanLinearity analyzeScanLinearity(ScanOp scan) {
  ScanLinearity result;
  StepInterpreter expanded(scan, false), anchored(scan, true);
  expanded.run();
  anchored.run();
  Operation *yield = scan.getBody().front().getTerminator();
  const unsigned numStates = static_cast<unsigned>(scan.getNumStates());
  auto fail = [&](std::string why, Operation *culprit) {
    result.reason = std::move(why);
    result.culprit = culprit;
    return result;
  };
  for (unsigned k = 0; k < numStates; ++k) {
    StateForm form;
    form.name = stateText(scan, k);
    form.matrix = innerShape(scan.getBody().front().getArgument(k)).size() > 1;
    const Abstract &next = expanded.of(yield->getOperand(k));
    Reading r = readState(scan, k, next, form);
    if (!r.ok)
      return fail(r.why, next.kind == Abstract::NonLinear ? next.origin : yield->getOperand(k).getDefiningOp());
    result.states.push_back(form);
    if (std::string why = unchunkable(form); !why.empty())
      return fail(why, yield->getOperand(k).getDefiningOp());
  }
  for (unsigned i = numStates; i < yield->getNumOperands(); ++i) {
    EmitForm form;
    Value v = yield->getOperand(i);
    form.name = v.getDefiningOp() ? nodeName(v.getDefiningOp()) : "an input";
    const Abstract &a = anchored.of(v);
    Reading r = readEmit(a, anchored, form);
    result.emits.push_back(form);
    if (!r.ok)
      return fail(r.why, a.kind == Abstract::NonLinear ? a.origin : v.getDefiningOp());
  }
  result.chunkable = true;
  result.planGap = buildPlan(scan, expanded, anchored, result.chunkPlan);
  return result;
}

void annotateScanLinearity(ScanOp scan, const ScanLinearity &result) {
  Builder b(scan.getContext());
  auto join = [](const auto &items) {
    std::string s;
    for (const auto &item : items)
      s += (s.empty() ? "" : "; ") + item.name + ": " + item.text();
    return s;
  };
  scan->setAttr("linearity", b.getStringAttr(result.chunkable ? "chunkable" : "sequential"));
  scan->setAttr("linearity_states", b.getStringAttr(join(result.states)));
  scan->setAttr("linearity_emits", b.getStringAttr(join(result.emits)));
  if (result.chunkable)
    scan->removeAttr("linearity_reason");
  else
    scan->setAttr("linearity_reason", b.getStringAttr(result.reason));
  if (result.chunkPlan.empty())
    scan->removeAttr("chunk_plan");
  else
    scan->setAttr("chunk_plan", b.getStringAttr(result.chunkPlan));
  if (result.planGap.empty())
    scan->removeAttr("chunk_plan_gap");
  else
    scan->setAttr("chunk_plan_gap", b.getStringAttr(result.planGap));
}

} // namespace mix
