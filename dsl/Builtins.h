//===- Builtins.h - primitives callable from the DSL ------------*- C++ -*-===//
#ifndef MIXC_DSL_BUILTINS_H
#define MIXC_DSL_BUILTINS_H

#include "dsl/Value.h"

#include <map>
#include <string>
#include <vector>

namespace mixc::dsl {

/// Where a call appears and what its result node is to be called.
struct CallSite {
  std::string fn;
  SourceLoc loc;
  std::string name; // user-given node name (`let x = ...` or `@x`), may be empty
};

/// The elaborator's side of a primitive: it owns the function being built.
class NodeSink {
public:
  virtual ~NodeSink() = default;
  /// The node's full relative name: the user's name or a made-up `_op<N>`,
  /// under the current loop scope. Rejects a name already used.
  virtual std::string nodeName(const CallSite &site, const std::string &op) = 0;
  /// Appends a node; `name` must come from nodeName (or extend one).
  virtual Ref emit(const std::string &op, const std::string &name,
                   std::vector<Ref> inputs,
                   std::vector<std::pair<std::string, Attr>> attrs,
                   std::vector<TensorType> results, SourceLoc loc) = 0;
  /// The name of a recurrent node's state (`mixer.state`).
  virtual std::string stateName(const std::string &nodeName) = 0;
};

/// Arguments of one call, bound against a primitive's parameter list.
class CallArgs {
public:
  struct Arg {
    Value value;
    SourceLoc loc;
  };
  CallArgs(std::string fn, SourceLoc loc, std::vector<Arg> positional,
           std::vector<std::pair<std::string, Arg>> keywords);

  /// `params` lists names in order; `name?` is optional, `...` takes the
  /// remaining positional arguments. Reports unknown keywords, missing and
  /// surplus arguments.
  void bind(const std::vector<std::string> &params);

  bool has(const std::string &name) const;
  const Arg &arg(const std::string &name) const;
  const std::vector<Arg> &rest() const { return rest_; }
  SourceLoc loc() const { return loc_; }
  const std::string &fn() const { return fn_; }

  Value tensor(const std::string &name) const;
  int64_t dim(const std::string &name) const; // a positive integer
  int64_t integer(const std::string &name, int64_t dflt) const;
  double real(const std::string &name, double dflt) const;
  bool boolean(const std::string &name, bool dflt) const;
  Value init(const std::string &name, Value dflt) const;

  [[noreturn]] void error(const std::string &name, const std::string &message) const;

private:
  std::string fn_;
  SourceLoc loc_;
  std::vector<Arg> positional_;
  std::vector<std::pair<std::string, Arg>> keywords_;
  std::map<std::string, Arg> bound_;
  std::vector<Arg> rest_;
};

using BuiltinFn = Value (*)(NodeSink &, CallArgs &, const CallSite &);

/// Every primitive by its DSL name.
const std::map<std::string, BuiltinFn> &builtins();

/// An init rule's canonical text for a tensor whose fan-in is `fanIn`
/// (`torch_default` becomes the matching `uniform(-b,b)`).
std::string initText(const Value &init, int64_t fanIn);

Value makeInit(std::string rule, std::vector<double> args = {});

/// The element count of s[from:], checked: a count that would not fit, or
/// that exceeds what one tensor may hold (support/Limits.h), is an error at
/// `loc`.
int64_t checkedElements(const Shape &s, size_t from, SourceLoc loc);

/// Trailing-dimension (NumPy) broadcasting of two shapes, as the elementwise
/// ops do; a located error when they do not broadcast.
Shape broadcastShapes(const Shape &a, const Shape &b, SourceLoc loc);

} // namespace mixc::dsl

#endif
