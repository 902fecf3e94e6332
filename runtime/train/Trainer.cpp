//===- Trainer.cpp - the training loop and evaluation -----------------------===//
//
// protocol §4: AdamW (β = (0.9, 0.999), ε = 1e-8, no weight decay), linear
// warm-up over the first 10% of steps then cosine (or linear) decay to 0,
// batch 32, each epoch walking the fixed training set in the same order;
// loss and accuracy only at the answer (logits at the query position).
//
//===----------------------------------------------------------------------===//
#include "runtime/train/Trainer.h"
#include "runtime/train/TrainerDetail.h"
#include "support/AtomicWrite.h"
#include "support/Memory.h"
#include "support/OutputGuard.h"
#include "runtime/core/Model.h"
#include "runtime/train/Batches.h"
#include "runtime/core/Device.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/FusedAdamW.h"
#include "runtime/train/Report.h"
#include "runtime/train/Weights.h"
#include "support/FileLock.h"
#include "support/Stop.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <sstream>

namespace mixc::train {
namespace fs = std::filesystem;

namespace detail {

/// The data stays on the host; a batch moves to the model's device once.
Batch batchOf(const tasks::Dataset &d, int64_t from, int64_t to, const at::Device &device) {
  at::Tensor tokens = int64Rows(d.tokens, from, to, d.seqLen).narrow(1, 0, d.maxLength(from, to));
  return {tokens.to(device), int64Slice(d.readout, from, to).to(device), int64Slice(d.target, from, to).to(device)};
}

/// protocol §4's optimiser: AdamW, β = (0.9, 0.999), ε = 1e-8, no weight decay.
torch::optim::AdamW makeOptimizer(rt::Model &m, const TrainConfig &c) {
  return torch::optim::AdamW(m.trainable(), torch::optim::AdamWOptions(c.lr)
                                                .betas({0.9, 0.999})
                                                .eps(1e-8)
                                                .weight_decay(0.0));
}

StepCount stepCount(const TrainConfig &c, const tasks::Dataset &trainSet) {
  int64_t perEpoch = std::max<int64_t>(1, trainSet.size() / c.batchSize);
  int64_t total = c.epochs * perEpoch;
  return {perEpoch, c.maxSteps > 0 ? std::min(total, c.maxSteps) : total};
}

/// One optimiser step on the batch for `step` (each epoch walks the set in
/// order). Returns the batch's loss, logits and targets; `first` is its row.
struct StepResult {
  int64_t first = 0;
  at::Tensor loss, logits, target;
};
StepResult trainStep(rt::Model &m, torch::optim::AdamW &optimizer, const tasks::Dataset &trainSet,
                     const TrainConfig &c, int64_t perEpoch, int64_t step) {
  int64_t first = (step % perEpoch) * c.batchSize;
  Batch batch = batchOf(trainSet, first, first + c.batchSize, m.device());
  rt::Model::Options o;
  o.readout = batch.readout;
  at::Tensor logits = m.forward(batch.tokens, o).squeeze(1);
  at::Tensor loss = at::cross_entropy_loss(logits, batch.target);
  optimizer.zero_grad();
  loss.backward();
  fusedAdamWStep(optimizer); // AdamW's update in one loop per tensor (FusedAdamW.h)
  return {first, loss, logits, batch.target};
}

double learningRate(const TrainConfig &c, int64_t step, int64_t total) {
  int64_t warm = static_cast<int64_t>(c.warmup * static_cast<double>(total));
  if (step < warm)
    return c.lr * static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warm));
  double progress = static_cast<double>(step - warm) / static_cast<double>(std::max<int64_t>(1, total - warm));
  if (c.schedule == "linear")
    return c.lr * std::max(0.0, 1.0 - progress);
  return c.lr * std::max(0.0, 0.5 * (1.0 + std::cos(M_PI * progress)));
}


