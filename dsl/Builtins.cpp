//===- Builtins.cpp - the DSL's primitives ----------------------------------===//
//
// Each primitive checks its arguments' shapes (with the argument's location
// in errors), creates the parameters it owns (`<name>.weight`, ...) and emits
// one node of the matching `mix` op. Formulas are in compiler/include/mix/MixOps.td.
//
//===----------------------------------------------------------------------===//
#include "dsl/Builtins.h"
#include "support/Limits.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace mixc::dsl {

// ---------------------------------------------------------------- CallArgs

CallArgs::CallArgs(std::string fn, SourceLoc loc, std::vector<Arg> positional,
                   std::vector<std::pair<std::string, Arg>> keywords)
    : fn_(std::move(fn)), loc_(loc), positional_(std::move(positional)),
      keywords_(std::move(keywords)) {}

void CallArgs::bind(const std::vector<std::string> &params) {
  std::vector<std::string> names;
  std::set<std::string> optional;
  bool variadic = false;
  for (const std::string &p : params) {
    if (p == "...") {
      variadic = true;
    } else if (!p.empty() && p.back() == '?') {
      names.push_back(p.substr(0, p.size() - 1));
      optional.insert(names.back());
    } else {
      names.push_back(p);
    }
  }
  auto list = [&] {
    std::string s;
    for (const std::string &n : names)
      s += (s.empty() ? "" : ", ") + n;
    return s.empty() ? std::string("none") : s;
  };
  size_t nPos = positional_.size();
  if (!variadic && nPos > names.size())
    fail(positional_[names.size()].loc,
         fn_ + "() takes at most " + std::to_string(names.size()) +
             " arguments, got " + std::to_string(nPos) + " (parameters: " + list() + ")");
  size_t fixed = std::min(nPos, names.size());
  for (size_t i = 0; i < fixed; ++i)
    bound_[names[i]] = positional_[i];
  for (size_t i = fixed; i < nPos; ++i)
    rest_.push_back(positional_[i]);
  for (auto &[k, a] : keywords_) {
    if (std::find(names.begin(), names.end(), k) == names.end())
      fail(a.loc, fn_ + "() has no parameter '" + k + "'; its parameters are " + list());
    if (bound_.count(k))
      fail(a.loc, fn_ + "() got two values for '" + k + "'");
    bound_[k] = a;
  }
  for (const std::string &n : names)
    if (!bound_.count(n) && !optional.count(n))
      fail(loc_, fn_ + "() is missing argument '" + n + "' (parameters: " + list() + ")");
}

bool CallArgs::has(const std::string &name) const { return bound_.count(name) > 0; }

const CallArgs::Arg &CallArgs::arg(const std::string &name) const {
  return bound_.at(name);
}

void CallArgs::error(const std::string &name, const std::string &message) const {
  SourceLoc l = has(name) ? arg(name).loc : loc_;
  fail(l, fn_ + "(): " + message);
}

Value CallArgs::tensor(const std::string &name) const {
  const Value &v = arg(name).value;
  if (v.kind != Value::Kind::Tensor)
    error(name, "argument '" + name + "' must be a tensor, got " + describe(v));
  return v;
}

int64_t CallArgs::dim(const std::string &name) const {
  const Value &v = arg(name).value;
  if (v.kind == Value::Kind::SymDim)
    error(name, "argument '" + name + "' must be a static size, but " + v.s +
                    " is only known at run time");
  if (v.kind != Value::Kind::Int)
    error(name, "argument '" + name + "' must be an integer, got " + describe(v));
  if (v.i <= 0)
    error(name, "argument '" + name + "' must be positive, got " + std::to_string(v.i));
  return v.i;
}

int64_t CallArgs::integer(const std::string &name, int64_t dflt) const {
  if (!has(name))
    return dflt;
  const Value &v = arg(name).value;
  if (v.kind != Value::Kind::Int)
    error(name, "argument '" + name + "' must be an integer, got " + describe(v));
  return v.i;
}

double CallArgs::real(const std::string &name, double dflt) const {
  if (!has(name))
    return dflt;
  const Value &v = arg(name).value;
  if (!v.isNumber())
    error(name, "argument '" + name + "' must be a number, got " + describe(v));
  return v.number();
}

bool CallArgs::boolean(const std::string &name, bool dflt) const {
  if (!has(name))
    return dflt;
  const Value &v = arg(name).value;
  if (v.kind != Value::Kind::Bool)
    error(name, "argument '" + name + "' must be true or false, got " + describe(v));
  return v.b;
}

Value CallArgs::init(const std::string &name, Value dflt) const {
  if (!has(name))
    return dflt;
  const Value &v = arg(name).value;
  if (v.kind != Value::Kind::Init)
    error(name, "argument '" + name + "' must be an init rule such as normal(0.02), got " +
                    describe(v));
  return v;
}

