// libFuzzer target: the intervention-script parser.
#include "dsl/Rewrite.h"

#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mixc::dsl::SourceManager sm;
  mixc::dsl::RwScript script;
  std::ostringstream err;
  mixc::dsl::parseRewrite(std::string(reinterpret_cast<const char *>(data), size), "fuzz.rw", sm,
                          script, err);
  return 0;
}
