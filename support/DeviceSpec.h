//===- DeviceSpec.h - the words --device takes ---------------------*- C++ -*-===//
//
// "cpu", "cuda" or "cuda:N": read without LibTorch, so that the command line
// is checked by the compiler's mixc too (tools/mixc), which does not load the
// runtime. What a spec resolves to on this machine: runtime/core/Device.h.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_SUPPORT_DEVICESPEC_H
#define MIXC_SUPPORT_DEVICESPEC_H

#include <string>

namespace mixc::support {

/// cuda:N -> N; cuda -> 0; -1 for anything else (cpu included).
int cudaIndex(const std::string &spec);

/// Whether `spec` is one --device takes: cpu, cuda or cuda:N.
bool isDeviceSpec(const std::string &spec);

} // namespace mixc::support

#endif
