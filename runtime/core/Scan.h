//===- Scan.h - a DSL-defined recurrence, step by step -----------*- C++ -*-===//
//
// The reference execution of a `scan` node (MixOps.td's mix.scan; the body
// in abi/Graph.h's Node::body): the states start at zero, and for t = 0 ..
// T−1 the step's nodes run on LibTorch with each sliced input's step t
// ([B, ...]) and the loop-invariant inputs whole; the step's results are
// the next states and the emitted values, stacked over time into [B, T, ...].
// Slow (one LibTorch call per node and step) and always correct: autograd
// differentiates through the loop, and fused scan kernels are tested against it.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_CORE_SCAN_H
#define MIXC_RUNTIME_CORE_SCAN_H

#include "abi/Graph.h"
#include "runtime/core/Model.h"

#include <ATen/ATen.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace mixc::rt {

/// "" when every node of the scan's step is one this runtime can run
/// (checked by `check`, which validates one node), else why not.
std::string checkScanBody(const graph::Node &scan, const std::function<std::string(const graph::Node &)> &check);

/// State edits (mix.state_edit nodes aimed at the scan, each naming one of
/// its states) in the batch layout of `iv`: the state step P hands on to
/// step P + 1 is, in a cell's rows, the source row's (patch; the source
/// block runs in the same batch, so it is read at the same step), zero, the
/// source run's mean state at the documents' P (mean: one more pass over the
/// source rows), or shifted by noise(σ) or a vector (add); the recurrence
/// carries on. Step P's own emitted values are the unedited step's (the body
/// computed them from its state before the edit), so outputs change from
/// P + 1 on; a built-in recurrence's edit reaches its output at P too.
/// With `probes` (attribution, Model::Options::probes) the step's patch
/// nodes and the state edits pass their values on unchanged; the model's
/// straight-through overrides (StepOverride::probe) then give each its
/// gradient.
struct ScanEdits {
  const std::vector<const graph::Node *> *edits = nullptr;
  const Model::Interventions *iv = nullptr;
  bool probes = false;
};

/// Where each of the scan's states lies in its kernels' row state (its
/// states in order, abi/KernelAbi.h): by state name, the first float and
/// the count; and the floats of all states.
struct ScanStates {
  std::map<std::string, std::pair<int64_t, int64_t>> range;
  int64_t floats = 0;
};
ScanStates scanStates(const graph::Node &scan);

/// Values of the step read out for run_with_cache and --save: each body
/// node named in `names`, at every step, stacked over time into [B, T, ...]
/// (with autograd's history: gradients reach them as any tensor's).
struct ScanReads {
  const std::set<std::string> *names = nullptr;
  std::map<std::string, at::Tensor> values; // filled by runScan
};

/// A state or a value of the step replaced where a hook changed it
/// (Python's run_with_hooks): at each step t, the rows where `changed[:, t]`
/// take `value[:, t]` ([B, T] bool; [B, T, ...] as the state or the value).
/// A state's is the state handed on, as after a `patch … state` edit; a
/// value's is what the rest of the step reads. The recurrence carries on
/// from either. Differentiable in `value`. A probe (`probe`, attribution)
/// changes nothing: at every step the value stays the loop's own, plus
/// value − value.detach() (zero), so the gradient reaching the step's value
/// reaches `value` too, and the loop's own value keeps its history.
struct StepOverride {
  enum Kind { State, Value } kind;
  size_t index; // the state's (in bodyArgs) or the body node's
  at::Tensor changed, value;
  bool probe = false;
};

/// The scan's emitted values over time, one [B, T, ...] tensor each. With
/// `states`, also every step's states (after any edit), [B, T, ...] each;
/// with `reads`, the step values it names; with `overrides`, states and
/// step values replaced where a hook changed them.
std::vector<at::Tensor> runScan(const std::vector<at::Tensor> &inputs, const graph::Node &scan,
                                const ScanEdits &edits = {}, std::vector<at::Tensor> *states = nullptr,
                                ScanReads *reads = nullptr, const std::vector<StepOverride> *overrides = nullptr);

} // namespace mixc::rt

#endif
