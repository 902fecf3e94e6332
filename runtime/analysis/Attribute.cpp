//===- Attribute.cpp - `mixc attribute`: attribution patching (AtP) --------===//
#include "runtime/analysis/Attribute.h"
#include "runtime/analysis/Experiment.h"
#include "runtime/core/Interventions.h"
#include "runtime/core/Model.h"
#include "runtime/core/NodeAttrs.h"
#include "runtime/tasks/Task.h"
#include "runtime/train/Batches.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/analysis/Readout.h"
#include "runtime/train/Report.h"
#include "support/Format.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <sstream>

namespace mixc::analysis {
namespace fs = std::filesystem;

double pearson(const std::vector<double> &x, const std::vector<double> &y) {
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n, my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i)
    sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx), syy += (y[i] - my) * (y[i] - my);
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : std::nan("");
}

namespace {
std::vector<double> ranks(const std::vector<double> &v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]])
      ++j;
    for (size_t k = i; k <= j; ++k) // ties share their mean rank
      r[order[k]] = (static_cast<double>(i) + static_cast<double>(j)) / 2;
    i = j + 1;
  }
  return r;
}

std::string csvNumber(double x) { return std::isnan(x) ? "" : support::format("%.6f", x); }
} // namespace

double spearman(const std::vector<double> &x, const std::vector<double> &y) { return pearson(ranks(x), ranks(y)); }

