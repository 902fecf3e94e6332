//===- ExperimentReport.h - `mixc report` -----------------------*- C++ -*-===//
//
// A markdown report over one or more sweep folders: per sweep, accuracy
// (best over the learning rate) for every other grid coordinate, the
// interventions of the best run of each (Attrib per cell, p(y|o), p(y|c)),
// a mechanism read off the last layer's block input (induction at the value
// vs direct retrieval at the query, protocol §6), bar and scatter plots
// (SVG), and copies of the sweeps' CSVs. A sweep whose sweep-meta.toml has
// report_with = ["other", …] also gets an accuracy table and plot over its
// rows and those of the named sweeps among the inputs (e.g. the same models
// at other widths); a named sweep that is missing is said in the report.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_EXPERIMENTS_EXPERIMENTREPORT_H
#define MIXC_RUNTIME_EXPERIMENTS_EXPERIMENTREPORT_H

#include "support/Status.h"

#include <ostream>
#include <string>
#include <vector>

namespace mixc::experiments {

/// Writes `outFile` (report.md) with plots/ and csv/ beside it; says what it
/// wrote on `out`. `compare` (optional) names a table compared with a
/// reference (columns of the caller's choosing, one of them `verdict`,
/// e.g. examples/paper/results-medium/csv/paper-comparison.csv): the report
/// opens with it, counted by verdict.
support::Status writeReport(const std::vector<std::string> &sweepDirs, const std::string &outFile,
                            const std::string &title, std::ostream &out, const std::string &compare = "");

} // namespace mixc::experiments

#endif
