//===- Parser.cpp - recursive-descent parser of the mixer DSL ---------------===//
#include "dsl/AST.h"
#include "dsl/Lexer.h"

#include <algorithm>

namespace mixc::dsl {

const char *defKindName(Def::Kind k) {
  switch (k) {
  case Def::Kind::Mixer: return "mixer";
  case Def::Kind::Block: return "block";
  case Def::Kind::Model: return "model";
  }
  return "def";
}

SourceLoc startLoc(const Expr &e) {
  if ((e.kind == Expr::Kind::Binary || e.kind == Expr::Kind::Ternary) && !e.operands.empty())
    return startLoc(*e.operands[0]);
  return e.loc;
}

namespace {
class Parser {
public:
  explicit Parser(std::vector<Token> toks) : toks_(std::move(toks)) {}

  std::unique_ptr<Module> module(int file, const std::string &path) {
    auto m = std::make_unique<Module>();
    m->path = path;
    m->file = file;
    while (!at(Tok::Eof)) {
      if (at(Tok::KwImport)) {
        SourceLoc loc = next().loc;
        const Token &s = expect(Tok::String, "after 'import'");
        m->imports.push_back({s.text, loc});
        accept(Tok::Semi);
      } else if (atDefKeyword()) {
        m->defs.push_back(def());
      } else {
        fail(peek().loc, std::string("expected 'mixer', 'block', 'model' or 'import', found ") +
                             describe(peek()));
      }
    }
    return m;
  }

private:
  const Token &peek(int k = 0) const {
    size_t i = std::min(pos_ + k, toks_.size() - 1);
    return toks_[i];
  }
  bool at(Tok t) const { return peek().kind == t; }
  bool atDefKeyword() const {
    const Token &t = peek();
    return t.kind == Tok::Ident && (t.text == "mixer" || t.text == "block" || t.text == "model");
  }
  const Token &next() {
    const Token &t = peek();
    if (pos_ + 1 < toks_.size())
      ++pos_;
    return t;
  }
  bool accept(Tok t) {
    if (!at(t))
      return false;
    next();
    return true;
  }
  static std::string describe(const Token &t) {
    if (t.kind == Tok::Ident)
      return "identifier '" + t.text + "'";
    if (t.kind == Tok::Int || t.kind == Tok::Float)
      return "number " + t.text;
    if (t.kind == Tok::String)
      return "string \"" + t.text + "\"";
    return tokName(t.kind);
  }
  const Token &expect(Tok t, const std::string &context) {
    if (!at(t))
      fail(peek().loc, std::string("expected ") + tokName(t) + " " + context +
                           ", found " + describe(peek()));
    return next();
  }

  // Nesting is bounded so that hostile input cannot overflow the stack.
  struct DepthGuard {
    DepthGuard(Parser &p, SourceLoc loc) : p(p) {
      if (++p.depth_ > 200)
        fail(loc, "nesting is too deep (more than 200 levels)");
    }
    ~DepthGuard() { --p.depth_; }
    Parser &p;
  };

  // Every walk over an expression (elaboration, printing, destruction) is
  // recursive, and a flat chain (`1 + 1 + ... + 1`, `f(a)(b)(c)...`) builds
  // a deep tree without nesting any parentheses: so the tree's depth is
  // bounded as each node is made, whatever shape builds it.
  static constexpr int kMaxExprDepth = 500;
  ExprPtr bounded(ExprPtr e) {
    int below = 0;
    for (const ExprPtr &o : e->operands)
      below = std::max(below, o->depth);
    for (const Expr::Keyword &k : e->keywords)
      below = std::max(below, k.value->depth);
    if (e->callee)
      below = std::max(below, e->callee->depth);
    e->depth = below + 1;
    if (e->depth > kMaxExprDepth)
      fail(e->loc, "expression is too deep (more than " + std::to_string(kMaxExprDepth) +
                       " nested operations); split it with let");
    return e;
  }

