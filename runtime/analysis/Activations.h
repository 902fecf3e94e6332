//===- Activations.h - named node values out of an intervention run -*- C++ -*-===//
//
// `mixc intervene RUN SCRIPT --save NAMES` keeps, for each named node, its
// value in the clean run, the corrupted run and every cell's patched run, and
// writes them as one safetensors file (support/Safetensors.h):
//   "<node>:clean", "<node>:corrupted"   [docs, T, ...]  f32
//   "<node>:patched:<cell>"              [docs, T, ...]  (cell = attrib.csv's)
// Positions past a document's end are zero. A patched value is the one the
// nodes after it see: where the cell intervenes on the node itself, its
// value after the intervention. A recurrent state (`layers[0].mixer.state`)
// is saved as [docs, T, S]: every step's state, after any edit, flattened in
// the layout of abi/StateLayout.h. Metadata: format = mixc-activations, the
// model, the documents, the cells' labels (JSON list), the readout.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_TRAIN_ACTIVATIONS_H
#define MIXC_RUNTIME_TRAIN_ACTIVATIONS_H

#include "support/Status.h"

#include <ATen/ATen.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace mixc::analysis {

class ActivationSaver {
public:
  /// `limitValues`: the most floats all saved tensors together may hold.
  ActivationSaver(std::set<std::string> nodes, int64_t docs, int64_t seqLen, int64_t cells, double limitValues);

  /// One node's value for one chunk: rows [(cells + 2)·m, len, ...] in the
  /// batch's blocks (source, base, then cells firstCell …); `swap` says the
  /// source block is the corrupted run. Fails (once) past the size limit.
  void observe(const std::string &name, const at::Tensor &value, int64_t firstDoc, int64_t m, int64_t firstCell,
               int64_t cellsInBlock, bool swap);

  support::Status status() const { return status_; }
  support::Status write(const std::string &path, const std::map<std::string, std::string> &metadata) const;

private:
  struct Saved {
    at::Tensor clean, corrupted;
    std::vector<at::Tensor> patched; // per cell
  };
  Saved *slot(const std::string &node, const at::Tensor &value);

  std::set<std::string> nodes_;
  int64_t docs_, seqLen_, cells_;
  double limit_, used_ = 0;
  std::map<std::string, Saved> saved_;
  support::Status status_ = support::Status::ok();
};

} // namespace mixc::analysis

#endif
