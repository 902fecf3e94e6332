//===- mixc.cpp - the mixc driver -------------------------------------------===//
//
// The command-line front end: each command checks its arguments, calls the
// application layer (app/) and the runtime and experiment libraries, and
// turns what they return into output and an exit status: 0 success, 1 an
// error in the input (printed with its location), 2 bad command-line usage,
// 130 interrupted. The commands, options and usage text: Options.cpp.
//
//===----------------------------------------------------------------------===//
#include "app/Compile.h"
#include "app/Kernels.h"
#include "app/Models.h"
#include "app/Names.h"
#include "app/Scripts.h"
#include "abi/Bundle.h"
#include "abi/Graph.h"
#include "dsl/AST.h"
#include "dsl/Frontend.h"
#include "experiments/ExperimentReport.h"
#include "experiments/Sweep.h"
#include "runtime/core/Device.h"
#include "runtime/core/HostMemory.h"
#include "runtime/analysis/Align.h"
#include "runtime/analysis/Attribute.h"
#include "runtime/analysis/Intervene.h"
#include "runtime/train/Trainer.h"
#include "runtime/train/Weights.h"
#include "support/AtomicWrite.h"
#include "support/OutputGuard.h"
#include "support/Process.h"
#include "support/StepTiming.h"
#include "tools/mixc/Help.h"
#include "tools/mixc/Options.h"

#include <torch/csrc/api/include/torch/version.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using mixc::cli::Options;
using mixc::support::Status;

namespace {
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

/// `mixc --version`: what this build is and what it can run.
std::string versionText() {
  std::ostringstream v;
  v << "mixc, commit " << MIXC_GIT_COMMIT << "\n"
    << "LibTorch " << TORCH_VERSION << (at::hasCUDA() ? " with CUDA" : " (CPU only)") << "\n"
    << mixc::app::compiler().version() << "\n";
  const std::string cxx = mixc::support::findProgram(mixc::kernels::compilerArgv(mixc::kernels::Target::Cpu)[0]);
  const std::string nvcc = mixc::support::findProgram(mixc::kernels::compilerArgv(mixc::kernels::Target::Cuda)[0]);
  v << "back ends: libtorch; generated CPU kernels " << (cxx.empty() ? "(no C++ compiler found)" : "(" + cxx + ")")
    << "; generated CUDA kernels " << (nvcc.empty() ? "(no nvcc found)" : "(" + nvcc + ")") << "\n";
  std::vector<std::string> gpus;
  std::string ignored;
  v << "devices: cpu";
  if (at::hasCUDA() && mixc::rt::expandDevice("cuda", gpus, ignored))
    for (const std::string &g : gpus)
      v << ", " << g;
  v << "\n";
  return v.str();
}

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

/// The generated kernels the options ask for (null: LibTorch); `status`
/// says why there are none when there must be.
std::shared_ptr<const mixc::kernels::Library> kernels(const Options &o, const mix::CompileResult &compiled,
                                                      Status &status) {
  std::shared_ptr<const mixc::kernels::Library> library;
  status = mixc::app::chooseKernels({o.backend, o.device, o.quiet}, compiled, library, std::cerr);
  if (status.wasInterrupted()) // the command stops here, whatever the back end
    std::exit(report(status));
  return library;
}

int cmdCompile(const Options &o) {
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
  if (o.emit == "bundle") // the scripts are compiled against the plain model, as `mixc intervene` does
    req.rewrite.clear();
  mix::CompileResult result;
  if (Status st = mixc::app::compiler().compile(req, result, std::cerr); !st.isOk())
    return report(st);
  Status built = Status::ok();
  if (o.backend == "generated" && !kernels(o, result, built))
    return report(built);
  if (o.emit == "bundle")
    return report(mixc::app::writeBundle(result, o.rewrites, o.output, std::cerr));
  return emit(o, o.emit == "graph" ? mixc::graph::toJson(result.graph)
                 : o.emit == "cpp" ? result.cpuKernels
                 : o.emit == "cu"  ? result.cudaKernels
                                   : result.mlir);
}

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
  return emit(o, mixc::app::formatNamedPoints(mixc::app::namedPoints(result.graph)));
}

/// train --time-steps: the cost printed, and with --out left there for the
/// sweep (support/StepTiming.h).
int timeSteps(const Options &o, const mixc::train::TrainConfig &config, const mixc::graph::Graph &graph,
              const mixc::train::RunOptions &run) {
  mixc::support::StepTiming t;
  if (Status st = mixc::train::timeSteps(config, graph, run, o.timeSteps, t, std::cerr); !st.isOk())
    return report(st);
  std::string error;
  if (!o.outDir.empty() &&
      !(mixc::support::makeFolder(o.outDir, error) && mixc::support::writeStepTiming(o.outDir, t, error)))
    return report(Status::failed(error));
  std::printf("%lld training steps at %.1f ms each, evaluations %.1f s in all (%s back end)\n",
              static_cast<long long>(t.totalSteps), 1e3 * t.stepSec, t.evalSec, t.backend.c_str());
  return 0;
}