  std::unique_ptr<Def> def() {
    auto d = std::make_unique<Def>();
    const Token &kw = next();
    d->loc = kw.loc;
    d->kind = kw.text == "mixer"   ? Def::Kind::Mixer
              : kw.text == "block" ? Def::Kind::Block
                                   : Def::Kind::Model;
    d->name = expect(Tok::Ident, std::string("after '") + defKindName(d->kind) + "'").text;
    expect(Tok::LParen, "after the name of " + d->name);
    if (!at(Tok::RParen)) {
      do {
        Param p;
        const Token &n = expect(Tok::Ident, "(a parameter name)");
        p.name = n.text;
        p.loc = n.loc;
        expect(Tok::Colon, "after parameter '" + p.name + "'");
        const Token &ty = expect(Tok::Ident, "(a parameter type: int, float, bool or mixer)");
        if (ty.text != "int" && ty.text != "float" && ty.text != "bool" && ty.text != "mixer")
          fail(ty.loc, "unknown parameter type '" + ty.text +
                           "'; expected int, float, bool or mixer");
        p.type = ty.text;
        if (accept(Tok::Assign))
          p.defaultValue = expr();
        d->params.push_back(std::move(p));
      } while (accept(Tok::Comma));
    }
    expect(Tok::RParen, "to close the parameter list");
    d->body = block();
    return d;
  }

  std::vector<StmtPtr> block() {
    expect(Tok::LBrace, "to open a block");
    std::vector<StmtPtr> body;
    while (!at(Tok::RBrace)) {
      if (at(Tok::Eof))
        fail(peek().loc, "expected '}' to close the block, found end of file");
      body.push_back(stmt());
      accept(Tok::Semi);
    }
    next();
    return body;
  }

  StmtPtr stmt() {
    DepthGuard guard(*this, peek().loc);
    const Token &t = peek();
    switch (t.kind) {
    case Tok::KwInput: {
      auto s = std::make_unique<Stmt>(Stmt::Kind::Input, next().loc);
      const Token &n = expect(Tok::Ident, "(the input's name)");
      s->names.push_back(n.text);
      s->nameLocs.push_back(n.loc);
      expect(Tok::Colon, "after input '" + n.text + "'");
      expect(Tok::LBracket, "to open the input's shape");
      if (!at(Tok::RBracket)) {
        do
          s->exprs.push_back(expr());
        while (accept(Tok::Comma));
      }
      expect(Tok::RBracket, "to close the input's shape");
      s->dtype = "f32";
      if (at(Tok::Ident) && (peek().text == "int" || peek().text == "float")) {
        s->dtype = next().text == "int" ? "i64" : "f32";
      }
      return s;
    }
    case Tok::KwLet: {
      auto s = std::make_unique<Stmt>(Stmt::Kind::Let, next().loc);
      targets(*s);
      expect(Tok::Assign, "after the names in 'let'");
      s->exprs.push_back(expr());
      return s;
    }
    case Tok::KwReturn: {
      auto s = std::make_unique<Stmt>(Stmt::Kind::Return, next().loc);
      do
        s->exprs.push_back(expr());
      while (accept(Tok::Comma));
      return s;
    }
    case Tok::KwFor: {
      auto s = std::make_unique<Stmt>(Stmt::Kind::For, next().loc);
      const Token &v = expect(Tok::Ident, "(the loop variable)");
      s->names.push_back(v.text);
      s->nameLocs.push_back(v.loc);
      expect(Tok::KwIn, "after the loop variable");
      s->exprs.push_back(expr());
      expect(Tok::DotDot, "in the loop range (for l in 0..L)");
      s->exprs.push_back(expr());
      s->scope = "layers";
      if (accept(Tok::KwAs))
        s->scope = expect(Tok::Ident, "(the loop's name scope) after 'as'").text;
      s->body = block();
      return s;
    }
    case Tok::KwIf:
      return ifStmt();
    case Tok::Ident: {
      // Contextual keywords: `scan t with ...` and `emit y = ...`; a variable
      // may still be called scan or emit.
      if (t.text == "scan" && peek(1).kind == Tok::Ident && peek(2).kind == Tok::Ident &&
          peek(2).text == "with")
        return scanStmt();
      if (t.text == "emit" && peek(1).kind == Tok::Ident && peek(2).kind == Tok::Assign) {
        auto s = std::make_unique<Stmt>(Stmt::Kind::Emit, next().loc);
        const Token &n = next();
        s->names.push_back(n.text);
        s->nameLocs.push_back(n.loc);
        next();
        s->exprs.push_back(expr());
        return s;
      }
      auto s = std::make_unique<Stmt>(Stmt::Kind::Assign, t.loc);
      targets(*s);
      expect(Tok::Assign, "(statements are 'let x = ...', 'x = ...', 'input', 'return', 'for' or 'if')");
      s->exprs.push_back(expr());
      return s;
    }
    default:
      fail(t.loc, "expected a statement, found " + describe(t));
    }
  }

