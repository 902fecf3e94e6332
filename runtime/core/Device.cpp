//===- Device.cpp - where a run's tensors live ------------------------------===//
#include "runtime/core/Device.h"
#include "support/DeviceSpec.h"

#include <torch/cuda.h>

#include <cstdlib>

namespace mixc::rt {
using support::cudaIndex;

bool resolveDevice(const std::string &spec, at::Device &device, std::string &error) {
  if (spec == "cpu") {
    device = at::Device(at::kCPU);
    return true;
  }
  const int index = cudaIndex(spec);
  if (index < 0) {
    error = "the device must be cpu, cuda or cuda:N, got '" + spec + "'"; // the CLI checks --device first
    return false;
  }
  if (!at::hasCUDA()) {
    error = "--device=" + spec + ": this mixc's LibTorch has no CUDA (Debian's is CPU-only); build mixc against "
            "a CUDA LibTorch (README: \"Training on a GPU\")";
    return false;
  }
  const int count = static_cast<int>(torch::cuda::device_count());
  if (count == 0) {
    const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
    error = "--device=" + spec + ": no CUDA device is visible" +
            (visible ? std::string(" (CUDA_VISIBLE_DEVICES=") + visible + ")" : std::string());
    return false;
  }
  if (index >= count) {
    error = "--device=" + spec + ": this machine shows " + std::to_string(count) + " CUDA device" +
            (count == 1 ? " (cuda:0)" : "s (cuda:0 to cuda:" + std::to_string(count - 1) + ")");
    return false;
  }
  device = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index));
  return true;
}

bool expandDevice(const std::string &spec, std::vector<std::string> &devices, std::string &error) {
  at::Device device(at::kCPU);
  if (!resolveDevice(spec, device, error))
    return false;
  devices.clear();
  if (spec == "cuda")
    for (int k = 0; k < static_cast<int>(torch::cuda::device_count()); ++k)
      devices.push_back("cuda:" + std::to_string(k));
  else
    devices.push_back(spec);
  return true;
}

} // namespace mixc::rt
