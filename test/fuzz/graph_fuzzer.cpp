// libFuzzer target: the runtime-graph loader (JSON + validation).
#include "abi/Graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mixc::graph::Graph g;
  std::string error;
  if (mixc::graph::fromJson(std::string(reinterpret_cast<const char *>(data), size), g, error))
    mixc::graph::toJson(g);
  return 0;
}
