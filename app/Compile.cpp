//===- Compile.cpp - what both compilers share -------------------------------===//
#include "app/Compile.h"

namespace mixc::app {

std::string needsCompiler(const std::string &what) {
  return what + " needs the compiler, and this mixc is the runtime-only build (-DMIXC_WITH_COMPILER=OFF): on a "
                "machine with the full build, compile the model to a bundle (mixc compile X.mix --emit=bundle -o "
                "DIR, with --rewrite S.rw for each intervention script) and name the bundle as the config's "
                "model.file";
}

std::vector<std::string> searchPath(const std::vector<std::string> &includeDirs) {
  std::vector<std::string> dirs = includeDirs;
  dirs.push_back(MIXC_SOURCE_ROOT);
  return dirs;
}

} // namespace mixc::app