// ---------------------------------------------------------------- inits

Value makeInit(std::string rule, std::vector<double> args) {
  Value v;
  v.kind = Value::Kind::Init;
  v.s = std::move(rule);
  for (double a : args)
    v.items.push_back(Value::real(a));
  return v;
}

static std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

std::string initText(const Value &init, int64_t fanIn) {
  if (init.s == "torch_default") {
    // PyTorch's Linear/Conv1d default, kaiming_uniform(a=√5): U(±1/√fan_in).
    double b = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(fanIn, 1)));
    return "uniform(" + num(-b) + "," + num(b) + ")";
  }
  if (init.items.empty())
    return init.s;
  std::string s = init.s + "(";
  for (size_t i = 0; i < init.items.size(); ++i)
    s += (i ? "," : "") + num(init.items[i].f);
  return s + ")";
}

/// The element count of s[from:], checked: a shape whose count would not
/// fit (or exceeds what a parameter may hold) is an error at `loc`.
int64_t checkedElements(const Shape &s, size_t from, SourceLoc loc) {
  int64_t p = 1;
  for (size_t i = from; i < s.size(); ++i)
    if (__builtin_mul_overflow(p, s[i].size, &p) || p > support::kMaxTensorElements)
      fail(loc, "the shape " + shapeStr(s) + " has more than " +
                    std::to_string(support::kMaxTensorElements) + " elements");
  return p;
}

// ---------------------------------------------------------------- helpers

namespace {
using Attrs = std::vector<std::pair<std::string, Attr>>;

TensorType f32(Shape s) { return TensorType{std::move(s), "f32"}; }
Dim lit(int64_t n) { return Dim{n, ""}; }


void requireRank(const CallArgs &a, const std::string &arg, const Value &v, size_t rank) {
  if (v.shape().size() != rank)
    a.error(arg, "'" + arg + "' must have rank " + std::to_string(rank) + ", got " +
                     shapeStr(v.shape()));
}

void requireMinRank(const CallArgs &a, const std::string &arg, const Value &v, size_t rank) {
  if (v.shape().size() < rank)
    a.error(arg, "'" + arg + "' must have rank >= " + std::to_string(rank) + ", got " +
                     shapeStr(v.shape()));
}

void requireDim(const CallArgs &a, const std::string &arg, const Dim &got,
                const Dim &want, const std::string &what) {
  if (got != want)
    a.error(arg, what + " is " + got.str() + " but must be " + want.str());
}

/// A parameter tensor owned by node `owner` (`owner.weight`).
Value ownParam(NodeSink &sink, const std::string &owner, const std::string &suffix,
               Shape shape, const std::string &init, SourceLoc loc, bool trainable = true) {
  checkedElements(shape, 0, loc); // refuses a shape too large to hold
  std::vector<int64_t> dims;
  for (const Dim &d : shape)
    dims.push_back(d.size);
  std::string name = owner + "." + suffix;
  Ref r = sink.emit("param", name, {},
                    {{"shape", Attr::list(dims)}, {"init", Attr::str(init)},
                     {"trainable", Attr::boolean(trainable)}},
                    {f32(shape)}, loc);
  return Value::tensor(r, f32(std::move(shape)));
}

Value single(NodeSink &sink, const CallSite &site, const std::string &op,
             std::vector<Ref> inputs, Attrs attrs, TensorType result) {
  std::string name = sink.nodeName(site, op);
  Ref r = sink.emit(op, name, std::move(inputs), std::move(attrs), {result}, site.loc);
  return Value::tensor(r, std::move(result));
}

/// [B, T, C] sequences that must agree on B and T.
void requireSequences(const CallArgs &a, std::initializer_list<const char *> args) {
  const Value *first = nullptr;
  for (const char *n : args) {
    const Value &v = a.arg(n).value;
    requireRank(a, n, v, 3);
    if (first && (v.shape()[0] != first->shape()[0] || v.shape()[1] != first->shape()[1]))
      a.error(n, std::string("'") + n + "' has [B, T] = [" + v.shape()[0].str() + ", " +
                     v.shape()[1].str() + "], but the other inputs have [" +
                     first->shape()[0].str() + ", " + first->shape()[1].str() + "]");
    first = &v;
  }
}

// ---------------------------------------------------------------- primitives

Value bParam(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"shape", "init?", "trainable?"});
  const Value &s = a.arg("shape").value;
  if (s.kind != Value::Kind::List || s.items.empty())
    a.error("shape", "'shape' must be a list of positive integers such as [d, 4]");
  Shape shape;
  for (const Value &d : s.items) {
    if (d.kind != Value::Kind::Int || d.i <= 0)
      a.error("shape", "parameter dimensions must be positive integers, got " + describe(d));
    shape.push_back(lit(d.i));
  }
  Value init = a.init("init", makeInit("zeros"));
  checkedElements(shape, 0, site.loc); // refuses a shape too large to hold
  std::string name = sink.nodeName(site, "param");
  std::vector<int64_t> dims;
  for (const Dim &d : shape)
    dims.push_back(d.size);
  Ref r = sink.emit("param", name, {},
                    {{"shape", Attr::list(dims)},
                     {"init", Attr::str(initText(init, checkedElements(shape, 1, site.loc)))},
                     {"trainable", Attr::boolean(a.boolean("trainable", true))}},
                    {f32(shape)}, site.loc);
  return Value::tensor(r, f32(shape));
}

