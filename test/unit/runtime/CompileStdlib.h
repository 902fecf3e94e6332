// Compiles a .mix model (a stdlib architecture, or a test's own file) for
// the runtime tests (lowered: fused regions and their generated CPU source
// included).
#ifndef MIXC_TEST_UNIT_RUNTIME_COMPILESTDLIB_H
#define MIXC_TEST_UNIT_RUNTIME_COMPILESTDLIB_H

#include "app/Compile.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

/// Compiles the model in `file` (relative to the source root).
inline mix::CompileResult compileMixFile(const std::string &file,
                                         const std::vector<mixc::dsl::ConfigEntry> &config) {
  std::ostringstream err;
  mix::CompileResult result;
  mixc::support::Status st =
      mixc::app::compiler().compile({std::string(MIXC_SOURCE_ROOT) + "/" + file, "", config}, result, err);
  EXPECT_TRUE(st.isOk()) << err.str() << st.message();
  return result;
}

/// Compiles the model in `text` (a test's own source, written to a
/// temporary file; imports resolve from the source root).
inline mix::CompileResult compileMixSource(const std::string &text, const std::string &name,
                                           const std::vector<mixc::dsl::ConfigEntry> &config = {}) {
  const std::string path = ::testing::TempDir() + "/" + name + ".mix";
  {
    std::ofstream out(path);
    out << text;
  }
  std::ostringstream err;
  mix::CompileResult result;
  mixc::support::Status st = mixc::app::compiler().compile({path, "", config}, result, err);
  EXPECT_TRUE(st.isOk()) << err.str() << st.message() << "\n" << text;
  return result;
}

inline mix::CompileResult compileStdlib(const std::string &arch,
                                        const std::vector<mixc::dsl::ConfigEntry> &config) {
  return compileMixFile("stdlib/" + arch + ".mix", config);
}

#endif
