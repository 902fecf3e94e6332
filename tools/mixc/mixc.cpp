//===- mixc.cpp - the mixc driver -------------------------------------------===//
//
//   mixc compile FILE.mix [--model M] [--config k=v]... [--emit=ast|mlir-import|mlir|graph|cpp|cu|bundle] [-o OUT]
//   mixc params  FILE.mix... [--config k=v]...    trainable parameter count per model
//   mixc names   FILE.mix [--config k=v]...       every node name of the compiled graph
//   mixc train   [CONFIG.toml] [--resume] [--quiet] [--out DIR]   (no config: built-in default)
//   mixc eval    RUN_DIR|CHECKPOINT [--size N]
//   mixc intervene RUN_DIR|CHECKPOINT SCRIPT.rw [--size N] [--out DIR]
//   mixc attribute RUN_DIR|CHECKPOINT [SCRIPT.rw] [--size N] [--out DIR] [--check]
//   mixc align RUN_DIR|CHECKPOINT SCRIPT.rw [--steps N] [--lr X] [--batch N] [--train-docs N]
//   mixc compile FILE.mix --rewrite SCRIPT.rw --emit=mlir   (the rewritten IR)
//   mixc sweep SWEEP.toml [--scale NAME] [--jobs N] [--out DIR] [--dry-run] [--retry-failed]
//              [--engine local|slurm] [--cell NAME] [--status] [--slurm KEY=VALUE]
//   mixc report SWEEP_DIR... [-o report.md] [--title T]
//
// Exit status: 0 success, 1 an error in the input (printed with its
// location), 2 bad command-line usage.
//
//===----------------------------------------------------------------------===//
#include "dsl/Frontend.h"
#include "mix/Compiler.h" // plain C++; its functions exist only when MIXC_WITH_COMPILER
#include "mix/Names.h"
#include "dsl/Rewrite.h"
#include "experiments/ExperimentReport.h"
#include "experiments/Sweep.h"
#include "abi/Graph.h"
#include "abi/StateLayout.h"
#include "runtime/kernels/KernelBuild.h"
#include "runtime/core/Device.h"
#include "runtime/core/HostMemory.h"
#include "runtime/train/Config.h"
#include "runtime/train/Align.h"
#include "runtime/train/Attribute.h"
#include "runtime/train/Intervene.h"
#include "runtime/train/Trainer.h"
#include "runtime/train/Weights.h"
#include "abi/Bundle.h"
#include "support/AtomicWrite.h"
#include "support/OutputGuard.h"
#include "support/Digest.h"
#include "support/Process.h"
#include "support/TextFile.h"
#include "support/Stop.h"
#include "support/Suggest.h"
#include "tools/mixc/Help.h"

#include <torch/csrc/api/include/torch/version.h>
#if MIXC_WITH_COMPILER
#include <llvm/Config/llvm-config.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <cstdio>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {
const char *kUsage = R"(usage: mixc <command> [options]

