//===- HostMemory.cpp - glibc malloc settings for training ------------------===//
#include "runtime/core/HostMemory.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace mixc::rt {
void keepFreedHostMemory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
}
} // namespace mixc::rt
