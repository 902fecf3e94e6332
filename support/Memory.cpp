//===- Memory.cpp - what this process may allocate -------------------------===//
#include "support/Memory.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace mixc::support {
namespace {
/// A cgroup's memory limit in bytes (v2, then v1), or 0 when there is none.
int64_t cgroupLimit() {
  for (const char *file : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(file);
    std::string text;
    if (in >> text && !text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
      try {
        return std::stoll(text);
      } catch (...) { // larger than int64: no limit
      }
    }
  }
  return 0;
}
} // namespace

int64_t machineMemoryBytes() {
  const int64_t physical = static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
  const int64_t limit = cgroupLimit();
  return limit > 0 && limit < physical ? limit : physical;
}

std::string formatBytes(double bytes) {
  const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024 && u < 5)
    bytes /= 1024, ++u;
  char text[64];
  std::snprintf(text, sizeof text, u == 0 || bytes >= 100 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return text;
}

std::string tooLargeForMemory(double bytes, const std::string &what) {
  const int64_t memory = machineMemoryBytes();
  if (memory <= 0 || bytes <= static_cast<double>(memory))
    return "";
  return what + " " + formatBytes(bytes) + ", and this machine has " + formatBytes(static_cast<double>(memory));
}

} // namespace mixc::support
