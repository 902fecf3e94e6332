//===- Compile.cpp - what both compilers share -------------------------------===//
#include "app/Compile.h"
#include "app/ScriptFiles.h"
#include "abi/Bundle.h"

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

support::Status writeBundle(const mix::CompileResult &compiled, const std::vector<std::string> &scripts,
                            const std::string &outDir, std::ostream &diagnostics) {
  graph::Bundle bundle{compiled.graph, compiled.cpuKernels, compiled.cudaKernels, {}};
  for (const std::string &path : scripts) {
    LoadedScript script;
    mix::CompileResult rewritten;
    if (support::Status st = loadScript(path, script, diagnostics); !st.isOk())
      return st;
    if (support::Status st = compiler().rewrite(compiled.graph, script, "", rewritten, diagnostics); !st.isOk())
      return st;
    graph::CompiledRewrite r;
    r.digest = script.digest;
    r.baseDigest = graph::graphDigest(compiled.graph);
    r.graph = std::move(rewritten.graph);
    r.cpuKernels = std::move(rewritten.cpuKernels);
    r.cudaKernels = std::move(rewritten.cudaKernels);
    bundle.rewrites.push_back(std::move(r));
  }
  std::string error;
  return graph::writeBundle(outDir, bundle, error) ? support::Status::ok() : support::Status::failed(error);
}

} // namespace mixc::app
