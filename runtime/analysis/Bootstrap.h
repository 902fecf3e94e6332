//===- Bootstrap.h - confidence intervals for Attrib ------------*- C++ -*-===//
//
// Attrib is a ratio of means over documents (protocol §6):
//   Attrib = (mean p_patched − mean p_c) / (mean p_o − mean p_c).
// Its 95 % interval comes from the percentile bootstrap: documents are
// resampled with replacement (the same draw for every cell, so cells stay
// comparable), the ratio recomputed, and the 2.5th and 97.5th percentiles
// taken. A replicate whose denominator is at most `minDenominator` has no
// Attrib (as for the point estimate); if more than 5 % of the replicates
// have none, neither has the interval.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_TRAIN_BOOTSTRAP_H
#define MIXC_RUNTIME_TRAIN_BOOTSTRAP_H

#include <cstdint>
#include <vector>

namespace mixc::analysis {

struct Interval {
  double lo = 0, hi = 0;
  bool valid = false;
};

/// pClean, pCorrupt: [n] per-document probabilities of the true answer;
/// pPatched: [cells][n]. One interval per cell.
std::vector<Interval> bootstrapAttrib(const std::vector<double> &pClean, const std::vector<double> &pCorrupt,
                                      const std::vector<std::vector<double>> &pPatched, int replicates,
                                      uint64_t seed, double minDenominator = 0.01);

} // namespace mixc::analysis

#endif
