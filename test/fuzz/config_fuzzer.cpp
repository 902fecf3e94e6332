// libFuzzer target: the training-config loader (TOML + validation).
#include "runtime/train/Config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mixc::train::TrainConfig config;
  std::string error;
  mixc::train::parseConfig(std::string(reinterpret_cast<const char *>(data), size), "fuzz.toml", ".",
                           ".", config, error);
  return 0;
}
