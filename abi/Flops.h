//===- Flops.h - the floating-point work of a graph's forward pass -*- C++ -*-===//
//
// The one place mixc counts the arithmetic a model does: per node, from its
// op and its values' shapes on a [B, T] batch. A multiply-add counts 2.
//   matmuls      linear 2·rows·in·out (+ rows·out bias); unembed 2·rows·d·V;
//                softmax attention 2·B·T²·K (scores) + 2·B·T²·V (mixing) as
//                computed (the causal half is not skipped) + 5·B·T² (softmax)
//   convolutions causal 2·K per output; long ones (Hyena, BaseConv, H3's
//                shift and diagonal SSM) per sequence and channel the cheaper
//                of the direct sum, T(T+1) flops, and the FFT route of size
//                2T (3 real FFTs of 2.5·n·log2 n, a complex product of 6 a bin)
//   recurrences  per step and state element: selective scan 7 (decay,
//                update, read-out) + 2·D skip; delta rule 6·K·V; linear
//                attention 4·F·V + 3·F; a DSL scan its step's ops, T times
//   per element  1 per output element (activations, arithmetic; exp and the
//                like count 1); norms 5, softmax 5 per element; sums 1 per input
// Moves (reshape, split, concat, embedding, time_slice, taps, interventions)
// count 0. A training step is about 3 forwards (the backward of a matmul is
// two matmuls); bench/train_throughput reports it so.
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