/// Accuracy (argmax over the full vocabulary) and mean p(answer) on the
/// first n documents.
EvalResult evaluateOn(const rt::Model &m, const tasks::Dataset &d, int64_t n, int64_t batch) {
  torch::NoGradGuard noGrad;
  n = std::min<int64_t>(n, d.size());
  double correct = 0, prob = 0;
  for (int64_t i = 0; i < n; i += batch) {
    Batch b = batchOf(d, i, std::min(n, i + batch), m.device());
    rt::Model::Options o;
    o.readout = b.readout;
    at::Tensor logits = m.forward(b.tokens, o).squeeze(1);
    at::Tensor &target = b.target;
    correct += (logits.argmax(-1) == target).sum().item<double>();
    prob += at::softmax(logits, -1).gather(1, target.unsqueeze(1)).sum().item<double>();
  }
  return {correct / static_cast<double>(n), prob / static_cast<double>(n)};
}

/// The interpreter, or with a kernel library the generated back end; says
/// which regions of the latter still run op by op, and why; under
/// model.scan_form = "chunked", which scans run chunkwise and why the others
/// keep their loop.
std::unique_ptr<rt::Model> buildModel(const graph::Graph &g, const TrainConfig &c,
                                      const std::shared_ptr<const kernels::Library> &library, std::ostream &log,
                                      std::string &error) {
  std::unique_ptr<rt::Model> m = rt::Model::create(g, error, library);
  if (!m) {
    error = "cannot run the model: " + error;
    return nullptr;
  }
  if (library)
    for (const auto &[region, why] : m->regionStatus())
      if (!why.empty())
        log << "note: region " << region << " runs on LibTorch: " << why << "\n";
  if (c.scanForm == "chunked") {
    m->setScanForm({true, c.scanChunk});
    for (const auto &[scan, why] : m->scanFormStatus())
      if (why.empty())
        log << "scan " << scan << ": chunked form, " << c.scanChunk << " steps a chunk\n";
      else
        log << "note: scan " << scan << " keeps its step loop: " << why << "\n";
  }
  return m;
}

/// FNV-1a over every weight's bytes, in graph order: equal digests mean
/// bit-identical weights.
uint64_t weightsDigest(const rt::Model &m) {
  uint64_t h = 1469598103934665603ull;
  for (const auto &[name, t] : m.tensors()) {
    at::Tensor c = t.detach().to(at::kCPU).contiguous(); // the bytes, wherever the model is
    const unsigned char *p = static_cast<const unsigned char *>(c.data_ptr());
    for (size_t i = 0; i < c.nbytes(); ++i)
      h = (h ^ p[i]) * 1099511628211ull;
  }
  return h;
}

/// Why training `g` on `c`'s task would not fit in this machine's memory,
/// or "": 16 bytes per trainable parameter (weights, gradients and AdamW's
/// two moments), 4 per other, and the task's token rows (4 bytes a token,
/// rows as wide as the longest document allows). Activations come on top.
std::string trainingTooLarge(const TrainConfig &c, const graph::Graph &g) {
  const double trainable = graph::parameterFloats(g, true), all = graph::parameterFloats(g, false);
  const double state = 16 * trainable + 4 * (all - trainable);
  const double width = c.task.isATR() ? static_cast<double>(c.task.atr.maxStringLen + 8)
                                      : static_cast<double>(c.task.ar.seqLen());
  const double documents = static_cast<double>(c.task.trainSize() + c.task.testSize());
  const double data = documents * (width + 7) * 4; // the tokens and 7 per-document fields
  std::string why = support::tooLargeForMemory(state + data, "training " + g.model + " needs at least");
  if (!why.empty())
    why += " (" + support::formatBytes(state) + " for the parameters and their optimiser state, " +
           support::formatBytes(data) + " for the task's documents; activations come on top)";
  return why;
}

/// The end of a message about a failed step: which checkpoint survives.
std::string keptCheckpoint(int64_t lastCheckpoint) {
  return lastCheckpoint >= 0 ? "; the last checkpoint (step " + std::to_string(lastCheckpoint) + ") is kept"
                             : "; no checkpoint was written yet";
}

std::string learningRateNote(double atStep, double configured) {
  std::ostringstream note;
  note << "learning rate " << atStep << " at this step";
  if (atStep != configured)
    note << ", on the schedule of the configured train.lr = " << configured;
  note << "; too high?";
  return note.str();
}
} // namespace detail
using namespace detail;

