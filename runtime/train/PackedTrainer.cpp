//===- PackedTrainer.cpp - K runs that share a graph, trained as one --------===//
//
// trainPack (Trainer.h): the runs of K configs that differ only in the keys
// packableSettings() (Config.h) allows train as one ReplicatedModel (runtime/core/Replicas.h) on
// one data stream, and each run's folder ends as `mixc train` alone would
// leave it: config.toml, graph.json, checkpoint.pt (its weights and its
// AdamW state), metrics.csv, loss.csv, curves.svg, result.toml. A member
// that stops early is frozen (ReplicaAdamW leaves it) while the others go
// on; one whose loss diverges fails alone, keeping its last checkpoint.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Device.h"
#include "runtime/core/Model.h"
#include "runtime/core/Replicas.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/FusedAdamW.h"
#include "runtime/train/Trainer.h"
#include "runtime/train/TrainerDetail.h"
#include "support/FileLock.h"
#include "support/Stop.h"

#include <torch/torch.h>

#include <map>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

namespace mixc::train {
namespace fs = std::filesystem;
using namespace detail;
using support::Status;

namespace {
/// One run of the pack: its config, files and where it stands.
struct Member {
  const TrainConfig *c = nullptr;
  std::string ckpt, csv, loss, svg, settings;
  std::unique_ptr<support::FolderLock> lock;
  int64_t step = 0, lastCheckpoint = -1;
  bool stopped = false; // early stop: finished and frozen
  std::string failed;   // why it ended without finishing (a diverged loss)
  std::vector<MetricsRow> rows;
  std::vector<LossRow> losses;
  LossRow logWindow;
  int64_t logged = 0, window = 0;
  double windowLoss = 0, windowAcc = 0;
  bool active() const { return !stopped && failed.empty(); }
};

/// "train.lr, train.seed, ... and train.early_stop_acc" (the learning rate first).
std::string packableList() {
  std::vector<std::string> keys = {"train.lr"};
  for (const std::string &k : packableSettings())
    if (k != "train.lr")
      keys.push_back(k);
  std::string text;
  for (size_t i = 0; i < keys.size(); ++i)
    text += (i == 0 ? "" : i + 1 == keys.size() ? " and " : ", ") + keys[i];
  return text;
}

/// "" when the configs may train as one pack, else the first key that differs.
std::string packRefusal(const std::vector<TrainConfig> &configs) {
  const std::string first = runSettings(configs[0]);
  std::set<std::string> dirs;
  for (const TrainConfig &c : configs) {
    for (const std::string &key : changedSettings(first, runSettings(c)))
      if (!packableSettings().count(key))
        return c.outDir + " differs from " + configs[0].outDir + " in " + key +
               ": the runs of a pack may differ only in " + packableList();
    if (c.evalBatch != configs[0].evalBatch || c.threads != configs[0].threads)
      return c.outDir + " differs from " + configs[0].outDir + " in train.eval_batch or train.threads";
    if (!dirs.insert(fs::weakly_canonical(c.outDir).string()).second)
      return "two runs of the pack write to " + c.outDir;
  }
  return "";
}

/// Accuracy and mean p(answer) of every replica on the first n documents.
std::vector<EvalResult> evaluatePack(const rt::ReplicatedModel &m, const tasks::Dataset &d, int64_t n,
                                     int64_t batch) {
  torch::NoGradGuard noGrad;
  const int64_t K = m.replicas();
  n = std::min<int64_t>(n, d.size());
  at::Tensor correct = at::zeros({K}, at::kDouble), prob = at::zeros({K}, at::kDouble);
  for (int64_t i = 0; i < n; i += batch) {
    Batch b = batchOf(d, i, std::min(n, i + batch), m.device());
    at::Tensor logits = m.forward(b.tokens, b.readout); // [K, rows, V]
    correct += (logits.argmax(-1) == b.target.unsqueeze(0)).sum(1).to(at::kDouble);
    at::Tensor target = b.target.view({1, -1, 1}).expand({K, -1, 1});
    prob += at::softmax(logits, -1).gather(2, target).sum({1, 2}).to(at::kDouble);
  }
  std::vector<EvalResult> out;
  for (int64_t k = 0; k < K; ++k)
    out.push_back({correct[k].item<double>() / static_cast<double>(n), prob[k].item<double>() / static_cast<double>(n)});
  return out;
}

/// The pack's shared pieces: the model, its optimiser, and a model of one
/// member's shape to write and read members' checkpoints through.
struct Pack {
  std::unique_ptr<rt::ReplicatedModel> model;
  std::unique_ptr<ReplicaAdamW> optimizer;
  std::unique_ptr<rt::Model> member;
  std::string graphJson;
};

torch::optim::AdamW memberOptimizer(rt::Model &m, double lr) {
  return torch::optim::AdamW(m.trainable(),
                             torch::optim::AdamWOptions(lr).betas({0.9, 0.999}).eps(1e-8).weight_decay(0.0));
}

/// Member k's checkpoint, as its run alone writes it.
bool saveMember(Pack &p, int64_t k, Member &m, std::string &error) {
  p.model->copyReplicaTo(k, *p.member);
  torch::optim::AdamW opt = memberOptimizer(*p.member, m.c->lr);
  p.optimizer->exportReplica(k, p.member->trainable(), opt);
  writeLossCsv(m.loss, m.losses);
  if (!saveCheckpoint(m.ckpt, *p.member, &opt, {m.step, m.stopped, m.c->text, p.graphJson, m.settings}, error))
    return false;
  m.lastCheckpoint = m.step;
  return true;
}

/// --resume: member k from its checkpoint (weights, moments, step, rows).
Status resumeMember(Pack &p, int64_t k, Member &m, const RunOptions &opts, std::ostream &log) {
  std::string error;
  CheckpointMeta meta;
  if (!readCheckpointMeta(m.ckpt, meta, error))
    return Status::failed("--resume: " + error);
  if (graph::modelIdentity(meta.graphJson) != graph::modelIdentity(p.graphJson))
    return Status::failed("--resume: " + m.ckpt + " was written for a different model");
  if (std::string changed = changedRunSettings(meta, m.settings, opts, m.ckpt); !changed.empty())
    return Status::failed(changed);
  torch::optim::AdamW opt = memberOptimizer(*p.member, m.c->lr);
  if (!loadCheckpoint(m.ckpt, *p.member, &opt, meta, error))
    return Status::failed("--resume: " + error);
  if (std::string why = p.model->setReplica(k, *p.member); !why.empty())
    return Status::failed("--resume: " + m.ckpt + ": " + why);
  if (std::string why = p.optimizer->importReplica(k, p.member->trainable(), opt); !why.empty())
    return Status::failed("--resume: " + m.ckpt + ": " + why);
  m.step = m.lastCheckpoint = meta.step;
  m.stopped = meta.stoppedEarly;
  for (const MetricsRow &r : readMetricsCsv(m.csv))
    if (r.step <= m.step)
      m.rows.push_back(r);
  for (const LossRow &r : readLossCsv(m.loss))
    if (r.step <= m.step)
      m.losses.push_back(r);
  log << (m.stopped ? "finished (stopped early): " : "resuming ") << m.c->outDir << " at step " << m.step << "\n";
  return Status::ok();
}

/// Opens every member's folder (locked) and, with --resume, restores it;
/// the step the pack continues from.
Status openMembers(Pack &p, std::vector<Member> &members, const RunOptions &opts, int64_t &step, std::ostream &log) {
  std::map<fs::path, const Member *> folders; // one run folder a member, however it is spelled
  for (const Member &m : members) {
    std::error_code ec;
    const fs::path folder = fs::weakly_canonical(fs::absolute(m.c->outDir), ec);
    if (auto [it, fresh] = folders.emplace(folder, &m); !fresh)
      return Status::failed("two runs of the pack write one run folder: " + it->second->c->outDir + " and " +
                            m.c->outDir + " are " + folder.string() + "; give each config its own [output] dir");
  }
  for (Member &m : members) {
    bool created = false;
    if (Status st = openRunFolder(m.c->outDir, created, m.lock); !st.isOk())
      return st;
    if (!opts.resume && fs::exists(m.ckpt))
      return Status::failed(m.c->outDir + " already holds a run (checkpoint.pt); pass --resume to continue the "
                            "pack, or choose other [output] dirs");
    if (opts.resume && !fs::exists(m.ckpt))
      return Status::failed("--resume: no run to continue in " + m.c->outDir + " (checkpoint.pt is missing)");
  }
  step = 0;
  if (!opts.resume)
    return Status::ok();
  std::set<int64_t> steps;
  for (size_t k = 0; k < members.size(); ++k) {
    if (Status st = resumeMember(p, static_cast<int64_t>(k), members[k], opts, log); !st.isOk())
      return st;
    if (members[k].active())
      steps.insert(members[k].step);
  }
  if (steps.size() > 1)
    return Status::failed("--resume: the pack's unfinished runs stopped at different steps (" +
                          std::to_string(*steps.begin()) + " and " + std::to_string(*steps.rbegin()) +
                          "): resume each alone with mixc train --resume");
  step = steps.empty() ? 0 : *steps.begin();
  return Status::ok();
}
} // namespace

namespace {
/// The training loop's state over the whole pack.
struct Loop {
  Pack &pack;
  std::vector<Member> &members;
  const tasks::Dataset &trainSet, &testSet;
  StepCount count;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double tokensSeen = 0;

