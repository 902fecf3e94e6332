//===- Elaborator.cpp - evaluate the DSL into a Program ---------------------===//
//
// The DSL is a generator: integer parameters, loops and branches are
// evaluated here, and each mixer/block is instantiated once per distinct
// (parameters, input shapes). Tensor expressions become nodes of the
// instance being built; calls to other instances become `call` nodes that
// the compiler's inlining pass expands with the call's name scope.
//
//===----------------------------------------------------------------------===//
#include "dsl/Elaborator.h"
#include "dsl/Builtins.h"
#include "support/Suggest.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <deque>
#include <set>

namespace mixc::dsl {

std::string shapeStr(const Shape &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + s[i].str();
  return out + "]";
}

const char *kindName(Value::Kind k) {
  switch (k) {
  case Value::Kind::None: return "nothing";
  case Value::Kind::Int: return "an integer";
  case Value::Kind::Float: return "a number";
  case Value::Kind::Bool: return "a boolean";
  case Value::Kind::Str: return "a string";
  case Value::Kind::SymDim: return "a symbolic dimension";
  case Value::Kind::Tensor: return "a tensor";
  case Value::Kind::Mixer: return "a mixer";
  case Value::Kind::Init: return "an init rule";
  case Value::Kind::List: return "a list";
  case Value::Kind::Tuple: return "a tuple";
  }
  return "a value";
}

static std::string fmt(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

std::string describe(const Value &v) {
  switch (v.kind) {
  case Value::Kind::Int: return std::to_string(v.i);
  case Value::Kind::Float: return fmt(v.f);
  case Value::Kind::Bool: return v.b ? "true" : "false";
  case Value::Kind::Str: return "\"" + v.s + "\"";
  case Value::Kind::SymDim: return v.s;
  case Value::Kind::Tensor: return "tensor " + shapeStr(v.shape());
  case Value::Kind::Init: return initText(v, 1);
  case Value::Kind::Mixer: {
    std::string s = v.mixer->def->name + "(";
    for (size_t i = 0; i < v.mixer->bound.size(); ++i)
      s += (i ? ", " : "") + v.mixer->bound[i].first + "=" + describe(v.mixer->bound[i].second);
    return s + ")";
  }
  case Value::Kind::List:
  case Value::Kind::Tuple: {
    std::string s = "[";
    for (size_t i = 0; i < v.items.size(); ++i)
      s += (i ? ", " : "") + describe(v.items[i]);
    return s + "]";
  }
  case Value::Kind::None: return "nothing";
  }
  return "?";
}

namespace {

std::string join(const std::string &scope, const std::string &name) {
  if (scope.empty())
    return name;
  return name.empty() ? scope : scope + "." + name;
}

/// A `let` target offered to the expression that computes it.
struct Hint {
  std::string name;
  bool used = false;
};

std::vector<std::string> inputNames(const Def &def) {
  std::vector<std::string> names;
  for (const StmtPtr &s : def.body)
    if (s->kind == Stmt::Kind::Input)
      names.push_back(s->names[0]);
  return names;
}

class Elaborator : public NodeSink {
public:
  explicit Elaborator(const DefTable &defs) : defs_(defs) {}

  Program run(const Def &model, const std::vector<ConfigEntry> &config) {
    std::vector<std::pair<std::string, Value>> given;
    for (const ConfigEntry &c : config) {
      auto it = std::find_if(model.params.begin(), model.params.end(),
                             [&](const Param &p) { return p.name == c.key; });
      if (it == model.params.end()) {
        std::vector<std::string> names;
        std::string list;
        for (const Param &p : model.params) {
          names.push_back(p.name);
          list += (list.empty() ? "" : ", ") + p.name;
        }
        fail({}, "unknown config key '" + c.key + "'" + support::didYouMean(c.key, names) + "; model '" +
                     model.name + "' has parameters: " + (list.empty() ? "none" : list));
      }
      given.push_back({c.key, parseConfigValue(*it, c.value)});
    }
    prog_.entry = instantiate(model, given, {}, model.loc);
    return std::move(prog_);
  }

  // ---- NodeSink ----
  std::string nodeName(const CallSite &site, const std::string &op) override {
    State &st = state();
    if (site.name.empty())
      return join(st.prefix, "_" + op + std::to_string(st.autoCounter++));
    std::string full = join(st.prefix, site.name);
    claim(full, site.loc);
    return full;
  }

  Ref emit(const std::string &op, const std::string &name, std::vector<Ref> inputs,
           std::vector<std::pair<std::string, Attr>> attrs, std::vector<TensorType> results,
           SourceLoc loc) override {
    State &st = state();
    if (st.scalarOnly)
      fail(loc, "default values of parameters must not be tensors");
    if (st.parent >= 0 && op == "param")
      fail(loc, "a scan body creates no parameters: make them outside the scan and use them inside "
                "(a projection of the input as a sequence, read with x[t])");
    if (st.names.count(name) == 0)
      claim(name, loc);
    if (++nodes_ > 1000000)
      fail(loc, "the model has more than 1000000 nodes");
    Node n;
    n.op = op;
    n.name = name;
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    n.results = std::move(results);
    n.loc = loc;
    st.fn.nodes.push_back(std::move(n));
    return Ref{static_cast<int>(st.fn.nodes.size()) - 1, 0, -1};
  }

  std::string stateName(const std::string &nodeName) override {
    State &st = state();
    std::string candidate = join(st.prefix, "state");
    if (st.names.count(candidate))
      return nodeName + ".state";
    claim(candidate, {});
    return candidate;
  }

private:
  struct State {
    Func fn;
    const Def *def = nullptr;
    std::vector<std::map<std::string, Value>> env;
    std::string prefix;
    std::map<std::string, SourceLoc> names;
    int autoCounter = 0;
    bool returned = false;
    bool scalarOnly = false; // evaluating parameter defaults
    SourceLoc callLoc;
    std::vector<Value> inputs;
    size_t nextInput = 0;
    // A scan body (execScan): the enclosing state (index into states_), the
    // step variable, the states (its first args), the enclosing values it
    // reads (its further args; sliced: `x[t]`) and what it emits.
    int parent = -1;
    std::string stepVar;
    std::vector<std::string> stateVars;
    struct Capture {
      Ref outer;
      bool sliced;
      std::string name;
    };
    std::vector<Capture> captures;
    std::set<std::string> capturedNames;
    struct Emitted {
      std::string name;
      Value value;
      SourceLoc loc;
    };
    std::vector<Emitted> emits;
  };

  State &state() { return states_.back(); }

  void claim(const std::string &name, SourceLoc loc) {
    State &st = state();
    auto [it, inserted] = st.names.emplace(name, loc);
    if (!inserted)
      fail(loc, "node name '" + name + "' is already used" +
                    (it->second.line ? " (line " + std::to_string(it->second.line) + ")" : "") +
                    "; give this node another name");
  }

  Value parseConfigValue(const Param &p, const std::string &text) {
    auto bad = [&](const char *what) -> Value {
      fail({}, "config key '" + p.name + "' expects " + what + ", got '" + text + "'");
    };
    if (p.type == "int") {
      char *end = nullptr;
      errno = 0;
      long long v = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end)
        return bad("an integer");
      if (errno == ERANGE) // strtoll saturates at INT64_MAX/MIN without this check
        return bad("an integer that fits in 64 bits");
      return Value::integer(v);
    }
    if (p.type == "float") {
      char *end = nullptr;
      double v = std::strtod(text.c_str(), &end);
      if (text.empty() || *end || !std::isfinite(v))
        return bad("a number");
      return Value::real(v);
    }
    if (p.type == "bool") {
      if (text == "true" || text == "1")
        return Value::boolean(true);
      if (text == "false" || text == "0")
        return Value::boolean(false);
      return bad("true or false");
    }
    fail({}, "config key '" + p.name + "' is a mixer parameter and cannot be set from a config");
  }

  // ---- instantiation ----

  /// Checks `v` against the declared type of `p`, converting int to float.
  Value typed(const Param &p, Value v, SourceLoc loc, const Def &def) {
    auto bad = [&]() -> Value {
      fail(loc, "parameter '" + p.name + "' of '" + def.name + "' is " + p.type + ", got " +
                    kindName(v.kind) + " (" + describe(v) + ")");
    };
    if (p.type == "int")
      return v.kind == Value::Kind::Int ? v : bad();
    if (p.type == "float") {
      if (v.kind == Value::Kind::Int)
        return Value::real(static_cast<double>(v.i));
      return v.kind == Value::Kind::Float ? v : bad();
    }
    if (p.type == "bool")
      return v.kind == Value::Kind::Bool ? v : bad();
    return v.kind == Value::Kind::Mixer ? v : bad();
  }

  /// Binds all parameters of `def`: given values, then defaults in order.
  std::vector<std::pair<std::string, Value>>
  bindParams(const Def &def, const std::vector<std::pair<std::string, Value>> &given,
             SourceLoc loc) {
    std::vector<std::pair<std::string, Value>> out;
    State scratch;
    scratch.scalarOnly = true;
    scratch.env.emplace_back();
    states_.push_back(std::move(scratch));
    for (const Param &p : def.params) {
      auto it = std::find_if(given.begin(), given.end(),
                             [&](const auto &g) { return g.first == p.name; });
      Value v;
      if (it != given.end()) {
        v = typed(p, it->second, loc, def);
      } else if (p.defaultValue) {
        v = typed(p, eval(*p.defaultValue, nullptr), p.defaultValue->loc, def);
      } else {
        states_.pop_back();
        fail(loc, "'" + def.name + "' is missing parameter '" + p.name + "' (" + p.type + ")");
      }
      state().env[0][p.name] = v;
      out.push_back({p.name, v});
    }
    states_.pop_back();
    return out;
  }

  std::string instanceKey(const Def &def, const std::vector<std::pair<std::string, Value>> &params,
                          const std::vector<Value> &inputs) {
    std::string key = def.name + "(";
    for (const auto &[n, v] : params)
      key += n + "=" + describe(v) + ",";
    key += ";";
    for (const Value &v : inputs)
      key += shapeStr(v.shape()) + v.type.dtype + ",";
    return key + ")";
  }

  std::string symbolFor(const Def &def, const std::vector<std::pair<std::string, Value>> &params) {
    std::string sym = def.name;
    for (const auto &[n, v] : params) {
      std::string text = v.kind == Value::Kind::Mixer ? v.mixer->def->name : describe(v);
      for (char &c : text)
        if (!std::isalnum(static_cast<unsigned char>(c)))
          c = c == '-' ? 'm' : 'p';
      sym += "_" + n + text;
    }
    std::string unique = sym;
    for (int i = 2; symbols_.count(unique); ++i)
      unique = sym + "_" + std::to_string(i);
    symbols_.insert(unique);
    return unique;
  }

  int instantiate(const Def &def, const std::vector<std::pair<std::string, Value>> &given,
                  std::vector<Value> inputs, SourceLoc callLoc) {
    if (std::find(stack_.begin(), stack_.end(), &def) != stack_.end())
      fail(callLoc, "'" + def.name + "' uses itself (recursion is not allowed)");
    if (stack_.size() > 64)
      fail(callLoc, "definitions nest more than 64 deep");
    std::vector<std::pair<std::string, Value>> params = bindParams(def, given, callLoc);
    std::string key = instanceKey(def, params, inputs);
    if (auto it = instances_.find(key); it != instances_.end())
      return it->second;

    State st;
    st.def = &def;
    st.fn.defName = def.name;
    st.fn.kind = def.kind;
    st.fn.loc = def.loc;
    st.fn.symbol = symbolFor(def, params);
    st.callLoc = callLoc;
    st.inputs = std::move(inputs);
    st.env.emplace_back();
    for (const auto &[n, v] : params) {
      st.env[0][n] = v;
      st.fn.params.push_back({n, describe(v)});
    }
    stack_.push_back(&def);
    states_.push_back(std::move(st));
    execBody(def.body, /*topLevel=*/true);
    State &done = state();
    if (!done.returned)
      fail(def.loc, std::string(defKindName(def.kind)) + " '" + def.name + "' ends without 'return'");
    if (done.nextInput < done.inputs.size())
      fail(callLoc, "'" + def.name + "' takes " + std::to_string(done.nextInput) +
                        " tensor input(s), got " + std::to_string(done.inputs.size()));
    Func fn = std::move(done.fn);
    states_.pop_back();
    stack_.pop_back();
    prog_.funcs.push_back(std::move(fn));
    int index = static_cast<int>(prog_.funcs.size()) - 1;
    instances_[key] = index;
    return index;
  }

  /// A model's (first) result is its logits, float [B, T, vocab]: the
  /// runtime reads every one of them so. Anything else (its int tokens, a
  /// weight) is refused here, at its `return`, not by MLIR's verifier.
  void checkLogits(const TensorType &t, SourceLoc loc) {
    const bool rows = t.shape.size() == 3 && t.shape[0].symbol == "B" && t.shape[1].symbol == "T";
    if (t.dtype != "f32" || !rows)
      fail(loc, "a model returns its logits, a float [B, T, vocab] tensor; this is " +
                    std::string(t.dtype == "f32" ? "float " : "int ") + shapeStr(t.shape) +
                    (t.dtype == "f32" ? "" : " (the tokens are the model's int input)"));
  }

  // ---- statements ----

  void execBody(const std::vector<StmtPtr> &body, bool topLevel) {
    for (const StmtPtr &s : body) {
      if (state().returned)
        fail(s->loc, "statement after 'return'");
      exec(*s, topLevel);
    }
  }

  Value *lookup(const std::string &name) {
    State &st = state();
    if (Value *v = lookupIn(st, name))
      return v;
    if (st.parent < 0)
      return nullptr;
    // A scan body reads the enclosing definition's values: numbers as they
    // are, tensors as loop-invariant inputs of the step.
    Value *outer = lookupIn(states_[st.parent], name);
    if (!outer || outer->kind != Value::Kind::Tensor)
      return outer;
    Value captured = capture(*outer, /*sliced=*/false, name);
    st.capturedNames.insert(name);
    return &(st.env.front()[name] = captured);
  }

  static Value *lookupIn(State &st, const std::string &name) {
    for (auto it = st.env.rbegin(); it != st.env.rend(); ++it)
      if (auto f = it->find(name); f != it->end())
        return &f->second;
    return nullptr;
  }

  /// The step's arg for the enclosing value `outer` (one arg per value and
  /// kind): the whole value, or one step of a [B, T, ...] sequence ([B, ...]).
  Value capture(const Value &outer, bool sliced, const std::string &name) {
    State &st = state();
    const size_t first = st.stateVars.size();
    for (size_t i = 0; i < st.captures.size(); ++i) {
      const State::Capture &c = st.captures[i];
      if (c.sliced == sliced && c.outer.node == outer.ref.node && c.outer.result == outer.ref.result &&
          c.outer.arg == outer.ref.arg)
        return Value::tensor(Ref{-1, 0, static_cast<int>(first + i)}, st.fn.args[first + i]);
    }
    TensorType t = outer.type;
    if (sliced)
      t.shape.erase(t.shape.begin() + 1);
    st.captures.push_back({outer.ref, sliced, name});
    st.fn.args.push_back(t);
    st.fn.argNames.push_back(sliced ? name + "[t]" : name);
    return Value::tensor(Ref{-1, 0, static_cast<int>(st.fn.args.size()) - 1}, t);
  }

  void define(const std::string &name, Value v, SourceLoc loc) {
    auto &scope = state().env.back();
    if (scope.count(name))
      fail(loc, "'" + name + "' is already defined here; use '" + name + " = ...' to rebind it");
    scope[name] = std::move(v);
  }

  Value tap(const Value &v, const std::string &name, SourceLoc loc) {
    std::string full = join(state().prefix, name);
    claim(full, loc);
    Ref r = emit("tap", full, {v.ref}, {}, {v.type}, loc);
    return Value::tensor(r, v.type);
  }

  void exec(const Stmt &s, bool topLevel) {
    switch (s.kind) {
    case Stmt::Kind::Input:
      if (!topLevel)
        fail(s.loc, "'input' must be at the top level of a definition");
      return execInput(s);
    case Stmt::Kind::Let: {
      if (s.names.size() == 1) {
        Hint h{s.names[0]};
        Value v = eval(*s.exprs[0], &h);
        if (v.kind == Value::Kind::Tuple)
          fail(s.loc, "the right-hand side gives " + std::to_string(v.items.size()) +
                          " values; name each: let a, b = ...");
        if (v.kind == Value::Kind::Tensor && !h.used)
          v = tap(v, s.names[0], s.nameLocs[0]);
        define(s.names[0], v, s.nameLocs[0]);
        return;
      }
      Value v = eval(*s.exprs[0], nullptr);
      if (v.kind != Value::Kind::Tuple || v.items.size() != s.names.size())
        fail(s.loc, "cannot unpack " + std::string(kindName(v.kind)) + " into " +
                        std::to_string(s.names.size()) + " names");
      for (size_t i = 0; i < s.names.size(); ++i) {
        Value item = v.items[i];
        if (item.kind == Value::Kind::Tensor)
          item = tap(item, s.names[i], s.nameLocs[i]);
        define(s.names[i], item, s.nameLocs[i]);
      }
      return;
    }
    case Stmt::Kind::Assign: {
      Value v = eval(*s.exprs[0], nullptr);
      std::vector<Value> items = s.names.size() == 1 ? std::vector<Value>{v} : v.items;
      if (s.names.size() > 1 && (v.kind != Value::Kind::Tuple || items.size() != s.names.size()))
        fail(s.loc, "cannot unpack " + std::string(kindName(v.kind)) + " into " +
                        std::to_string(s.names.size()) + " names");
      for (size_t i = 0; i < s.names.size(); ++i) {
        State &st = state();
        if (st.parent >= 0 && (st.capturedNames.count(s.names[i]) || !lookupIn(st, s.names[i])) &&
            lookupIn(states_[st.parent], s.names[i]))
          fail(s.nameLocs[i], "'" + s.names[i] + "' belongs to the definition around the scan; a scan body "
                              "updates only its states and its own variables");
        if (st.parent >= 0)
          checkStateUpdate(s.names[i], items[i], s.nameLocs[i]);
        Value *slot = lookup(s.names[i]);
        if (!slot)
          fail(s.nameLocs[i], "unknown variable '" + s.names[i] + "'; declare it with 'let " +
                                  s.names[i] + " = ...'");
        *slot = items[i];
      }
      return;
    }
    case Stmt::Kind::Return: {
      if (!topLevel)
        fail(s.loc, "'return' must be at the top level of a definition");
      State &st = state();
      for (const ExprPtr &e : s.exprs) {
        Value v = eval(*e, nullptr);
        if (v.kind != Value::Kind::Tensor)
          fail(e->loc, "a definition returns tensors, got " + std::string(kindName(v.kind)));
        if (st.def->kind == Def::Kind::Model && st.fn.results.empty())
          checkLogits(v.type, e->loc);
        st.fn.results.push_back(v.ref);
        st.fn.resultTypes.push_back(v.type);
      }
      st.returned = true;
      return;
    }
    case Stmt::Kind::For: {
      Value from = eval(*s.exprs[0], nullptr), to = eval(*s.exprs[1], nullptr);
      if (from.kind != Value::Kind::Int || to.kind != Value::Kind::Int)
        fail(s.loc, "loop bounds must be integers, got " + describe(from) + ".." + describe(to));
      // A range that runs backwards (0..n_layers with n_layers < 0) is a
      // mistake, not an empty model; the count is formed without overflow.
      if (to.i < from.i)
        fail(s.loc, "the loop range " + std::to_string(from.i) + ".." + std::to_string(to.i) +
                        " runs backwards (A..B counts from A up to B - 1)");
      int64_t count = 0;
      if (__builtin_sub_overflow(to.i, from.i, &count) || count > 4096)
        fail(s.loc, "loop has more than 4096 iterations (" + std::to_string(from.i) + ".." +
                        std::to_string(to.i) + ")");
      std::string saved = state().prefix;
      for (int64_t i = from.i; i < to.i; ++i) {
        // Nested loops multiply: bound the total so hostile input cannot hang.
        if (++iterations_ > 1000000)
          fail(s.loc, "the model's loops run more than 1000000 iterations in all");
        state().prefix = join(saved, s.scope + "[" + std::to_string(i) + "]");
        state().env.push_back({{s.names[0], Value::integer(i)}});
        execBody(s.body, false);
        state().env.pop_back();
      }
      state().prefix = saved;
      return;
    }
    case Stmt::Kind::Scan:
      return execScan(s);
    case Stmt::Kind::Emit:
      return execEmit(s);
    case Stmt::Kind::If: {
      Value c = eval(*s.exprs[0], nullptr);
      if (c.kind != Value::Kind::Bool)
        fail(s.exprs[0]->loc, "condition must be true or false, got " + describe(c));
      state().env.emplace_back();
      execBody(c.b ? s.body : s.orElse, false);
      state().env.pop_back();
      return;
    }
    }
  }

  // ---- scan ----

  static Dim batchDim() { return Dim{-1, "B"}; }

  /// `S = value` in a scan body where S is a state: the value keeps the state's shape.
  void checkStateUpdate(const std::string &name, const Value &v, SourceLoc loc) {
    const State &st = state();
    auto it = std::find(st.stateVars.begin(), st.stateVars.end(), name);
    if (it == st.stateVars.end())
      return;
    const TensorType &t = st.fn.args[it - st.stateVars.begin()];
    if (v.kind != Value::Kind::Tensor || v.shape() != t.shape)
      fail(loc, "state '" + name + "' is " + shapeStr(t.shape) + " (a row per batch element); this update is " +
                    (v.kind == Value::Kind::Tensor ? shapeStr(v.shape()) : describe(v)));
  }

  /// scan t with state S: [dims] = zeros, ... { body }: the body becomes a
  /// step function (Func::scanStep) and the enclosing definition gets one
  /// `scan` node whose results are the emitted values over time, [B, T, ...].
  void execScan(const Stmt &s) {
    const int outerIndex = static_cast<int>(states_.size()) - 1;
    if (state().parent >= 0)
      fail(s.loc, "scans do not nest: a scan body cannot hold another scan");
    if (state().scalarOnly)
      fail(s.loc, "default values of parameters must not be tensors");
    State inner;
    {
      State &outer = state();
      inner.def = outer.def;
      inner.parent = outerIndex;
      inner.stepVar = s.names[0];
      inner.prefix = join(outer.prefix, "scan");
      inner.fn.defName = outer.fn.defName + ".scan";
      inner.fn.kind = outer.fn.kind;
      inner.fn.loc = s.loc;
      inner.fn.scanStep = true;
      inner.env.emplace_back();
    }
    for (const ScanState &st : s.states) {
      TensorType t;
      t.shape.push_back(batchDim());
      for (const ExprPtr &d : st.dims) {
        Value v = eval(*d, nullptr);
        if (v.kind != Value::Kind::Int || v.i <= 0)
          fail(startLoc(*d), "a state's dimensions are positive integers, got " + describe(v));
        t.shape.push_back(Dim{v.i, ""});
      }
      checkedElements(t.shape, 1, st.loc); // one row's state: the kernels index it with 32-bit-safe sizes
      if (inner.env.front().count(st.name) || st.name == inner.stepVar)
        fail(st.loc, "'" + st.name + "' is declared twice in this scan");
      inner.env.front()[st.name] = Value::tensor(Ref{-1, 0, static_cast<int>(inner.fn.args.size())}, t);
      inner.fn.args.push_back(t);
      inner.fn.argNames.push_back(st.name);
      inner.stateVars.push_back(st.name);
    }
    inner.fn.symbol = symbolFor(*inner.def, {}) + "_scan";
    std::vector<std::string> stateNames;
    for (const ScanState &st : s.states) { // the states are intervention points of the enclosing scope
      stateNames.push_back(join(state().prefix, st.name));
      claim(stateNames.back(), st.loc);
    }

    states_.push_back(std::move(inner));
    execBody(s.body, /*topLevel=*/false);
    State &done = state();
    if (done.emits.empty())
      fail(s.loc, "the scan emits nothing: add 'emit y = ...' to its body");
    const State::Capture *sequence = nullptr;
    for (const State::Capture &c : done.captures)
      if (c.sliced && !sequence)
        sequence = &c;
    if (!sequence)
      fail(s.loc, "the scan reads no sequence: index one with the step variable, x[" + done.stepVar + "]");
    for (const std::string &name : done.stateVars)
      done.fn.results.push_back(lookupIn(done, name)->ref),
          done.fn.resultTypes.push_back(lookupIn(done, name)->type);
    for (const State::Emitted &e : done.emits)
      done.fn.results.push_back(e.value.ref), done.fn.resultTypes.push_back(e.value.type);
    std::vector<State::Capture> captures = done.captures;
    std::vector<State::Emitted> emits = done.emits;
    const size_t numStates = done.stateVars.size();
    const State::Capture timeSource = *sequence; // its state goes below
    Func step = std::move(done.fn);
    states_.pop_back();

    State &outer = state();
    auto sequenceType = [&](const State::Capture &c) -> const TensorType & {
      return c.outer.arg >= 0 ? outer.fn.args[c.outer.arg] : outer.fn.nodes[c.outer.node].results[c.outer.result];
    };
    const Dim time = sequenceType(timeSource).shape[1];
    prog_.funcs.push_back(std::move(step));
    const int stepIndex = static_cast<int>(prog_.funcs.size()) - 1;
    Node n;
    n.op = "scan";
    n.name = nodeName(CallSite{"scan", s.loc, "scan"}, "scan");
    n.loc = s.loc;
    n.callee = stepIndex;
    std::vector<int64_t> sliced;
    std::string joined;
    for (const State::Capture &c : captures) {
      n.inputs.push_back(c.outer);
      sliced.push_back(c.sliced ? 1 : 0);
    }
    for (const std::string &name : stateNames)
      joined += (joined.empty() ? "" : ",") + name;
    n.attrs = {{"num_states", Attr::integer(static_cast<int64_t>(numStates))},
               {"sliced", Attr::list(sliced)},
               {"state_names", Attr::str(joined)}};
    for (const State::Emitted &e : emits) {
      TensorType t = e.value.type;
      t.shape.insert(t.shape.begin() + 1, time);
      n.results.push_back(t);
    }
    outer.fn.nodes.push_back(n);
    const int index = static_cast<int>(outer.fn.nodes.size()) - 1;
    for (size_t i = 0; i < emits.size(); ++i) {
      Value v = tap(Value::tensor(Ref{index, static_cast<int>(i), -1}, outer.fn.nodes[index].results[i]),
                    emits[i].name, emits[i].loc);
      define(emits[i].name, v, emits[i].loc);
    }
  }

  void execEmit(const Stmt &s) {
    State &st = state();
    if (st.parent < 0)
      fail(s.loc, "'emit' gives a scan step's output; it belongs in a scan body");
    Hint h{s.names[0]}; // the step's node for it is `scan.<name>`, an intervention point
    Value v = eval(*s.exprs[0], &h);
    if (v.kind != Value::Kind::Tensor)
      fail(startLoc(*s.exprs[0]), "emit takes a tensor, got " + describe(v));
    if (!h.used)
      v = tap(v, s.names[0], s.nameLocs[0]);
    if (v.shape().empty() || v.shape()[0] != batchDim())
      fail(startLoc(*s.exprs[0]), "an emitted value has a row per batch element, [B, ...]; this one is " +
                                      shapeStr(v.shape()));
    for (const State::Emitted &e : st.emits)
      if (e.name == s.names[0])
        fail(s.nameLocs[0], "'" + s.names[0] + "' is emitted twice");
    st.emits.push_back({s.names[0], v, s.nameLocs[0]});
  }

  Value evalIndex(const Expr &e) {
    State &st = state();
    if (st.parent < 0)
      fail(e.loc, "x[t] reads one step of a sequence inside a scan body; there is no scan here");
    const Expr &base = *e.operands[0], &index = *e.operands[1];
    if (index.kind != Expr::Kind::Name || index.text != st.stepVar)
      fail(startLoc(index), "a sequence is indexed by the scan's step variable, '" + st.stepVar + "'");
    if (base.kind != Expr::Kind::Name)
      fail(startLoc(base), "x[" + st.stepVar + "] takes a named sequence of the definition around the scan");
    Value *outer = lookupIn(states_[st.parent], base.text);
    if (!outer) {
      if (lookupIn(st, base.text))
        fail(base.loc, "'" + base.text + "' is computed inside the scan; x[" + st.stepVar +
                           "] reads a [B, T, ...] sequence from outside it");
      fail(base.loc, "unknown name '" + base.text + "'" + support::didYouMean(base.text, visibleNames()));
    }
    const Shape &sh = outer->shape();
    if (outer->kind != Value::Kind::Tensor || sh.size() < 2 || sh[0] != batchDim() || !sh[1].symbolic())
      fail(base.loc, "x[" + st.stepVar + "] needs a [B, T, ...] sequence; '" + base.text + "' is " +
                         (outer->kind == Value::Kind::Tensor ? shapeStr(sh) : describe(*outer)));
    return capture(*outer, /*sliced=*/true, base.text);
  }

  void execInput(const Stmt &s) {
    State &st = state();
    const std::string &name = s.names[0];
    bool isModel = st.def->kind == Def::Kind::Model;
    if (isModel) {
      TensorType t;
      t.dtype = s.dtype;
      for (const ExprPtr &e : s.exprs) {
        if (e->kind == Expr::Kind::Name && !lookup(e->text)) {
          t.shape.push_back(Dim{-1, e->text});
          define(e->text, Value::symDim(e->text), e->loc);
          continue;
        }
        t.shape.push_back(dimValue(eval(*e, nullptr), e->loc));
      }
      int arg = static_cast<int>(st.fn.args.size());
      st.fn.args.push_back(t);
      st.fn.argNames.push_back(name);
      define(name, Value::tensor(Ref{-1, 0, arg}, t), s.nameLocs[0]);
      return;
    }
    if (st.nextInput >= st.inputs.size())
      fail(st.callLoc, "'" + st.def->name + "' needs tensor input '" + name +
                           "' (declared at line " + std::to_string(s.loc.line) + ")");
    Value given = st.inputs[st.nextInput++];
    const Shape &actual = given.shape();
    auto mismatch = [&](const std::string &why) {
      fail(st.callLoc, "input '" + name + "' of '" + st.def->name + "' " + why + "; got " +
                           shapeStr(actual) + " (declared at line " + std::to_string(s.loc.line) + ")");
    };
    if (given.type.dtype != s.dtype)
      mismatch("must be " + std::string(s.dtype == "i64" ? "integer ids" : "a float tensor"));
    if (actual.size() != s.exprs.size())
      mismatch("must have rank " + std::to_string(s.exprs.size()));
    for (size_t i = 0; i < s.exprs.size(); ++i) {
      const Expr &e = *s.exprs[i];
      if (e.kind == Expr::Kind::Name && !lookup(e.text)) {
        // A new name in a shape is a pattern variable: it takes the size given.
        define(e.text, actual[i].symbolic() ? Value::symDim(actual[i].symbol)
                                            : Value::integer(actual[i].size),
               e.loc);
        continue;
      }
      Dim want = dimValue(eval(e, nullptr), e.loc);
      if (want != actual[i])
        mismatch("expects dimension " + std::to_string(i) + " to be " + want.str());
    }
    int arg = static_cast<int>(st.fn.args.size());
    st.fn.args.push_back(given.type);
    st.fn.argNames.push_back(name);
    define(name, Value::tensor(Ref{-1, 0, arg}, given.type), s.nameLocs[0]);
  }

  Dim dimValue(const Value &v, SourceLoc loc) {
    if (v.kind == Value::Kind::SymDim)
      return Dim{-1, v.s};
    if (v.kind == Value::Kind::Float)
      fail(loc, "bad dimension: " + describe(v) + " is not an integer (use ceil(...) or floor(...))");
    if (v.kind != Value::Kind::Int)
      fail(loc, "a dimension must be an integer, got " + std::string(kindName(v.kind)));
    if (v.i <= 0)
      fail(loc, "bad dimension: " + std::to_string(v.i) + " (dimensions must be positive)");
    return Dim{v.i, ""};
  }

  // ---- expressions ----

  Value eval(const Expr &e, Hint *hint) {
    switch (e.kind) {
    case Expr::Kind::Int: return Value::integer(e.intValue);
    case Expr::Kind::Float: return Value::real(e.floatValue);
    case Expr::Kind::Bool: return Value::boolean(e.boolValue);
    case Expr::Kind::Str: return Value::str(e.text);
    case Expr::Kind::Name: {
      if (state().parent >= 0 && e.text == state().stepVar)
        fail(e.loc, "'" + e.text + "' is the scan's step variable; it only indexes sequences: x[" + e.text + "]");
      if (Value *v = lookup(e.text))
        return *v;
      if (auto d = defs_.find(e.text); d != defs_.end()) {
        Value m;
        m.kind = Value::Kind::Mixer;
        m.mixer = std::make_shared<Closure>(Closure{d->second, {}});
        return m;
      }
      if (builtins().count(e.text))
        fail(e.loc, "'" + e.text + "' is a primitive; call it, e.g. " + e.text + "(...)");
      fail(e.loc, "unknown name '" + e.text + "'" + support::didYouMean(e.text, visibleNames()));
    }
    case Expr::Kind::List: {
      Value l;
      l.kind = Value::Kind::List;
      for (const ExprPtr &item : e.operands)
        l.items.push_back(eval(*item, nullptr));
      return l;
    }
    case Expr::Kind::Unary: return evalUnary(e, hint);
    case Expr::Kind::Binary: return evalBinary(e, hint);
    case Expr::Kind::Ternary: {
      Value c = eval(*e.operands[0], nullptr);
      if (c.kind != Value::Kind::Bool)
        fail(e.operands[0]->loc, "condition must be true or false, got " + describe(c));
      return eval(*e.operands[c.b ? 1 : 2], hint);
    }
    case Expr::Kind::Call: return evalCall(e, hint);
    case Expr::Kind::Index: return evalIndex(e);
    }
    fail(e.loc, "unsupported expression");
  }

  std::vector<std::string> visibleNames() {
    std::vector<std::string> names;
    for (const auto &scope : state().env)
      for (const auto &[n, v] : scope)
        names.push_back(n);
    for (const auto &[n, d] : defs_)
      names.push_back(n);
    for (const auto &[n, f] : builtins())
      names.push_back(n);
    return names;
  }

  /// The node name for a primitive or operator: `@name`, else the let target.
  std::string takeName(const Expr &e, Hint *hint) {
    if (!e.nodeName.empty()) {
      // `let h = op(...) @name`: the node is called `name`; `h` is only a variable.
      if (hint)
        hint->used = true;
      return e.nodeName;
    }
    if (hint && !hint->used) {
      hint->used = true;
      return hint->name;
    }
    return "";
  }

  Value constant(double v, SourceLoc loc) {
    std::string name = nodeName(CallSite{"constant", loc, ""}, "const");
    TensorType t{{}, "f32"};
    Ref r = emit("constant", name, {}, {{"value", Attr::real(v)}}, {t}, loc);
    return Value::tensor(r, t);
  }

  Value evalUnary(const Expr &e, Hint *hint) {
    Value x = eval(*e.operands[0], nullptr);
    if (e.text == "!") {
      if (x.kind != Value::Kind::Bool)
        fail(e.loc, "'!' needs true or false, got " + describe(x));
      return Value::boolean(!x.b);
    }
    switch (x.kind) {
    case Value::Kind::Int:
      if (x.i == INT64_MIN) // -INT64_MIN does not fit
        fail(e.loc, "bad dimension arithmetic: integer overflow in -(" + std::to_string(x.i) + ")");
      return Value::integer(-x.i);
    case Value::Kind::Float: return Value::real(-x.f);
    case Value::Kind::Tensor: {
      std::string name = nodeName(CallSite{"neg", e.loc, takeName(e, hint)}, "neg");
      Ref r = emit("neg", name, {x.ref}, {}, {x.type}, e.loc);
      return Value::tensor(r, x.type);
    }
    case Value::Kind::SymDim:
      fail(e.loc, "bad dimension arithmetic: " + x.s + " is symbolic (known only at run time)");
    default:
      fail(e.loc, "cannot negate " + std::string(kindName(x.kind)));
    }
  }

  Value evalBinary(const Expr &e, Hint *hint) {
    const std::string &op = e.text;
    if (op == "&&" || op == "||") {
      Value a = eval(*e.operands[0], nullptr);
      if (a.kind != Value::Kind::Bool)
        fail(e.operands[0]->loc, "'" + op + "' needs true or false, got " + describe(a));
      if ((op == "&&" && !a.b) || (op == "||" && a.b))
        return a;
      Value b = eval(*e.operands[1], nullptr);
      if (b.kind != Value::Kind::Bool)
        fail(e.operands[1]->loc, "'" + op + "' needs true or false, got " + describe(b));
      return b;
    }
    Value a = eval(*e.operands[0], nullptr), b = eval(*e.operands[1], nullptr);
    for (const Value *v : {&a, &b})
      if (v->kind == Value::Kind::SymDim)
        fail(e.loc, "bad dimension arithmetic: " + v->s +
                        " is a symbolic dimension, known only at run time");
    if (a.kind == Value::Kind::Tensor || b.kind == Value::Kind::Tensor)
      return tensorBinary(e, a, b, hint);
    if (op == "==" || op == "!=") {
      bool eq;
      if (a.isNumber() && b.isNumber())
        eq = a.number() == b.number();
      else if (a.kind == b.kind && (a.kind == Value::Kind::Bool || a.kind == Value::Kind::Str))
        eq = a.kind == Value::Kind::Bool ? a.b == b.b : a.s == b.s;
      else
        fail(e.loc, "cannot compare " + std::string(kindName(a.kind)) + " with " + kindName(b.kind));
      return Value::boolean(op == "==" ? eq : !eq);
    }
    if (!a.isNumber() || !b.isNumber())
      fail(e.loc, "'" + op + "' needs numbers, got " + describe(a) + " and " + describe(b));
    if (op == "<") return Value::boolean(a.number() < b.number());
    if (op == "<=") return Value::boolean(a.number() <= b.number());
    if (op == ">") return Value::boolean(a.number() > b.number());
    if (op == ">=") return Value::boolean(a.number() >= b.number());
    if (a.kind == Value::Kind::Int && b.kind == Value::Kind::Int) {
      int64_t x = a.i, y = b.i, r = 0;
      bool overflow = false;
      if (op == "+") overflow = __builtin_add_overflow(x, y, &r);
      else if (op == "-") overflow = __builtin_sub_overflow(x, y, &r);
      else if (op == "*") overflow = __builtin_mul_overflow(x, y, &r);
      else if (op == "/" || op == "%") {
        if (y == 0)
          fail(e.loc, "bad dimension arithmetic: division by zero");
        // INT64_MIN / -1 and INT64_MIN % -1 trap on x86 (SIGFPE).
        if (y == -1) {
          if (op == "%")
            return Value::integer(0);
          if (x == INT64_MIN)
            fail(e.loc, "bad dimension arithmetic: integer overflow");
          return Value::integer(-x);
        }
        if (op == "%")
          return Value::integer(x % y);
        if (x % y == 0)
          return Value::integer(x / y);
        return Value::real(static_cast<double>(x) / static_cast<double>(y));
      }
      if (overflow)
        fail(e.loc, "bad dimension arithmetic: integer overflow");
      return Value::integer(r);
    }
    double x = a.number(), y = b.number(), r = 0;
    if (op == "+") r = x + y;
    else if (op == "-") r = x - y;
    else if (op == "*") r = x * y;
    else if (op == "/") {
      if (y == 0)
        fail(e.loc, "division by zero");
      r = x / y;
    } else
      fail(e.loc, "'%' needs integers");
    // 1e308 * 10 is inf: an attribute or an init scale of inf is never meant.
    if (!std::isfinite(r))
      fail(e.loc, "arithmetic overflow: " + describe(a) + " " + op + " " + describe(b) +
                      " is not a finite number");
    return Value::real(r);
  }

  Value tensorBinary(const Expr &e, Value a, Value b, Hint *hint) {
    static const std::map<std::string, std::string> ops = {
        {"+", "add"}, {"-", "sub"}, {"*", "mul"}, {"/", "div"}};
    auto it = ops.find(e.text);
    if (it == ops.end())
      fail(e.loc, "'" + e.text + "' is not defined on tensors");
    for (Value *v : {&a, &b}) {
      if (v->isNumber())
        *v = constant(v->number(), e.loc);
      else if (v->kind != Value::Kind::Tensor)
        fail(e.loc, "cannot apply '" + e.text + "' to " + kindName(v->kind));
    }
    TensorType t{broadcastShapes(a.shape(), b.shape(), e.loc), "f32"};
    std::string name = nodeName(CallSite{it->second, e.loc, takeName(e, hint)}, it->second);
    Ref r = emit(it->second, name, {a.ref, b.ref}, {}, {t}, e.loc);
    return Value::tensor(r, t);
  }

  Value evalCall(const Expr &e, Hint *hint) {
    std::vector<CallArgs::Arg> positional;
    std::vector<std::pair<std::string, CallArgs::Arg>> keywords;
    auto evalArgs = [&] {
      for (const ExprPtr &a : e.operands)
        positional.push_back({eval(*a, nullptr), startLoc(*a)});
      for (const Expr::Keyword &k : e.keywords)
        keywords.push_back({k.name, {eval(*k.value, nullptr), k.loc}});
    };

    const Expr &callee = *e.callee;
    if (callee.kind == Expr::Kind::Name) {
      Value *var = lookup(callee.text);
      if (!var && !defs_.count(callee.text)) {
        auto b = builtins().find(callee.text);
        if (b == builtins().end())
          fail(callee.loc, "unknown function '" + callee.text + "'" +
                               support::didYouMean(callee.text, visibleNames()));
        evalArgs();
        CallArgs args(callee.text, e.loc, std::move(positional), std::move(keywords));
        CallSite site{callee.text, e.loc, takeName(e, hint)};
        return b->second(*this, args, site);
      }
    }
    Value fn = eval(callee, nullptr);
    if (fn.kind != Value::Kind::Mixer)
      fail(callee.loc, "cannot call " + std::string(kindName(fn.kind)));
    evalArgs();
    std::string local = !e.nodeName.empty() ? e.nodeName
                        : callee.kind == Expr::Kind::Name ? callee.text
                                                          : fn.mixer->def->name;
    return callDef(*fn.mixer, positional, keywords, e.loc, local);
  }

  Value callDef(const Closure &closure, const std::vector<CallArgs::Arg> &positional,
                const std::vector<std::pair<std::string, CallArgs::Arg>> &keywords,
                SourceLoc loc, const std::string &scopeName) {
    const Def &def = *closure.def;
    if (state().parent >= 0)
      fail(loc, "a scan body calls primitives only, not '" + def.name + "'");
    if (def.kind == Def::Kind::Model)
      fail(loc, "'" + def.name + "' is a model and cannot be called; use a mixer or block");
    std::vector<std::string> inputs = inputNames(def);
    std::vector<std::pair<std::string, Value>> params = closure.bound;
    std::vector<Value> tensors;
    auto hasParam = [&](const std::string &n) {
      return std::any_of(def.params.begin(), def.params.end(),
                         [&](const Param &p) { return p.name == n; });
    };
    auto bindParam = [&](const std::string &n, const Value &v, SourceLoc at) {
      for (const auto &[k, _] : params)
        if (k == n)
          fail(at, "'" + def.name + "' got two values for parameter '" + n + "'");
      params.push_back({n, v});
    };
    size_t nextParam = 0;
    for (const CallArgs::Arg &a : positional) {
      if (a.value.kind == Value::Kind::Tensor) {
        tensors.push_back(a.value);
        continue;
      }
      // Positional non-tensors fill parameters in order, skipping bound ones.
      while (nextParam < def.params.size() &&
             std::any_of(params.begin(), params.end(),
                         [&](const auto &p) { return p.first == def.params[nextParam].name; }))
        ++nextParam;
      if (nextParam >= def.params.size())
        fail(a.loc, "too many arguments to '" + def.name + "'");
      bindParam(def.params[nextParam++].name, a.value, a.loc);
    }
    std::vector<std::pair<std::string, Value>> namedInputs;
    for (const auto &[k, a] : keywords) {
      if (hasParam(k)) {
        bindParam(k, a.value, a.loc);
      } else if (std::find(inputs.begin(), inputs.end(), k) != inputs.end()) {
        if (a.value.kind != Value::Kind::Tensor)
          fail(a.loc, "input '" + k + "' of '" + def.name + "' must be a tensor");
        namedInputs.push_back({k, a.value});
      } else {
        std::vector<std::string> all = inputs;
        for (const Param &p : def.params)
          all.push_back(p.name);
        std::string list;
        for (const std::string &n : all)
          list += (list.empty() ? "" : ", ") + n;
        fail(a.loc, "'" + def.name + "' has no parameter '" + k + "'" + support::didYouMean(k, all) +
                        "; it takes " + (list.empty() ? "nothing" : list));
      }
    }
    // Keyword inputs follow the positional ones, in declaration order.
    size_t nPositional = tensors.size();
    for (const auto &[k, v] : namedInputs)
      if (size_t(std::find(inputs.begin(), inputs.end(), k) - inputs.begin()) < nPositional)
        fail(loc, "input '" + k + "' of '" + def.name + "' is given twice");
    for (size_t i = nPositional; i < inputs.size(); ++i) {
      auto it = std::find_if(namedInputs.begin(), namedInputs.end(),
                             [&](const auto &kv) { return kv.first == inputs[i]; });
      if (it == namedInputs.end())
        break;
      tensors.push_back(it->second);
    }
    if (tensors.size() != nPositional + namedInputs.size())
      fail(loc, "keyword inputs of '" + def.name + "' must follow the positional ones in order");

    if (tensors.empty() && !inputs.empty()) {
      // Partial application: a mixer value to be called later.
      Value m;
      m.kind = Value::Kind::Mixer;
      m.mixer = std::make_shared<Closure>(Closure{&def, params});
      return m;
    }
    if (tensors.size() != inputs.size())
      fail(loc, "'" + def.name + "' takes " + std::to_string(inputs.size()) +
                    " tensor input(s), got " + std::to_string(tensors.size()));

    int callee = instantiate(def, params, tensors, loc);
    const Func &fn = prog_.funcs[callee];
    State &st = state();
    if (st.scalarOnly)
      fail(loc, "default values of parameters must not be tensors");
    std::string scope = st.prefix;
    if (def.kind == Def::Kind::Mixer) {
      scope = join(st.prefix, scopeName);
      if (st.names.count(scope))
        fail(loc, "scope '" + scope + "' is already used; name this call with @name");
      claim(scope, loc);
    }
    Node n;
    n.op = "call";
    n.loc = loc;
    n.callee = callee;
    n.scope = scope;
    for (const Value &t : tensors)
      n.inputs.push_back(t.ref);
    n.results = fn.resultTypes;
    st.fn.nodes.push_back(n);
    int idx = static_cast<int>(st.fn.nodes.size()) - 1;
    if (fn.results.size() == 1)
      return Value::tensor(Ref{idx, 0, -1}, fn.resultTypes[0]);
    Value tuple;
    tuple.kind = Value::Kind::Tuple;
    for (size_t i = 0; i < fn.results.size(); ++i)
      tuple.items.push_back(Value::tensor(Ref{idx, static_cast<int>(i), -1}, fn.resultTypes[i]));
    return tuple;
  }

  const DefTable &defs_;
  Program prog_;
  std::map<std::string, int> instances_;
  std::set<std::string> symbols_;
  std::vector<const Def *> stack_;
  std::deque<State> states_; // deque: references survive push_back
  int64_t iterations_ = 0, nodes_ = 0;
};
} // namespace

Program elaborateModel(const DefTable &defs, const Def &model,
                       const std::vector<ConfigEntry> &config) {
  Elaborator e(defs);
  return e.run(model, config);
}

} // namespace mixc::dsl
