//===- Elaborator.h - evaluate the DSL into a Program -----------*- C++ -*-===//
#ifndef MIXC_DSL_ELABORATOR_H
#define MIXC_DSL_ELABORATOR_H

#include "dsl/AST.h"
#include "dsl/ConfigEntry.h"
#include "dsl/Program.h"
#include "dsl/Value.h"

#include <map>

namespace mixc::dsl {

/// Definitions visible to the model: all loaded files' defs by name.
using DefTable = std::map<std::string, const Def *>;

/// Elaborates `model` with `config` overriding its parameters; throws
/// DslError with the offending location.
Program elaborateModel(const DefTable &defs, const Def &model,
                       const std::vector<ConfigEntry> &config);

} // namespace mixc::dsl

#endif
