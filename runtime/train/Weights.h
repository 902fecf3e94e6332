//===- Weights.h - a run's weights as a safetensors file --------*- C++ -*-===//
//
// `mixc export RUN` writes every parameter and buffer of a trained model
// under its node name (`layers[0].mixer.in_proj.weight`), f32, with the
// run's model file, config, graph and step in the metadata; the format is
// support/Safetensors.h. `mixc train --init-from FILE` starts a run from
// such a file instead of the init rules.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_TRAIN_WEIGHTS_H
#define MIXC_RUNTIME_TRAIN_WEIGHTS_H

#include "runtime/core/Model.h"
#include "support/Safetensors.h"
#include "support/Status.h"

#include <map>
#include <string>
#include <vector>

namespace mixc::train {

/// `tensor` as an F32 entry of a safetensors file: on the CPU, contiguous,
/// little-endian (x86-64 and CUDA hosts are).
support::StoredTensor storedF32(const std::string &name, const at::Tensor &tensor);

/// The model's tensors in `path`, with `metadata`. Refused, before anything
/// is written, where `path` would replace one of `inputs` (the .mix or run
/// folder the model came from) or a file mixc keeps in a run or sweep folder
/// (support::outputClash): every front end saves through here.
support::Status saveWeights(const rt::Model &model, const std::string &path,
                            const std::map<std::string, std::string> &metadata,
                            const std::vector<std::string> &inputs = {});

/// Overwrites every tensor of `model` with the same-named one in `path`.
/// The file must hold exactly the model's tensors, with their shapes, f32;
/// anything else fails, naming the tensor (and the nearest name for a
/// misspelt one) and the file.
support::Status loadWeights(rt::Model &model, const std::string &path);

/// `mixc export`: the checkpoint (or run folder) `where` to `path`; says
/// what it wrote on `out`.
support::Status exportRun(const std::string &where, const std::string &path, std::ostream &out);

} // namespace mixc::train

#endif
