//===- Value.h - values of the DSL during elaboration ------------*- C++ -*-===//
//
// Elaboration evaluates the DSL: integer parameters, loops and branches are
// computed; tensor operations become nodes of the function being built.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_DSL_VALUE_H
#define MIXC_DSL_VALUE_H

#include "dsl/Program.h"

#include <memory>
#include <string>
#include <vector>

namespace mixc::dsl {

struct Closure;

struct Value {
  enum class Kind { None, Int, Float, Bool, Str, SymDim, Tensor, Mixer, Init, List, Tuple };
  Kind kind = Kind::None;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;                  // Str; SymDim's symbol; Init's rule name
  Ref ref;                        // Tensor
  TensorType type;                // Tensor
  std::shared_ptr<const Closure> mixer;
  std::vector<Value> items;       // List, Tuple; Init's numeric arguments

  static Value integer(int64_t v) { Value x; x.kind = Kind::Int; x.i = v; return x; }
  static Value real(double v) { Value x; x.kind = Kind::Float; x.f = v; return x; }
  static Value boolean(bool v) { Value x; x.kind = Kind::Bool; x.b = v; return x; }
  static Value str(std::string v) { Value x; x.kind = Kind::Str; x.s = std::move(v); return x; }
  static Value symDim(std::string v) { Value x; x.kind = Kind::SymDim; x.s = std::move(v); return x; }
  static Value tensor(Ref r, TensorType t) { Value x; x.kind = Kind::Tensor; x.ref = r; x.type = std::move(t); return x; }

  bool isNumber() const { return kind == Kind::Int || kind == Kind::Float; }
  double number() const { return kind == Kind::Int ? static_cast<double>(i) : f; }
  const Shape &shape() const { return type.shape; }
};

/// A mixer value: a definition with some parameters bound, e.g.
/// `baseconv(d=d, k=3)`; tensors are supplied when it is called.
struct Closure {
  const Def *def = nullptr;
  std::vector<std::pair<std::string, Value>> bound;
};

const char *kindName(Value::Kind k);
/// Human-readable, for errors and function keys.
std::string describe(const Value &v);

} // namespace mixc::dsl

#endif
