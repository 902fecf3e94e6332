//===- HostIsa.cpp - which copy of a host sweep runs ------------------------===//
#include "runtime/core/HostIsa.h"

#include <atomic>

namespace mixc::rt {
namespace {
bool cpuHasAvx2Fma() {
#if defined(__x86_64__) && defined(__GNUC__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}
std::atomic<bool> gAllowed{true};
} // namespace

bool hostAvx2Fma() {
  static const bool has = cpuHasAvx2Fma();
  return has && gAllowed.load(std::memory_order_relaxed);
}

void setHostAvx2Fma(bool allow) { gAllowed = allow; }
} // namespace mixc::rt