Value bEmbedding(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"ids", "table"});
  Value ids = a.tensor("ids"), table = a.tensor("table");
  requireRank(a, "ids", ids, 2);
  if (ids.type.dtype != "i64")
    a.error("ids", "'ids' must be integer token ids ([B, T] int)");
  requireRank(a, "table", table, 2);
  return single(sink, site, "embedding", {ids.ref, table.ref}, {},
                f32({ids.shape()[0], ids.shape()[1], table.shape()[1]}));
}

Value bUnembed(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"x", "table"});
  Value x = a.tensor("x"), table = a.tensor("table");
  requireMinRank(a, "x", x, 1);
  requireRank(a, "table", table, 2);
  requireDim(a, "table", table.shape()[1], x.shape().back(), "the table's width");
  Shape s = x.shape();
  s.back() = table.shape()[0];
  return single(sink, site, "unembed", {x.ref, table.ref}, {}, f32(s));
}

Value bTimeSlice(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"table", "like"});
  Value table = a.tensor("table"), like = a.tensor("like");
  requireRank(a, "table", table, 2);
  requireMinRank(a, "like", like, 2);
  return single(sink, site, "time_slice", {table.ref, like.ref}, {},
                f32({like.shape()[1], table.shape()[1]}));
}

Value bLinear(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"x", "out", "bias?", "init?", "bias_init?"});
  Value x = a.tensor("x");
  requireMinRank(a, "x", x, 1);
  Dim in = x.shape().back();
  if (in.symbolic())
    a.error("x", "the last dimension of 'x' must be static, got " + in.str());
  int64_t out = a.dim("out");
  std::string name = sink.nodeName(site, "linear");
  Value w = ownParam(sink, name, "weight", {lit(out), in},
                     initText(a.init("init", makeInit("normal", {0.02})), in.size), site.loc);
  std::vector<Ref> inputs = {x.ref, w.ref};
  if (a.boolean("bias", true)) {
    Value b = ownParam(sink, name, "bias", {lit(out)},
                       initText(a.init("bias_init", makeInit("zeros")), in.size), site.loc);
    inputs.push_back(b.ref);
  }
  Shape s = x.shape();
  s.back() = lit(out);
  Ref r = sink.emit("linear", name, inputs, {}, {f32(s)}, site.loc);
  return Value::tensor(r, f32(s));
}

/// A norm; `eps` is passed on only when the call gives it: its default is
/// the op's (compiler/include/mix/MixOps.td), written out by graph export.
Value norm(NodeSink &sink, CallArgs &a, const CallSite &site, const std::string &op,
           bool weight, bool bias) {
  a.bind({"x", "eps?"});
  Value x = a.tensor("x");
  requireMinRank(a, "x", x, 1);
  Dim d = x.shape().back();
  if (d.symbolic())
    a.error("x", "the last dimension of 'x' must be static, got " + d.str());
  std::string name = sink.nodeName(site, op);
  std::vector<Ref> inputs = {x.ref};
  if (weight)
    inputs.push_back(ownParam(sink, name, "weight", {d}, "ones", site.loc).ref);
  if (bias)
    inputs.push_back(ownParam(sink, name, "bias", {d}, "zeros", site.loc).ref);
  Attrs attrs;
  if (a.has("eps"))
    attrs.push_back({"eps", Attr::real(a.real("eps", 0))});
  Ref r = sink.emit(op, name, inputs, std::move(attrs), {x.type}, site.loc);
  return Value::tensor(r, x.type);
}

Value bLayerNorm(NodeSink &s, CallArgs &a, const CallSite &c) { return norm(s, a, c, "layernorm", true, true); }
Value bRMSNorm(NodeSink &s, CallArgs &a, const CallSite &c) { return norm(s, a, c, "rmsnorm", true, false); }
Value bL2Norm(NodeSink &s, CallArgs &a, const CallSite &c) { return norm(s, a, c, "l2norm", false, false); }