commands:
  compile FILE.mix   compile a model; --emit=ast|mlir-import|mlir|graph|cpp|cu|bundle
                     (default graph; cpp, cu: the generated CPU / CUDA kernels;
                     bundle: graph and kernels in the folder -o DIR, which a
                     training config's model.file can name instead of a .mix)
  params FILE.mix... print each model's trainable parameter count
  names FILE.mix     print every node name of the compiled model
  train [CONFIG]     train a model on a task (TOML config; none: the built-in default run)
  eval RUN|CKPT      accuracy of a trained checkpoint on the test set
  export RUN|CKPT    the weights under their node names, with the run's config and
                     graph, as safetensors (-o FILE; default RUN/weights.safetensors)
  intervene RUN|CKPT SCRIPT.rw
                     run an intervention script (patching, ablations, removals):
                     Attrib per cell as a table, attrib.csv and heatmap.svg
  attribute RUN|CKPT [SCRIPT.rw]
                     attribution patching: the first-order estimate of every
                     `patch` cell's Attrib from one forward and one backward
                     (attribution.csv, attribution.svg); without a script every
                     named node at key, value, divider and query; --check also
                     runs the exact interventions and prints the correlation
  align RUN|CKPT SCRIPT.rw
                     distributed alignment search: trains every das(k) cell's
                     rotated k-dimensional subspace at once (model frozen), then
                     prints interchange intervention accuracy (IIA) on held-out
                     documents beside the first k channels and the whole vector
                     (iia.csv, iia.svg, rotations.safetensors)
  sweep SWEEP.toml   run a grid of training runs (+ interventions), resumable:
                     results.csv and attrib.csv in the sweep's folder
  report DIR...      markdown report (accuracy, Attrib, plots) over sweep folders

options:
  --model NAME       the model to compile (default: the file's last model)
  --config k=v       set a model parameter (repeatable), e.g. --config d=64;
                     train: overrides [model.config]
  -I DIR             also look for imports in DIR
  -o FILE            write the output to FILE (atomically) instead of stdout
  --resume           train: continue the run in the config's output dir
  --override KEYS    train --resume: let these settings differ from the checkpoint's
                     (comma-separated: train.max_steps, train.eval_every,
                     train.eval_size, train.checkpoint_every, train.early_stop_acc)
  --quiet            train, align: no progress
  --check            attribute: also run the exact interventions and compare
  --check-top N      attribute: the exact Attrib of the N largest estimates and N
                     random other cells only (a screen of a large grid)
  --steps N          align: optimiser steps (default 400)
  --lr X             align: Adam's learning rate for the rotations (default 0.01)
  --batch N          align: document pairs a step (default 32)
  --train-docs N     align: training documents the pairs come from (default 4096)
  --set KEY=VALUE    train: set any config key over the file's (repeatable), e.g.
                     --set train.lr=3e-3 --set task.num_kv=64; checked as if
                     written in the file (model parameters: also --config);
                     eval: task.* and train.eval_size/eval_batch only, e.g.
                     --set task.num_pairs=8 (longer documents than trained on);
                     sweep: fixed in every cell, e.g. --set train.max_steps=100
                     (not a key the grid varies)
  --out DIR          train: override [output] dir
  --max-steps N      train: override [train] max_steps (a quick look at a config)
  --init-from FILE   train: start from the weights in FILE (mixc export's
                     safetensors; every tensor of the model, same names and shapes)
  --format F         export: safetensors (the only format)
  --save NAMES       intervene: also write these nodes' values (clean, corrupted, each
                     cell) to activations.safetensors; comma-separated names or
                     patterns (layers[*].block_input), recurrent states included
                     (layers[*].mixer.state: [docs, T, S], every step's state)
  --size N           eval/intervene: number of test documents (default: as trained / 320)
  --rewrite FILE     compile: apply an intervention script (see --emit=mlir)
  --backend B        compile/train/intervene: libtorch (one LibTorch op per node;
                     the default of compile and the analysis commands), generated
                     (fused regions as generated C++ kernels, compiled with
                     $MIXC_CXX or c++ into a cache: $MIXC_KERNEL_CACHE or
                     ~/.cache/mixc/kernels) or auto (generated where the kernels
                     build, else LibTorch, saying why; the default of train and
                     sweep, which passes it to every cell)
  --device D         train, eval, sweep: cpu (default), cuda or cuda:N (needs mixc built against a
                     CUDA LibTorch; the data stays on the host, checkpoints hold host
                     tensors; a sweep's cuda spreads its cells over every visible GPU,
                     its interventions run on the CPU); compile --backend=generated: build the kernels for cpu
                     or cuda (nvcc: $MIXC_NVCC or /usr/local/cuda/bin/nvcc, for the
                     GPU architectures in $MIXC_CUDA_ARCHS, default "80 90")
  --stop-after N     train: stop as if interrupted after N steps (tests resuming)
  --time-steps N     train: time N steps and one evaluation, print the run's cost
                     ("timing: ..."), write no run folder (sweep --dry-run uses it)
  --scale NAME       sweep: use the file's [scale.NAME] preset (e.g. small)
  --jobs N           sweep: runs at once (default: [sweep] jobs, else the cores)
  --jobs-per-gpu K   sweep --device=cuda: K runs at once on each visible GPU
  --dry-run          sweep: list the cells and the first cell's config (with
                     --engine=slurm: print the batch script, submit nothing)
  --retry-failed     sweep: run failed cells again
  --engine E         sweep: local (child processes here, the default) or slurm
                     (submit the unfinished and failed cells as one SLURM job
                     array with sbatch; again later: only what has not finished)
  --cell NAME        sweep: run that one cell (what each SLURM array task runs)
  --status           sweep: each cell's state (finished, running, queued,
                     interrupted, failed, to-run), from the folder and squeue
  --slurm KEY=VALUE  sweep --engine=slurm: an #SBATCH setting over the file's
                     [slurm] table (partition, time, cpus_per_task, mem, gres,
                     account, qos)
  --title T          report: the report's title
)";

struct Options {
  std::string command;
  std::vector<std::string> files;
  std::string model;
  std::vector<mixc::dsl::ConfigEntry> config;
  std::vector<std::string> includeDirs;
  std::string emit = "graph";
  std::string output;
  bool resume = false, quiet = false;
  bool check = false;   // attribute --check: the exact interventions of every cell too
  int64_t checkTop = 0; // attribute --check-top N: of the N largest estimates and N random others
  int64_t steps = 0, batch = 0, trainDocs = 0; // align (0: its defaults)
  double lr = 0;
  std::set<std::string> overrides; // --override: settings --resume may change
  int64_t stopAfter = 0, maxSteps = 0, timeSteps = 0;
  std::string outDir;
  int64_t size = 0;
  std::string rewrite;               // the first --rewrite
  std::vector<std::string> rewrites; // every --rewrite (compile --emit=bundle takes several)
  std::string backend; // empty: libtorch, or auto for sweep
  std::string device = "cpu";
  std::string scale, title;
  std::string initFrom;             // train --init-from
  std::vector<std::string> sets;    // train --set section.key=value (repeatable)
  std::string save;                 // intervene --save: node names or patterns, comma-separated
  std::string format = "safetensors"; // export --format
  int64_t jobs = 0, jobsPerGpu = 0; // sweep
  bool dryRun = false, retryFailed = false;
  std::string engine = "local", cell; // sweep
  bool status = false;
  std::vector<std::pair<std::string, std::string>> slurm; // sweep --slurm key=value
};