namespace {
using Probes = std::vector<std::vector<const graph::Node *>>; // per cell, its patch nodes

/// The probes: each cell's patch nodes (a pattern such as layers[*].x
/// patches several; to first order their effects add); a failure for any
/// cell attribution cannot estimate.
support::Status probesOf(const graph::Graph &g, const InterveneSpec &spec, Probes &probes) {
  if (spec.readout == "kl")
    return support::Status::failed("attribute: readout kl has zero gradient at the corrupted run (its minimum), "
                                   "so its first-order estimate is 0; use p or logit_diff");
  const int64_t C = static_cast<int64_t>(spec.cells.size());
  probes.assign(C, {});
  // A value of a scan's step is probed at every step (the scan's reference
  // loop runs), as is a recurrent state (a built-in recurrence runs as a
  // loop of LibTorch ops then).
  std::vector<const graph::Node *> nodes;
  for (const graph::Node &n : g.nodes) {
    nodes.push_back(&n);
    for (const graph::Node &inner : n.body)
      nodes.push_back(&inner);
  }
  for (const graph::Node *node : nodes) {
    const graph::Node &n = *node;
    if (n.op == graph::kStateEditOp && rt::nodeAction(n) == Action::Patch) { // a recurrent state, probed
      if (const int64_t cell = n.attrs.at("cell").i; cell >= 0 && cell < C)
        probes[cell].push_back(&n);
      continue;
    }
    if (n.op == "ablate" || n.op == graph::kStateEditOp)
      return support::Status::failed("attribute: '" + n.name + "' is not a patch of a node value; attribution "
                                     "estimates `patch NODE at POS` cells only");
    if (n.op != "patch")
      continue;
    if (rt::attrI(n, "das", 0) > 0)
      return support::Status::failed("attribute: '" + n.name + "' is a das(k) cell, whose subspace is learned; "
                                     "`mixc align RUN SCRIPT` trains and evaluates it");
    if (n.attrs.count("lo") && (n.attrs.at("lo").i >= 0 || n.attrs.at("head").i >= 0))
      return support::Status::failed("attribute: '" + n.name + "' patches a subspace; attribution takes whole vectors");
    int64_t cell = n.attrs.at("cell").i;
    if (cell >= 0 && cell < C)
      probes[cell].push_back(&n);
  }
  for (int64_t c = 0; c < C; ++c)
    if (probes[c].empty())
      return support::Status::failed("attribute: cell '" + spec.cells[c].label + "' has no patch node");

  return support::Status::ok();
}

/// The first-order estimates' sums over documents: per cell Σ (a_source −
/// a_base) · ∂readout/∂a_base, and the readouts of the clean and corrupted runs.
struct Estimates {
  std::vector<double> delta;
  double rClean = 0, rCorrupt = 0;
};

/// One chunk of documents: a forward of the source and base runs with the
/// probed values kept, one backward of the base runs' readouts.
void estimateChunk(CorruptionExperiment &exp, const InterveneSpec &spec, const Probes &probes, int64_t i, int64_t j,
                   Estimates &e) {
  DocumentChunk k = exp.chunk(i, j);
  const int64_t m = k.m;
  rt::Model::Options o;
  o.probes = true;
  o.readout = k.readout.repeat({2});
  // The probed values, by patch node: each passes its input on as a tensor
  // of its own, whose gradient comes from its readers only (all of the
  // node's for a node patch, the receiver's for an edge).
  std::map<std::string, at::Tensor> probed;
  o.observe = [&](const std::string &name, const at::Tensor &v) {
    for (const auto &cell : probes)
      for (const graph::Node *p : cell)
        if (p->name == name && v.requires_grad()) {
          const_cast<at::Tensor &>(v).retain_grad();
          probed[p->name] = v;
        }
  };
  torch::AutoGradMode grad(true);
  at::Tensor logits = exp.model().forward(at::cat({k.source, k.base}, 0), o).squeeze(1).view({2, m, -1}); // [2, m, V]
  Readouts r = readouts(logits, k.target, spec.swap ? 0 : 1, spec.readout);
  const int64_t cleanBlock = spec.swap ? 1 : 0, baseBlock = 1;
  e.rClean += r.value[cleanBlock].sum().item<double>();
  e.rCorrupt += r.value[spec.swap ? 0 : 1].sum().item<double>();
  for (auto &[name, v] : probed)
    if (v.grad().defined())
      v.mutable_grad().zero_();
  r.value[baseBlock].sum().backward(); // Σ over the chunk's base documents
  for (size_t c = 0; c < probes.size(); ++c)
    for (const graph::Node *p : probes[c]) {
      auto it = probed.find(p->name);
      if (it == probed.end() || !it->second.grad().defined())
        continue; // the readout does not depend on this node
      const at::Tensor &v = it->second, gv = it->second.grad();
      at::Tensor src = v.slice(0, 0, m).detach(), bas = v.slice(0, m, 2 * m).detach(), gb = gv.slice(0, m, 2 * m);
      if (p->attrs.at("role").s == "all") {
        e.delta[c] += ((src - bas) * gb).sum().item<double>();
      } else {
        at::Tensor pos = rt::interventionPositions(*p, k.iv, v.size(1));
        at::Tensor rows = at::arange(m, at::kLong);
        e.delta[c] += ((src.index({rows, pos}) - bas.index({rows, pos})) * gb.index({rows, pos})).sum().item<double>();
      }
    }
}

/// --check-top N: the exact Attrib of the N largest estimates and N random
/// other cells, run as intervene runs them (blocks of 64 cells).
void checkTop(CorruptionExperiment &exp, const InterveneSpec &spec, int64_t check, uint64_t seed, double rCorrupt,
              double denom, std::vector<Attribution> &results) {
  const int64_t C = static_cast<int64_t>(results.size()), n = exp.docs(), chunk = 64;
  std::vector<int64_t> order(C), picked;
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return std::abs(results[a].estimate) > std::abs(results[b].estimate);
  });
  picked.assign(order.begin(), order.begin() + std::min<int64_t>(check, C));
  std::vector<int64_t> rest(order.begin() + static_cast<int64_t>(picked.size()), order.end());
  std::shuffle(rest.begin(), rest.end(), std::mt19937_64(seed));
  picked.insert(picked.end(), rest.begin(), rest.begin() + std::min<int64_t>(check, rest.size()));
  std::vector<double> patched(C, 0.0);
  torch::NoGradGuard noGrad;
  for (size_t b0 = 0; b0 < picked.size(); b0 += 64) // blocks of cells, as intervene
    for (int64_t i = 0; i < n; i += chunk) {
      DocumentChunk k = exp.chunk(i, std::min(n, i + chunk));
      k.iv.cells.assign(picked.begin() + b0, picked.begin() + std::min(picked.size(), b0 + 64));
      const int64_t cells = static_cast<int64_t>(k.iv.cells.size());
      std::vector<at::Tensor> blocks = {k.source, k.base};
      for (int64_t c = 0; c < cells; ++c)
        blocks.push_back(k.base);
      rt::Model::Options o;
      o.readout = k.readout.repeat({cells + 2});
      o.interventions = k.iv;
      at::Tensor logits = exp.model().forward(at::cat(blocks, 0), o).squeeze(1).view({cells + 2, k.m, -1});
      Readouts r = readouts(logits, k.target, spec.swap ? 0 : 1, spec.readout);
      for (int64_t c = 0; c < cells; ++c)
        patched[k.iv.cells[c]] += r.value[2 + c].sum().item<double>();
    }
  for (int64_t c : picked)
    if (results[c].kept) {
      results[c].exact = (patched[c] - rCorrupt) / static_cast<double>(n) / denom;
      results[c].checked = true;
    }
}

/// The estimates against the exact values: correlations and the worst three.
void printAgreement(const InterveneSpec &spec, const std::vector<Attribution> &results, std::ostream &out) {
  const int64_t C = static_cast<int64_t>(results.size());
  std::vector<double> x, y;
  std::vector<int64_t> worst;
  for (int64_t c = 0; c < C; ++c)
    if (results[c].kept && results[c].checked)
      x.push_back(results[c].estimate), y.push_back(results[c].exact), worst.push_back(c);
  if (x.size() < 3)
    return;
  out << support::format("estimate vs exact over %zu cells: Pearson %.3f, Spearman %.3f\n", x.size(), pearson(x, y),
                         spearman(x, y));
  std::sort(worst.begin(), worst.end(), [&](int64_t a, int64_t b) {
    return std::abs(results[a].estimate - results[a].exact) > std::abs(results[b].estimate - results[b].exact);
  });
  out << "worst estimated:";
  for (int64_t k = 0; k < std::min<int64_t>(3, static_cast<int64_t>(worst.size())); ++k)
    out << (k ? "; " : " ") << spec.cells[worst[k]].label << " (" << csvNumber(results[worst[k]].estimate) << " vs "
        << csvNumber(results[worst[k]].exact) << ")";
  out << "\n";
}

