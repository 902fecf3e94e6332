//===- Suggest.h - nearest names for "did you mean" hints -------*- C++ -*-===//
//
// One suggester for every "unknown name" message: DSL names, config keys,
// model names, and node names in rewrite scripts.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_SUPPORT_SUGGEST_H
#define MIXC_SUPPORT_SUGGEST_H

#include <string>
#include <vector>

namespace mixc::support {

/// Levenshtein distance.
size_t editDistance(const std::string &a, const std::string &b);

/// Up to `k` candidates, closest to `name` first (a candidate that starts
/// with `name` counts as distance 1; ties keep the candidates' order).
std::vector<std::string> nearestNames(const std::string &name, std::vector<std::string> candidates,
                                      size_t k);

/// " (did you mean 'x'?)" for the closest candidate within a third of the
/// name's length (at least 2 edits), or "".
std::string didYouMean(const std::string &name, const std::vector<std::string> &candidates);

} // namespace mixc::support

#endif
