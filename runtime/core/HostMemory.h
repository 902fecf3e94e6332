//===- HostMemory.h - how freed tensor memory goes back to the allocator ---===//
#ifndef MIXC_RUNTIME_CORE_HOSTMEMORY_H
#define MIXC_RUNTIME_CORE_HOSTMEMORY_H

namespace mixc::rt {
/// Makes glibc's malloc keep freed blocks of up to 256 MiB in the process
/// (no mmap per block, no trimming) instead of handing them back to the OS.
/// A training step frees and reallocates the same large temporaries every
/// step (the embedding's dense gradient, [V, d]; activations). Under glibc's
/// adaptive thresholds a fresh process keeps handing such blocks back and
/// page-faulting them in again (page-fault handlers show in `perf` of a
/// step; our reading of why): one fresh process per row,
/// attention d=64 trains 1.32-1.37x faster with these settings, DeltaNet
/// 1.12-1.19x, Mamba 1.08x, H3 d=128 1.00-1.10x (bench/malloc_ab.sh,
/// bench/results/malloc-2026-12-05.txt). The process keeps its
/// peak footprint instead. Once set, glibc's own adaptive thresholds do not
/// come back for the rest of the process.
void keepFreedHostMemory();
} // namespace mixc::rt

#endif // MIXC_RUNTIME_CORE_HOSTMEMORY_H