/// The one place a library Status becomes a message and an exit code:
/// "error: " before a failure's message (unless it is a located diagnostic,
/// "file:line:col: error: ..."), an interruption's message as it is.
int report(const mixc::support::Status &status) {
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
const std::map<std::string, std::set<std::string>> &optionsOf();

/// A usage error: the problem and where the help is, never the whole help
/// (it would push the problem off the screen). Exit status 2.
int usage(const std::string &problem) {
  std::cerr << "mixc: " << problem << "\n";
  if (optionsOf().count(gCommand))
    std::cerr << "run 'mixc " << gCommand << " --help' for its usage and options\n";
  else
    std::cerr << "run 'mixc --help' for the commands and options\n";
  return 2;
}

/// `mixc --version`: what this build is and what it can run.
std::string versionText() {
  std::ostringstream v;
  v << "mixc, commit " << MIXC_GIT_COMMIT << "\n"
    << "LibTorch " << TORCH_VERSION << (at::hasCUDA() ? " with CUDA" : " (CPU only)") << "\n";
#if MIXC_WITH_COMPILER
  v << "compiler: MLIR/LLVM " << LLVM_VERSION_STRING << "\n";
#else
  v << "compiler: none (a runtime-only build: it trains and intervenes on compiled bundles)\n";
#endif
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

/// "a,b,,c" -> {"a", "b", "", "c"}; "" -> {""}: every piece, empty ones too
/// (the caller decides whether an empty one is an error).
std::vector<std::string> splitCommas(const std::string &list) {
  std::vector<std::string> pieces;
  for (size_t start = 0;;) {
    size_t comma = list.find(',', start);
    pieces.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos)
      return pieces;
    start = comma + 1;
  }
}

/// The options each command reads: any other is refused, never silently
/// ignored (`mixc train x.toml --scale small` would otherwise run at full
/// scale). Commands not listed are reported by main.
const std::map<std::string, std::set<std::string>> &optionsOf() {
  static const std::map<std::string, std::set<std::string>> table = {
      {"compile", {"--config", "--model", "-I", "--emit", "-o", "--rewrite", "--backend", "--device"}},
      {"params", {"--config", "--model", "-I"}},
      {"names", {"--config", "--model", "-I", "-o", "--rewrite"}},
      {"train", {"--config", "-I", "--rewrite", "--resume", "--override", "--quiet", "--out", "--backend",
                 "--device", "--max-steps", "--stop-after", "--time-steps", "--init-from", "--set"}},
      {"intervene", {"--out", "--size", "--save", "--backend"}},
      {"attribute", {"--out", "--size", "--check", "--check-top", "--backend"}},
      {"align", {"--out", "--size", "--backend", "--steps", "--lr", "--batch", "--train-docs", "--quiet"}},
      {"sweep", {"--scale", "--out", "--jobs", "--backend", "--dry-run", "--retry-failed", "--engine", "--cell",
                 "--status", "--slurm", "--device", "--jobs-per-gpu", "--set"}},
      {"report", {"-o", "--title"}},
      {"eval", {"--size", "--device", "--set"}},
      {"export", {"-o", "--format"}},
  };
  return table;
}

/// "" when `command` takes the option `arg` (or does not exist), else why not.
std::string refuseOption(const std::string &command, const std::string &arg) {
  auto it = optionsOf().find(command);
  if (it == optionsOf().end() || arg.size() < 2 || arg[0] != '-')
    return "";
  std::string flag = arg.rfind("--", 0) == 0 ? arg.substr(0, arg.find('=')) : arg == "-c" ? "--config" : arg;
  bool known = false;
  for (const auto &[cmd, flags] : optionsOf())
    known |= flags.count(flag) > 0;
  if (!known || it->second.count(flag))
    return ""; // unknown options are reported by the parser
  std::string list;
  for (const std::string &f : it->second)
    list += (list.empty() ? "" : ", ") + f;
  return "mixc " + command + " does not take " + flag + " (its options: " + list + ")";
}

bool parseArgs(int argc, char **argv, Options &o, std::string &problem) {
  if (argc < 2) {
    problem = "no command given";
    return false;
  }
  o.command = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (problem = refuseOption(o.command, a); !problem.empty())
      return false;
    auto value = [&](const std::string &flag) -> std::string {
      if (a.size() > flag.size() && a.compare(0, flag.size() + 1, flag + "=") == 0)
        return a.substr(flag.size() + 1);
      if (i + 1 >= argc) {
        problem = flag + " needs a value";
        return "";
      }
      return argv[++i];
    };
    // A flag's value as a positive integer (sets `problem` otherwise).
    auto positive = [&](const std::string &flag) -> int64_t {
      std::string v = value(flag);
      char *end = nullptr;
      errno = 0;
      long long n = std::strtoll(v.c_str(), &end, 10);
      if (problem.empty() && (v.empty() || *end || n <= 0))
        problem = flag + " expects a positive integer, got '" + v + "'";
      else if (problem.empty() && errno == ERANGE) // strtoll saturates silently
        problem = flag + " " + v + " is too large (the largest is " +
                  std::to_string(std::numeric_limits<int64_t>::max()) + ")";
      return n;
    };
    auto is = [&](const std::string &flag) {
      return a == flag || a.compare(0, flag.size() + 1, flag + "=") == 0;
    };
    if (is("--config") || a == "-c") {
      std::string kv = value("--config");
      size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        problem = "--config expects key=value, got '" + kv + "'";
        return false;
      }
      const std::string key = kv.substr(0, eq);
      for (const auto &earlier : o.config)
        if (earlier.key == key) { // which would win differs between commands: neither does
          problem = "--config " + key + " is given twice (" + earlier.value + " and " + kv.substr(eq + 1) + ")";
          return false;
        }
      o.config.push_back({key, kv.substr(eq + 1)});
    } else if (is("--model")) {
      o.model = value("--model");
    } else if (is("--emit")) {
      o.emit = value("--emit");
      if (o.emit != "ast" && o.emit != "mlir-import" && o.emit != "mlir" && o.emit != "graph" &&
          o.emit != "cpp" && o.emit != "cu" && o.emit != "bundle") {
        problem = "--emit must be ast, mlir-import, mlir, graph, cpp, cu or bundle, got '" + o.emit + "'";
        return false;
      }
    } else if (a == "-I") {
      o.includeDirs.push_back(value("-I"));
    } else if (a == "-o") {
      o.output = value("-o");
    } else if (a == "--resume") {
      o.resume = true;
    } else if (is("--override")) {
      for (const std::string &key : splitCommas(value("--override"))) {
        if (!mixc::train::overridableOnResume(key)) {
          problem = "--override takes train.max_steps, train.eval_every, train.eval_size, "
                    "train.checkpoint_every or train.early_stop_acc (comma-separated), got '" +
                    key + "'";
          return false;
        }
        o.overrides.insert(key);
      }
    } else if (a == "--quiet") {
      o.quiet = true;
    } else if (a == "--check") {
      o.check = true;
    } else if (is("--check-top")) {
      o.checkTop = positive("--check-top");
    } else if (is("--steps")) {
      o.steps = positive("--steps");
    } else if (is("--batch")) {
      o.batch = positive("--batch");
    } else if (is("--train-docs")) {
      o.trainDocs = positive("--train-docs");
    } else if (is("--lr")) {
      std::string v = value("--lr");
      char *end = nullptr;
      o.lr = std::strtod(v.c_str(), &end);
      if (problem.empty() && (v.empty() || *end || !(o.lr > 0) || !std::isfinite(o.lr))) {
        problem = "--lr expects a positive number, got '" + v + "'";
        return false;
      }
    } else if (is("--out")) {
      o.outDir = value("--out");
    } else if (is("--rewrite")) {
      o.rewrites.push_back(value("--rewrite"));
      o.rewrite = o.rewrites.front();
    } else if (is("--backend")) {
      o.backend = value("--backend");
      if (o.backend != "libtorch" && o.backend != "generated" && o.backend != "auto") {
        problem = "--backend must be libtorch, generated or auto, got '" + o.backend + "'";
        return false;
      }
    } else if (is("--device")) {
      o.device = value("--device");
      if (!mixc::rt::isDeviceSpec(o.device)) {
        problem = "--device must be cpu, cuda or cuda:N, got '" + o.device + "'";
        return false;
      }
    } else if (is("--max-steps")) {
      o.maxSteps = positive("--max-steps");
    } else if (is("--stop-after")) {
      o.stopAfter = positive("--stop-after");
    } else if (is("--time-steps")) {
      o.timeSteps = positive("--time-steps");
    } else if (is("--scale")) {
      o.scale = value("--scale");
    } else if (is("--title")) {
      o.title = value("--title");
    } else if (is("--jobs")) {
      o.jobs = positive("--jobs");
    } else if (a == "--dry-run") {
      o.dryRun = true;
    } else if (a == "--retry-failed") {
      o.retryFailed = true;
    } else if (is("--engine")) {
      o.engine = value("--engine");
      if (problem.empty() && o.engine != "local" && o.engine != "slurm") {
        problem = "--engine must be local or slurm, got '" + o.engine + "'";
        return false;
      }
    } else if (is("--cell")) {
      o.cell = value("--cell");
    } else if (a == "--status") {
      o.status = true;
    } else if (is("--slurm")) {
      std::string kv = value("--slurm");
      size_t eq = kv.find('=');
      if (problem.empty() && (eq == std::string::npos || eq == 0)) {
        problem = "--slurm expects key=value (e.g. partition=gpu, time=02:00:00), got '" + kv + "'";
        return false;
      }
      o.slurm.push_back({kv.substr(0, eq), kv.substr(eq + 1)});
    } else if (is("--save")) {
      o.save = value("--save");
    } else if (is("--set")) {
      o.sets.push_back(value("--set"));
    } else if (is("--init-from")) {
      o.initFrom = value("--init-from");
    } else if (is("--format")) {
      o.format = value("--format");
      if (o.format != "safetensors") {
        problem = "--format must be safetensors, got '" + o.format + "'";
        return false;
      }
    } else if (is("--jobs-per-gpu")) {
      o.jobsPerGpu = positive("--jobs-per-gpu");
    } else if (is("--size")) {
      o.size = positive("--size");
    } else if (!a.empty() && a[0] == '-') {
      problem = "unknown option '" + a + "'";
      return false;
    } else {
      o.files.push_back(a);
    }
    if (!problem.empty())
      return false;
  }
  if (o.rewrites.size() > 1 && !(o.command == "compile" && o.emit == "bundle")) {
    problem = "--rewrite is given once (several only with compile --emit=bundle)";
    return false;
  }
  return true;
}

