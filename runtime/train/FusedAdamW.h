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

/// AdamW over a packed model's parameters (runtime/core/Replicas.h), each
/// [K, ...]: replica k's slice takes replica k's learning rate and weight
/// decay and keeps its own step count, in the loop fusedAdamWStep runs, so
/// a replica's weights and moments follow, float for float, what its model
/// alone under fusedAdamWStep would do with the same gradients. A replica
/// not active (stopped early) is left as it is: weights, moments and steps.
class ReplicaAdamW {
public:
  ReplicaAdamW(std::vector<at::Tensor> params, int64_t replicas);
  /// One step; lr, weightDecay and active hold one entry a replica.
  /// CPU tensors take adamwLoop, one replica's slice at a time; others
  /// (a GPU's) the same update as a few tensor ops over all replicas.
  void step(const std::vector<double> &lr, const std::vector<double> &weightDecay, const std::vector<bool> &active);
  /// step() by the tensor ops on any device (what a GPU runs; the tests
  /// compare it with the loop on the CPU).
  void stepWithTensorOps(const std::vector<double> &lr, const std::vector<double> &weightDecay,
                         const std::vector<bool> &active);
  void zeroGrad();
  int64_t replicas() const { return replicas_; }
  int64_t stepsOf(int64_t k) const { return steps_[k]; }
  /// Replica k's state as a torch AdamW over `member` (its model alone's
  /// trainable tensors, in the same order) holds it: its checkpoint.
  void exportReplica(int64_t k, const std::vector<at::Tensor> &member, torch::optim::AdamW &opt) const;
  /// Replica k's state from a torch AdamW over `member` (a checkpoint's);
  /// "" or why not (a tensor without state where others have some).
  std::string importReplica(int64_t k, const std::vector<at::Tensor> &member, torch::optim::AdamW &opt);

private:
  void tensorStep(const std::vector<double> &lr, const std::vector<double> &weightDecay,
                  const std::vector<bool> &active);
  std::vector<at::Tensor> params_, expAvg_, expAvgSq_;
  std::vector<int64_t> steps_;
  int64_t replicas_;
};

} // namespace mixc::train

#endif
