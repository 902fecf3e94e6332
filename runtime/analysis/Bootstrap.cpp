//===- Bootstrap.cpp - percentile bootstrap of a ratio of means ------------===//
#include "runtime/analysis/Bootstrap.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace mixc::analysis {

std::vector<Interval> bootstrapAttrib(const std::vector<double> &pClean, const std::vector<double> &pCorrupt,
                                      const std::vector<std::vector<double>> &pPatched, int replicates,
                                      uint64_t seed, double minDenominator) {
  const size_t n = pClean.size(), cells = pPatched.size();
  std::vector<Interval> out(cells);
  if (n == 0 || replicates <= 0)
    return out;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, n - 1);
  std::vector<std::vector<double>> samples(cells); // [cell][replicate], finite ratios only
  std::vector<double> weight(n);                    // how often each document was drawn
  for (int b = 0; b < replicates; ++b) {
    std::fill(weight.begin(), weight.end(), 0.0);
    for (size_t k = 0; k < n; ++k)
      weight[pick(rng)] += 1;
    double sumO = 0, sumC = 0;
    for (size_t i = 0; i < n; ++i)
      sumO += weight[i] * pClean[i], sumC += weight[i] * pCorrupt[i];
    const double denom = (sumO - sumC) / static_cast<double>(n);
    if (!(denom > minDenominator))
      continue;
    for (size_t c = 0; c < cells; ++c) {
      double sumP = 0;
      for (size_t i = 0; i < n; ++i)
        sumP += weight[i] * pPatched[c][i];
      samples[c].push_back((sumP - sumC) / static_cast<double>(n) / denom);
    }
  }
  // Percentiles by linear interpolation between order statistics.
  auto quantile = [](std::vector<double> &v, double q) {
    double pos = q * static_cast<double>(v.size() - 1);
    size_t i = static_cast<size_t>(std::floor(pos));
    double frac = pos - static_cast<double>(i);
    return i + 1 < v.size() ? v[i] * (1 - frac) + v[i + 1] * frac : v[i];
  };
  for (size_t c = 0; c < cells; ++c) {
    std::vector<double> &v = samples[c];
    if (v.empty() || static_cast<double>(v.size()) < 0.95 * replicates)
      continue;
    std::sort(v.begin(), v.end());
    out[c] = {quantile(v, 0.025), quantile(v, 0.975), true};
  }
  return out;
}

} // namespace mixc::analysis