/// Writes `text` to `path` via a temporary file and a rename.
bool writeAtomically(const std::string &path, const std::string &text) {
  std::string error;
  if (mixc::support::writeFileAtomically(path, text, error))
    return true;
  std::cerr << "error: " << error << "\n";
  return false;
}

int emit(const Options &o, const std::string &text) {
  if (o.output.empty()) {
    std::cout << text;
    return 0;
  }
  std::vector<std::string> inputs = o.files;
  inputs.insert(inputs.end(), o.rewrites.begin(), o.rewrites.end());
  if (std::string why = mixc::support::outputClash(o.output, inputs); !why.empty()) {
    std::cerr << "error: " << why << "\n";
    return 1;
  }
  return writeAtomically(o.output, text) ? 0 : 1;
}

std::vector<std::string> searchPath(const Options &o) {
  std::vector<std::string> dirs = o.includeDirs;
  dirs.push_back(MIXC_SOURCE_ROOT);
  return dirs;
}

#if !MIXC_WITH_COMPILER
/// The runtime-only build's answer wherever the compiler is needed.
void noCompiler(const std::string &what) {
  std::cerr << "error: " << what << " needs the compiler, and this mixc is the runtime-only build "
            << "(-DMIXC_WITH_COMPILER=OFF): on a machine with the full build, compile the model to a "
            << "bundle (mixc compile X.mix --emit=bundle -o DIR, with --rewrite S.rw for each intervention "
            << "script) and name the bundle as the config's model.file\n";
}
#endif

