//===- Experiment.cpp - the corruption experiment of every analysis ---------===//
#include "runtime/analysis/Experiment.h"

#include <algorithm>

namespace mixc::analysis {

support::Status CorruptionExperiment::open(const std::string &checkpoint, const graph::Graph &graph,
                                           const InterveneSpec &spec, std::shared_ptr<const kernels::Library> kernels,
                                           int64_t size, uint64_t seed) {
  std::string error;
  if (!train::restore(checkpoint, &graph, run_, error, std::move(kernels)))
    return support::Status::failed(error);
  if (support::Status loaded = tasks::loadTask(run_.config.task, run_.config.cacheDir, data_); !loaded.isOk())
    return loaded;
  docs_ = std::min<int64_t>(size, data_.test.size());
  corrupted_ = corruptTokens(data_.test, docs_, spec.corrupt, seed);
  swap_ = spec.swap;
  return support::Status::ok();
}

DocumentChunk CorruptionExperiment::chunk(int64_t i, int64_t j) const {
  return documentChunk(data_.test, corrupted_, i, j, swap_);
}

} // namespace mixc::analysis