bool bindTaskToModel(TrainConfig &c, std::string &error) {
  std::string vocab = std::to_string(c.task.vocabSize());
  for (auto &[k, v] : c.modelConfig)
    if (k == "vocab") {
      if (v != vocab) {
        error = "[model.config] vocab = " + v + ", but the task's vocabulary has " + vocab +
                " tokens; leave vocab out to have it set";
        return false;
      }
      return true;
    }
  c.modelConfig.push_back({"vocab", vocab});
  return true;
}

namespace detail {
/// A signal during setup (model, data) stops there: nothing is written yet.
support::Status stoppedDuringSetup(const char *phase) {
  return support::Status::interrupted(std::string("interrupted while ") + phase + "; nothing was written");
}

/// --resume continues only the run it was started as: a changed task or
/// optimiser setting would silently train on something else. The keys
/// that decide only when to evaluate, checkpoint or stop may change when
/// --override names them.
std::string changedRunSettings(const CheckpointMeta &meta, const std::string &now, const RunOptions &opts,
                               const std::string &ckptPath) {
  if (meta.settings.empty())
    return ""; // written before settings were stored: nothing to compare
  std::vector<std::string> refused;
  for (const std::string &key : changedSettings(meta.settings, now))
    if (!opts.overrides.count(key) || !overridableOnResume(key))
      refused.push_back(key);
  if (refused.empty())
    return "";
  std::string list;
  for (const std::string &k : refused)
    list += (list.empty() ? "" : ", ") + k + (overridableOnResume(k) ? " (--override " + k + " allows it)" : "");
  return "--resume: the config differs from the one " + ckptPath + " was trained with in: " + list +
         "; resume with the original settings, or start a new run in another folder";
}
} // namespace detail

