// libFuzzer target: the safetensors reader (weights for --init-from,
// mixc export's files, rotations), on the bytes of a whole file.
#include "support/Safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<mixc::support::StoredTensor> tensors;
  std::map<std::string, std::string> metadata;
  std::string error;
  mixc::support::parseSafetensors(std::string(reinterpret_cast<const char *>(data), size), "fuzz.safetensors",
                                  tensors, metadata, error);
  return 0;
}