/// Front end + compiler up to the runtime graph.
bool compileFile(const Options &o, const std::string &file, mix::CompileResult &result,
                 mix::Stage stage = mix::Stage::Lowered) {
#if !MIXC_WITH_COMPILER
  (void)o, (void)result, (void)stage;
  noCompiler("compiling " + file);
  return false;
#endif
  mixc::dsl::Frontend fe(searchPath(o));
  if (!fe.load(file, std::cerr))
    return false;
  std::optional<mixc::dsl::Program> program = fe.elaborate(o.model, o.config, std::cerr);
  if (!program)
    return false;
  mixc::dsl::SourceManager sources = fe.sources();
  mixc::dsl::RwScript script;
  if (!o.rewrite.empty() && !mixc::dsl::loadRewrite(o.rewrite, sources, script, std::cerr))
    return false;
#if MIXC_WITH_COMPILER
  return mix::compileProgram(*program, sources, stage, result, std::cerr,
                             o.rewrite.empty() ? nullptr : &script);
#endif
}

/// What names a compiled intervention script in a bundle: the digest of its
/// text and of the vectors its add(FILE) actions read (the files' contents
/// are part of the rewritten graph).
std::string scriptDigest(const std::string &text, const mixc::dsl::RwScript &script) {
  using mixc::support::fnv1a;
  uint64_t h = fnv1a(text);
  for (const auto &cell : script.cells)
    for (const auto &a : cell.actions)
      for (double v : a.vector) {
        char num[40];
        std::snprintf(num, sizeof num, " %.17g", v);
        h = fnv1a(num, h);
      }
  return mixc::support::hexDigest(h);
}

/// Reads (once) and parses an intervention script, with its digest.
bool loadScript(const std::string &path, mixc::dsl::SourceManager &sources, mixc::dsl::RwScript &script,
                std::string &digest) {
  std::string text, error;
  if (!mixc::support::readTextFile(path, text, error, mixc::dsl::kMaxRewriteBytes)) {
    std::cerr << "error: rewrite script: " << error << "\n"; // as dsl::loadRewrite says it
    return false;
  }
  if (!mixc::dsl::parseRewrite(text, path, sources, script, std::cerr))
    return false;
  digest = scriptDigest(text, script);
  return true;
}

/// The compiler's rewrite of `graph` by `script`, or (runtime-only build)
/// the one compiled into `runDir` from its bundle.
bool rewriteFor(const mixc::graph::Graph &graph, const std::string &scriptPath, const mixc::dsl::RwScript &script,
                const std::string &digest, const mixc::dsl::SourceManager &sources, const std::string &runDir,
                mix::CompileResult &out) {
#if MIXC_WITH_COMPILER
  (void)scriptPath, (void)digest, (void)runDir;
  return mix::rewriteGraph(graph, script, sources, out, std::cerr);
#else
  (void)script, (void)sources;
  mixc::graph::CompiledRewrite r;
  std::string error;
  if (!mixc::graph::readRewrite(runDir, digest, r, error)) {
    if (!error.empty())
      std::cerr << "error: " << error << "\n";
    else
      noCompiler("applying " + scriptPath + " (it is not among the scripts compiled into " + runDir +
                 "/rewrites from the run's bundle)");
    return false;
  }
  if (r.baseDigest != mixc::graph::graphDigest(graph)) {
    std::cerr << "error: " << scriptPath << " was compiled into " << runDir
              << "/rewrites against another graph than the run's: compile the bundle again\n";
    return false;
  }
  out.graph = std::move(r.graph);
  out.cpuKernels = std::move(r.cpuKernels);
  out.cudaKernels = std::move(r.cudaKernels);
  return true;
#endif
}

/// --backend=generated (or auto): the model's generated kernels as a shared
/// library from the cache (built unless already there), opened once; null
/// after printing the error (for auto: a note that the LibTorch back end
/// runs instead).
std::shared_ptr<const mixc::kernels::Library> kernelLibrary(const Options &o, const mix::CompileResult &result) {
  if (o.backend != "generated" && o.backend != "auto")
    return nullptr;
  auto start = std::chrono::steady_clock::now();
  std::string error;
  const bool cuda = o.device != "cpu";
  std::shared_ptr<const mixc::kernels::Library> library;
  {
    mixc::support::StopOnSignals signals; // a stop reaches the compiler (support/Process.h)
    library = mixc::kernels::buildLibrary(cuda ? result.cudaKernels : result.cpuKernels, error,
                                          cuda ? mixc::kernels::Target::Cuda : mixc::kernels::Target::Cpu);
  }
  if (mixc::support::stopRequested()) // the command stops here, whatever the back end
    std::exit(report(mixc::support::Status::interrupted(
        (error.empty() ? std::string("interrupted while the kernels were built") : error) + "; nothing was written")));
  if (!library) {
    if (o.backend == "auto")
      std::cerr << "note: --backend=auto: the generated kernels did not build, so the LibTorch "
                   "back end runs instead: " << error << "\n";
    else
      std::cerr << "error: --backend=generated: " << error << "\n";
    return nullptr;
  }
  size_t kernels = 0;
  for (const auto &r : result.graph.regions)
    kernels += !r.target(cuda ? mixc::graph::kTargetCuda : mixc::graph::kTargetCpu).kernel.empty();
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!o.quiet) // progress, like training's; the notes below are warnings and always print
    std::fprintf(stderr, "kernels: %zu of %zu fused regions generated for %s, %s (%.1f s)\n", kernels,
                 result.graph.regions.size(), cuda ? "CUDA" : "the CPU", library->path().c_str(), sec);
  for (const mixc::graph::Node &n : result.graph.nodes)
    if (auto it = n.attrs.find(mixc::graph::kUnfusedAttr); it != n.attrs.end())
      std::fprintf(stderr, "note: %s (%s) is in no fused region (%s): it runs on LibTorch\n", n.name.c_str(),
                   n.op.c_str(), it->second.s.c_str());
  return library;
}