template <const char *Op>
Value unary(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"x"});
  Value x = a.tensor("x");
  return single(sink, site, Op, {x.ref}, {}, x.type);
}
constexpr char kSilu[] = "silu", kGelu[] = "gelu", kRelu[] = "relu",
               kSoftplus[] = "softplus", kSigmoid[] = "sigmoid", kSin[] = "sin",
               kNeg[] = "neg";

Value bSplit(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"x", "..."});
  Value x = a.tensor("x");
  requireMinRank(a, "x", x, 1);
  if (a.rest().size() < 2)
    a.error("x", "split(x, n1, n2, ...) needs at least two sizes");
  std::vector<int64_t> sizes;
  int64_t total = 0;
  for (const CallArgs::Arg &s : a.rest()) {
    if (s.value.kind != Value::Kind::Int || s.value.i <= 0)
      fail(s.loc, "split(): sizes must be positive integers, got " + describe(s.value));
    sizes.push_back(s.value.i);
    if (__builtin_add_overflow(total, s.value.i, &total))
      fail(s.loc, "split(): the sizes add up to more than fits in 64 bits");
  }
  if (x.shape().back() != lit(total))
    a.error("x", "sizes add up to " + std::to_string(total) + " but the last dimension of 'x' is " +
                     x.shape().back().str());
  std::vector<TensorType> results;
  for (int64_t n : sizes) {
    Shape s = x.shape();
    s.back() = lit(n);
    results.push_back(f32(s));
  }
  std::string name = sink.nodeName(site, "split");
  Ref r = sink.emit("split", name, {x.ref}, {{"sizes", Attr::list(sizes)}}, results, site.loc);
  Value tuple;
  tuple.kind = Value::Kind::Tuple;
  for (size_t i = 0; i < results.size(); ++i)
    tuple.items.push_back(Value::tensor(Ref{r.node, static_cast<int>(i), -1}, results[i]));
  return tuple;
}

Value bConcat(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"..."});
  if (a.rest().empty())
    fail(a.loc(), "concat() needs at least one tensor");
  std::vector<Ref> inputs;
  Shape s;
  int64_t last = 0;
  for (const CallArgs::Arg &t : a.rest()) {
    if (t.value.kind != Value::Kind::Tensor)
      fail(t.loc, "concat(): arguments must be tensors, got " + describe(t.value));
    const Shape &ts = t.value.shape();
    if (s.empty())
      s = ts;
    if (ts.size() != s.size() || ts.empty() || !std::equal(ts.begin(), ts.end() - 1, s.begin()))
      fail(t.loc, "concat(): " + shapeStr(ts) + " does not match " + shapeStr(s) +
                      " except in the last dimension");
    if (ts.back().symbolic())
      fail(t.loc, "concat(): the last dimension must be static");
    last += ts.back().size;
    inputs.push_back(t.value.ref);
  }
  s.back() = lit(last);
  return single(sink, site, "concat", inputs, {}, f32(s));
}

Value bReshape(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"x", "shape"});
  Value x = a.tensor("x");
  const Value &target = a.arg("shape").value;
  if (target.kind != Value::Kind::List)
    a.error("shape", "'shape' must be a list such as [B, T, h, 2]");
  // Leading entries equal to x's leading dims are kept; the rest is static.
  size_t keep = 0;
  Shape out;
  for (const Value &d : target.items) {
    Dim dim;
    if (d.kind == Value::Kind::SymDim)
      dim.symbol = d.s;
    else if (d.kind == Value::Kind::Int && d.i > 0)
      dim.size = d.i;
    else
      a.error("shape", "reshape dimensions must be positive integers or symbols, got " + describe(d));
    if (keep == out.size() && keep < x.shape().size() && dim == x.shape()[keep])
      ++keep;
    else if (dim.symbolic())
      a.error("shape", "symbolic dimension " + dim.str() +
                           " may only appear in the kept leading dimensions");
    out.push_back(dim);
  }
  for (size_t i = keep; i < x.shape().size(); ++i)
    if (x.shape()[i].symbolic())
      a.error("x", "cannot re-lay out the symbolic dimension " + x.shape()[i].str());
  std::vector<int64_t> trailing;
  for (size_t i = keep; i < out.size(); ++i)
    trailing.push_back(out[i].size);
  int64_t from = checkedElements(x.shape(), keep, site.loc), to = checkedElements(out, keep, site.loc);
  if (from != to)
    a.error("shape", "cannot reshape " + shapeStr(x.shape()) + " into " + shapeStr(out) +
                         " (" + std::to_string(from) + " vs " + std::to_string(to) + " elements)");
  return single(sink, site, "reshape", {x.ref},
                {{"keep", Attr::integer(static_cast<int64_t>(keep))},
                 {"shape", Attr::list(trailing)}},
                f32(out));
}

