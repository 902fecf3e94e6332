//===- Activations.cpp - named node values out of an intervention run -----===//
#include "runtime/analysis/Activations.h"
#include "runtime/train/Weights.h"
#include "support/Safetensors.h"


namespace mixc::analysis {

ActivationSaver::ActivationSaver(std::set<std::string> nodes, int64_t docs, int64_t seqLen, int64_t cells,
                                 double limitValues)
    : nodes_(std::move(nodes)), docs_(docs), seqLen_(seqLen), cells_(cells), limit_(limitValues) {}

ActivationSaver::Saved *ActivationSaver::slot(const std::string &node, const at::Tensor &value) {
  auto it = saved_.find(node);
  if (it != saved_.end())
    return &it->second;
  // [docs, T, inner...]: sized once, at the node's first chunk.
  std::vector<int64_t> shape = {docs_, seqLen_};
  for (int64_t k = 2; k < value.dim(); ++k)
    shape.push_back(value.size(k));
  double values = static_cast<double>(docs_ * seqLen_) * (cells_ + 2);
  for (size_t k = 2; k < shape.size(); ++k)
    values *= static_cast<double>(shape[k]);
  if (used_ + values > limit_) {
    status_ = support::Status::failed("--save: keeping '" + node + "' for " + std::to_string(cells_) +
                                      " cells and " + std::to_string(docs_) + " documents needs " +
                                      std::to_string(static_cast<int64_t>((used_ + values) * 4 / 1e6)) +
                                      " MB; save fewer nodes, or run fewer cells or documents (--size)");
    return nullptr;
  }
  used_ += values;
  Saved s;
  auto zeros = [&] { return at::zeros(shape, at::kFloat); };
  s.clean = zeros(), s.corrupted = zeros();
  for (int64_t c = 0; c < cells_; ++c)
    s.patched.push_back(zeros());
  return &saved_.emplace(node, std::move(s)).first->second;
}

void ActivationSaver::observe(const std::string &name, const at::Tensor &value, int64_t firstDoc, int64_t m,
                              int64_t firstCell, int64_t cellsInBlock, bool swap) {
  if (!status_.isOk())
    return;
  // "X@c<k>": node X after cell k's intervention; only cell k's block differs.
  std::string node = name;
  int64_t patchedCell = -1;
  if (size_t at = name.rfind("@c"); at != std::string::npos && at + 2 < name.size() &&
                                     name.find_first_not_of("0123456789", at + 2) == std::string::npos &&
                                     name.size() - at - 2 < 12) {
    node = name.substr(0, at);
    patchedCell = std::stoll(name.substr(at + 2)); // digits only, at most 11: cannot throw
  }
  if (!nodes_.count(node) || value.dim() < 2 || value.size(0) != (cellsInBlock + 2) * m)
    return;
  Saved *s = slot(node, value);
  if (!s)
    return;
  const int64_t len = value.size(1);
  at::Tensor v = value.detach().to(at::kCPU, at::kFloat);
  auto put = [&](at::Tensor &dest, int64_t block) {
    dest.narrow(0, firstDoc, m).narrow(1, 0, len).copy_(v.narrow(0, block * m, m));
  };
  if (patchedCell >= 0) {
    if (patchedCell >= firstCell && patchedCell < firstCell + cellsInBlock)
      put(s->patched[patchedCell], 2 + patchedCell - firstCell);
    return;
  }
  if (firstCell == 0) { // the clean and corrupted runs are in every block of cells: keep them once
    put(s->clean, swap ? 1 : 0);
    put(s->corrupted, swap ? 0 : 1);
  }
  for (int64_t c = 0; c < cellsInBlock; ++c)
    put(s->patched[firstCell + c], 2 + c);
}

support::Status ActivationSaver::write(const std::string &path,
                                       const std::map<std::string, std::string> &metadata) const {
  if (!status_.isOk())
    return status_;
  std::vector<support::StoredTensor> stored;
  auto add = [&](const std::string &name, const at::Tensor &t) { stored.push_back(train::storedF32(name, t)); };
  for (const auto &[node, s] : saved_) {
    add(node + ":clean", s.clean);
    add(node + ":corrupted", s.corrupted);
    for (size_t c = 0; c < s.patched.size(); ++c)
      add(node + ":patched:" + std::to_string(c), s.patched[c]);
  }
  std::string error;
  if (!support::writeSafetensors(path, stored, metadata, error))
    return support::Status::failed(error);
  return support::Status::ok();
}

} // namespace mixc::analysis
