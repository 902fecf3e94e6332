//===- Experiment.cpp - the corruption experiment of every analysis ---------===//
#include "runtime/analysis/Experiment.h"

#include <algorithm>

namespace mixc::analysis {

support::Status CorruptionExperiment::restore(const std::string &checkpoint, const graph::Graph &graph,
                                              const InterveneSpec &spec,
                                              std::shared_ptr<const kernels::Library> kernels) {
  std::string error;
  if (!train::restore(checkpoint, &graph, run_, error, std::move(kernels)))
    return support::Status::failed(error);
  swap_ = spec.swap;
  return support::Status::ok();
}

support::Status CorruptionExperiment::open(const std::string &checkpoint, const graph::Graph &graph,
                                           const InterveneSpec &spec, std::shared_ptr<const kernels::Library> kernels,
                                           int64_t size, uint64_t seed) {
  if (support::Status restored = restore(checkpoint, graph, spec, std::move(kernels)); !restored.isOk())
    return restored;
  if (support::Status loaded = tasks::loadTask(run_.config.task, run_.config.cacheDir, data_); !loaded.isOk())
    return loaded;
  docs_ = std::min<int64_t>(size, data_.test.size());
  corrupted_ = corruptTokens(data_.test, docs_, spec.corrupt, seed);
  return support::Status::ok();
}

support::Status CorruptionExperiment::open(const std::string &checkpoint, const graph::Graph &graph,
                                           const InterveneSpec &spec, std::shared_ptr<const kernels::Library> kernels,
                                           std::shared_ptr<const DocumentChunk> pairs) {
  if (support::Status restored = restore(checkpoint, graph, spec, std::move(kernels)); !restored.isOk())
    return restored;
  if (std::string why = checkPairs(*pairs, *run_.model); !why.empty())
    return support::Status::failed(why);
  pairs_ = std::move(pairs);
  docs_ = pairs_->source.size(0);
  return support::Status::ok();
}

DocumentChunk CorruptionExperiment::chunk(int64_t i, int64_t j) const {
  return pairs_ ? sliceChunk(*pairs_, i, j, swap_) : documentChunk(data_.test, corrupted_, i, j, swap_);
}

support::Status openRunTask(const std::string &checkpointOrRun, const std::string &corrupt, int64_t size,
                            uint64_t seed, RunTask &out) {
  if (corrupt != "key" && corrupt != "value" && corrupt != "none")
    return support::Status::failed("corrupt is key, value or none, got '" + corrupt + "'");
  if (size < 1)
    return support::Status::failed("size must be a positive number of test documents, got " + std::to_string(size));
  train::Restored run;
  std::string error;
  if (!train::restore(checkpointOrRun, nullptr, run, error))
    return support::Status::failed(error);
  out.config = run.config.task;
  if (support::Status loaded = tasks::loadTask(out.config, run.config.cacheDir, out.data); !loaded.isOk())
    return loaded;
  const int64_t docs = std::min<int64_t>(size, out.data.test.size());
  out.pairs = documentChunk(out.data.test, corruptTokens(out.data.test, docs, corrupt, seed), 0, docs, false);
  return support::Status::ok();
}

} // namespace mixc::analysis