Value bPermute(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"x", "perm"});
  Value x = a.tensor("x");
  const Value &p = a.arg("perm").value;
  size_t rank = x.shape().size();
  if (p.kind != Value::Kind::List || p.items.size() != rank)
    a.error("perm", "'perm' must list each of the " + std::to_string(rank) + " dimensions once");
  std::vector<int64_t> perm;
  std::vector<bool> seen(rank, false);
  Shape out;
  for (const Value &v : p.items) {
    if (v.kind != Value::Kind::Int || v.i < 0 || v.i >= static_cast<int64_t>(rank) || seen[v.i])
      a.error("perm", "'perm' must be a permutation of 0.." + std::to_string(rank - 1));
    seen[v.i] = true;
    perm.push_back(v.i);
    out.push_back(x.shape()[v.i]);
  }
  return single(sink, site, "permute", {x.ref}, {{"perm", Attr::list(perm)}}, f32(out));
}

Value bSum(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"x", "axis", "keepdim?"});
  Value x = a.tensor("x");
  int64_t rank = static_cast<int64_t>(x.shape().size());
  int64_t axis = a.integer("axis", 0);
  if (axis < -rank || axis >= rank)
    a.error("axis", "axis " + std::to_string(axis) + " is out of range for " + shapeStr(x.shape()));
  if (axis < 0)
    axis += rank;
  bool keep = a.boolean("keepdim", false);
  Shape s = x.shape();
  if (keep)
    s[axis] = lit(1);
  else
    s.erase(s.begin() + axis);
  return single(sink, site, "sum", {x.ref},
                {{"axis", Attr::integer(axis)}, {"keepdim", Attr::boolean(keep)}}, f32(s));
}

// ---- products for scan bodies: outer, matvec, vecmat, column ----
// Written with reshape, mul and sum (broadcasting over leading dims), so
// every back end that runs those runs these; x [B, m] and a state [B, m, n]
// are the usual shapes, and a loop-invariant matrix [m, n] broadcasts too.

/// x [..., m] -> [..., m, 1]
Value withTrailingOne(NodeSink &sink, const CallSite &site, const Value &x, bool named) {
  Shape s = x.shape();
  s.push_back(lit(1));
  CallSite at{site.fn, site.loc, named ? site.name : ""};
  return single(sink, at, "reshape", {x.ref},
                {{"keep", Attr::integer(static_cast<int64_t>(x.shape().size()))}, {"shape", Attr::list({1})}},
                f32(s));
}

/// x [..., n] -> [..., 1, n] (n static)
Value withOneBeforeLast(NodeSink &sink, const CallSite &site, const CallArgs &a, const std::string &arg,
                        const Value &x) {
  const Dim n = x.shape().back();
  if (n.symbolic())
    a.error(arg, "'" + arg + "' needs a static last dimension, got " + shapeStr(x.shape()));
  Shape s = x.shape();
  s.insert(s.end() - 1, lit(1));
  return single(sink, CallSite{site.fn, site.loc, ""}, "reshape", {x.ref},
                {{"keep", Attr::integer(static_cast<int64_t>(x.shape().size()) - 1)},
                 {"shape", Attr::list({1, n.size})}},
                f32(s));
}

Value multiply(NodeSink &sink, const CallSite &site, const Value &x, const Value &y, bool named) {
  TensorType t = f32(broadcastShapes(x.shape(), y.shape(), site.loc));
  return single(sink, CallSite{site.fn, site.loc, named ? site.name : ""}, "mul", {x.ref, y.ref}, {}, t);
}

Value sumAxis(NodeSink &sink, const CallSite &site, const Value &x, int64_t axisFromEnd) {
  const int64_t axis = static_cast<int64_t>(x.shape().size()) - axisFromEnd;
  Shape s = x.shape();
  s.erase(s.begin() + axis);
  return single(sink, site, "sum", {x.ref}, {{"axis", Attr::integer(axis)}, {"keepdim", Attr::boolean(false)}},
                f32(s));
}

/// outer(a [..., m], b [..., n]) = a bᵀ per row: [..., m, n]
Value bOuter(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"a", "b"});
  Value x = a.tensor("a"), y = a.tensor("b");
  requireMinRank(a, "a", x, 1);
  requireMinRank(a, "b", y, 1);
  return multiply(sink, site, withTrailingOne(sink, site, x, false), withOneBeforeLast(sink, site, a, "b", y), true);
}

/// matvec(M [..., m, n], x [..., n]) = M x per row: [..., m]
Value bMatvec(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"m", "x"});
  Value m = a.tensor("m"), x = a.tensor("x");
  requireMinRank(a, "m", m, 2);
  requireMinRank(a, "x", x, 1);
  requireDim(a, "x", x.shape().back(), m.shape().back(), "x's last dimension");
  return sumAxis(sink, site, multiply(sink, site, m, withOneBeforeLast(sink, site, a, "x", x), false), 1);
}

