//===- Readout.h - what an intervention measures, per document --*- C++ -*-===//
//
// Attrib is a ratio of differences of a readout (protocol §6, Intervene.h):
//   p           p(true answer), the paper's
//   logit_diff  logit(true answer) − logit(the corrupted run's top other
//               answer): a linear readout, unsaturated where p is near 1
//   kl          KL(run ‖ corrupted run) over the whole vocabulary: how far
//               the prediction moved back from the corrupted one (0 for the
//               corrupted run itself)
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_TRAIN_READOUT_H
#define MIXC_RUNTIME_TRAIN_READOUT_H

#include <ATen/ATen.h>

#include <string>

namespace mixc::analysis {

/// Per run (block) and document: p(true answer), and the chosen readout.
struct Readouts {
  at::Tensor p, value; // [blocks, m], double
};

/// logits [blocks, m, V]; target [m]; `corrupt` is the corrupted run's block.
Readouts readouts(const at::Tensor &logits, const at::Tensor &target, int64_t corrupt, const std::string &readout);

} // namespace mixc::analysis

#endif