namespace detail {
/// --resume: the checkpoint's model, optimiser, step and metrics rows,
/// after checking it is this model's, with settings --resume may keep.
support::Status resume(const TrainConfig &c, const RunOptions &opts, const std::string &graphJson,
                       const std::string &settings, int64_t total, rt::Model &model, torch::optim::AdamW &optimizer,
                       int64_t &step, bool &stoppedEarly, std::vector<MetricsRow> &rows,
                       std::vector<LossRow> &losses, std::ostream &log) {
  using support::Status;
  const std::string ckptPath = (fs::path(c.outDir) / "checkpoint.pt").string();
  const std::string csvPath = (fs::path(c.outDir) / "metrics.csv").string();
  std::string error;
  CheckpointMeta meta;
  if (!readCheckpointMeta(ckptPath, meta, error))
    return Status::failed("--resume: " + error);
  if (graph::modelIdentity(meta.graphJson) != graph::modelIdentity(graphJson))
    return Status::failed("--resume: " + ckptPath + " was written for a different model");
  if (std::string changed = changedRunSettings(meta, settings, opts, ckptPath); !changed.empty())
    return Status::failed(changed);
  if (!loadCheckpoint(ckptPath, model, &optimizer, meta, error))
    return Status::failed("--resume: " + error);
  step = meta.step;
  stoppedEarly = meta.stoppedEarly;
  for (const MetricsRow &r : readMetricsCsv(csvPath))
    if (r.step <= step)
      rows.push_back(r);
  for (const LossRow &r : readLossCsv((fs::path(c.outDir) / "loss.csv").string()))
    if (r.step <= step) // rows after the checkpoint are trained again
      losses.push_back(r);
  if (stoppedEarly)
    log << c.outDir << " is finished: it stopped early at step " << step << "/" << total
        << " (train.early_stop_acc " << c.earlyStopAcc << ")\n";
  else
    log << "resuming " << c.outDir << " at step " << step << "/" << total << "\n";
  return Status::ok();
}

/// The line that opens a run: the model, the data, the steps and threads, the back end.
void describeRun(const TrainConfig &c, const graph::Graph &g, const RunOptions &opts, const tasks::Dataset &trainSet,
                 double loadSec, int64_t total, const at::Device &device, std::ostream &log) {
  log << "training " << g.model << " (" << graph::parameterCount(g) << " parameters) on "
      << c.task.title() << ": " << trainSet.size() << " documents of up to "
      << trainSet.seqLen << " tokens, vocabulary " << c.task.vocabSize() << " (data ready in "
      << formatDuration(loadSec) << "); " << total << " steps, " << at::get_num_threads()
      << " threads" << (at::get_num_threads() > 1 && std::getenv("OMP_WAIT_POLICY")
                            ? std::string(" (OMP_WAIT_POLICY=") + std::getenv("OMP_WAIT_POLICY") + ")"
                            : std::string())
      << ", " << (opts.kernels ? "generated" : "libtorch") << " back end"
      << (device.is_cpu() ? std::string() : ", on " + device.str()) << "\n";
}

/// The run folder created (unless it exists) and locked for the whole run:
/// one writer per run folder. A folder that holds the user's own files (a
/// config.toml beside its data) is not a run folder: mixc would replace its
/// config.toml.
support::Status openRunFolder(const std::string &dir, bool &created, std::unique_ptr<support::FolderLock> &lock) {
  static const std::vector<std::string> kRunMarks = {"checkpoint.pt", "result.toml", ".lock",
                                                     "graph.json",    "metrics.csv", "cell.toml"};
  if (std::string why = support::foreignFolder(dir, kRunMarks, "a run folder"); !why.empty())
    return support::Status::failed(why + "; [output] dir or --out names the run folder");
  std::error_code ec;
  created = !fs::exists(dir, ec);
  fs::create_directories(dir, ec);
  if (ec)
    return support::Status::failed("cannot create " + dir + ": " + ec.message());
  std::string lockError;
  if (!(lock = support::FolderLock::acquire(dir, lockError)))
    return support::Status::failed(lockError);
  support::removeStaleTemporaries(dir); // of a run killed mid-write; nobody else writes here now
  return support::Status::ok();
}

/// A stop (a signal, or --stop-after): the checkpoint saved where the run is.
support::Status saveOnStop(const std::string &ckptPath, rt::Model &model, torch::optim::AdamW &optimizer,
                           const CheckpointMeta &meta, int64_t lastCheckpoint) {
  std::string error;
  if (!saveCheckpoint(ckptPath, model, &optimizer, meta, error))
    return support::Status::failed("interrupted at step " + std::to_string(meta.step) + ", but " + error +
                                   keptCheckpoint(lastCheckpoint));
  return support::Status::interrupted("interrupted: checkpoint saved at step " + std::to_string(meta.step) +
                                      "; continue with --resume");
}

/// A finished run: result.toml (read by the sweep) and the closing line.
void finishRun(const TrainConfig &c, const graph::Graph &g, const RunOptions &opts, const MetricsRow &last,
               int64_t step, int64_t total, bool stoppedEarly, double elapsed, std::ostream &out) {
  const char *backend = opts.kernels ? "generated" : "libtorch";
  char summary[512];
  std::snprintf(summary, sizeof summary,
                "# written by mixc train when the run finished\n"
                "step = %lld\ntotal_steps = %lld\nstopped_early = %s\neval_acc = %.6g\n"
                "eval_prob = %.6g\nbackend = \"%s\"\nchance = %.6g\n",
                (long long)step, (long long)total, stoppedEarly ? "true" : "false", last.evalAcc,
                last.evalProb, backend, c.task.chance());
  writeFileAtomically((fs::path(c.outDir) / "result.toml").string(), summary);
  char line[512];
  std::snprintf(line, sizeof line,
                "%s: eval accuracy %.4f (mean p(answer) %.4f) on %lld test documents after %lld steps"
                "%s (%s, %.0f tokens/s)\n",
                g.model.c_str(), last.evalAcc, last.evalProb, (long long)std::min(c.evalSize, c.task.testSize()),
                (long long)step, stoppedEarly ? " (stopped early)" : "", formatDuration(elapsed).c_str(),
                last.tokensPerSec);
  out << line << "run folder: " << c.outDir << " (metrics.csv, curves.svg, checkpoint.pt)\n" << std::flush;
}
} // namespace detail

