//===- Limits.h - sizes mixc refuses, stated once ---------------*- C++ -*-===//
//
// Bounds that the front end, the graph reader and the runtime all check
// against, so that an error message names the same limit everywhere and no
// size arithmetic can wrap.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_SUPPORT_LIMITS_H
#define MIXC_SUPPORT_LIMITS_H

#include <cmath>
#include <cstdint>
#include <limits>

namespace mixc::support {

/// The most elements one tensor shape may have (2^32 floats: 16 GiB). Any
/// product of dimensions up to it fits in int64 with room to spare.
constexpr int64_t kMaxTensorElements = int64_t(1) << 32;

/// Whether `v` is a finite float (|v| ≤ 3.4e38): a number read as a double
/// (an init rule's argument, a vector a script adds) that lands in float
/// tensors, where 1e39 is infinite and trains or patches to NaN.
inline bool fitsFloat(double v) {
  return std::isfinite(v) && std::fabs(v) <= static_cast<double>(std::numeric_limits<float>::max());
}

} // namespace mixc::support

#endif
