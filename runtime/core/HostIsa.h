//===- HostIsa.h - an AVX2 + FMA copy of a host sweep, chosen at run time --===//
//
// The runtime is compiled for baseline x86-64 (SSE2), so a loop over doubles
// runs two lanes wide. A sweep whose body is an always-inline function can be
// instantiated twice: once as is, once inside a function compiled with
// MIXC_TARGET_AVX2_FMA, and hostAvx2Fma() picks one per call. Results differ
// between the two in the last bits (FMA contracts a·b + c), never between
// two runs on one machine. Tests run both copies against the reference
// (setHostAvx2Fma(false) forces the baseline one).
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_CORE_HOSTISA_H
#define MIXC_RUNTIME_CORE_HOSTISA_H

#if defined(__x86_64__) && defined(__GNUC__)
#define MIXC_TARGET_AVX2_FMA __attribute__((target("avx2,fma")))
#else
#define MIXC_TARGET_AVX2_FMA
#endif
#define MIXC_ALWAYS_INLINE inline __attribute__((always_inline))

namespace mixc::rt {
/// Whether the host sweeps take their AVX2 + FMA copies: the CPU has both,
/// and setHostAvx2Fma(false) has not turned them off.
bool hostAvx2Fma();
/// For tests (both copies against one reference); on by default.
void setHostAvx2Fma(bool allow);
} // namespace mixc::rt

#endif // MIXC_RUNTIME_CORE_HOSTISA_H
