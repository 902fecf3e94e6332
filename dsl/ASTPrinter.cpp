//===- ASTPrinter.cpp - `--emit=ast` outline of a parsed module -------------===//
#include "dsl/AST.h"

namespace mixc::dsl {
namespace {
std::string loc(const SourceLoc &l) {
  return "@" + std::to_string(l.line) + ":" + std::to_string(l.col);
}

void printExpr(std::ostream &os, const Expr &e) {
  switch (e.kind) {
  case Expr::Kind::Int: os << e.intValue; break;
  case Expr::Kind::Float: os << e.text; break;
  case Expr::Kind::Bool: os << (e.boolValue ? "true" : "false"); break;
  case Expr::Kind::Str: os << '"' << e.text << '"'; break;
  case Expr::Kind::Name: os << e.text; break;
  case Expr::Kind::List:
    os << "[";
    for (size_t i = 0; i < e.operands.size(); ++i) {
      if (i)
        os << ", ";
      printExpr(os, *e.operands[i]);
    }
    os << "]";
    break;
  case Expr::Kind::Unary:
    os << "(" << e.text;
    printExpr(os, *e.operands[0]);
    os << ")";
    break;
  case Expr::Kind::Binary:
    os << "(";
    printExpr(os, *e.operands[0]);
    os << " " << e.text << " ";
    printExpr(os, *e.operands[1]);
    os << ")";
    break;
  case Expr::Kind::Ternary:
    os << "(";
    printExpr(os, *e.operands[0]);
    os << " ? ";
    printExpr(os, *e.operands[1]);
    os << " : ";
    printExpr(os, *e.operands[2]);
    os << ")";
    break;
  case Expr::Kind::Index:
    printExpr(os, *e.operands[0]);
    os << "[";
    printExpr(os, *e.operands[1]);
    os << "]";
    break;
  case Expr::Kind::Call: {
    os << "call ";
    printExpr(os, *e.callee);
    os << "(";
    bool first = true;
    for (const ExprPtr &a : e.operands) {
      if (!first)
        os << ", ";
      first = false;
      printExpr(os, *a);
    }
    for (const Expr::Keyword &k : e.keywords) {
      if (!first)
        os << ", ";
      first = false;
      os << k.name << "=";
      printExpr(os, *k.value);
    }
    os << ")";
    break;
  }
  }
  if (!e.nodeName.empty())
    os << " @" << e.nodeName;
}

void printBody(std::ostream &os, const std::vector<StmtPtr> &body, int indent);

void printStmt(std::ostream &os, const Stmt &s, int indent) {
  std::string pad(indent, ' ');
  auto names = [&] {
    std::string out;
    for (size_t i = 0; i < s.names.size(); ++i)
      out += (i ? ", " : "") + s.names[i];
    return out;
  };
  switch (s.kind) {
  case Stmt::Kind::Input:
    os << pad << "Input " << s.names[0] << " [";
    for (size_t i = 0; i < s.exprs.size(); ++i) {
      if (i)
        os << ", ";
      printExpr(os, *s.exprs[i]);
    }
    os << "] " << s.dtype << " " << loc(s.loc) << "\n";
    return;
  case Stmt::Kind::Let:
  case Stmt::Kind::Assign:
    os << pad << (s.kind == Stmt::Kind::Let ? "Let " : "Assign ") << names() << " = ";
    printExpr(os, *s.exprs[0]);
    os << " " << loc(s.loc) << "\n";
    return;
  case Stmt::Kind::Return:
    os << pad << "Return ";
    for (size_t i = 0; i < s.exprs.size(); ++i) {
      if (i)
        os << ", ";
      printExpr(os, *s.exprs[i]);
    }
    os << " " << loc(s.loc) << "\n";
    return;
  case Stmt::Kind::For:
    os << pad << "For " << s.names[0] << " in ";
    printExpr(os, *s.exprs[0]);
    os << "..";
    printExpr(os, *s.exprs[1]);
    os << " as " << s.scope << " " << loc(s.loc) << "\n";
    printBody(os, s.body, indent + 2);
    return;
  case Stmt::Kind::Scan:
    os << pad << "Scan " << s.names[0] << " with";
    for (size_t i = 0; i < s.states.size(); ++i) {
      os << (i ? ", " : " ") << s.states[i].name << " [";
      for (size_t k = 0; k < s.states[i].dims.size(); ++k) {
        if (k)
          os << ", ";
        printExpr(os, *s.states[i].dims[k]);
      }
      os << "] = " << s.states[i].init;
    }
    os << " " << loc(s.loc) << "\n";
    printBody(os, s.body, indent + 2);
    return;
  case Stmt::Kind::Emit:
    os << pad << "Emit " << s.names[0] << " = ";
    printExpr(os, *s.exprs[0]);
    os << " " << loc(s.loc) << "\n";
    return;
  case Stmt::Kind::If:
    os << pad << "If ";
    printExpr(os, *s.exprs[0]);
    os << " " << loc(s.loc) << "\n";
    printBody(os, s.body, indent + 2);
    if (!s.orElse.empty()) {
      os << pad << "Else\n";
      printBody(os, s.orElse, indent + 2);
    }
    return;
  }
}

void printBody(std::ostream &os, const std::vector<StmtPtr> &body, int indent) {
  for (const StmtPtr &s : body)
    printStmt(os, *s, indent);
}
} // namespace

void printModule(std::ostream &os, const Module &m) {
  os << "Module \"" << m.path << "\"\n";
  for (const Import &i : m.imports)
    os << "  Import \"" << i.path << "\" " << loc(i.loc) << "\n";
  for (const auto &d : m.defs) {
    os << "  Def " << defKindName(d->kind) << " " << d->name << "(";
    for (size_t i = 0; i < d->params.size(); ++i) {
      const Param &p = d->params[i];
      os << (i ? ", " : "") << p.name << ": " << p.type;
      if (p.defaultValue) {
        os << " = ";
        printExpr(os, *p.defaultValue);
      }
    }
    os << ") " << loc(d->loc) << "\n";
    printBody(os, d->body, 4);
  }
}

} // namespace mixc::dsl
