//===- mixc.cpp - the mixc driver -------------------------------------------===//
//
// The command-line front end: each command checks its arguments, calls the
// application layer (app/) and the runtime and experiment libraries, and
// turns what they return into output and an exit status: 0 success, 1 an
// error in the input (printed with its location), 2 bad command-line usage,
// 130 interrupted. The commands, options and usage text: Options.cpp. This
// file has main and the commands that need no LibTorch; the others are in
// RuntimeCommands.cpp (Commands.h says how the two halves meet).
//
//===----------------------------------------------------------------------===//
#include "app/Compile.h"
#include "app/Names.h"
#include "abi/Graph.h"
#include "dsl/AST.h"
#include "dsl/Frontend.h"
#include "experiments/ExperimentReport.h"
#include "experiments/Sweep.h"
#include "support/AtomicWrite.h"
#include "support/OutputGuard.h"
#include "tools/mixc/Commands.h"
#include "tools/mixc/Help.h"
#include "tools/mixc/Options.h"

#include <filesystem>
#include <map>
#include <set>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using mixc::cli::Options;
using mixc::support::Status;

namespace mixc::cli {
/// The one place a library Status becomes a message and an exit code:
/// "error: " before a failure's message (unless it is a located diagnostic,
/// "file:line:col: error: ..."), an interruption's message as it is.
int report(const Status &status) {
  std::cout << std::flush;
  if (!status.isOk() && !status.message().empty()) {
    const std::string &m = status.message();
    const size_t located = m.find(": error: ");
    const bool prefixed = status.wasInterrupted() || (located != std::string::npos && located < m.find('\n'));
    std::cerr << (prefixed ? "" : "error: ") << m << "\n";
  }
  return status.exitCode();
}

/// The command being run, for usage()'s pointer to its help.
std::string gCommand;

/// A usage error: the problem and where the help is, never the whole help
/// (it would push the problem off the screen). Exit status 2.
int usage(const std::string &problem) {
  std::cerr << "mixc: " << problem << "\n";
  if (mixc::cli::optionsOf().count(gCommand))
    std::cerr << "run 'mixc " << gCommand << " --help' for its usage and options\n";
  else
    std::cerr << "run 'mixc --help' for the commands and options\n";
  return 2;
}

} // namespace mixc::cli

using mixc::cli::report;
using mixc::cli::usage;

namespace {
/// `text` to -o's file (atomically; never over an input), or to stdout.
int emit(const Options &o, const std::string &text) {
  if (o.output.empty()) {
    std::cout << text;
    return 0;
  }
  std::vector<std::string> inputs = o.files;
  inputs.insert(inputs.end(), o.rewrites.begin(), o.rewrites.end());
  if (std::string why = mixc::support::outputClash(o.output, inputs); !why.empty())
    return report(Status::failed(why));
  std::string error;
  return report(mixc::support::writeFileAtomically(o.output, text, error) ? Status::ok() : Status::failed(error));
}

mixc::app::ModelRequest request(const Options &o, const std::string &file) {
  return {file, o.model, o.config, o.includeDirs, o.rewrite};
}

int cmdCompile(const Options &o) { return mixc::cli::compileCommand(o, nullptr); }

int cmdParams(const Options &o) {
  if (o.files.empty())
    return usage("params takes one or more .mix files");
  int status = 0;
  for (const std::string &f : o.files) {
    mix::CompileResult result;
    if (Status st = mixc::app::compiler().compile(request(o, f), result, std::cerr); !st.isOk()) {
      status = report(st);
      continue;
    }
    std::printf("%-28s %-24s %12lld\n", f.c_str(), result.graph.model.c_str(),
                static_cast<long long>(mixc::graph::parameterCount(result.graph)));
  }
  return status;
}

int cmdNames(const Options &o) {
  if (o.files.size() != 1)
    return usage("names takes one .mix file");
  mix::CompileResult result;
  if (Status st = mixc::app::compiler().compile(request(o, o.files[0]), result, std::cerr); !st.isOk())
    return report(st);
  if (o.edges) // what `patch SENDER -> RECEIVER at P` can name
    return emit(o, mixc::app::formatEdges(mixc::app::edges(result.graph)));
  return emit(o, mixc::app::formatNamedPoints(mixc::app::namedPoints(result.graph)));
}

int cmdSweep(const Options &o) { return mixc::cli::sweepCommand(o, {}); }

int cmdReport(const Options &o) {
  if (o.files.empty())
    return usage("report takes one or more sweep folders");
  return report(mixc::experiments::writeReport(o.files, o.output.empty() ? "report.md" : o.output,
                                               o.title.empty() ? "mixc experiment report" : o.title, std::cout,
                                               o.compare));
}

/// The commands that need no LibTorch (the others: RuntimeCommands.cpp).
const std::map<std::string, int (*)(const Options &)> &commands() {
  static const std::map<std::string, int (*)(const Options &)> table = {
      {"compile", cmdCompile}, {"params", cmdParams}, {"names", cmdNames},
      {"sweep", cmdSweep},     {"report", cmdReport},
  };
  return table;
}
} // namespace

