//===- Options.cpp - the mixc command line ----------------------------------===//
#include "tools/mixc/Options.h"
#include "app/ScriptFiles.h" // splitCommas
#include "runtime/train/Config.h" // overridableOnResume
#include "support/DeviceSpec.h"
#include "support/Suggest.h"

#include <cerrno>
#include <cstdlib>
#include <limits>

namespace mixc::cli {

const char *const kUsage = R"(usage: mixc <command> [options]

commands:
  compile FILE.mix   compile a model; --emit=ast|mlir-import|mlir|graph|cpp|cu|bundle
                     (default graph; cpp, cu: the generated CPU / CUDA kernels;
                     bundle: graph and kernels in the folder -o DIR, which a
                     training config's model.file can name instead of a .mix)
  params FILE.mix... print each model's trainable parameter count
  names FILE.mix     print every node name of the compiled model (--edges: every
                     edge SENDER -> RECEIVER a script can patch)
  train [CONFIG]...  train a model on a task (TOML config; none: the built-in default run);
                     several configs train as one pack (one program, one data stream; both
                     back ends): same model and task, each its own train.lr, seed, warmup,
                     schedule and early_stop_acc; each run folder as if trained alone
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
                     named node at key, value, divider and query (--edges:
                     every edge SENDER -> RECEIVER there, edge attribution);
                     --check also runs the exact interventions and prints the
                     correlation
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
  --out DIR          train: the run folder (over [output] dir); intervene,
                     attribute, align: the tables' folder (default
                     RUN/interventions|attribution|align/SCRIPT); sweep: the
                     sweep's folder (over [sweep] out)
  --max-steps N      train: override [train] max_steps (a quick look at a config)
  --init-from FILE   train: start from the weights in FILE (mixc export's
                     safetensors; every tensor of the model, same names and shapes)
  --format F         export: safetensors (the only format)
  --save NAMES       intervene: also write these nodes' values (clean, corrupted, each
                     cell) to activations.safetensors; comma-separated names or
                     patterns (layers[*].block_input), repeatable; recurrent
                     states (layers[*].mixer.state, a scan's too: [docs, T, S],
                     every step's state) and values inside a scan's step
                     (layers[0].mixer.scan.o: [docs, T, ...]) included
  --size N           eval/intervene: number of test documents (default: as trained / 320)
  --rewrite FILE     compile: apply an intervention script (see --emit=mlir)
  --backend B        compile, train, sweep, intervene, attribute, align (not eval):
                     libtorch (one LibTorch op per node;
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
  --time-steps N     train: time N steps and one evaluation, print the run's cost;
                     train no run (with --out DIR: DIR/step-timing.json, which
                     sweep --dry-run reads)
  --scale NAME       sweep: use the file's [scale.NAME] preset (e.g. small)
  --jobs N           sweep: runs at once (default: [sweep] jobs, else the cores)
  --jobs-per-gpu K   sweep --device=cuda: K runs at once on each visible GPU
  --pack K           sweep: train up to K cells that differ only in train.lr, seed,
                     warmup, schedule or early_stop_acc as one pack (mixc train with
                     several configs; default: [sweep] pack, else 1)
  --dry-run          sweep: list the cells and the first cell's config (with
                     --engine=slurm: print the batch script, submit nothing)
  --retry-failed     sweep: run failed cells again
  --engine E         sweep: local (child processes here, the default) or slurm
                     (submit the unfinished and failed cells as one SLURM job
                     array with sbatch; again later: only what has not finished)
  --cell NAME        sweep: run that one cell (what each SLURM array task runs;
                     NAME,NAME,...: those cells as one pack)
  --status           sweep: each cell's state (finished, running, queued,
                     interrupted, failed, to-run), from the folder and squeue
  --slurm KEY=VALUE  sweep --engine=slurm: an #SBATCH setting over the file's
                     [slurm] table (partition, time, cpus_per_task, mem, gres,
                     account, qos)
  --title T          report: the report's title
  --compare FILE     report: open with FILE, a table compared with a reference
                     (a CSV with a verdict column), counted by verdict
)";

std::string commandHint(const std::string &command) {
  std::vector<std::string> names;
  for (const auto &[cmd, flags] : optionsOf())
    names.push_back(cmd);
  return mixc::support::didYouMean(command, names);
}

const std::map<std::string, std::set<std::string>> &optionsOf() {
  static const std::map<std::string, std::set<std::string>> table = {
      {"compile", {"--config", "--model", "-I", "--emit", "-o", "--rewrite", "--backend", "--device"}},
      {"params", {"--config", "--model", "-I"}},
      {"names", {"--config", "--model", "-I", "-o", "--rewrite", "--edges"}},
      {"train", {"--config", "-I", "--rewrite", "--resume", "--override", "--quiet", "--out", "--backend",
                 "--device", "--max-steps", "--stop-after", "--time-steps", "--init-from", "--set"}},
      {"intervene", {"--out", "--size", "--save", "--backend"}},
      {"attribute", {"--out", "--size", "--check", "--check-top", "--backend", "--edges"}},
      {"align", {"--out", "--size", "--backend", "--steps", "--lr", "--batch", "--train-docs", "--quiet"}},
      {"sweep", {"--scale", "--out", "--jobs", "--backend", "--dry-run", "--retry-failed", "--engine", "--cell",
                 "--status", "--slurm", "--device", "--jobs-per-gpu", "--set", "--pack"}},
      {"report", {"-o", "--title", "--compare"}},
      {"eval", {"--size", "--device", "--set"}},
      {"export", {"-o", "--format"}},
  };
  return table;
}

namespace {
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
/// " (did you mean '--max-steps'?)" for an unknown option, from the
/// command's own options (every command's when the command is unknown).
std::string optionHint(const std::string &command, const std::string &arg) {
  std::vector<std::string> flags;
  for (const auto &[cmd, own] : optionsOf())
    if (cmd == command || !optionsOf().count(command))
      flags.insert(flags.end(), own.begin(), own.end());
  return mixc::support::didYouMean(arg.substr(0, arg.find('=')), flags);
}
} // namespace

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
      for (const std::string &key : mixc::app::splitCommas(value("--override"))) {
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
    } else if (a == "--edges") {
      o.edges = true;
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
      if (!mixc::support::isDeviceSpec(o.device)) {
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
    } else if (is("--compare")) {
      o.compare = value("--compare");
    } else if (is("--jobs")) {
      o.jobs = positive("--jobs");
    } else if (is("--pack")) {
      o.pack = positive("--pack");
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
      // Repeatable: each adds its names (a second one replaced the first).
      const std::string more = value("--save");
      o.save += (o.save.empty() ? "" : ",") + more;
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
      problem = "unknown option '" + a + "'" + optionHint(o.command, a);
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

} // namespace mixc::cli
