//===- Limits.h - sizes mixc refuses, stated once ---------------*- C++ -*-===//
//
// Bounds that the front end, the graph reader and the runtime all check
// against, so that an error message names the same limit everywhere and no
// size arithmetic can wrap.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_SUPPORT_LIMITS_H
#define MIXC_SUPPORT_LIMITS_H

#include <cstdint>

namespace mixc::support {

/// The most elements one tensor shape may have (2^32 floats: 16 GiB). Any
/// product of dimensions up to it fits in int64 with room to spare.
constexpr int64_t kMaxTensorElements = int64_t(1) << 32;

} // namespace mixc::support

#endif