namespace mixc::cli {

/// Runs a command; an exception from the runtime (e.g. a LibTorch check on
/// bad data) becomes a one-line error and exit status 1, never a crash.
int guarded(int (*command)(const Options &), const Options &o) {
  try {
    return command(o);
  } catch (const std::exception &e) {
    std::string what = e.what();
    std::cerr << "error: " << what.substr(0, what.find('\n')) << "\n";
    return 1;
  }
}

int compileCommand(const Options &o, KernelCheck checkKernels) {
  if (o.files.size() != 1)
    return usage("compile takes one .mix file");
  if (o.emit == "ast") {
    mixc::dsl::Frontend fe(mixc::app::searchPath(o.includeDirs));
    if (!fe.load(o.files[0], std::cerr))
      return 1;
    std::ostringstream ss;
    mixc::dsl::printModule(ss, fe.mainModule());
    return emit(o, ss.str());
  }
  if (o.emit == "bundle" && o.output.empty())
    return usage("--emit=bundle writes a folder: give it with -o DIR");
  mixc::app::ModelRequest req = request(o, o.files[0]);
  req.stage = o.emit == "mlir-import" ? mix::Stage::Import : mix::Stage::Lowered;
  req.linearityRemarks = o.emit == "mlir";
  if (o.emit == "bundle") // the scripts are compiled against the plain model, as `mixc intervene` does
    req.rewrite.clear();
  mix::CompileResult result;
  if (Status st = mixc::app::compiler().compile(req, result, std::cerr); !st.isOk())
    return report(st);
  if (o.backend == "generated" && checkKernels)
    if (Status built = checkKernels(o, result); !built.isOk())
      return report(built);
  if (o.emit == "bundle")
    return report(mixc::app::writeBundle(result, o.rewrites, o.output, std::cerr));
  return emit(o, o.emit == "graph" ? mixc::graph::toJson(result.graph)
                 : o.emit == "cpp" ? result.cpuKernels
                 : o.emit == "cu"  ? result.cudaKernels
                                   : result.mlir);
}

int sweepCommand(const Options &o, const std::vector<std::string> &devices) {
  if (o.files.size() != 1)
    return usage("sweep takes one sweep file");
  mixc::experiments::SweepOptions s;
  s.file = o.files[0];
  s.scale = o.scale;
  s.outDir = o.outDir;
  s.jobs = o.jobs;
  s.pack = o.pack;
  s.backend = o.backend;
  s.dryRun = o.dryRun;
  s.retryFailed = o.retryFailed;
  s.engine = o.engine;
  s.cell = o.cell;
  s.status = o.status;
  s.slurm = o.slurm;
  s.sets = o.sets;
  s.devices = devices;
  if (o.jobsPerGpu > 0) {
    if (devices.empty())
      return usage("--jobs-per-gpu needs --device=cuda (or cuda:N)");
    if (o.jobs > 0)
      return usage("sweep takes --jobs or --jobs-per-gpu, not both");
    s.jobs = o.jobsPerGpu * static_cast<int64_t>(devices.size());
  }
  std::error_code ec;
  // The cells (and a SLURM script) run the mixc the user runs: this
  // program, or, in mixc-runtime, the compiler's mixc beside it (Commands.h).
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (self.filename() == kRuntimeProgram && std::filesystem::exists(self.parent_path() / "mixc", ec))
    self = self.parent_path() / "mixc";
  s.self = self.string();
  s.projectRoot = MIXC_SOURCE_ROOT;
  return report(mixc::experiments::runSweep(s, {std::cout, std::cerr}));
}

bool needsRuntime(const Options &o) {
  // (--version never comes here: main hands it over before parsing.)
  static const std::set<std::string> runtimeCommands = {"train", "eval", "intervene", "attribute", "align",
                                                        "export"};
  return runtimeCommands.count(o.command) || (o.command == "compile" && o.backend == "generated") ||
         (o.command == "sweep" && o.device != "cpu");
}

} // namespace mixc::cli

int main(int argc, char **argv) {
  if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << mixc::cli::kUsage;
    return 0;
  }
  if (argc >= 2 && std::string(argv[1]) == "--version") {
    Options o;
    o.command = "--version";
    return mixc::cli::runRuntimeCommand(o, argv);
  }
  if (argc >= 2)
    mixc::cli::gCommand = argv[1];
  // `mixc CMD --help` (anywhere after CMD): that command's usage, exit 0.
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      auto it = mixc::cli::optionsOf().find(mixc::cli::gCommand);
      if (it == mixc::cli::optionsOf().end())
        return usage("unknown command '" + mixc::cli::gCommand + "'" + mixc::cli::commandHint(mixc::cli::gCommand));
      std::cout << mixc::cli::commandHelp(mixc::cli::kUsage, mixc::cli::gCommand, it->second);
      return 0;
    }
  Options o;
  std::string problem;
  if (!mixc::cli::parseArgs(argc, argv, o, problem))
    return usage(problem);
  if (o.backend.empty())
    // train and sweep use the generated kernels wherever they build (auto:
    // else LibTorch, with a one-line note naming why); the analysis commands
    // stay on LibTorch, which saves every node --save names (a node inside a
    // fused region is not a tensor there).
    o.backend = o.command == "sweep" || o.command == "train" ? "auto" : "libtorch";
  if (mixc::cli::needsRuntime(o))
    return mixc::cli::runRuntimeCommand(o, argv);
  auto it = commands().find(o.command);
  if (it == commands().end())
    return usage("unknown command '" + o.command + "'" + mixc::cli::commandHint(o.command));
  return mixc::cli::guarded(it->second, o);
}