  void record(const std::vector<size_t> &who, int64_t step, double tps, double elapsed) {
    const TrainConfig &c0 = *members[0].c;
    std::vector<EvalResult> e = evaluatePack(*pack.model, testSet, c0.evalSize, c0.evalBatch);
    for (size_t k : who) {
      Member &m = members[k];
      const double loss = m.window ? m.windowLoss / static_cast<double>(m.window)
                                   : std::log(static_cast<double>(m.c->task.vocabSize()));
      const double acc = m.window ? m.windowAcc / static_cast<double>(m.window) : 0;
      m.rows.push_back({step, static_cast<double>(step) / static_cast<double>(count.perEpoch),
                        learningRate(*m.c, step, count.total), loss, acc, e[k].accuracy, e[k].probability,
                        m.window ? tps : 0, m.window ? elapsed : 0});
      m.windowLoss = m.windowAcc = 0, m.window = 0;
      writeMetricsCsv(m.csv, m.rows);
      writeLossCsv(m.loss, m.losses);
      writeCurvesSvg(m.svg, pack.model->graph().model + " on " + m.c->task.title(), m.rows, m.losses);
      if (step > 0 && m.c->earlyStopAcc > 0 && e[k].accuracy >= m.c->earlyStopAcc)
        m.stopped = true;
    }
  }

