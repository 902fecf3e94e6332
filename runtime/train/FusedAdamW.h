//===- FusedAdamW.h - AdamW as one pass over each parameter -----*- C++ -*-===//
//
// torch::optim::AdamW::step() runs about eight LibTorch ops per parameter
// tensor (decay, two moment updates, sqrt, division, add, ...), each a
// dispatch and a sweep over memory: for the small models mixc trains that
// is ~10 % of a step. fusedAdamWStep does the same update in one loop per
// tensor, reading and writing the optimiser's own state (AdamWParamState:
// step, exp_avg, exp_avg_sq), so checkpoints are the same files and either
// step can continue the other's run. Per element, with t the step count:
//   p ← p·(1 − lr·wd)
//   m ← β1·m + (1 − β1)·g,   v ← β2·v + (1 − β2)·g²
//   p ← p − lr/(1 − β1ᵗ) · m / (√v / √(1 − β2ᵗ) + ε)
// (LibTorch 1.13's adamw.cpp). float32 contiguous CPU tensors take the
// fused loop; any other tensor, and amsgrad, fall back to LibTorch's ops.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_TRAIN_FUSEDADAMW_H
#define MIXC_RUNTIME_TRAIN_FUSEDADAMW_H

#include <torch/optim/adamw.h>

namespace mixc::train {

/// One AdamW step over every parameter with a gradient, as `opt.step()`.
void fusedAdamWStep(torch::optim::AdamW &opt);

} // namespace mixc::train

#endif
