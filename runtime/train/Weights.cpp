//===- Weights.cpp - a run's weights as a safetensors file ----------------===//
#include "runtime/train/Weights.h"
#include "support/OutputGuard.h"
#include "runtime/train/Checkpoint.h"
#include "support/Safetensors.h"
#include "support/Suggest.h"

#include <torch/torch.h>

#include <cstring>
#include <filesystem>

namespace mixc::train {

support::StoredTensor storedF32(const std::string &name, const at::Tensor &tensor) {
  at::Tensor t = tensor.detach().to(at::kCPU, at::kFloat).contiguous();
  support::StoredTensor s{name, "F32", t.sizes().vec(), std::string(t.nbytes(), '\0')};
  std::memcpy(s.bytes.data(), t.data_ptr(), t.nbytes());
  return s;
}

support::Status saveWeights(const rt::Model &model, const std::string &path,
                            const std::map<std::string, std::string> &metadata,
                            const std::vector<std::string> &inputs) {
  if (std::string why = support::outputClash(path, inputs); !why.empty())
    return support::Status::failed(why);
  std::vector<support::StoredTensor> stored;
  for (const auto &[name, tensor] : model.tensors())
    stored.push_back(storedF32(name, tensor));
  std::string error;
  if (!support::writeSafetensors(path, stored, metadata, error))
    return support::Status::failed(error);
  return support::Status::ok();
}

support::Status loadWeights(rt::Model &model, const std::string &path) {
  std::vector<support::StoredTensor> stored;
  std::map<std::string, std::string> metadata;
  std::string error;
  if (!support::readSafetensors(path, stored, metadata, error))
    return support::Status::failed(error);
  std::map<std::string, const support::StoredTensor *> byName;
  for (const support::StoredTensor &s : stored)
    byName[s.name] = &s;
  std::vector<std::string> modelNames;
  for (const auto &[name, t] : model.tensors())
    modelNames.push_back(name);
  for (const auto &[name, s] : byName)
    if (std::find(modelNames.begin(), modelNames.end(), name) == modelNames.end())
      return support::Status::failed(path + ": tensor '" + name + "' is not a tensor of the model " +
                                     model.graph().model + support::didYouMean(name, modelNames));
  torch::NoGradGuard noGrad;
  for (const auto &[name, tensor] : model.tensors()) {
    auto it = byName.find(name);
    if (it == byName.end())
      return support::Status::failed(path + ": has no tensor '" + name + "' (the model " + model.graph().model +
                                     " has " + std::to_string(modelNames.size()) + "; the file " +
                                     std::to_string(stored.size()) + ")");
    const support::StoredTensor &s = *it->second;
    if (s.dtype != "F32")
      return support::Status::failed(path + ": tensor '" + name + "' is " + s.dtype + ", not F32");
    if (s.shape != tensor.sizes().vec())
      return support::Status::failed(path + ": tensor '" + name + "' has shape " +
                                     c10::str(at::IntArrayRef(s.shape)) + " but the model's is " +
                                     c10::str(tensor.sizes()));
    at::Tensor from = at::from_blob(const_cast<char *>(s.bytes.data()), s.shape, at::kFloat);
    // A NaN or inf weight would train to NaN and be reported far later as
    // "learning rate too high?": refused here, naming the tensor.
    if (const int64_t bad = (~at::isfinite(from)).sum().item<int64_t>(); bad > 0)
      return support::Status::failed(path + ": tensor '" + name + "' holds " + std::to_string(bad) +
                                     " non-finite values (NaN or inf)");
    at::Tensor target = tensor; // a handle: copy_ writes the model's storage
    target.copy_(from);
  }
  return support::Status::ok();
}

support::Status exportRun(const std::string &where, const std::string &path, std::ostream &out) {
  if (std::string why = support::outputClash(path, {where}); !why.empty())
    return support::Status::failed(why); // before restoring: the check costs nothing
  Restored r;
  std::string error;
  if (!restore(where, nullptr, r, error))
    return support::Status::failed(error);
  std::map<std::string, std::string> metadata = {
      {"format", "mixc-weights"},      {"model", r.model->graph().model}, {"step", std::to_string(r.meta.step)},
      {"config", r.meta.configText},   {"graph", r.meta.graphJson},       {"checkpoint", r.path}};
  if (support::Status s = saveWeights(*r.model, path, metadata, {where}); !s.isOk())
    return s;
  out << "wrote " << path << " (" << r.model->tensors().size() << " tensors of " << r.model->graph().model
      << ", step " << r.meta.step << ")\n";
  return support::Status::ok();
}

} // namespace mixc::train