support::Status train(const TrainConfig &c, const graph::Graph &g, const RunOptions &opts,
                      const support::Console &io) {
  using support::Status;
  support::StopOnSignals signals; // from the start: a signal during setup still stops cleanly
  const std::string ckptPath = (fs::path(c.outDir) / "checkpoint.pt").string();
  const std::string csvPath = (fs::path(c.outDir) / "metrics.csv").string();
  const std::string svgPath = (fs::path(c.outDir) / "curves.svg").string();
  const std::string graphJson = graph::toJson(g);
  const std::string settings = runSettings(c);
  std::error_code ec;
  if (opts.resume && !fs::exists(ckptPath, ec)) { // and do not create the folder
    return Status::failed(std::string("--resume: ") +
                          (fs::is_directory(c.outDir, ec) ? "" : "missing run folder: ") +
                          "no run to continue in " + c.outDir + " (checkpoint.pt is missing)");
  }
  rt::setThreads(static_cast<int>(c.threads));
  std::string error;
  at::Device device(at::kCPU);
  if (!rt::resolveDevice(opts.device, device, error))
    return Status::failed(error);
  if (std::string why = trainingTooLarge(c, g); !why.empty())
    return Status::failed(why);
  std::unique_ptr<rt::Model> model = buildModel(g, c, opts.kernels, io.log, error);
  if (!model)
    return Status::failed(error);
  if (support::stopRequested())
    return stoppedDuringSetup("building the model");
  bool createdFolder = false;
  std::unique_ptr<support::FolderLock> lock;
  if (Status opened = openRunFolder(c.outDir, createdFolder, lock); !opened.isOk())
    return opened;

  // Setup that ends early leaves no trace: a folder this run made holds
  // only its lock file until the data is ready.
  auto abandon = [&](Status status) {
    lock.reset();
    if (createdFolder)
      fs::remove_all(c.outDir, ec);
    return status;
  };
  auto loadStart = std::chrono::steady_clock::now();
  tasks::TaskData data;
  if (Status loaded = tasks::loadTask(c.task, c.cacheDir, data); !loaded.isOk())
    return abandon(loaded);
  const tasks::Dataset &trainSet = data.train, &testSet = data.test;
  double loadSec = std::chrono::duration<double>(std::chrono::steady_clock::now() - loadStart).count();
  if (support::stopRequested())
    return abandon(stoppedDuringSetup("generating the data"));

  model->initParameters(c.seed);
  if (!opts.initFrom.empty()) {
    if (opts.resume)
      return abandon(Status::failed("--init-from starts a run from given weights and --resume continues one: "
                                    "not both"));
    if (Status loaded = loadWeights(*model, opts.initFrom); !loaded.isOk())
      return abandon(Status::failed("--init-from " + loaded.message()));
    io.log << "initialised from " << opts.initFrom << "\n";
  }
  model->to(device); // initialised on the host (the same weights on every device), then moved
  torch::optim::AdamW optimizer = makeOptimizer(*model, c);
  const StepCount count = stepCount(c, trainSet);
  const int64_t stepsPerEpoch = count.perEpoch, total = count.total;

  int64_t step = 0;
  bool stoppedEarly = false;
  std::vector<MetricsRow> rows;
  std::vector<LossRow> losses; // loss.csv: every train.log_every steps
  const std::string lossPath = (fs::path(c.outDir) / "loss.csv").string();
  if (opts.resume) {
    if (Status resumed = resume(c, opts, graphJson, settings, total, *model, optimizer, step, stoppedEarly, rows,
                                losses, io.log);
        !resumed.isOk())
      return resumed;
  } else if (fs::exists(ckptPath)) {
    return Status::failed(c.outDir + " already holds a run (checkpoint.pt); pass --resume "
                          "to continue it, or choose another [output] dir");
  }
  writeFileAtomically((fs::path(c.outDir) / "config.toml").string(), c.text);
  writeFileAtomically((fs::path(c.outDir) / "graph.json").string(), graphJson);

  describeRun(c, g, opts, trainSet, loadSec, total, device, io.log);

  auto record = [&](double loss, double acc, double tps, double elapsed) {
    EvalResult e = evaluateOn(*model, testSet, c.evalSize, c.evalBatch);
    MetricsRow r{step, static_cast<double>(step) / stepsPerEpoch, learningRate(c, step, total),
                 loss, acc, e.accuracy, e.probability, tps, elapsed};
    rows.push_back(r);
    writeMetricsCsv(csvPath, rows);
    writeLossCsv(lossPath, losses);
    writeCurvesSvg(svgPath, g.model + " on " + c.task.title(), rows, losses);
    return e;
  };
  if (step == 0 && rows.empty())
    record(std::log(static_cast<double>(c.task.vocabSize())), 0, 0, 0);

  // The step of the checkpoint on disk (-1: none yet), for the messages.
  int64_t lastCheckpoint = opts.resume ? step : -1;
  Progress progress(total, opts.quiet, io.log);
  auto start = std::chrono::steady_clock::now();
  int64_t startStep = step, window = 0;
  double windowLoss = 0, windowAcc = 0, lastLoss = 0, lastAcc = 0;
  LossRow logWindow; // sums over the current log_every steps
  int64_t logged = 0;
  double tokensSeen = 0; // real (unpadded) tokens: comparable across tasks
  while (step < total && !stoppedEarly) {
    if (support::stopRequested() || (opts.stopAfter > 0 && step == opts.stopAfter)) {
      progress.finish();
      writeLossCsv(lossPath, losses); // up to the checkpoint saved now
      return saveOnStop(ckptPath, *model, optimizer, {step, false, c.text, graphJson, settings}, lastCheckpoint);
    }
    double lr = learningRate(c, step, total);
    for (auto &group : optimizer.param_groups())
      static_cast<torch::optim::AdamWOptions &>(group.options()).lr(lr);
    StepResult r = trainStep(*model, optimizer, trainSet, c, stepsPerEpoch, step);
    for (int64_t i = r.first; i < r.first + c.batchSize; ++i)
      tokensSeen += trainSet.length[i];
    ++step;

    double l = r.loss.item<double>();
    if (!std::isfinite(l)) {
      progress.finish();
      std::ostringstream msg;
      msg << "the loss became " << l << " at step " << step << " (" << learningRateNote(lr, c.lr) << ")"
          << keptCheckpoint(lastCheckpoint);
      return Status::failed(msg.str());
    }
    double a = (r.logits.argmax(-1) == r.target).to(at::kDouble).mean().item<double>();
    windowLoss += l, windowAcc += a, ++window;
    logWindow.loss += l, logWindow.acc += a, ++logged;
    if (step % c.lossWindow() == 0 || step == total) {
      losses.push_back({step, logWindow.loss / static_cast<double>(logged), logWindow.acc / static_cast<double>(logged)});
      logWindow = {}, logged = 0;
    }
    lastLoss = l, lastAcc = a;
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double tps = tokensSeen / std::max(elapsed, 1e-9);
    double eta = elapsed / static_cast<double>(step - startStep) * static_cast<double>(total - step);
    progress.update(step, lastLoss, lastAcc, tps, eta);
    if (step % c.evalEvery == 0 || step == total) {
      EvalResult e = record(windowLoss / window, windowAcc / window, tps, elapsed);
      windowLoss = windowAcc = 0;
      window = 0;
      // zoology's early stopping: the eval accuracy, checked at each eval.
      stoppedEarly = c.earlyStopAcc > 0 && e.accuracy >= c.earlyStopAcc;
    }
    if (stoppedEarly || step % c.checkpointEvery == 0 || step == total) {
      writeLossCsv(lossPath, losses); // a resume keeps the rows up to its checkpoint
      std::string error;
      if (!saveCheckpoint(ckptPath, *model, &optimizer, {step, stoppedEarly, c.text, graphJson, settings}, error)) {
        progress.finish();
        return Status::failed(error + keptCheckpoint(lastCheckpoint));
      }
      lastCheckpoint = step;
    }
  }
  progress.finish();
  if (rows.empty())
    return Status::failed(csvPath + " has no rows to resume from");
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  finishRun(c, g, opts, rows.back(), step, total, stoppedEarly, elapsed, io.out);
  return Status::ok();
}

