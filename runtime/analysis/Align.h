//===- Align.h - `mixc align`: distributed alignment search (DAS) -*- C++ -*-===//
//
// Every das(k) cell of a script learns a k-dimensional subspace of its
// node's value (a Rotation's first k rows) where the base run, given the
// source run's coordinates there, answers as the source run would:
// interchange intervention training (Geiger et al., "Finding alignments
// between interpretable causal variables and distributed neural
// representations"). For AR (protocol §6) the source is the clean document
// and the base its corrupted copy (direction restore), so the target is the
// true answer.
//   - Training: base weights frozen; every cell's rotation is trained at
//     once, in the batch layout of Model::Interventions (source, base, one
//     block a cell), on pairs of the task's training documents with the
//     script's corruption; loss Σ_cells mean cross-entropy of the answer.
//   - Evaluation on held-out test documents: interchange intervention
//     accuracy (IIA), the share of documents whose intervened prediction is
//     the source's answer; beside it the same interchange on the node's
//     first k channels (a neuron-aligned subspace) and on the whole vector
//     (an ordinary patch: DAS's upper bound at that position).
// Output (in <run>/align, or --out): iia.csv, iia.svg (two sweep
// coordinates), rotations.safetensors
// ("<das node>": the learned [k, W] rows).
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_TRAIN_ALIGN_H
#define MIXC_RUNTIME_TRAIN_ALIGN_H

#include "runtime/analysis/Intervene.h"

namespace mixc::analysis {

struct AlignOptions {
  std::string outDir;         // empty: <run>/align/<script's stem>
  std::string script;         // the script's path (Intervene.h)
  int64_t size = 320;         // held-out test documents for IIA
  int64_t trainDocs = 4096;   // training documents the pairs are drawn from
  int64_t steps = 400;        // optimiser steps
  int64_t batch = 32;         // documents a step (each in every cell's block)
  double lr = 1e-2;           // Adam on the rotations' parameters
  uint64_t seed = 42;         // corruption draws, R₀, batches
  std::shared_ptr<const kernels::Library> kernels;
  bool quiet = false;
};

struct AlignResult {
  int64_t k = 0;               // the cell's subspace dimension (its first das node's)
  double iia = 0;              // learned subspace, held-out documents
  double iiaChannels = 0;      // the first k channels
  double iiaPatch = 0;         // the whole vector
  double trainLoss = 0;        // mean cross-entropy over the last tenth of training
  double orthogonality = 0;    // max |R Rᵀ − I| over the cell's rotations after training
};

/// Trains and evaluates every das cell of `rewritten` (each cell needs one
/// at least; other patch nodes in a cell act as whole-vector patches).
support::Status align(const std::string &checkpoint, const graph::Graph &rewritten, const InterveneSpec &spec,
                      const AlignOptions &options, std::vector<AlignResult> &results, std::ostream &out);

} // namespace mixc::analysis

#endif
