//===- Interventions.h - interventions inside one batched forward -*- C++ -*-===//
//
// The intervention nodes of a compiled script, run on the batch layout of
// Model::Interventions (block 0 the source run, block 1 the base run, block
// 2 + c the base run of cell c):
//   patch / ablate   replace or shift a node's value at a task position;
//   state_edit       replace or shift a recurrence's state S_P inside the
//                    recurrence, which carries on from it (protocol §6).
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_CORE_INTERVENTIONS_H
#define MIXC_RUNTIME_CORE_INTERVENTIONS_H

#include "runtime/core/Model.h"
#include "runtime/core/Primitives.h"

#include <functional>
#include <vector>

namespace mixc::rt {

/// The first row of intervention node `n`'s cell in a batch of `rows`
/// rows, or −1 when the cell is in another block of cells.
int64_t cellRow(const graph::Node &n, const Model::Interventions &iv, int64_t rows);

/// Where node `n` (patch, ablate or state_edit) acts in each document: its
/// role's position plus its offset, or its `index` for `pos` ([docs] i64).
/// Refused, naming the position, when one falls outside [0, T).
at::Tensor interventionPositions(const graph::Node &n, const Model::Interventions &iv, int64_t T);

/// Distributed alignment search's interchange (Geiger et al.): the base
/// takes the source's coordinates in the subspace spanned by the rows of
/// `rows` [k, W] (orthonormal), and keeps its own elsewhere:
///   base + (source − base) Qᵀ Q       base, source [N, W]
at::Tensor interchangeSubspace(const at::Tensor &base, const at::Tensor &source, const at::Tensor &rows);

/// A patch or ablate node on x [B, T, ...]: only its cell's rows change. A
/// patch with `das` = k > 0 interchanges the subspace iv.rotations holds
/// for it.
at::Tensor intervene(const at::Tensor &x, const graph::Node &n, const Model::Interventions &iv);

/// Runs a recurrence (one primitive, or the fused region around it) on the
/// whole batch, or on its source block only, with a state access.
using RecurrenceRun = std::function<std::vector<at::Tensor>(const StateAccess &, bool sourceOnly)>;

/// The recurrence under the state_edit nodes aimed at it, for the cells in
/// the batch: when an edit needs the source run's states (patch, mean),
/// one run of the source block captures them; then one run of the whole
/// batch applies every cell's edit as a per-row StateAccess. `stateSize`
/// floats a row (abi/StateLayout.h); the arrays are made with `options`
/// (the recurrence's device). `capture`, when defined ([rows, T, S] f32),
/// receives every state of the edited run.
/// `rangeOf`, when set, gives the floats [first, first + count) of the row's
/// state an edit acts on (one of a scan's states; StateAccess::editRange);
/// otherwise an edit acts on all of it.
using StateRange = std::function<std::pair<int64_t, int64_t>(const graph::Node &edit)>;
std::vector<at::Tensor> runWithStateEdits(const std::vector<const graph::Node *> &edits,
                                          const Model::Interventions &iv, int64_t rows, int64_t T,
                                          int64_t stateSize, const at::TensorOptions &options,
                                          const RecurrenceRun &run, const at::Tensor &capture = {},
                                          const StateRange &rangeOf = {});

} // namespace mixc::rt

#endif
