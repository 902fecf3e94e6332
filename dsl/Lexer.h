//===- Lexer.h - tokens of the mixer DSL ------------------------*- C++ -*-===//
#ifndef MIXC_DSL_LEXER_H
#define MIXC_DSL_LEXER_H

#include "dsl/Diagnostics.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mixc::dsl {

enum class Tok {
  Eof, Ident, Int, Float, String,
  // keywords
  KwImport, KwInput, KwLet, KwReturn, KwFor, KwIn,
  KwAs, KwIf, KwElse, KwTrue, KwFalse,
  // punctuation and operators
  LParen, RParen, LBrace, RBrace, LBracket, RBracket, Comma, Colon, Semi,
  Assign, DotDot, At, Question, Plus, Minus, Star, Slash, Percent,
  EqEq, NotEq, Less, LessEq, Greater, GreaterEq, AndAnd, OrOr, Bang,
};

const char *tokName(Tok t);

struct Token {
  Tok kind = Tok::Eof;
  std::string text; // identifier, string contents or the literal's spelling
  int64_t intValue = 0;
  double floatValue = 0;
  SourceLoc loc;
};

/// Splits a whole file into tokens; throws DslError on a bad character,
/// an unterminated string or an out-of-range number.
std::vector<Token> lex(const std::string &text, int file);

} // namespace mixc::dsl

#endif
