// libFuzzer target: the DSL front end (lexer, parser, elaborator) on
// arbitrary text must report errors, never crash or hang.
#include "dsl/Frontend.h"

#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mixc::dsl::Frontend fe({});
  std::ostringstream err;
  std::string text(reinterpret_cast<const char *>(data), size);
  if (fe.loadText("fuzz.mix", text, err))
    fe.elaborate("", {}, err);
  return 0;
}
