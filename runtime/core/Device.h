//===- Device.h - where a run's tensors live: --device=cpu|cuda[:N] -*- C++ -*-===//
//
// One place that turns a --device value into a LibTorch device, with the
// reason when this LibTorch or this machine cannot give it: a CPU-only
// LibTorch (Debian's), no CUDA device visible, an index past the last one.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_CORE_DEVICE_H
#define MIXC_RUNTIME_CORE_DEVICE_H

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace mixc::rt {

/// `spec` (cpu, cuda or cuda:N: support/DeviceSpec.h) as a device that can
/// run here; false with `error` (one line) when it cannot.
bool resolveDevice(const std::string &spec, at::Device &device, std::string &error);

/// The devices `spec` names here, each resolvable: cuda -> every visible
/// GPU (cuda:0, cuda:1, ...), cuda:N -> itself, cpu -> cpu.
bool expandDevice(const std::string &spec, std::vector<std::string> &devices, std::string &error);

} // namespace mixc::rt

#endif
