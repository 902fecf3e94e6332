// Compiles a .mix model (a stdlib architecture, or a test's own file) for
// the runtime tests (lowered: fused regions and their generated CPU source
// included).
#ifndef MIXC_TEST_UNIT_RUNTIME_COMPILESTDLIB_H
#define MIXC_TEST_UNIT_RUNTIME_COMPILESTDLIB_H

#include "dsl/Frontend.h"
#include "mix/Compiler.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

/// Compiles the model in `file` (relative to the source root).
inline mix::CompileResult compileMixFile(const std::string &file,
                                         const std::vector<mixc::dsl::ConfigEntry> &config) {
  mixc::dsl::Frontend fe({MIXC_SOURCE_ROOT});
  std::ostringstream err;
  EXPECT_TRUE(fe.load(std::string(MIXC_SOURCE_ROOT) + "/" + file, err)) << err.str();
  auto program = fe.elaborate("", config, err);
  EXPECT_TRUE(program) << err.str();
  mix::CompileResult result;
  if (program) {
    EXPECT_TRUE(mix::compileProgram(*program, fe.sources(), mix::Stage::Lowered, result, err)) << err.str();
  }
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
  mixc::dsl::Frontend fe({MIXC_SOURCE_ROOT});
  std::ostringstream err;
  EXPECT_TRUE(fe.load(path, err)) << err.str() << "\n" << text;
  auto program = fe.elaborate("", config, err);
  EXPECT_TRUE(program) << err.str() << "\n" << text;
  mix::CompileResult result;
  if (program) {
    EXPECT_TRUE(mix::compileProgram(*program, fe.sources(), mix::Stage::Lowered, result, err)) << err.str();
  }
  return result;
}

inline mix::CompileResult compileStdlib(const std::string &arch,
                                        const std::vector<mixc::dsl::ConfigEntry> &config) {
  return compileMixFile("stdlib/" + arch + ".mix", config);
}

#endif