/// vecmat(x [..., m], M [..., m, n]) = xᵀ M per row: [..., n]
Value bVecmat(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"x", "m"});
  Value x = a.tensor("x"), m = a.tensor("m");
  requireMinRank(a, "x", x, 1);
  requireMinRank(a, "m", m, 2);
  requireDim(a, "x", x.shape().back(), m.shape()[m.shape().size() - 2], "x's last dimension");
  return sumAxis(sink, site, multiply(sink, site, withTrailingOne(sink, site, x, false), m, false), 2);
}

/// column(x [..., m]) = [..., m, 1]: scales the rows of a [..., m, n] value
Value bColumn(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"x"});
  Value x = a.tensor("x");
  requireMinRank(a, "x", x, 1);
  return withTrailingOne(sink, site, x, true);
}

Value bCausalConv(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"x", "k", "bias?"});
  Value x = a.tensor("x");
  requireRank(a, "x", x, 3);
  int64_t k = a.dim("k");
  Dim c = x.shape()[2];
  std::string name = sink.nodeName(site, "causal_conv");
  // Conv1d(C, C, k, groups=C): fan_in = k.
  Value w = ownParam(sink, name, "weight", {c, lit(k)}, initText(makeInit("torch_default"), k), site.loc);
  std::vector<Ref> inputs = {x.ref, w.ref};
  if (a.boolean("bias", true))
    inputs.push_back(ownParam(sink, name, "bias", {c}, initText(makeInit("torch_default"), k), site.loc).ref);
  Ref r = sink.emit("causal_conv", name, inputs, {}, {x.type}, site.loc);
  return Value::tensor(r, x.type);
}

Value bLongConv(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"x", "filter"});
  Value x = a.tensor("x"), h = a.tensor("filter");
  requireRank(a, "x", x, 3);
  requireRank(a, "filter", h, 2);
  requireDim(a, "filter", h.shape()[1], x.shape()[2], "the filter's channel count");
  if (h.shape()[0] != x.shape()[1] && h.shape()[0].symbolic())
    a.error("filter", "the filter's length " + h.shape()[0].str() + " is not the input's length");
  return single(sink, site, "long_conv", {x.ref, h.ref}, {}, x.type);
}

Value bShiftConv(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"x", "b", "c"});
  Value x = a.tensor("x"), b = a.tensor("b"), c = a.tensor("c");
  requireRank(a, "x", x, 3);
  requireRank(a, "b", b, 2);
  requireRank(a, "c", c, 2);
  requireDim(a, "b", b.shape()[0], x.shape()[2], "b's channel count");
  if (b.shape() != c.shape())
    a.error("c", "'b' and 'c' must have one shape, got " + shapeStr(b.shape()) + " and " +
                     shapeStr(c.shape()));
  return single(sink, site, "shift_conv", {x.ref, b.ref, c.ref}, {}, x.type);
}

Value bDiagSSM(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"x", "log_dt", "log_a_real", "a_imag", "b", "c"});
  Value x = a.tensor("x"), dt = a.tensor("log_dt"), ar = a.tensor("log_a_real"),
        ai = a.tensor("a_imag"), b = a.tensor("b"), c = a.tensor("c");
  requireRank(a, "x", x, 4);
  requireRank(a, "log_dt", dt, 1);
  requireRank(a, "log_a_real", ar, 2);
  requireRank(a, "b", b, 3);
  requireRank(a, "c", c, 3);
  Dim h = x.shape()[2];
  requireDim(a, "log_dt", dt.shape()[0], h, "log_dt's size");
  requireDim(a, "log_a_real", ar.shape()[0], h, "log_a_real's head count");
  if (ai.shape() != ar.shape())
    a.error("a_imag", "'a_imag' must have the shape of 'log_a_real', " + shapeStr(ar.shape()));
  for (const auto &[arg, v] : {std::pair<const char *, Value>{"b", b}, {"c", c}})
    if (v.shape() != Shape{h, ar.shape()[1], lit(2)})
      a.error(arg, std::string("'") + arg + "' must be [heads, modes, 2] = " +
                       shapeStr({h, ar.shape()[1], lit(2)}) + ", got " + shapeStr(v.shape()));
  std::string name = sink.nodeName(site, "diag_ssm");
  Ref r = sink.emit("diag_ssm", name, {x.ref, dt.ref, ar.ref, ai.ref, b.ref, c.ref},
                    {{"state_name", Attr::str(sink.stateName(name))}}, {x.type}, site.loc);
  return Value::tensor(r, x.type);
}

/// q, k [B, T, K] and v [B, T, V].
TensorType qkvResult(CallArgs &a) {
  requireSequences(a, {"q", "k", "v"});
  const Value &q = a.arg("q").value, &k = a.arg("k").value, &v = a.arg("v").value;
  requireDim(a, "k", k.shape()[2], q.shape()[2], "k's feature size");
  return f32({q.shape()[0], q.shape()[1], v.shape()[2]});
}

