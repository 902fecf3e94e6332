//===- TorchCompat.h - what differs between LibTorch 1.13 and 2.x -*- C++ -*-===//
//
// mixc builds against Debian's LibTorch 1.13 and against a PyTorch 2.x one
// (a GPU machine's: README "Training on a GPU"). What the two API
// generations spell differently is bridged here, and only here.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_CORE_TORCHCOMPAT_H
#define MIXC_RUNTIME_CORE_TORCHCOMPAT_H

#include <torch/optim/optimizer.h>

#include <sstream>
#include <string>
#include <type_traits>

namespace mixc::compat {

/// What torch::optim::Optimizer::state() is keyed by.
using OptimizerStateKey =
    typename std::decay_t<decltype(std::declval<torch::optim::Optimizer &>().state())>::key_type;

/// A parameter's key in the optimiser's state map: up to 1.x the string of
/// its TensorImpl's address (as c10::guts::to_string prints it, which 2.x
/// dropped), from 2.x the address itself.
/// (A template, so that the branch this LibTorch does not take is discarded.)
template <typename Key = OptimizerStateKey>
Key optimizerStateKey(const at::Tensor &p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream ss;
    ss << p.unsafeGetTensorImpl();
    return ss.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

} // namespace mixc::compat

#endif
