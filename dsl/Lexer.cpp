//===- Lexer.cpp - tokens of the mixer DSL and rewrite scripts --------------===//
#include "dsl/Lexer.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <map>

namespace mixc::dsl {

const char *tokName(Tok t) {
  switch (t) {
  case Tok::Eof: return "end of file";
  case Tok::Ident: return "identifier";
  case Tok::Int: return "integer";
  case Tok::Float: return "number";
  case Tok::String: return "string";
  case Tok::KwImport: return "'import'";
  case Tok::KwInput: return "'input'";
  case Tok::KwLet: return "'let'";
  case Tok::KwReturn: return "'return'";
  case Tok::KwFor: return "'for'";
  case Tok::KwIn: return "'in'";
  case Tok::KwAs: return "'as'";
  case Tok::KwIf: return "'if'";
  case Tok::KwElse: return "'else'";
  case Tok::KwTrue: return "'true'";
  case Tok::KwFalse: return "'false'";
  case Tok::LParen: return "'('";
  case Tok::RParen: return "')'";
  case Tok::LBrace: return "'{'";
  case Tok::RBrace: return "'}'";
  case Tok::LBracket: return "'['";
  case Tok::RBracket: return "']'";
  case Tok::Comma: return "','";
  case Tok::Colon: return "':'";
  case Tok::Semi: return "';'";
  case Tok::Assign: return "'='";
  case Tok::DotDot: return "'..'";
  case Tok::At: return "'@'";
  case Tok::Question: return "'?'";
  case Tok::Plus: return "'+'";
  case Tok::Minus: return "'-'";
  case Tok::Star: return "'*'";
  case Tok::Slash: return "'/'";
  case Tok::Percent: return "'%'";
  case Tok::EqEq: return "'=='";
  case Tok::NotEq: return "'!='";
  case Tok::Less: return "'<'";
  case Tok::LessEq: return "'<='";
  case Tok::Greater: return "'>'";
  case Tok::GreaterEq: return "'>='";
  case Tok::AndAnd: return "'&&'";
  case Tok::OrOr: return "'||'";
  case Tok::Bang: return "'!'";
  }
  return "token";
}

std::vector<Token> lex(const std::string &text, int file) {
  static const std::map<std::string, Tok> keywords = {
      // `mixer`, `block` and `model` are contextual: keywords only at the
      // top level of a file (the parser checks), names everywhere else.
      {"import", Tok::KwImport}, {"input", Tok::KwInput}, {"let", Tok::KwLet},
      {"return", Tok::KwReturn}, {"for", Tok::KwFor}, {"in", Tok::KwIn},
      {"as", Tok::KwAs}, {"if", Tok::KwIf}, {"else", Tok::KwElse},
      {"true", Tok::KwTrue}, {"false", Tok::KwFalse}};

  std::vector<Token> out;
  size_t i = 0;
  int line = 1, col = 1;
  auto advance = [&](size_t n = 1) {
    for (size_t k = 0; k < n && i < text.size(); ++k, ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
  };
  auto at = [&](size_t k) { return i + k < text.size() ? text[i + k] : '\0'; };

  while (i < text.size()) {
    char c = text[i];
    if (c == '\n' || c == ' ' || c == '\t' || c == '\r') {
      advance();
      continue;
    }
    if (c == '/' && at(1) == '/') {
      while (i < text.size() && text[i] != '\n')
        advance();
      continue;
    }
    Token t;
    t.loc = {file, line, col};
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_'))
        ++j;
      t.text = text.substr(i, j - i);
      auto kw = keywords.find(t.text);
      t.kind = kw == keywords.end() ? Tok::Ident : kw->second;
      advance(j - i);
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])))
        ++j;
      bool isFloat = false;
      // `0..4` is a range, not the number `0.`.
      if (j < text.size() && text[j] == '.' && !(j + 1 < text.size() && text[j + 1] == '.')) {
        isFloat = true;
        ++j;
        while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])))
          ++j;
      }
      if (j < text.size() && (text[j] == 'e' || text[j] == 'E')) {
        size_t k = j + 1;
        if (k < text.size() && (text[k] == '+' || text[k] == '-'))
          ++k;
        if (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]))) {
          isFloat = true;
          j = k;
          while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])))
            ++j;
        }
      }
      t.text = text.substr(i, j - i);
      errno = 0;
      if (isFloat) {
        t.kind = Tok::Float;
        t.floatValue = std::strtod(t.text.c_str(), nullptr);
      } else {
        t.kind = Tok::Int;
        t.intValue = std::strtoll(t.text.c_str(), nullptr, 10);
      }
      if (errno == ERANGE)
        fail(t.loc, "number '" + t.text + "' is out of range");
      advance(j - i);
    } else if (c == '"') {
      size_t j = i + 1;
      while (j < text.size() && text[j] != '"' && text[j] != '\n')
        ++j;
      if (j >= text.size() || text[j] != '"')
        fail(t.loc, "unterminated string");
      t.kind = Tok::String;
      t.text = text.substr(i + 1, j - i - 1);
      advance(j - i + 1);
    } else {
      struct Op {
        const char *spelling;
        Tok kind;
      };
      static const Op ops[] = {
          {"..", Tok::DotDot}, {"==", Tok::EqEq}, {"!=", Tok::NotEq},
          {"<=", Tok::LessEq}, {">=", Tok::GreaterEq}, {"&&", Tok::AndAnd},
          {"||", Tok::OrOr}, {"(", Tok::LParen}, {")", Tok::RParen},
          {"{", Tok::LBrace}, {"}", Tok::RBrace}, {"[", Tok::LBracket},
          {"]", Tok::RBracket}, {",", Tok::Comma}, {":", Tok::Colon},
          {";", Tok::Semi}, {"=", Tok::Assign}, {"@", Tok::At},
          {"?", Tok::Question}, {"+", Tok::Plus}, {"-", Tok::Minus},
          {"*", Tok::Star}, {"/", Tok::Slash}, {"%", Tok::Percent},
          {"<", Tok::Less}, {">", Tok::Greater}, {"!", Tok::Bang}};
      bool matched = false;
      for (const Op &op : ops) {
        size_t n = std::char_traits<char>::length(op.spelling);
        if (text.compare(i, n, op.spelling) == 0) {
          t.kind = op.kind;
          t.text = op.spelling;
          advance(n);
          matched = true;
          break;
        }
      }
      if (!matched) {
        unsigned char u = static_cast<unsigned char>(c);
        std::string shown = std::isprint(u) ? std::string("'") + c + "'"
                                            : "byte 0x" + std::string(1, "0123456789abcdef"[u >> 4]) +
                                                  std::string(1, "0123456789abcdef"[u & 15]);
        fail(t.loc, "unexpected character " + shown);
      }
    }
    out.push_back(std::move(t));
  }
  Token eof;
  eof.kind = Tok::Eof;
  eof.loc = {file, line, col};
  out.push_back(eof);
  return out;
}

} // namespace mixc::dsl
