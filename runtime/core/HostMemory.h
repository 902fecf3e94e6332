//===- HostMemory.h - how freed tensor memory goes back to the allocator ---===//
#ifndef MIXC_RUNTIME_CORE_HOSTMEMORY_H
#define MIXC_RUNTIME_CORE_HOSTMEMORY_H

namespace mixc::rt {
/// Makes glibc's malloc keep freed blocks of up to 256 MiB in the process
/// (no mmap per block, no trimming) instead of handing them back to the OS.
/// A training step frees and reallocates the same large temporaries every
/// step (the embedding's dense gradient, [V, d]; activations); each fresh
/// mmap'd block page-faults on first touch, 8-15 % of a step at d = 128
/// (train_throughput --malloc glibc,keep). The process keeps its
/// peak footprint instead. Once set, glibc's own adaptive thresholds do not
/// come back for the rest of the process.
void keepFreedHostMemory();
} // namespace mixc::rt

#endif // MIXC_RUNTIME_CORE_HOSTMEMORY_H
