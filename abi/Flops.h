//===- Flops.h - the floating-point work of a graph's forward pass -*- C++ -*-===//
//
// Counts the arithmetic a model does: per node, from its op's formula (the
// `flops` field of its ODS definition, MixOps.td, read through
// abi/OpRegistry.h) over its values' shapes on a [B, T] batch; a DSL scan
// counts its step's ops T times. A multiply-add counts 2; moves (reshape,
// split, taps, interventions) count 0. A training step is about 3 forwards
// (the backward of a matmul is two matmuls); bench/train_throughput reports it so.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_ABI_FLOPS_H
#define MIXC_ABI_FLOPS_H

#include "abi/Graph.h"

#include <cstdint>
#include <map>
#include <string>

namespace mixc::graph {

struct FlopCount {
  double total = 0;
  std::map<std::string, double> byOp; // op name -> its nodes' flops
};

/// One forward pass of `g` on `batch` sequences of `time` steps. With
/// `readoutRows`, the LM head (unembed) runs on that many rows only (the
/// trainer reads one position a document).
FlopCount forwardFlops(const Graph &g, int64_t batch, int64_t time, int64_t readoutRows = -1);

} // namespace mixc::graph

#endif