  // scan t with state S: [d_k, d_v] = zeros, z: [d_k] { ... }
  StmtPtr scanStmt() {
    auto s = std::make_unique<Stmt>(Stmt::Kind::Scan, next().loc);
    const Token &v = expect(Tok::Ident, "(the step variable)");
    s->names.push_back(v.text);
    s->nameLocs.push_back(v.loc);
    next(); // with
    const Token &kw = peek();
    if (kw.kind != Tok::Ident || kw.text != "state")
      fail(kw.loc, "expected 'state' after 'with' (scan t with state S: [d] { ... })");
    next();
    do {
      ScanState st;
      const Token &n = expect(Tok::Ident, "(the state's name)");
      st.name = n.text;
      st.loc = n.loc;
      expect(Tok::Colon, "after the state '" + n.text + "' (S: [d_k, d_v])");
      expect(Tok::LBracket, "to open the state's shape");
      do
        st.dims.push_back(expr());
      while (accept(Tok::Comma));
      expect(Tok::RBracket, "to close the state's shape");
      if (accept(Tok::Assign)) {
        const Token &init = peek();
        if (init.kind != Tok::Ident || init.text != "zeros")
          fail(init.loc, "a state starts at zeros (write '= zeros' or nothing), found " + describe(init));
        next();
      }
      s->states.push_back(std::move(st));
    } while (accept(Tok::Comma));
    s->body = block();
    return s;
  }

  StmtPtr ifStmt() {
    auto s = std::make_unique<Stmt>(Stmt::Kind::If, next().loc);
    s->exprs.push_back(expr());
    s->body = block();
    if (accept(Tok::KwElse)) {
      if (at(Tok::KwIf))
        s->orElse.push_back(ifStmt());
      else
        s->orElse = block();
    }
    return s;
  }

  void targets(Stmt &s) {
    do {
      const Token &n = expect(Tok::Ident, "(a variable name)");
      s.names.push_back(n.text);
      s.nameLocs.push_back(n.loc);
    } while (accept(Tok::Comma));
  }

  // ---- expressions, lowest precedence first ----
  ExprPtr expr() {
    DepthGuard guard(*this, peek().loc);
    ExprPtr cond = binary(0);
    if (!at(Tok::Question))
      return cond;
    auto e = std::make_unique<Expr>(Expr::Kind::Ternary, next().loc);
    e->operands.push_back(std::move(cond));
    e->operands.push_back(expr());
    expect(Tok::Colon, "in 'cond ? a : b'");
    e->operands.push_back(expr());
    return bounded(std::move(e));
  }

  static int precedence(Tok t) {
    switch (t) {
    case Tok::OrOr: return 1;
    case Tok::AndAnd: return 2;
    case Tok::EqEq: case Tok::NotEq: case Tok::Less: case Tok::LessEq:
    case Tok::Greater: case Tok::GreaterEq: return 3;
    case Tok::Plus: case Tok::Minus: return 4;
    case Tok::Star: case Tok::Slash: case Tok::Percent: return 5;
    default: return -1;
    }
  }

