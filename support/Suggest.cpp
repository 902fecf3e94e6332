//===- Suggest.cpp - nearest names for "did you mean" hints ----------------===//
#include "support/Suggest.h"

#include <algorithm>
#include <cctype>

namespace mixc::support {
namespace {
/// A prefix (`mamba` for `mamba_lm`) counts as close.
size_t distance(const std::string &name, const std::string &candidate) {
  if (name == candidate)
    return 0;
  return name.size() >= 3 && candidate.rfind(name, 0) == 0 ? 1 : editDistance(name, candidate);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
} // namespace

size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cur = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] != b[j - 1])});
      prev = cur;
    }
  }
  return row[b.size()];
}

std::vector<std::string> nearestNames(const std::string &name, std::vector<std::string> candidates,
                                      size_t k) {
  // By distance ignoring case, then with it: `mixer.s` finds `mixer.S`
  // before `mixer.q`, which is as many edits away.
  std::vector<std::pair<std::pair<size_t, size_t>, size_t>> order; // ((distances), index)
  const std::string lowered = lower(name);
  for (size_t i = 0; i < candidates.size(); ++i)
    order.push_back({{distance(lowered, lower(candidates[i])), distance(name, candidates[i])}, i});
  std::stable_sort(order.begin(), order.end(),
                   [](const auto &x, const auto &y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < std::min(k, order.size()); ++i)
    out.push_back(std::move(candidates[order[i].second]));
  return out;
}

std::string didYouMean(const std::string &name, const std::vector<std::string> &candidates) {
  std::string best;
  size_t bestD = std::max<size_t>(2, name.size() / 3) + 1;
  for (const std::string &c : candidates)
    if (size_t d = distance(name, c); d < bestD) {
      bestD = d;
      best = c;
    }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

} // namespace mixc::support
