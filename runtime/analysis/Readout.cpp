//===- Readout.cpp - what an intervention measures, per document ----------===//
#include "runtime/analysis/Readout.h"

#include <limits>

namespace mixc::analysis {

Readouts readouts(const at::Tensor &logits, const at::Tensor &target, int64_t corrupt, const std::string &readout) {
  const int64_t blocks = logits.size(0), m = logits.size(1);
  at::Tensor logp = at::log_softmax(logits, -1);                              // [blocks, m, V]
  at::Tensor index = target.view({1, m, 1}).expand({blocks, m, 1});
  Readouts r;
  r.p = logp.gather(2, index).squeeze(2).exp().to(at::kDouble).contiguous();
  if (readout == "logit_diff") {
    // The corrupted run's answer: its top token other than the true one.
    at::Tensor other = logits[corrupt].clone();                               // [m, V]
    other.scatter_(1, target.unsqueeze(1), -std::numeric_limits<float>::infinity());
    at::Tensor alt = other.argmax(1).view({1, m, 1}).expand({blocks, m, 1});
    r.value = (logits.gather(2, index) - logits.gather(2, alt)).squeeze(2).to(at::kDouble).contiguous();
  } else if (readout == "kl") {
    at::Tensor ref = logp[corrupt].unsqueeze(0);                              // [1, m, V]
    r.value = (logp.exp() * (logp - ref)).sum(2).to(at::kDouble).contiguous();
  } else {
    r.value = r.p;
  }
  return r;
}

} // namespace mixc::analysis