int cmdCompile(const Options &o) {
  if (o.files.size() != 1)
    return usage("compile takes one .mix file");
  if (o.emit == "ast") {
    mixc::dsl::Frontend fe(searchPath(o));
    if (!fe.load(o.files[0], std::cerr))
      return 1;
    std::ostringstream ss;
    mixc::dsl::printModule(ss, fe.mainModule());
    return emit(o, ss.str());
  }
  mix::CompileResult result;
  mix::Stage stage = o.emit == "mlir-import" ? mix::Stage::Import : mix::Stage::Lowered;
  if (o.emit == "bundle" && o.output.empty())
    return usage("--emit=bundle writes a folder: give it with -o DIR");
  Options base = o;
  if (o.emit == "bundle") // the scripts are compiled against the plain model, as `mixc intervene` does
    base.rewrite.clear();
  if (!compileFile(base, o.files[0], result, stage))
    return 1;
  if (o.backend == "generated" && !kernelLibrary(o, result))
    return 1;
  if (o.emit == "bundle") {
    mixc::graph::Bundle bundle{result.graph, result.cpuKernels, result.cudaKernels, {}};
    for (const std::string &path : o.rewrites) {
      mixc::dsl::SourceManager sources;
      mixc::dsl::RwScript script;
      mixc::graph::CompiledRewrite r;
      mix::CompileResult rewritten;
      if (!loadScript(path, sources, script, r.digest) ||
          !rewriteFor(result.graph, path, script, r.digest, sources, "", rewritten))
        return 1;
      r.baseDigest = mixc::graph::graphDigest(result.graph);
      r.graph = std::move(rewritten.graph);
      r.cpuKernels = std::move(rewritten.cpuKernels);
      r.cudaKernels = std::move(rewritten.cudaKernels);
      bundle.rewrites.push_back(std::move(r));
    }
    std::string error;
    if (!mixc::graph::writeBundle(o.output, bundle, error)) {
      std::cerr << "error: " << error << "\n";
      return 1;
    }
    return 0;
  }
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
    if (!compileFile(o, f, result)) {
      status = 1;
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
  if (!compileFile(o, o.files[0], result))
    return 1;
#if MIXC_WITH_COMPILER
  return emit(o, mix::formatNamedPoints(mix::namedPoints(result.graph)));
#endif
  return 1; // compileFile failed
}
int cmdTrain(const Options &o) {
  if (o.files.size() > 1)
    return usage("train takes at most one config file");
  std::string error0;
  if (at::Device device(at::kCPU); !mixc::rt::resolveDevice(o.device, device, error0)) {
    std::cerr << "error: " << error0 << "\n"; // one line, exit 1: what this LibTorch or machine lacks
    return 1;
  }
  std::string text, path = "<built-in default config>", baseDir = ".";
  if (o.files.empty()) {
    text = mixc::train::defaultConfigText();
  } else {
    path = o.files[0];
    std::string error;
    if (!mixc::support::readTextFile(path, text, error, 16u << 20)) {
      std::cerr << "error: config: " << error << "\n";
      return 1;
    }
    baseDir = std::filesystem::path(path).parent_path().string();
  }
  mixc::train::TrainConfig config;
  std::string error;
  bool parsed = mixc::train::parseConfig(text, path, baseDir, MIXC_SOURCE_ROOT, config, error, o.sets);
  // --config k=v overrides [model.config] (e.g. one config, several widths).
  for (const auto &entry : o.config) {
    auto it = std::find_if(config.modelConfig.begin(), config.modelConfig.end(),
                           [&](const auto &kv) { return kv.first == entry.key; });
    if (it == config.modelConfig.end())
      config.modelConfig.push_back({entry.key, entry.value});
    else
      it->second = entry.value;
  }
  if (!parsed) {
    std::cerr << error << "\n";
    return 1;
  }
  if (config.threads > 1)
    // OpenMP's idle workers (LibTorch's, the kernels') spin by default and
    // take the cores from OpenBLAS's own threads and back: measured on a
    // 2-core machine, 2 threads ran at 0.5-0.8x of 1; waiting passively,
    // 1.4-1.5x (bench/results/threads-*.txt). libgomp reads the policy
    // when it loads, so the process restarts itself once with it set.
    mixc::support::restartWithEnvironment("OMP_WAIT_POLICY", "passive");
  if (!mixc::train::bindTaskToModel(config, error)) {
    std::cerr << "error: " << error << "\n";
    return 1;
  }
  if (!o.outDir.empty())
    config.outDir = o.outDir;
  if (o.maxSteps > 0)
    config.maxSteps = o.maxSteps;
  Options compile = o;
  compile.model = config.modelName;
  compile.config.clear();
  for (const auto &[k, v] : config.modelConfig)
    compile.config.push_back({k, v});
  mix::CompileResult result;
  const bool fromBundle = mixc::graph::isBundle(config.modelFile);
  if (fromBundle) { // compiled already: no compiler needed
    if (!o.rewrite.empty()) {
      std::cerr << "error: --rewrite: model.file " << config.modelFile
                << " is a compiled bundle; compile the model with the script instead\n";
      return 1;
    }
    mixc::graph::Bundle bundle;
    std::string error;
    if (!mixc::graph::readBundle(config.modelFile, bundle, error)) {
      std::cerr << "error: model.file: " << error << "\n";
      return 1;
    }
    // The config may restate the model's parameters, not change them.
    for (const auto &[key, value] : config.modelConfig) {
      auto it = std::find_if(bundle.graph.config.begin(), bundle.graph.config.end(),
                             [&](const auto &kv) { return kv.first == key; });
      if (it == bundle.graph.config.end() || it->second != value) {
        std::cerr << "error: model.file " << config.modelFile << " is a bundle compiled with "
                  << (it == bundle.graph.config.end() ? "no parameter " + key : key + " = " + it->second)
                  << ", but the config sets " << key << " = " << value
                  << ": compile a bundle with it (mixc compile X.mix -c " << key << "=" << value
                  << " --emit=bundle -o DIR)\n";
        return 1;
      }
    }
    result.graph = std::move(bundle.graph);
    result.cpuKernels = std::move(bundle.cpuKernels);
    result.cudaKernels = std::move(bundle.cudaKernels);
  } else if (!compileFile(compile, config.modelFile, result)) {
    return 1;
  }
  mixc::train::RunOptions run{o.resume, o.quiet, o.stopAfter, kernelLibrary(o, result), o.overrides, o.initFrom,
                              o.device};
  if (o.backend == "generated" && !run.kernels)
    return 1;
  if (o.timeSteps > 0) {
    mixc::train::StepTiming t;
    if (mixc::support::Status st = mixc::train::timeSteps(config, result.graph, run, o.timeSteps, t, std::cerr);
        !st.isOk())
      return report(st);
    std::printf("timing: total_steps=%lld step_s=%.6g eval_s=%.6g backend=%s\n",
                (long long)t.totalSteps, t.stepSec, t.evalSec,
                run.kernels ? "generated" : "libtorch");
    return 0;
  }
  const mixc::support::Status status = mixc::train::train(config, result.graph, run, {std::cout, std::cerr});
  // The bundle's compiled intervention scripts go with the run, so that a
  // runtime-only mixc can intervene on it wherever the run folder goes.
  std::error_code ec;
  if (fromBundle && std::filesystem::is_directory(config.outDir, ec)) {
    std::string error;
    if (!mixc::graph::copyRewrites(config.modelFile, config.outDir, error)) {
      report(status);
      std::cerr << "error: " << error << "\n";
      return 1;
    }
  }
  return report(status);
}

/// --save: the comma-separated names or patterns, resolved by the library
/// (mixc::train::resolveSaveNames, which the Python module calls too).
bool saveSet(const std::string &list, const mixc::graph::Graph &g, std::set<std::string> &out, std::string &error) {
  std::vector<std::string> patterns;
  for (const std::string &p : splitCommas(list))
    if (!p.empty())
      patterns.push_back(p);
  return mixc::train::resolveSaveNames(patterns, g, out, error);
}

/// A run's checkpoint and graph with a .rw script applied, and the cells.
struct ScriptRun {
  std::string checkpoint;
  mix::CompileResult rewritten;
  mixc::train::InterveneSpec spec;
};
/// attribute without a script: `patch NODE at ROLE` for every named node
/// that takes interventions (not the compiler's own `_` nodes, not the LM
/// head's logits, which are the readout itself: 1 at the query, 0 elsewhere)
/// at key, value, divider and query; coordinates node × position, in graph
/// order.
#if MIXC_WITH_COMPILER
mixc::dsl::RwScript everyPoint(const mixc::graph::Graph &g) {
  mixc::dsl::RwScript s;
  for (const mix::NamedPoint &p : mix::namedPoints(g)) {
    const bool intervenes = std::find(p.actions.begin(), p.actions.end(), "intervene") != p.actions.end();
    if (p.kind != "node" || !intervenes || p.op == "unembed" || p.name[0] == '_' ||
        p.name.find("._") != std::string::npos)
      continue;
    for (const char *role : {"key", "value", "divider", "query"}) {
      mixc::dsl::RwCell cell;
      cell.label = "node=" + p.name + " position=" + role;
      cell.coords = {{"node", p.name}, {"position", role}};
      mixc::dsl::RwAction a;
      a.kind = mixc::Action::Patch;
      a.pattern = p.name;
      a.position.role = role;
      cell.actions.push_back(a);
      s.cells.push_back(cell);
    }
  }
  return s;
}
#endif

bool loadScriptRun(const Options &o, const char *command, ScriptRun &run) {
  const bool scriptless = std::string(command) == "attribute" && o.files.size() == 1;
  if (o.files.size() != 2 && !scriptless) {
    usage(std::string(command) + " takes a run folder (or checkpoint) and a .rw script");
    return false;
  }
  std::string graphJson, error;
  mixc::graph::Graph graph;
  if (!mixc::train::checkpointGraph(o.files[0], graphJson, run.checkpoint, error) ||
      !mixc::graph::fromJson(graphJson, graph, error)) {
    std::cerr << "error: " << error << "\n";
    return false;
  }
  mixc::dsl::SourceManager sources;
  mixc::dsl::RwScript script;
  std::string digest;
  if (scriptless) {
#if MIXC_WITH_COMPILER
    script = everyPoint(graph);
#else
    noCompiler("attribute without a script (every named node)");
    return false;
#endif
  } else if (!loadScript(o.files[1], sources, script, digest)) {
    return false;
  }
  std::error_code ec;
  const std::filesystem::path runDir = std::filesystem::is_directory(o.files[0], ec)
                                           ? std::filesystem::path(o.files[0])
                                           : std::filesystem::path(run.checkpoint).parent_path();
  if (!rewriteFor(graph, scriptless ? "" : o.files[1], script, digest, sources, runDir.string(), run.rewritten))
    return false;
  run.spec.corrupt = script.corrupt;
  run.spec.swap = script.swap;
  run.spec.readout = script.readout;
  for (const auto &cell : script.cells)
    run.spec.cells.push_back({cell.label, cell.coords});
  return true;
}

int cmdAttribute(const Options &o) {
  ScriptRun run;
  if (!loadScriptRun(o, "attribute", run))
    return 1;
  mixc::train::InterveneOptions opts;
  opts.outDir = o.outDir;
  // Without a script: every node at every role (everyPoint), in a folder of its own.
  opts.scriptName = o.files.size() > 1 ? std::filesystem::path(o.files[1]).stem().string() : "every-node";
  if (o.size > 0)
    opts.size = o.size;
  opts.kernels = kernelLibrary(o, run.rewritten);
  if (o.backend == "generated" && !opts.kernels)
    return 1;
  std::vector<mixc::train::Attribution> results;
  if (o.check && o.checkTop > 0)
    return usage("attribute takes --check (every cell) or --check-top N, not both");
  return report(mixc::train::attribute(run.checkpoint, run.rewritten.graph, run.spec, opts,
                                       o.checkTop > 0 ? o.checkTop : o.check ? -1 : 0, results, std::cout));
}

int cmdAlign(const Options &o) {
  ScriptRun run;
  if (!loadScriptRun(o, "align", run))
    return 1;
  mixc::train::AlignOptions opts;
  opts.outDir = o.outDir;
  opts.scriptName = std::filesystem::path(o.files[1]).stem().string();
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
  opts.kernels = kernelLibrary(o, run.rewritten);
  if (o.backend == "generated" && !opts.kernels)
    return 1;
  std::vector<mixc::train::AlignResult> results;
  return report(mixc::train::align(run.checkpoint, run.rewritten.graph, run.spec, opts, results, std::cout));
}

int cmdIntervene(const Options &o) {
  ScriptRun run;
  if (!loadScriptRun(o, "intervene", run))
    return 1;
  const std::string &checkpoint = run.checkpoint;
  const mix::CompileResult &rewritten = run.rewritten;
  const mixc::train::InterveneSpec &spec = run.spec;
  mixc::train::InterveneOptions opts;
  opts.outDir = o.outDir;
  opts.scriptName = std::filesystem::path(o.files[1]).stem().string();
  opts.kernels = kernelLibrary(o, rewritten);
  if (o.backend == "generated" && !opts.kernels)
    return 1;
  std::string error2;
  if (!saveSet(o.save, rewritten.graph, opts.save, error2)) {
    std::cerr << "error: --save: " << error2 << "\n";
    return 1;
  }
  if (o.size > 0)
    opts.size = o.size;
  std::vector<mixc::train::CellResult> results;
  return report(mixc::train::intervene(checkpoint, rewritten.graph, spec, opts, results, std::cout));
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
    else if (!mixc::rt::expandDevice(o.device, s.devices, error)) {
      std::cerr << "error: " << error << "\n";
      return 1;
    }
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
} // namespace

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

int main(int argc, char **argv) {
  mixc::rt::keepFreedHostMemory(); // before the first tensor (runtime/core/HostMemory.h)
  Options o;
  std::string problem;
  if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << kUsage;
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
      auto it = optionsOf().find(gCommand);
      if (it == optionsOf().end())
        return usage("unknown command '" + gCommand + "'");
      std::cout << mixc::cli::commandHelp(kUsage, gCommand, it->second);
      return 0;
    }
  if (!parseArgs(argc, argv, o, problem))
    return usage(problem);
  if (o.backend.empty()) // a sweep's cells use the generated kernels wherever they build
    // train and sweep use the generated kernels wherever they build (auto:
    // else LibTorch, with a one-line note naming why); the analysis commands
    // stay on LibTorch, which saves every node --save names (a node inside a
    // fused region is not a tensor there).
    o.backend = o.command == "sweep" || o.command == "train" ? "auto" : "libtorch";
  if (o.command == "compile")
    return cmdCompile(o);
  if (o.command == "params")
    return cmdParams(o);
  if (o.command == "names")
    return cmdNames(o);
  if (o.command == "train")
    return guarded(cmdTrain, o);
  if (o.command == "eval")
    return guarded(cmdEval, o);
  if (o.command == "intervene")
    return guarded(cmdIntervene, o);
  if (o.command == "attribute")
    return guarded(cmdAttribute, o);
  if (o.command == "align")
    return guarded(cmdAlign, o);
  if (o.command == "sweep")
    return guarded(cmdSweep, o);
  if (o.command == "report")
    return guarded(cmdReport, o);
  if (o.command == "export")
    return guarded(cmdExport, o);
  return usage("unknown command '" + o.command + "'");
}