  /// One step of every active member on the batch for `step`.
  void trainStep(int64_t step) {
    const TrainConfig &c0 = *members[0].c;
    const int64_t K = pack.model->replicas(), first = (step % count.perEpoch) * c0.batchSize;
    Batch batch = batchOf(trainSet, first, first + c0.batchSize, pack.model->device());
    at::Tensor logits = pack.model->forward(batch.tokens, batch.readout); // [K, B, V]
    std::vector<at::Tensor> losses;
    at::Tensor total = at::zeros({}, logits.options());
    for (int64_t k = 0; k < K; ++k) {
      losses.push_back(at::cross_entropy_loss(logits[k], batch.target));
      if (members[k].active())
        total = total + losses.back();
    }
    pack.optimizer->zeroGrad();
    total.backward();
    std::vector<double> lr, wd(K, 0.0);
    std::vector<bool> active;
    for (const Member &m : members) {
      lr.push_back(learningRate(*m.c, step, count.total));
      active.push_back(m.active());
    }
    pack.optimizer->step(lr, wd, active);
    for (int64_t i = first; i < first + c0.batchSize; ++i)
      tokensSeen += static_cast<double>(trainSet.length[i]);
    const at::Tensor correct = (logits.detach().argmax(-1) == batch.target.unsqueeze(0)).to(at::kDouble).mean(1);
    for (int64_t k = 0; k < K; ++k) {
      Member &m = members[k];
      if (!m.active())
        continue;
      const double l = losses[k].item<double>(), a = correct[k].item<double>();
      if (!std::isfinite(l)) {
        std::ostringstream msg;
        msg << m.c->outDir << ": the loss became " << l << " at step " << step + 1 << " ("
            << learningRateNote(lr[k], m.c->lr) << ")" << keptCheckpoint(m.lastCheckpoint);
        m.failed = msg.str();
        continue;
      }
      m.step = step + 1;
      m.windowLoss += l, m.windowAcc += a, ++m.window;
      m.logWindow.loss += l, m.logWindow.acc += a, ++m.logged;
      if (m.step % m.c->lossWindow() == 0 || m.step == count.total) {
        m.losses.push_back({m.step, m.logWindow.loss / static_cast<double>(m.logged),
                            m.logWindow.acc / static_cast<double>(m.logged)});
        m.logWindow = {}, m.logged = 0;
      }
    }
  }
};
} // namespace

namespace {
/// The pack of `configs` ready to train: checked, its model built with each
/// member's init seed, its optimiser, each member's file names, the task's
/// data. Nothing is written yet.
Status preparePack(const std::vector<TrainConfig> &configs, const graph::Graph &g, const RunOptions &opts, Pack &pack,
                   std::vector<Member> &members, tasks::TaskData &data) {
  if (configs.empty())
    return Status::failed("a pack needs at least one run");
  if (std::string why = packRefusal(configs); !why.empty())
    return Status::failed(why);
  at::Device device(at::kCPU);
  if (std::string error; !rt::resolveDevice(opts.device, device, error))
    return Status::failed(error);
  if (!opts.initFrom.empty())
    return Status::failed("--init-from starts one run from given weights: train each run alone");
  const TrainConfig &c0 = configs[0];
  rt::setThreads(static_cast<int>(c0.threads));
  if (std::string why = trainingTooLarge(c0, g); !why.empty())
    return Status::failed(why);
  const int64_t K = static_cast<int64_t>(configs.size());
  std::string error;
  if (!(pack.model = rt::ReplicatedModel::create(g, K, error, opts.kernels)) ||
      !(pack.member = rt::Model::create(g, error)))
    return Status::failed("cannot pack the model: " + error);
  pack.graphJson = graph::toJson(g);
  members = std::vector<Member>(configs.size());
  std::vector<uint64_t> seeds;
  for (size_t k = 0; k < configs.size(); ++k) {
    Member &m = members[k];
    m.c = &configs[k];
    const fs::path dir(configs[k].outDir);
    m.ckpt = (dir / "checkpoint.pt").string(), m.csv = (dir / "metrics.csv").string();
    m.loss = (dir / "loss.csv").string(), m.svg = (dir / "curves.svg").string();
    m.settings = runSettings(configs[k]);
    seeds.push_back(configs[k].seed);
  }
  pack.model->initParameters(seeds); // drawn on the CPU, as a run alone draws them
  pack.model->to(device);             // new tensors: the optimiser takes these
  pack.optimizer = std::make_unique<ReplicaAdamW>(pack.model->trainable(), K);
  if (Status loaded = tasks::loadTask(c0.task, c0.cacheDir, data); !loaded.isOk())
    return loaded;
  if (support::stopRequested())
    return stoppedDuringSetup("generating the data");
  return Status::ok();
}
} // namespace

support::Status timePack(const std::vector<TrainConfig> &configs, const graph::Graph &g, const RunOptions &opts,
                         int64_t steps, StepTiming &out, std::ostream &) {
  Pack pack;
  std::vector<Member> members;
  tasks::TaskData data;
  if (Status st = preparePack(configs, g, opts, pack, members, data); !st.isOk())
    return st;
  Loop loop{pack, members, data.train, data.test, stepCount(configs[0], data.train)};
  out.totalSteps = loop.count.total;
  out.backend = opts.kernels ? "generated" : "libtorch";
  loop.trainStep(0); // warm-up: allocations, first-touch
  const auto start = std::chrono::steady_clock::now();
  for (int64_t s = 1; s <= steps; ++s)
    loop.trainStep(s);
  const auto mid = std::chrono::steady_clock::now();
  evaluatePack(*pack.model, data.test, configs[0].evalSize, configs[0].evalBatch);
  const auto end = std::chrono::steady_clock::now();
  out.stepSec = std::chrono::duration<double>(mid - start).count() / static_cast<double>(steps);
  const int64_t evals = 2 + out.totalSteps / configs[0].evalEvery; // step 0, every eval_every, the end
  out.evalSec = static_cast<double>(evals) * std::chrono::duration<double>(end - mid).count();
  return Status::ok();
}

support::Status trainPack(const std::vector<TrainConfig> &configs, const graph::Graph &g, const RunOptions &opts,
                          const support::Console &io) {
  support::StopOnSignals signals;
  Pack pack;
  std::vector<Member> members;
  tasks::TaskData data;
  if (Status st = preparePack(configs, g, opts, pack, members, data); !st.isOk())
    return st;
  const TrainConfig &c0 = configs[0];
  const int64_t K = static_cast<int64_t>(configs.size());
  std::string error;
  int64_t step = 0;
  if (Status opened = openMembers(pack, members, opts, step, io.log); !opened.isOk())
    return opened;
  for (const Member &m : members) {
    writeFileAtomically((fs::path(m.c->outDir) / "config.toml").string(), m.c->text);
    writeFileAtomically((fs::path(m.c->outDir) / "graph.json").string(), pack.graphJson);
  }
  Loop loop{pack, members, data.train, data.test, stepCount(c0, data.train)};
  const int64_t total = loop.count.total;
  io.log << "training " << K << " runs of " << g.model << " as one pack (" << graph::parameterCount(g)
         << " parameters each) on " << c0.task.title() << ": " << total << " steps, "
         << (opts.kernels ? "generated" : "libtorch") << " back end on "
         << pack.model->device().str() << "\n";
  std::vector<size_t> fresh;
  for (size_t k = 0; k < members.size(); ++k)
    if (members[k].rows.empty())
      fresh.push_back(k);
  if (!fresh.empty())
    loop.record(fresh, 0, 0, 0);
  Progress progress(total, opts.quiet, io.log);
  const int64_t startStep = step;
  auto anyActive = [&] {
    return std::any_of(members.begin(), members.end(), [](const Member &m) { return m.active(); });
  };
  while (step < total && anyActive()) {
    if (support::stopRequested() || (opts.stopAfter > 0 && step == opts.stopAfter)) {
      progress.finish();
      for (size_t k = 0; k < members.size(); ++k)
        if (members[k].active() && !saveMember(pack, static_cast<int64_t>(k), members[k], error))
          return Status::failed("interrupted at step " + std::to_string(step) + ", but " + error);
      return Status::interrupted("interrupted: the pack's checkpoints saved at step " + std::to_string(step) +
                                 "; continue with --resume");
    }
    loop.trainStep(step);
    ++step;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop.start).count();
    const double tps = loop.tokensSeen / std::max(elapsed, 1e-9);
    progress.update(step, members[0].windowLoss / std::max<int64_t>(1, members[0].window), 0, tps,
                    elapsed / static_cast<double>(step - startStep) * static_cast<double>(total - step));
    std::vector<size_t> evaluated;
    if (step % c0.evalEvery == 0 || step == total)
      for (size_t k = 0; k < members.size(); ++k)
        if (members[k].active())
          evaluated.push_back(k);
    if (!evaluated.empty())
      loop.record(evaluated, step, tps, elapsed);
    for (size_t k = 0; k < members.size(); ++k) {
      Member &m = members[k];
      const bool justStopped = m.stopped && m.lastCheckpoint < m.step;
      if ((m.active() && (step % c0.checkpointEvery == 0 || step == total)) || justStopped)
        if (!saveMember(pack, static_cast<int64_t>(k), m, error)) {
          progress.finish();
          return Status::failed(error + keptCheckpoint(m.lastCheckpoint));
        }
    }
  }
  progress.finish();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop.start).count();
  size_t failures = 0;
  for (const Member &m : members) {
    if (!m.failed.empty()) {
      // A line of its own, naming its run folder: a sweep gives each
      // member's row its own error (one joined line gave each all of them).
      io.log << "error: " << m.failed << "\n";
      ++failures;
      continue;
    }
    finishRun(*m.c, g, opts, m.rows.back(), m.step, total, m.stopped, elapsed, io.out); // its back end: the pack's
  }
  if (failures == 0)
    return Status::ok();
  return Status::failed(std::to_string(failures) + " of " + std::to_string(K) + " runs of the pack failed (" +
                        (failures == 1 ? "its error" : "their errors") + " above); the others finished");
}

} // namespace mixc::train