/// attribution.csv, the table on the console and the heatmap of the estimates.
void writeAttribution(const fs::path &folder, const graph::Graph &g, const InterveneSpec &spec, int64_t n,
                      int64_t check, const std::vector<Attribution> &results, std::ostream &out) {
  std::ostringstream csv;
  csv << "cell,label,estimate,exact,kept,readout\n";
  out << g.model << ", " << n << " documents, corrupt " << spec.corrupt << ", readout " << spec.readout
      << ": first-order (AtP) Attrib" << (check ? " and exact Attrib" : "")
      << (check > 0 ? " of the " + std::to_string(check) + " largest estimates and " + std::to_string(check) +
                          " other cells"
                    : "")
      << "\n";
  out << support::format("%-44s %10s %10s\n", "cell", "estimate", check ? "exact" : "");
  for (size_t c = 0; c < results.size(); ++c) {
    const Attribution &a = results[c];
    csv << c << ",\"" << spec.cells[c].label << "\"," << (a.kept ? csvNumber(a.estimate) : "") << ","
        << (a.checked ? csvNumber(a.exact) : "") << "," << (a.kept ? 1 : 0) << "," << spec.readout << "\n";
    out << support::format("%-44s %10s %10s\n", spec.cells[c].label.c_str(), a.kept ? csvNumber(a.estimate).c_str() : "n/a",
                           a.checked ? csvNumber(a.exact).c_str() : "");
  }
  train::writeFileAtomically((folder / "attribution.csv").string(), csv.str());
  std::vector<CellResult> shown(results.size());
  for (size_t c = 0; c < results.size(); ++c)
    shown[c].attrib = results[c].estimate, shown[c].kept = results[c].kept;
  writeHeatmap((folder / "attribution.svg").string(), spec, shown,
               g.model + ": AtP estimate of Attrib of " + interventionTargets(g) + " (readout " + spec.readout +
                   "), corrupt " + spec.corrupt);
}
} // namespace

support::Status attribute(const std::string &checkpoint, const graph::Graph &g, const InterveneSpec &spec,
                          const InterveneOptions &opts, int64_t check, std::vector<Attribution> &results,
                          std::ostream &out) {
  Probes probes;
  if (support::Status st = probesOf(g, spec, probes); !st.isOk())
    return st;
  CorruptionExperiment exp;
  if (support::Status opened = exp.open(checkpoint, g, spec, opts.kernels, opts.size, opts.seed); !opened.isOk())
    return opened;
  // Before the work: a folder that cannot be written, or that holds
  // another script's tables, is refused at once.
  std::string folderPath;
  if (std::string error; !train::analysisFolder(checkpoint, "attribution", opts.outDir, opts.script, folderPath, error,
                                                        opts.scriptless))
    return support::Status::failed(error);
  const fs::path folder = folderPath;
  const int64_t C = static_cast<int64_t>(spec.cells.size()), n = exp.docs(), chunk = 64;
  Estimates e{std::vector<double>(C, 0.0)};
  for (int64_t i = 0; i < n; i += chunk)
    estimateChunk(exp, spec, probes, i, std::min(n, i + chunk), e);
  const double denom = (e.rClean - e.rCorrupt) / static_cast<double>(n);
  results.assign(C, {});
  for (int64_t c = 0; c < C; ++c) {
    results[c].kept = denom > 0.01;
    results[c].estimate = results[c].kept ? e.delta[c] / static_cast<double>(n) / denom : 0;
  }
  if (check > 0) {
    checkTop(exp, spec, check, opts.seed, e.rCorrupt, denom, results);
  } else if (check < 0) { // every cell, through intervene (its files in exact/)
    InterveneOptions exactOpts = opts;
    exactOpts.outDir = (folder / "exact").string();
    exactOpts.save.clear();
    std::vector<CellResult> exact;
    std::ostringstream ignored;
    if (support::Status s = intervene(checkpoint, g, spec, exactOpts, exact, ignored); !s.isOk())
      return s;
    for (int64_t c = 0; c < C; ++c)
      results[c].exact = exact[c].attrib, results[c].checked = exact[c].kept;
  }
  writeAttribution(folder, g, spec, n, check, results, out);
  if (check != 0)
    printAgreement(spec, results, out);
  out << "wrote " << (folder / "attribution.csv").string() << "\n";
  return support::Status::ok();
}

} // namespace mixc::analysis