int cmdTrain(const Options &o) {
  if (o.files.size() > 1)
    return usage("train takes at most one config file");
  std::string error;
  if (at::Device device(at::kCPU); !mixc::rt::resolveDevice(o.device, device, error))
    return report(Status::failed(error)); // one line, exit 1: what this LibTorch or machine lacks
  mixc::train::TrainConfig config;
  if (Status st = mixc::app::loadTrainConfig(o.files.empty() ? "" : o.files[0], o.sets, o.config, config, std::cerr);
      !st.isOk())
    return report(st);
  if (config.threads > 1)
    // OpenMP's idle workers (LibTorch's, the kernels') spin by default and
    // take the cores from OpenBLAS's own threads and back: measured on a
    // 2-core machine, 2 threads ran at 0.5-0.8x of 1; waiting passively,
    // 1.4-1.5x (bench/results/threads-*.txt). libgomp reads the policy
    // when it loads, so the process restarts itself once with it set.
    mixc::support::restartWithEnvironment("OMP_WAIT_POLICY", "passive");
  if (!mixc::train::bindTaskToModel(config, error))
    return report(Status::failed(error));
  if (!o.outDir.empty())
    config.outDir = o.outDir;
  if (o.maxSteps > 0)
    config.maxSteps = o.maxSteps;
  mixc::app::TrainModel model;
  if (Status st = mixc::app::modelForConfig(config, o.rewrite, o.includeDirs, model, std::cerr); !st.isOk())
    return report(st);
  Status built = Status::ok();
  mixc::train::RunOptions run{o.resume, o.quiet, o.stopAfter, kernels(o, model.compiled, built), o.overrides,
                              o.initFrom, o.device};
  if (!built.isOk())
    return report(built);
  if (o.timeSteps > 0)
    return timeSteps(o, config, model.compiled.graph, run);
  const Status status = mixc::train::train(config, model.compiled.graph, run, {std::cout, std::cerr});
  // The bundle's compiled intervention scripts go with the run, so that a
  // runtime-only mixc can intervene on it wherever the run folder goes.
  std::error_code ec;
  if (model.fromBundle && std::filesystem::is_directory(config.outDir, ec)) {
    if (!mixc::graph::copyRewrites(config.modelFile, config.outDir, error)) {
      report(status);
      return report(Status::failed(error));
    }
  }
  return report(status);
}

/// The run and script of intervene, attribute and align (attribute without
/// a script: every node at every role).
bool openScriptRun(const Options &o, const std::string &command, mixc::app::ScriptRun &run, int &exitCode) {
  const bool scriptless = command == "attribute" && o.files.size() == 1;
  if (o.files.size() != 2 && !scriptless) {
    exitCode = usage(command + " takes a run folder (or checkpoint) and a .rw script");
    return false;
  }
  Status st = mixc::app::openScriptRun(o.files[0], scriptless ? "" : o.files[1], run, std::cerr);
  exitCode = report(st);
  return st.isOk();
}

std::string scriptName(const Options &o, const char *none = "") {
  return o.files.size() > 1 ? std::filesystem::path(o.files[1]).stem().string() : none;
}

int cmdAttribute(const Options &o) {
  mixc::app::ScriptRun run;
  int code = 0;
  if (!openScriptRun(o, "attribute", run, code))
    return code;
  mixc::analysis::InterveneOptions opts;
  opts.outDir = o.outDir;
  opts.scriptName = scriptName(o, "every-node"); // without a script, a folder of its own
  if (o.size > 0)
    opts.size = o.size;
  Status built = Status::ok();
  if (opts.kernels = kernels(o, run.rewritten, built); !built.isOk())
    return report(built);
  if (o.check && o.checkTop > 0)
    return usage("attribute takes --check (every cell) or --check-top N, not both");
  std::vector<mixc::analysis::Attribution> results;
  return report(mixc::analysis::attribute(run.checkpoint, run.rewritten.graph, run.spec, opts,
                                       o.checkTop > 0 ? o.checkTop : o.check ? -1 : 0, results, std::cout));
}

int cmdAlign(const Options &o) {
  mixc::app::ScriptRun run;
  int code = 0;
  if (!openScriptRun(o, "align", run, code))
    return code;
  mixc::analysis::AlignOptions opts;
  opts.outDir = o.outDir;
  opts.scriptName = scriptName(o);
  opts.quiet = o.quiet;
  if (o.size > 0)
    opts.size = o.size;
  if (o.steps > 0)
    opts.steps = o.steps;
  if (o.batch > 0)
    opts.batch = o.batch;
  if (o.trainDocs > 0)
    opts.trainDocs = o.trainDocs;
  if (o.lr > 0)
    opts.lr = o.lr;
  Status built = Status::ok();
  if (opts.kernels = kernels(o, run.rewritten, built); !built.isOk())
    return report(built);
  std::vector<mixc::analysis::AlignResult> results;
  return report(mixc::analysis::align(run.checkpoint, run.rewritten.graph, run.spec, opts, results, std::cout));
}

