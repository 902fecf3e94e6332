//===- Attribute.h - `mixc attribute`: attribution patching (AtP) -*- C++ -*-===//
//
// The first-order estimate of every patch cell of a script from one forward
// of the source and base runs and one backward (Kramár et al.'s AtP):
//   Δm_c ≈ Σ_docs Σ_features (a_source − a_base)[P_c] · ∂m/∂a_base[P_c]
// where a is the patched node's value, P_c the cell's position(s) and m the
// mean readout (p or logit_diff) over the base run's documents. The patch
// nodes the rewrite pass inserted run as probes (Model::Options::probes:
// they pass their input through), so the compiled graph is the one
// `intervene` runs, and its estimate is on the same scale: Attrib_c ≈
// Δm_c / (m_clean − m_corrupt). With `check`, exact interventions run too
// (one batched forward per 64 cells) and the two are compared: every cell
// (check < 0), or the `check` largest estimates and `check` random others.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_TRAIN_ATTRIBUTE_H
#define MIXC_RUNTIME_TRAIN_ATTRIBUTE_H

#include "runtime/analysis/Intervene.h"

namespace mixc::analysis {

struct Attribution {
  double estimate = 0;       // AtP's Attrib (0 when the denominator is ≤ 0.01)
  double exact = 0;          // when checked: the exact Attrib
  bool kept = false;         // m_clean − m_corrupt > 0.01
  bool checked = false;
};

/// Per cell of `spec` (all `patch` cells on node values of `rewritten`).
/// Writes attribution.csv and attribution.svg (and, with check < 0, the
/// exact run's files in exact/) to options.outDir; a table to `out`.
support::Status attribute(const std::string &checkpoint, const graph::Graph &rewritten, const InterveneSpec &spec,
                          const InterveneOptions &options, int64_t check, std::vector<Attribution> &results,
                          std::ostream &out);

/// Pearson and Spearman (ranks, ties averaged) correlation of x and y.
double pearson(const std::vector<double> &x, const std::vector<double> &y);
double spearman(const std::vector<double> &x, const std::vector<double> &y);

} // namespace mixc::analysis

#endif
