//===- Memory.h - what this process may allocate ----------------*- C++ -*-===//
//
// Sizes are checked against the machine before anything is allocated: a
// model or a task too large for it is refused with both figures, instead of
// growing tensor by tensor until the kernel's OOM killer ends the process.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_SUPPORT_MEMORY_H
#define MIXC_SUPPORT_MEMORY_H

#include <cstdint>
#include <string>

namespace mixc::support {

/// The memory this process may use: the machine's physical memory, or its
/// cgroup's limit (a container, a SLURM job) when that is lower.
int64_t machineMemoryBytes();

/// "512 MiB", "12.3 GiB".
std::string formatBytes(double bytes);

/// "" when `bytes` fit in machineMemoryBytes(); otherwise why not: "`what`
/// need(s) <bytes>, and this machine has <memory>".
std::string tooLargeForMemory(double bytes, const std::string &what);

} // namespace mixc::support

#endif
