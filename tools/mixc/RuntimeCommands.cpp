//===- RuntimeCommands.cpp - the commands that need LibTorch ----------------===//
//
// train, eval, intervene, attribute, align and export; compile with
// --backend=generated (the kernels built and checked); sweep over GPUs;
// --version. They run in mixc-runtime (full builds: the compiler's mixc
// hands them over, Commands.h) and in the runtime-only mixc.
//
//===----------------------------------------------------------------------===//
#include "app/Compile.h"
#include "app/Kernels.h"
#include "app/Models.h"
#include "app/Scripts.h"
#include "abi/Bundle.h"
#include "abi/Graph.h"
#include "runtime/analysis/Align.h"
#include "runtime/analysis/Attribute.h"
#include "runtime/analysis/Intervene.h"
#include "runtime/core/Device.h"
#include "runtime/core/HostMemory.h"
#include "runtime/train/Trainer.h"
#include "runtime/train/Weights.h"
#include "support/AtomicWrite.h"
#include "support/Process.h"
#include "support/StepTiming.h"
#include "tools/mixc/Commands.h"

#include <torch/csrc/api/include/torch/version.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using mixc::cli::Options;
using mixc::cli::report;
using mixc::cli::usage;
using mixc::support::Status;

namespace {
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

/// compile --backend=generated: the kernels built (or why they cannot be).
Status checkKernels(const Options &o, const mix::CompileResult &compiled) {
  Status built = Status::ok();
  kernels(o, compiled, built);
  return built;
}

int cmdCompile(const Options &o) { return mixc::cli::compileCommand(o, checkKernels); }

/// sweep --device=cuda[:N]: the GPUs its cells are spread over.
int cmdSweep(const Options &o) {
  if (o.engine == "slurm") // the compute nodes have the GPUs, not this one
    return mixc::cli::sweepCommand(o, {o.device});
  std::vector<std::string> devices;
  std::string error;
  if (!mixc::rt::expandDevice(o.device, devices, error))
    return report(Status::failed(error));
  return mixc::cli::sweepCommand(o, devices);
}

int cmdVersion(const Options &) {
  std::cout << versionText();
  return 0;
}

/// train --time-steps: the cost printed, and with --out left there for the
/// sweep (support/StepTiming.h).
int timeSteps(const Options &o, const std::vector<mixc::train::TrainConfig> &configs,
              const mixc::graph::Graph &graph, const mixc::train::RunOptions &run) {
  mixc::support::StepTiming t;
  Status st = configs.size() == 1 ? mixc::train::timeSteps(configs[0], graph, run, o.timeSteps, t, std::cerr)
                                  : mixc::train::timePack(configs, graph, run, o.timeSteps, t, std::cerr);
  if (!st.isOk())
    return report(st);
  std::string error;
  if (!o.outDir.empty() &&
      !(mixc::support::makeFolder(o.outDir, error) && mixc::support::writeStepTiming(o.outDir, t, error)))
    return report(Status::failed(error));
  const std::string what = configs.size() == 1 ? "" : "a pack of " + std::to_string(configs.size()) + " runs, ";
  std::printf("%lld training steps at %.1f ms each, evaluations %.1f s in all (%s%s back end)\n",
              static_cast<long long>(t.totalSteps), 1e3 * t.stepSec, t.evalSec, what.c_str(), t.backend.c_str());
  return 0;
}

/// A training config as train runs it: `file` with --set and --config,
/// OpenMP's passive wait when it asks for threads, the task's vocabulary
/// bound to the model (an error then starts with `where`), and --max-steps.
Status loadTrainRun(const Options &o, const std::string &file, const std::string &where,
                    mixc::train::TrainConfig &config) {
  if (Status st = mixc::app::loadTrainConfig(file, o.sets, o.config, config, std::cerr); !st.isOk())
    return st;
  if (config.threads > 1)
    // OpenMP's idle workers (LibTorch's, the kernels') spin by default and
    // take the cores from OpenBLAS's own threads and back: measured on a
    // 2-core machine, 2 threads ran at 0.5-0.8x of 1; waiting passively,
    // 1.4-1.5x (bench/results/threads-*.txt). libgomp reads the policy
    // when it loads, so the process restarts itself once with it set.
    mixc::support::restartWithEnvironment("OMP_WAIT_POLICY", "passive");
  std::string error;
  if (!mixc::train::bindTaskToModel(config, error))
    return Status::failed(where + error);
  if (o.maxSteps > 0)
    config.maxSteps = o.maxSteps;
  return Status::ok();
}

/// `mixc train A.toml B.toml ...`: the runs as one pack (trainPack). The
/// model is compiled once, and again only for a config whose [model] says
/// something else, to compare the graphs.
int cmdTrainPack(const Options &o) {
  if ((!o.outDir.empty() && o.timeSteps == 0) || !o.initFrom.empty())
    return usage("train with several configs trains them as one pack: each config's [output] dir names its run "
                 "(--out only names where --time-steps writes its timing), and --init-from takes one config");
  std::vector<mixc::train::TrainConfig> configs(o.files.size());
  mixc::app::TrainModel model;
  std::string graphJson;
  for (size_t i = 0; i < o.files.size(); ++i) {
    mixc::train::TrainConfig &config = configs[i];
    if (Status st = loadTrainRun(o, o.files[i], o.files[i] + ": ", config); !st.isOk())
      return report(st);
    const mixc::train::TrainConfig &first = configs[0];
    if (i > 0 && config.modelFile == first.modelFile && config.modelName == first.modelName &&
        config.modelConfig == first.modelConfig)
      continue; // the same [model]: the same graph
    mixc::app::TrainModel own;
    if (Status st = mixc::app::modelForConfig(config, o.rewrite, o.includeDirs, own, std::cerr); !st.isOk())
      return report(st);
    const std::string json = mixc::graph::toJson(own.compiled.graph);
    if (i > 0 && json != graphJson)
      return report(Status::failed(o.files[i] + "'s model differs from " + o.files[0] +
                                   "'s ([model] file, name or config): the runs of a pack share one graph"));
    if (i == 0)
      graphJson = json, model = std::move(own);
  }
  Status built = Status::ok();
  mixc::train::RunOptions run{o.resume, o.quiet, o.stopAfter, kernels(o, model.compiled, built), o.overrides, "",
                              o.device};
  if (!built.isOk())
    return report(built);
  if (o.timeSteps > 0)
    return timeSteps(o, configs, model.compiled.graph, run);
  return report(mixc::train::trainPack(configs, model.compiled.graph, run, {std::cout, std::cerr}));
}

int cmdTrain(const Options &o) {
  if (o.files.size() > 1)
    return cmdTrainPack(o);
  std::string error;
  if (at::Device device(at::kCPU); !mixc::rt::resolveDevice(o.device, device, error))
    return report(Status::failed(error)); // one line, exit 1: what this LibTorch or machine lacks
  mixc::train::TrainConfig config;
  if (Status st = loadTrainRun(o, o.files.empty() ? "" : o.files[0], "", config); !st.isOk())
    return report(st);
  if (!o.outDir.empty())
    config.outDir = o.outDir;
  mixc::app::TrainModel model;
  if (Status st = mixc::app::modelForConfig(config, o.rewrite, o.includeDirs, model, std::cerr); !st.isOk())
    return report(st);
  Status built = Status::ok();
  mixc::train::RunOptions run{o.resume, o.quiet, o.stopAfter, kernels(o, model.compiled, built), o.overrides,
                              o.initFrom, o.device};
  if (!built.isOk())
    return report(built);
  if (o.timeSteps > 0)
    return timeSteps(o, {config}, model.compiled.graph, run);
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
  if (o.edges && !scriptless) {
    exitCode = usage("attribute --edges takes a run folder (or checkpoint) alone: it writes its own script, "
                     "every edge at key, value, divider and query");
    return false;
  }
  Status st = mixc::app::openScriptRun(o.files[0], scriptless ? "" : o.files[1], run, std::cerr, o.edges);
  exitCode = report(st);
  return st.isOk();
}

std::string scriptPath(const Options &o) { return o.files.size() > 1 ? o.files[1] : ""; }

int cmdAttribute(const Options &o) {
  mixc::app::ScriptRun run;
  int code = 0;
  if (!openScriptRun(o, "attribute", run, code))
    return code;
  mixc::analysis::InterveneOptions opts;
  opts.outDir = o.outDir;
  opts.script = scriptPath(o); // without one, every-node/ (every-edge/): a folder of its own
  if (o.edges)
    opts.scriptless = "every-edge";
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
  opts.script = scriptPath(o);
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
  opts.script = scriptPath(o);
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

const std::map<std::string, int (*)(const Options &)> &commands() {
  static const std::map<std::string, int (*)(const Options &)> table = {
      {"train", cmdTrain},         {"eval", cmdEval},     {"intervene", cmdIntervene}, {"attribute", cmdAttribute},
      {"align", cmdAlign},         {"export", cmdExport}, {"compile", cmdCompile},     {"sweep", cmdSweep},
      {"--version", cmdVersion},
  };
  return table;
}
} // namespace

int mixc::cli::runRuntimeCommand(const Options &o, char **) {
  mixc::rt::keepFreedHostMemory(); // before the first tensor (runtime/core/HostMemory.h)
  auto it = commands().find(o.command);
  if (it == commands().end())
    return usage("unknown command '" + o.command + "'" + mixc::cli::commandHint(o.command));
  return guarded(it->second, o);
}
