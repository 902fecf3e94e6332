//===- Compile.h - from a .mix file or a bundle to a runtime graph -*- C++ -*-===//
//
// Compiling behind one interface with two implementations, chosen when mixc
// is built: the MLIR compiler (MlirCompiler.cpp) in full builds, and in
// runtime-only builds (-DMIXC_WITH_COMPILER=OFF) the stored one
// (StoredCompiler.cpp), which finds intervention scripts compiled into a
// run's bundle and says how to get what it cannot compile. The CLI, the
// Python module, bench and tests call this, never the compiler directly.
//
// Located diagnostics (file:line:col) go to `diagnostics`; a failure whose
// message is empty has written them there.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_APP_COMPILE_H
#define MIXC_APP_COMPILE_H

#include "abi/Graph.h"
#include "dsl/ConfigEntry.h"
#include "dsl/Rewrite.h"
#include "mix/Compiler.h" // plain C++: CompileResult and Stage
#include "support/Status.h"

#include <ostream>
#include <string>
#include <vector>

namespace mixc::app {

/// What to compile: a .mix file with its configuration.
struct ModelRequest {
  std::string file;                        // the .mix file
  std::string model;                       // which model of the file ("": its only or last one)
  std::vector<dsl::ConfigEntry> config;    // integer parameters, key = value
  std::vector<std::string> includeDirs;    // searched for imports before the source root
  std::string rewrite;                     // a .rw script applied while compiling ("": none)
  mix::Stage stage = mix::Stage::Lowered;
  bool linearityRemarks = false;           // say why a scan keeps its sequential form (--emit=mlir)
};

/// An intervention script read once: its parse, sources and digest.
struct LoadedScript {
  std::string path;
  dsl::SourceManager sources;
  dsl::RwScript script;
  std::string digest; // of its text and its add(FILE) vectors (scriptDigest)
};

class Compiler {
public:
  virtual ~Compiler() = default;
  /// Whether this build can compile .mix files (false: runtime-only).
  virtual bool canCompile() const = 0;
  /// One line for `mixc --version`: "compiler: ...".
  virtual std::string version() const = 0;
  /// The request's model, compiled to `out` (its IR, graph and kernel sources).
  virtual support::Status compile(const ModelRequest &request, mix::CompileResult &out,
                                  std::ostream &diagnostics) = 0;
  /// `script` applied to `graph` (a run's); `runDir` holds the run's
  /// bundle-compiled rewrites for builds that cannot compile.
  virtual support::Status rewrite(const graph::Graph &graph, const LoadedScript &script, const std::string &runDir,
                                  mix::CompileResult &out, std::ostream &diagnostics) = 0;
};

/// This build's compiler.
Compiler &compiler();

/// The runtime-only build's answer wherever the compiler is needed.
std::string needsCompiler(const std::string &what);

/// A bundle at `outDir`: the compiled model with each script in `scripts`
/// compiled against it (as `mixc intervene` applies them).
support::Status writeBundle(const mix::CompileResult &compiled, const std::vector<std::string> &scripts,
                            const std::string &outDir, std::ostream &diagnostics);

/// The import search path of a request: its folders, then the source root.
std::vector<std::string> searchPath(const std::vector<std::string> &includeDirs);

} // namespace mixc::app

#endif