Value bSoftmaxAttention(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"q", "k", "v"});
  TensorType t = qkvResult(a);
  return single(sink, site, "softmax_attention",
                {a.tensor("q").ref, a.tensor("k").ref, a.tensor("v").ref}, {}, t);
}

Value bTaylor(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"x"});
  Value x = a.tensor("x");
  requireMinRank(a, "x", x, 1);
  int64_t f = x.shape().back().size;
  if (f <= 0)
    a.error("x", "the feature dimension must be static");
  Shape s = x.shape();
  s.back() = lit(1 + f + f * f);
  return single(sink, site, "taylor_map", {x.ref}, {}, f32(s));
}

Value bLinearAttention(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"q", "k", "v", "eps?"});
  TensorType t = qkvResult(a);
  std::string name = sink.nodeName(site, "linear_attention");
  Attrs attrs = {{"state_name", Attr::str(sink.stateName(name))}};
  if (a.has("eps")) // else the op's default (MixOps.td)
    attrs.push_back({"eps", Attr::real(a.real("eps", 0))});
  Ref r = sink.emit("linear_attention", name,
                    {a.tensor("q").ref, a.tensor("k").ref, a.tensor("v").ref}, std::move(attrs),
                    {t}, site.loc);
  return Value::tensor(r, t);
}

Value bSelectiveScan(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"x", "delta", "A", "B", "C", "D"});
  requireSequences(a, {"x", "delta", "B", "C"});
  Value x = a.tensor("x"), delta = a.tensor("delta"), A = a.tensor("A"),
        B = a.tensor("B"), C = a.tensor("C"), D = a.tensor("D");
  requireRank(a, "A", A, 2);
  requireRank(a, "D", D, 1);
  Dim ch = x.shape()[2], n = A.shape()[1];
  requireDim(a, "delta", delta.shape()[2], ch, "delta's channel count");
  requireDim(a, "A", A.shape()[0], ch, "A's channel count");
  requireDim(a, "B", B.shape()[2], n, "B's state size");
  requireDim(a, "C", C.shape()[2], n, "C's state size");
  requireDim(a, "D", D.shape()[0], ch, "D's size");
  std::string name = sink.nodeName(site, "selective_scan");
  Ref r = sink.emit("selective_scan", name, {x.ref, delta.ref, A.ref, B.ref, C.ref, D.ref},
                    {{"state_name", Attr::str(sink.stateName(name))}}, {x.type}, site.loc);
  return Value::tensor(r, x.type);
}

Value bDeltaRule(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"q", "k", "v", "beta"});
  TensorType t = qkvResult(a);
  requireSequences(a, {"q", "beta"});
  Value beta = a.tensor("beta");
  requireDim(a, "beta", beta.shape()[2], lit(1), "beta's last dimension");
  std::string name = sink.nodeName(site, "delta_rule");
  Ref r = sink.emit("delta_rule", name,
                    {a.tensor("q").ref, a.tensor("k").ref, a.tensor("v").ref, beta.ref},
                    {{"state_name", Attr::str(sink.stateName(name))}}, {t}, site.loc);
  return Value::tensor(r, t);
}

// ---------------------------------------------------------------- scalars and inits

/// exp/abs work on tensors and on numbers.
template <const char *Op, double (*Fn)(double)>
Value tensorOrScalar(NodeSink &sink, CallArgs &a, const CallSite &site) {
  a.bind({"x"});
  const Value &x = a.arg("x").value;
  if (x.kind == Value::Kind::Tensor)
    return single(sink, site, Op, {x.ref}, {}, x.type);
  return Value::real(Fn(a.real("x", 0)));
}
double fabsFn(double x) { return std::fabs(x); }
double expFn(double x) { return std::exp(x); }
constexpr char kExp[] = "exp", kAbs[] = "abs";

template <double (*Fn)(double), bool ToInt>
Value scalar(NodeSink &, CallArgs &a, const CallSite &) {
  a.bind({"x"});
  double r = Fn(a.real("x", 0));
  if (!std::isfinite(r))
    a.error("x", "result is not a finite number");
  // Converting a double beyond int64's range is undefined behaviour.
  if (ToInt && !(r >= -9.2e18 && r <= 9.2e18))
    a.error("x", "result does not fit in a 64-bit integer");
  return ToInt ? Value::integer(static_cast<int64_t>(r)) : Value::real(r);
}
double sqrtFn(double x) { return std::sqrt(x); }
double logFn(double x) { return std::log(x); }
double ceilFn(double x) { return std::ceil(x); }
double floorFn(double x) { return std::floor(x); }

