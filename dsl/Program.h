//===- Program.h - the elaborated program -----------------------*- C++ -*-===//
//
// What the front end hands to the compiler: every mixer, block and model
// instance (specialised to its integer parameters and input shapes) as a
// flat list of primitive nodes and calls. Plain C++, no MLIR types.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_DSL_PROGRAM_H
#define MIXC_DSL_PROGRAM_H

#include "dsl/AST.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mixc::dsl {

/// A dimension: a static size, or a symbol (`B`, `T`) known only at run time.
struct Dim {
  int64_t size = -1;
  std::string symbol;
  bool symbolic() const { return !symbol.empty(); }
  bool operator==(const Dim &o) const { return size == o.size && symbol == o.symbol; }
  bool operator!=(const Dim &o) const { return !(*this == o); }
  std::string str() const { return symbolic() ? symbol : std::to_string(size); }
};
using Shape = std::vector<Dim>;
std::string shapeStr(const Shape &s);

struct TensorType {
  Shape shape;
  std::string dtype = "f32"; // f32 or i64
};

/// A value: result `result` of node `node`, or function argument `arg`.
struct Ref {
  int node = -1;
  int result = 0;
  int arg = -1;
};

struct Attr {
  enum class Kind { Int, Float, Bool, Str, Ints };
  Kind kind = Kind::Int;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  std::vector<int64_t> ints;
  static Attr integer(int64_t v) { Attr a; a.kind = Kind::Int; a.i = v; return a; }
  static Attr real(double v) { Attr a; a.kind = Kind::Float; a.f = v; return a; }
  static Attr boolean(bool v) { Attr a; a.kind = Kind::Bool; a.b = v; return a; }
  static Attr str(std::string v) { Attr a; a.kind = Kind::Str; a.s = std::move(v); return a; }
  static Attr list(std::vector<int64_t> v) { Attr a; a.kind = Kind::Ints; a.ints = std::move(v); return a; }
};

struct Node {
  std::string op;   // primitive name (`linear`), `call`, or `scan`
  std::string name; // relative to the function; calls have none
  std::vector<Ref> inputs;
  std::vector<std::pair<std::string, Attr>> attrs;
  std::vector<TensorType> results;
  SourceLoc loc;
  int callee = -1;   // call, scan (its step): index into Program::funcs
  std::string scope; // call: name prefix of the callee's nodes
};

struct Func {
  std::string symbol;  // unique, e.g. `attention_d64_n_layers2`
  std::string defName;
  Def::Kind kind = Def::Kind::Mixer;
  std::vector<std::string> argNames;
  std::vector<TensorType> args;
  std::vector<Node> nodes;
  std::vector<Ref> results;
  std::vector<TensorType> resultTypes;
  std::vector<std::pair<std::string, std::string>> params; // resolved, as text
  SourceLoc loc;
  /// A scan's step (not a function of its own): args are the states [B, ...]
  /// then the scan node's inputs, per step (a sliced [B, T, ...] input as
  /// [B, ...]); results are the next states then the emitted values [B, ...].
  bool scanStep = false;
};

struct Program {
  std::vector<Func> funcs;
  int entry = -1; // the model
};

} // namespace mixc::dsl

#endif