int cmdIntervene(const Options &o) {
  mixc::app::ScriptRun run;
  int code = 0;
  if (!openScriptRun(o, "intervene", run, code))
    return code;
  mixc::analysis::InterveneOptions opts;
  opts.outDir = o.outDir;
  opts.scriptName = scriptName(o);
  Status built = Status::ok();
  if (opts.kernels = kernels(o, run.rewritten, built); !built.isOk())
    return report(built);
  if (Status st = mixc::app::resolveSaveList(o.save, run.rewritten.graph, opts.save); !st.isOk())
    return report(st);
  if (o.size > 0)
    opts.size = o.size;
  std::vector<mixc::analysis::CellResult> results;
  return report(mixc::analysis::intervene(run.checkpoint, run.rewritten.graph, run.spec, opts, results, std::cout));
}

int cmdSweep(const Options &o) {
  if (o.files.size() != 1)
    return usage("sweep takes one sweep file");
  mixc::experiments::SweepOptions s;
  s.file = o.files[0];
  s.scale = o.scale;
  s.outDir = o.outDir;
  s.jobs = o.jobs;
  s.backend = o.backend;
  s.dryRun = o.dryRun;
  s.retryFailed = o.retryFailed;
  s.engine = o.engine;
  s.cell = o.cell;
  s.status = o.status;
  s.slurm = o.slurm;
  s.sets = o.sets;
  if (o.device != "cpu") {
    std::string error;
    if (o.engine == "slurm") // the compute nodes have the GPUs, not this one
      s.devices = {o.device};
    else if (!mixc::rt::expandDevice(o.device, s.devices, error))
      return report(Status::failed(error));
    if (o.jobsPerGpu > 0) {
      if (o.jobs > 0)
        return usage("sweep takes --jobs or --jobs-per-gpu, not both");
      s.jobs = o.jobsPerGpu * static_cast<int64_t>(s.devices.size());
    }
  } else if (o.jobsPerGpu > 0) {
    return usage("--jobs-per-gpu needs --device=cuda (or cuda:N)");
  }
  std::error_code ec;
  s.self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  s.projectRoot = MIXC_SOURCE_ROOT;
  return report(mixc::experiments::runSweep(s, {std::cout, std::cerr}));
}

int cmdReport(const Options &o) {
  if (o.files.empty())
    return usage("report takes one or more sweep folders");
  return report(mixc::experiments::writeReport(o.files, o.output.empty() ? "report.md" : o.output,
                                               o.title.empty() ? "mixc experiment report" : o.title, std::cout));
}

int cmdEval(const Options &o) {
  if (o.files.size() != 1)
    return usage("eval takes one run folder or checkpoint");
  return report(mixc::train::evaluate(o.files[0], o.size, std::cout, o.device, o.sets));
}

int cmdExport(const Options &o) {
  if (o.files.size() != 1)
    return usage("export takes one run folder or checkpoint");
  std::string path = o.output;
  if (path.empty()) {
    std::error_code ec;
    std::filesystem::path run = o.files[0];
    path = ((std::filesystem::is_directory(run, ec) ? run : run.parent_path()) / "weights.safetensors").string();
  }
  return report(mixc::train::exportRun(o.files[0], path, std::cout));
}

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

const std::map<std::string, int (*)(const Options &)> &commands() {
  static const std::map<std::string, int (*)(const Options &)> table = {
      {"compile", cmdCompile},     {"params", cmdParams}, {"names", cmdNames},   {"train", cmdTrain},
      {"eval", cmdEval},           {"intervene", cmdIntervene}, {"attribute", cmdAttribute},
      {"align", cmdAlign},         {"sweep", cmdSweep},   {"report", cmdReport}, {"export", cmdExport},
  };
  return table;
}
} // namespace

int main(int argc, char **argv) {
  mixc::rt::keepFreedHostMemory(); // before the first tensor (runtime/core/HostMemory.h)
  if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << mixc::cli::kUsage;
    return 0;
  }
  if (argc >= 2 && std::string(argv[1]) == "--version") {
    std::cout << versionText();
    return 0;
  }
  if (argc >= 2)
    gCommand = argv[1];
  // `mixc CMD --help` (anywhere after CMD): that command's usage, exit 0.
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      auto it = mixc::cli::optionsOf().find(gCommand);
      if (it == mixc::cli::optionsOf().end())
        return usage("unknown command '" + gCommand + "'");
      std::cout << mixc::cli::commandHelp(mixc::cli::kUsage, gCommand, it->second);
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
  auto it = commands().find(o.command);
  if (it == commands().end())
    return usage("unknown command '" + o.command + "'");
  return guarded(it->second, o);
}