support::Status timeSteps(const TrainConfig &c, const graph::Graph &g, const RunOptions &opts, int64_t steps,
                          StepTiming &out, std::ostream &log) {
  rt::setThreads(static_cast<int>(c.threads));
  std::string error;
  at::Device device(at::kCPU);
  if (!rt::resolveDevice(opts.device, device, error))
    return support::Status::failed(error);
  std::unique_ptr<rt::Model> model = buildModel(g, c, opts.kernels, log, error);
  if (!model)
    return support::Status::failed(error);
  tasks::TaskData data; // cached for the real run
  if (support::Status loaded = tasks::loadTask(c.task, c.cacheDir, data); !loaded.isOk())
    return loaded;
  const tasks::Dataset &trainSet = data.train;
  model->initParameters(c.seed);
  model->to(device);
  torch::optim::AdamW optimizer = makeOptimizer(*model, c);
  const StepCount count = stepCount(c, trainSet);
  out.totalSteps = count.total;
  out.backend = opts.kernels ? "generated" : "libtorch";
  trainStep(*model, optimizer, trainSet, c, count.perEpoch, 0); // warm-up: allocations, first-touch
  auto start = std::chrono::steady_clock::now();
  StepResult last;
  for (int64_t s = 1; s <= steps; ++s)
    last = trainStep(*model, optimizer, trainSet, c, count.perEpoch, s);
  if (last.loss.defined())
    last.loss.item<double>(); // a GPU runs behind the host: wait for the last step
  auto mid = std::chrono::steady_clock::now();
  evaluateOn(*model, data.test, c.evalSize, c.evalBatch);
  auto end = std::chrono::steady_clock::now();
  out.stepSec = std::chrono::duration<double>(mid - start).count() / static_cast<double>(steps);
  int64_t evals = 2 + out.totalSteps / c.evalEvery; // step 0, every eval_every, the end
  out.evalSec = static_cast<double>(evals) * std::chrono::duration<double>(end - mid).count();
  return support::Status::ok();
}

