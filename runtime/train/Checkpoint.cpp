//===- Checkpoint.cpp - atomic checkpoints: weights, optimiser, run settings ---===//
#include "runtime/train/Checkpoint.h"

#include "support/AtomicWrite.h"
#include "support/Digest.h"

#include <torch/serialize.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

namespace mixc::train {

namespace {
/// Moves AdamW's state (moments; its step count stays) to `device`.
void moveOptimizerState(torch::optim::AdamW &optimizer, const at::Device &device) {
  for (auto &[key, state] : optimizer.state()) {
    auto &s = static_cast<torch::optim::AdamWParamState &>(*state);
    if (s.exp_avg().defined())
      s.exp_avg(s.exp_avg().to(device));
    if (s.exp_avg_sq().defined())
      s.exp_avg_sq(s.exp_avg_sq().to(device));
    if (s.max_exp_avg_sq().defined())
      s.max_exp_avg_sq(s.max_exp_avg_sq().to(device));
  }
}
} // namespace

/// The digest of a host tensor's values (with its shape): a checkpoint
/// stores one per weight, because LibTorch 1.13 reads a record whose bytes
/// were damaged without complaint.
std::string tensorDigest(const at::Tensor &t) {
  at::Tensor c = t.detach().to(at::kCPU).contiguous();
  uint64_t h = support::fnv1a(c10::str(c.sizes(), c.scalar_type()));
  return support::hexDigest(support::fnv1a(c.data_ptr(), c.nbytes(), h));
}

bool saveCheckpoint(const std::string &path, const rt::Model &model, torch::optim::AdamW *optimizer,
                    const CheckpointMeta &meta, std::string &error) {
  torch::serialize::OutputArchive archive;
  archive.write("format", c10::IValue(std::string("mixc-checkpoint-1")));
  archive.write("step", c10::IValue(meta.step));
  archive.write("stopped_early", c10::IValue(meta.stoppedEarly));
  archive.write("config", c10::IValue(meta.configText));
  archive.write("graph", c10::IValue(meta.graphJson));
  archive.write("settings", c10::IValue(meta.settings));
  torch::serialize::OutputArchive weights;
  std::string digests; // "name digest" lines
  // Host tensors only, so that a checkpoint loads on any machine (one
  // trained on a GPU is evaluated and intervened on a CPU, and back).
  const at::Device device = model.device();
  for (const auto &[name, t] : model.tensors()) {
    at::Tensor host = t.detach().to(at::kCPU);
    weights.write(name, host, /*is_buffer=*/true);
    digests += name + " " + tensorDigest(host) + "\n";
  }
  archive.write("weights", weights);
  archive.write("weight_digests", c10::IValue(digests));
  if (optimizer) {
    if (!device.is_cpu())
      moveOptimizerState(*optimizer, at::kCPU);
    torch::serialize::OutputArchive opt;
    optimizer->save(opt);
    archive.write("optimizer", opt);
    if (!device.is_cpu())
      moveOptimizerState(*optimizer, device);
  }
  // Serialised in memory, then written by writeFileAtomically: LibTorch's
  // file writer reports a full disk by throwing from a destructor (an
  // abort) and leaves its temporary behind.
  std::ostringstream bytes;
  try {
    archive.save_to(bytes);
  } catch (const std::exception &e) {
    error = "cannot write " + path + ": " + std::string(e.what()).substr(0, 200);
    return false;
  }
  return support::writeFileAtomically(path, bytes.str(), error);
}

namespace {
bool readMeta(torch::serialize::InputArchive &archive, CheckpointMeta &meta, std::string &error) {
  c10::IValue format, step, config, graph;
  if (!archive.try_read("format", format) || !format.isString() ||
      format.toStringRef() != "mixc-checkpoint-1") {
    error = "not a mixc checkpoint (or an unsupported version)";
    return false;
  }
  if (!archive.try_read("step", step) || !archive.try_read("config", config) ||
      !archive.try_read("graph", graph)) {
    error = "checkpoint lacks its step, config or graph";
    return false;
  }
  meta.step = step.toInt();
  c10::IValue stopped; // absent in checkpoints written before early stopping
  meta.stoppedEarly = archive.try_read("stopped_early", stopped) && stopped.isBool() && stopped.toBool();
  meta.configText = config.toStringRef();
  meta.graphJson = graph.toStringRef();
  c10::IValue settings; // absent in checkpoints written before resume checked them
  meta.settings = archive.try_read("settings", settings) && settings.isString() ? settings.toStringRef() : "";
  return true;
}
} // namespace

/// The stored digest of each weight; none in checkpoints written before them.
std::map<std::string, std::string> readWeightDigests(torch::serialize::InputArchive &archive) {
  std::map<std::string, std::string> digests;
  c10::IValue text;
  if (!archive.try_read("weight_digests", text) || !text.isString())
    return digests;
  std::istringstream lines(text.toStringRef());
  std::string name, digest;
  while (lines >> name >> digest)
    digests[name] = digest;
  return digests;
}

bool readCheckpointMeta(const std::string &path, CheckpointMeta &meta, std::string &error) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    error = "no checkpoint at " + path + " (missing: the run never saved one, or the path is wrong)";
    return false;
  }
  if (std::filesystem::is_directory(path, ec)) {
    error = path + " is a directory, not a checkpoint";
    return false;
  }
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    return readMeta(archive, meta, error);
  } catch (const std::exception &e) {
    error = "cannot read checkpoint " + path + " (truncated or corrupt?)";
    return false;
  }
}

