//===- AST.h - syntax tree of the mixer DSL ---------------------*- C++ -*-===//
//
//   file    := (import STRING | def)*
//   def     := ('mixer' | 'block' | 'model') NAME '(' params ')' '{' stmt* '}'
//   param   := NAME ':' ('int' | 'float' | 'bool' | 'mixer') ('=' expr)?
//   stmt    := 'input' NAME ':' '[' dims ']' ('int')?
//            | 'let' NAME (',' NAME)* '=' expr  |  NAME (',' NAME)* '=' expr
//            | 'return' expr (',' expr)*
//            | 'for' NAME 'in' expr '..' expr ('as' NAME)? '{' stmt* '}'
//            | 'if' expr '{' stmt* '}' ('else' ('{' stmt* '}' | if-stmt))?
//            | 'scan' NAME 'with' 'state' state (',' state)* '{' stmt* '}'
//            | 'emit' NAME '=' expr                      (in a scan body)
//   state   := NAME ':' '[' dims ']' ('=' 'zeros')?
//   (`scan`, `with`, `state`, `emit` and `zeros` are keywords only there.)
//   expr    := ternary with || && comparisons + - * / % unary, calls
//              `f(a, k=v)`, names, numbers, strings, lists `[a, b]`, a
//              scan step's slice `x[t]`, and a node-name suffix `expr @name`.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_DSL_AST_H
#define MIXC_DSL_AST_H

#include "dsl/Diagnostics.h"

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace mixc::dsl {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind { Int, Float, Bool, Str, Name, List, Unary, Binary, Ternary, Call, Index };
  Kind kind;
  SourceLoc loc;
  int64_t intValue = 0;
  double floatValue = 0;
  bool boolValue = false;
  std::string text;                 // Name, Str, and the operator of Unary/Binary
  std::vector<ExprPtr> operands;    // List items, Unary/Binary/Ternary operands, Call positional
                                    // args, Index: the sequence and the step variable
  struct Keyword {
    std::string name;
    SourceLoc loc;
    ExprPtr value;
  };
  std::vector<Keyword> keywords;    // Call keyword args
  ExprPtr callee;                   // Call
  std::string nodeName;             // `@name` suffix, empty if none
  SourceLoc nodeNameLoc;
  int depth = 1;                    // levels of the tree below and at this node (bounded by the parser)

  explicit Expr(Kind k, SourceLoc l) : kind(k), loc(l) {}
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;

/// A recurrent state of a scan: `S: [d_k, d_v] = zeros` (per batch row).
struct ScanState {
  std::string name;
  SourceLoc loc;
  std::vector<ExprPtr> dims;
  std::string init = "zeros"; // the only initial value so far
};

struct Stmt {
  enum class Kind { Input, Let, Assign, Return, For, If, Scan, Emit };
  Kind kind;
  SourceLoc loc;
  std::vector<std::string> names;   // Input: one; Let/Assign: targets; For: loop variable
  std::vector<SourceLoc> nameLocs;   // Scan: the step variable; Emit: the output
  std::vector<ExprPtr> exprs;       // Input: dims; Let/Assign/Emit: value; Return: values;
                                    // For: from, to; If: condition
  std::vector<ScanState> states;    // Scan
  std::string dtype;                // Input: "f32" or "i64"
  std::string scope;                // For: the name scope (`layers`)
  std::vector<StmtPtr> body;        // For, If (then), Scan (the step)
  std::vector<StmtPtr> orElse;      // If

  explicit Stmt(Kind k, SourceLoc l) : kind(k), loc(l) {}
};

struct Param {
  std::string name;
  std::string type; // int, float, bool, mixer
  ExprPtr defaultValue;
  SourceLoc loc;
};

struct Def {
  enum class Kind { Mixer, Block, Model };
  Kind kind;
  std::string name;
  std::vector<Param> params;
  std::vector<StmtPtr> body;
  SourceLoc loc;
};

struct Import {
  std::string path;
  SourceLoc loc;
};

struct Module {
  std::string path;
  int file = -1;
  std::vector<Import> imports;
  std::vector<std::unique_ptr<Def>> defs;
};

const char *defKindName(Def::Kind k);

/// Where an expression's text begins (an operator expression's own `loc`
/// is its operator, which is where arithmetic errors point).
SourceLoc startLoc(const Expr &e);

/// Parses one file's tokens; throws DslError on the first syntax error.
std::unique_ptr<Module> parseModule(const std::string &text, int file,
                                    const std::string &path);

/// Prints the tree as an indented outline (`mixc compile --emit=ast`).
void printModule(std::ostream &os, const Module &m);

} // namespace mixc::dsl

#endif
