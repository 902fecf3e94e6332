//===- DeviceSpec.cpp - the words --device takes ----------------------------===//
#include "support/DeviceSpec.h"

namespace mixc::support {

int cudaIndex(const std::string &spec) {
  if (spec == "cuda")
    return 0;
  if (spec.rfind("cuda:", 0) != 0 || spec.size() == 5 || spec.size() > 8)
    return -1;
  int n = 0;
  for (char c : spec.substr(5)) {
    if (c < '0' || c > '9')
      return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

bool isDeviceSpec(const std::string &spec) { return spec == "cpu" || cudaIndex(spec) >= 0; }

} // namespace mixc::support