bool loadCheckpoint(const std::string &path, rt::Model &model, torch::optim::AdamW *optimizer,
                    CheckpointMeta &meta, std::string &error) {
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path, at::Device(at::kCPU)); // older GPU checkpoints too
    if (!readMeta(archive, meta, error))
      return false;
    torch::serialize::InputArchive weights;
    archive.read("weights", weights);
    std::map<std::string, std::string> digests = readWeightDigests(archive);
    torch::NoGradGuard noGrad;
    for (const auto &[name, t] : model.tensors()) {
      at::Tensor saved;
      if (!weights.try_read(name, saved, /*is_buffer=*/true)) {
        error = "checkpoint has no tensor '" + name + "'";
        return false;
      }
      if (saved.sizes() != t.sizes()) {
        error = "checkpoint tensor '" + name + "' has shape " + c10::str(saved.sizes()) +
                ", the model expects " + c10::str(t.sizes());
        return false;
      }
      if (!at::isfinite(saved).all().item<bool>()) {
        error = "checkpoint tensor '" + name + "' contains NaN or infinite values";
        return false;
      }
      if (auto d = digests.find(name); d != digests.end() && d->second != tensorDigest(saved)) {
        error = "checkpoint tensor '" + name + "' does not hold the values that were saved (the file is damaged)";
        return false;
      }
      const_cast<at::Tensor &>(t).copy_(saved);
    }
    if (optimizer) {
      torch::serialize::InputArchive opt;
      if (!archive.try_read("optimizer", opt)) {
        error = "checkpoint has no optimiser state (cannot resume)";
        return false;
      }
      optimizer->load(opt);
      if (!model.device().is_cpu())
        moveOptimizerState(*optimizer, model.device()); // loaded on the host
    }
    return true;
  } catch (const std::exception &e) {
    error = "cannot read checkpoint " + path + " (truncated or corrupt?): " +
            std::string(e.what()).substr(0, 200);
    return false;
  }
}

std::string checkpointPath(const std::string &where) {
  std::error_code ec;
  if (std::filesystem::is_directory(where, ec))
    return (std::filesystem::path(where) / "checkpoint.pt").string();
  return where;
}

bool restore(const std::string &where, const graph::Graph *override, Restored &out, std::string &error,
             std::shared_ptr<const kernels::Library> kernels) {
  out.path = checkpointPath(where);
  graph::Graph stored;
  bool ok = readCheckpointMeta(out.path, out.meta, error);
  if (ok && !parseConfig(out.meta.configText, out.path + ":config", ".", ".", out.config, error))
    error = "the checkpoint's config: " + error, ok = false;
  if (ok && !override && !graph::fromJson(out.meta.graphJson, stored, error))
    error = "the checkpoint's graph: " + error, ok = false;
  if (ok) {
    rt::setThreads(static_cast<int>(out.config.threads));
    out.model = rt::Model::create(override ? *override : stored, error, std::move(kernels));
    if (!out.model)
      error = "cannot run the model: " + error, ok = false;
  }
  if (ok)
    ok = loadCheckpoint(out.path, *out.model, nullptr, out.meta, error);
  return ok;
}

} // namespace mixc::train
