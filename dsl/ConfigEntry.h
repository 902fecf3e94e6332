//===- ConfigEntry.h - one model parameter set from outside -----*- C++ -*-===//
//
// `--config d=64` and `[model.config]` entries: a header of its own so that
// the elaborator, the front end and the driver include it without including
// each other.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_DSL_CONFIGENTRY_H
#define MIXC_DSL_CONFIGENTRY_H

#include <string>

namespace mixc::dsl {

struct ConfigEntry {
  std::string key, value; // `--config d_model=64`
};

} // namespace mixc::dsl

#endif