template <bool Max>
Value minMax(NodeSink &, CallArgs &a, const CallSite &) {
  a.bind({"a", "b"});
  const Value &x = a.arg("a").value, &y = a.arg("b").value;
  if (x.kind == Value::Kind::Int && y.kind == Value::Kind::Int)
    return Value::integer(Max ? std::max(x.i, y.i) : std::min(x.i, y.i));
  double p = a.real("a", 0), q = a.real("b", 0);
  return Value::real(Max ? std::max(p, q) : std::min(p, q));
}

/// An init rule with `Arity` numeric arguments.
template <const char *Rule, int Arity>
Value initRule(NodeSink &, CallArgs &a, const CallSite &) {
  static const std::vector<std::string> names = {"a", "b", "c"};
  a.bind(std::vector<std::string>(names.begin(), names.begin() + Arity));
  std::vector<double> args;
  for (int i = 0; i < Arity; ++i)
    args.push_back(a.real(names[i], 0));
  return makeInit(Rule, args);
}
constexpr char kNormal[] = "normal", kUniform[] = "uniform", kZeros[] = "zeros",
               kOnes[] = "ones", kConstant[] = "constant", kTorchDefault[] = "torch_default",
               kS4DRealLog[] = "s4d_real_log", kDtBias[] = "dt_bias", kLogOfUniform[] = "log_of_uniform",
               kImplicitPos[] = "implicit_pos", kLinspace[] = "linspace",
               kShiftE1[] = "shift_e1", kS4DLinImag[] = "s4d_lin_imag";
} // namespace

Shape broadcastShapes(const Shape &a, const Shape &b, SourceLoc loc) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    Dim da = i < a.size() ? a[a.size() - 1 - i] : Dim{1, ""};
    Dim db = i < b.size() ? b[b.size() - 1 - i] : Dim{1, ""};
    Dim d;
    if (da == Dim{1, ""})
      d = db;
    else if (db == Dim{1, ""} || da == db)
      d = da;
    else
      fail(loc, "shape mismatch: " + shapeStr(a) + " and " + shapeStr(b) + " do not broadcast");
    out[rank - 1 - i] = d;
  }
  return out;
}

const std::map<std::string, BuiltinFn> &builtins() {
  static const std::map<std::string, BuiltinFn> table = {
      {"param", bParam},
      {"embedding", bEmbedding},
      {"unembed", bUnembed},
      {"time_slice", bTimeSlice},
      {"linear", bLinear},
      {"layernorm", bLayerNorm},
      {"rmsnorm", bRMSNorm},
      {"l2norm", bL2Norm},
      {"silu", unary<kSilu>},
      {"gelu", unary<kGelu>},
      {"relu", unary<kRelu>},
      {"softplus", unary<kSoftplus>},
      {"sigmoid", unary<kSigmoid>},
      {"sin", unary<kSin>},
      {"neg", unary<kNeg>},
      {"exp", tensorOrScalar<kExp, expFn>},
      {"abs", tensorOrScalar<kAbs, fabsFn>},
      {"split", bSplit},
      {"concat", bConcat},
      {"reshape", bReshape},
      {"permute", bPermute},
      {"sum", bSum},
      {"outer", bOuter},
      {"matvec", bMatvec},
      {"vecmat", bVecmat},
      {"column", bColumn},
      {"causal_conv", bCausalConv},
      {"long_conv", bLongConv},
      {"shift_conv", bShiftConv},
      {"diag_ssm", bDiagSSM},
      {"softmax_attention", bSoftmaxAttention},
      {"taylor", bTaylor},
      {"linear_attention", bLinearAttention},
      {"selective_scan", bSelectiveScan},
      {"delta_rule", bDeltaRule},
      {"sqrt", scalar<sqrtFn, false>},
      {"log", scalar<logFn, false>},
      {"ceil", scalar<ceilFn, true>},
      {"floor", scalar<floorFn, true>},
      {"min", minMax<false>},
      {"max", minMax<true>},
      {"normal", initRule<kNormal, 1>},
      {"uniform", initRule<kUniform, 2>},
      {"zeros", initRule<kZeros, 0>},
      {"ones", initRule<kOnes, 0>},
      {"constant", initRule<kConstant, 1>},
      {"torch_default", initRule<kTorchDefault, 0>},
      {"s4d_real_log", initRule<kS4DRealLog, 0>},
      {"dt_bias", initRule<kDtBias, 3>},
      {"log_of_uniform", initRule<kLogOfUniform, 2>},
      {"implicit_pos", initRule<kImplicitPos, 1>},
      {"linspace", initRule<kLinspace, 2>},
      {"shift_e1", initRule<kShiftE1, 0>},
      {"s4d_lin_imag", initRule<kS4DLinImag, 0>},
  };
  return table;
}

} // namespace mixc::dsl
