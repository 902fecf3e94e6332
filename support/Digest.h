//===- Digest.h - a content digest for caches and lookups -------*- C++ -*-===//
//
// FNV-1a (64 bits): not cryptographic, only a name for content. The kernel
// cache names its libraries by it, bundles name their compiled intervention
// scripts by it.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_SUPPORT_DIGEST_H
#define MIXC_SUPPORT_DIGEST_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace mixc::support {

/// FNV-1a over `size` bytes at `data`, continuing from `h` (chains several pieces).
inline uint64_t fnv1a(const void *data, size_t size, uint64_t h = 1469598103934665603ull) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/// FNV-1a over `text`, continuing from `h`.
inline uint64_t fnv1a(const std::string &text, uint64_t h = 1469598103934665603ull) {
  return fnv1a(text.data(), text.size(), h);
}

/// A digest as 16 hex digits (a file name).
inline std::string hexDigest(uint64_t h) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

} // namespace mixc::support

#endif