  ExprPtr binary(int minPrec) {
    ExprPtr lhs = unary();
    while (true) {
      int prec = precedence(peek().kind);
      if (prec < 0 || prec < minPrec)
        return lhs;
      const Token &op = next();
      ExprPtr rhs = binary(prec + 1);
      auto e = std::make_unique<Expr>(Expr::Kind::Binary, op.loc);
      e->text = op.text;
      e->operands.push_back(std::move(lhs));
      e->operands.push_back(std::move(rhs));
      lhs = bounded(std::move(e));
    }
  }

  ExprPtr unary() {
    if (at(Tok::Minus) || at(Tok::Bang)) {
      DepthGuard guard(*this, peek().loc);
      const Token &op = next();
      auto e = std::make_unique<Expr>(Expr::Kind::Unary, op.loc);
      e->text = op.text;
      e->operands.push_back(unary());
      return bounded(std::move(e));
    }
    return postfix();
  }

  ExprPtr postfix() {
    ExprPtr e = primary();
    while (true) {
      if (at(Tok::LParen)) {
        auto call = std::make_unique<Expr>(Expr::Kind::Call, e->loc);
        next();
        if (!at(Tok::RParen)) {
          do {
            if (at(Tok::Ident) && peek(1).kind == Tok::Assign) {
              const Token &k = next();
              next();
              call->keywords.push_back({k.text, k.loc, expr()});
            } else {
              if (!call->keywords.empty())
                fail(peek().loc, "positional argument after a keyword argument");
              call->operands.push_back(expr());
            }
          } while (accept(Tok::Comma));
        }
        expect(Tok::RParen, "to close the argument list");
        call->callee = std::move(e);
        e = bounded(std::move(call));
      } else if (at(Tok::LBracket)) { // x[t]: a scan step's slice of x
        auto index = std::make_unique<Expr>(Expr::Kind::Index, next().loc);
        index->operands.push_back(std::move(e));
        index->operands.push_back(expr());
        expect(Tok::RBracket, "to close the index (x[t] in a scan body)");
        e = bounded(std::move(index));
      } else if (at(Tok::At)) {
        next();
        const Token &n = expect(Tok::Ident, "(a node name) after '@'");
        e->nodeName = n.text;
        e->nodeNameLoc = n.loc;
      } else {
        return e;
      }
    }
  }

  ExprPtr primary() {
    const Token &t = peek();
    switch (t.kind) {
    case Tok::Int: {
      auto e = std::make_unique<Expr>(Expr::Kind::Int, next().loc);
      e->intValue = t.intValue;
      e->text = t.text;
      return e;
    }
    case Tok::Float: {
      auto e = std::make_unique<Expr>(Expr::Kind::Float, next().loc);
      e->floatValue = t.floatValue;
      e->text = t.text;
      return e;
    }
    case Tok::KwTrue:
    case Tok::KwFalse: {
      auto e = std::make_unique<Expr>(Expr::Kind::Bool, next().loc);
      e->boolValue = t.kind == Tok::KwTrue;
      return e;
    }
    case Tok::String: {
      auto e = std::make_unique<Expr>(Expr::Kind::Str, next().loc);
      e->text = t.text;
      return e;
    }
    case Tok::Ident: {
      auto e = std::make_unique<Expr>(Expr::Kind::Name, next().loc);
      e->text = t.text;
      return e;
    }
    case Tok::LParen: {
      next();
      ExprPtr e = expr();
      expect(Tok::RParen, "to close '('");
      return e;
    }
    case Tok::LBracket: {
      auto e = std::make_unique<Expr>(Expr::Kind::List, next().loc);
      if (!at(Tok::RBracket)) {
        do
          e->operands.push_back(expr());
        while (accept(Tok::Comma));
      }
      expect(Tok::RBracket, "to close the list");
      return bounded(std::move(e));
    }
    default:
      fail(t.loc, "expected an expression, found " + describe(t));
    }
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
};
} // namespace

std::unique_ptr<Module> parseModule(const std::string &text, int file,
                                    const std::string &path) {
  Parser p(lex(text, file));
  return p.module(file, path);
}

} // namespace mixc::dsl
