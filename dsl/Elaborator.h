//===- Elaborator.h - evaluate the DSL into a Program -----------*- C++ -*-===//
#ifndef MIXC_DSL_ELABORATOR_H
#define MIXC_DSL_ELABORATOR_H

#include "dsl/Frontend.h"
#include "dsl/Value.h"

#include <map>

namespace mixc::dsl {

/// Definitions visible to the model: all loaded files' defs by name.
using DefTable = std::map<std::string, const Def *>;

/// Elaborates `model` with `config` overriding its parameters; throws
/// DslError with the offending location.
Program elaborateModel(const DefTable &defs, const Def &model,
                       const std::vector<ConfigEntry> &config);

/// Levenshtein distance, for "did you mean" hints.
size_t editDistance(const std::string &a, const std::string &b);

/// " (did you mean 'x'?)" for the closest candidate, or "".
std::string suggest(const std::string &name, const std::vector<std::string> &candidates);

} // namespace mixc::dsl

#endif