namespace {
/// The checkpoint's config with `settings` applied to what an evaluation
/// may change; false with `error` for any other key, or for another task
/// (tasks::identityChange: another vocabulary layout or grammar).
bool evaluationConfig(const Restored &r, const std::vector<std::string> &settings, TrainConfig &c,
                      std::string &error) {
  c = r.config;
  if (settings.empty())
    return true;
  for (const std::string &kv : settings) {
    const std::string key = kv.substr(0, kv.find('='));
    if (key.rfind("task.", 0) != 0 && key != "train.eval_size" && key != "train.eval_batch") {
      error = "eval --set " + key + ": an evaluation changes only task.* keys and train.eval_size / "
              "train.eval_batch (the model and its training are the checkpoint's)";
      return false;
    }
  }
  if (!parseConfig(r.meta.configText, r.path + ":config", ".", ".", c, error, settings))
    return false;
  if (std::string other = tasks::identityChange(r.config.task, c.task); !other.empty()) {
    error = "eval --set changes the task the model was trained on: " + other +
            "; an accuracy on another task's tokens means nothing (an evaluation may change the documents: "
            "AR's seed and num_pairs, ATR's max_depth, max_string_len and held_out, the set sizes)";
    return false;
  }
  return true;
}
} // namespace

support::Status evaluate(const std::string &where, int64_t evalSize, std::ostream &out, const std::string &device,
                         const std::vector<std::string> &settings) {
  Restored r;
  std::string error;
  at::Device on(at::kCPU);
  TrainConfig c;
  if (!rt::resolveDevice(device, on, error) || !restore(where, nullptr, r, error) ||
      !evaluationConfig(r, settings, c, error))
    return support::Status::failed(error);
  r.model->to(on); // loaded on the host, evaluated where asked
  tasks::TaskData data;
  if (support::Status loaded = tasks::loadTask(c.task, c.cacheDir, data); !loaded.isOk())
    return loaded;
  int64_t n = evalSize > 0 ? std::min<int64_t>(evalSize, data.test.size()) : c.evalSize;
  EvalResult e = evaluateOn(*r.model, data.test, n, c.evalBatch);
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s (step %lld): accuracy %.4f, mean p(answer) %.4f on %lld test documents; "
                "weights digest %016llx\n",
                r.model->graph().model.c_str(), (long long)r.meta.step, e.accuracy, e.probability,
                (long long)n, (unsigned long long)weightsDigest(*r.model));
  out << buf;
  return support::Status::ok();
}

} // namespace mixc::train
