//===- Intervene.cpp - `mixc intervene`: patching and ablation, batched -----===//
#include "runtime/analysis/Intervene.h"
#include "support/Memory.h"
#include "runtime/analysis/Experiment.h"
#include "abi/StateLayout.h"
#include "dsl/Rewrite.h"
#include "support/Suggest.h"
#include "support/Format.h"
#include "support/Plot.h"
#include "runtime/core/Model.h"
#include "runtime/core/NodeAttrs.h"
#include "runtime/tasks/Task.h"
#include "runtime/train/Batches.h"
#include "runtime/analysis/Activations.h"
#include "runtime/analysis/Bootstrap.h"
#include "runtime/analysis/Readout.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/Config.h"
#include "runtime/train/Report.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>

namespace mixc::analysis {
namespace fs = std::filesystem;

bool checkpointGraph(const std::string &where, std::string &graphJson, std::string &path,
                     std::string &error) {
  path = train::checkpointPath(where);
  train::CheckpointMeta meta;
  if (!train::readCheckpointMeta(path, meta, error))
    return false;
  graphJson = meta.graphJson;
  return true;
}

std::vector<int32_t> corruptTokens(const tasks::Dataset &d, int64_t n, const std::string &what,
                                   uint64_t seed) {
  std::vector<int32_t> out(d.tokens.begin(), d.tokens.begin() + n * d.seqLen);
  if (what == "none")
    return out;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> key(d.corruptLow, d.corruptHigh - 1);
  for (int64_t i = 0; i < n; ++i) {
    int64_t pos = what == "key" ? d.keyPos[i] : d.valuePos[i];
    int32_t &tok = out[i * d.seqLen + pos];
    int32_t replacement;
    do
      replacement = key(rng);
    while (replacement == tok);
    tok = replacement;
  }
  return out;
}

DocumentChunk documentChunk(const tasks::Dataset &d, const std::vector<int32_t> &corrupted, int64_t i, int64_t j,
                            bool swap) {
  DocumentChunk k;
  k.m = j - i;
  const int64_t len = d.maxLength(i, j); // a chunk needs no more columns (causal models)
  at::Tensor clean = train::int64Rows(d.tokens, i, j, d.seqLen).narrow(1, 0, len);
  at::Tensor corrupt = train::int64Rows(corrupted, i, j, d.seqLen).narrow(1, 0, len);
  k.base = swap ? clean : corrupt, k.source = swap ? corrupt : clean;
  k.readout = train::int64Slice(d.readout, i, j), k.target = train::int64Slice(d.target, i, j);
  k.iv.docs = k.m;
  k.iv.roles = {{"key", train::int64Slice(d.keyPos, i, j)},     {"value", train::int64Slice(d.valuePos, i, j)},
                {"query", train::int64Slice(d.queryPos, i, j)}, {"divider", train::int64Slice(d.dividerPos, i, j)},
                {"answer", train::int64Slice(d.queryPos, i, j) + 1}};
  return k;
}

DocumentChunk sliceChunk(const DocumentChunk &pairs, int64_t i, int64_t j, bool swap) {
  DocumentChunk k;
  k.m = j - i;
  at::Tensor clean = pairs.source.slice(0, i, j), corrupt = pairs.base.slice(0, i, j);
  k.base = swap ? clean : corrupt, k.source = swap ? corrupt : clean;
  k.readout = pairs.readout.slice(0, i, j), k.target = pairs.target.slice(0, i, j);
  k.iv.docs = k.m;
  for (const auto &[role, positions] : pairs.iv.roles)
    k.iv.roles[role] = positions.slice(0, i, j);
  return k;
}

namespace {
std::string shapeOf(const at::Tensor &t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

/// "" when `t` is an int64 vector of `n` entries in [lo, hi), else why not.
std::string checkIndices(const std::string &what, const at::Tensor &t, int64_t n, int64_t lo, int64_t hi) {
  if (!t.defined())
    return what + " is missing";
  if (t.scalar_type() != at::kLong || t.dim() != 1 || t.size(0) != n)
    return what + " must be int64 [" + std::to_string(n) + "] (one per document), got " +
           std::string(c10::toString(t.scalar_type())) + " " + shapeOf(t);
  if (n > 0 && (t.min().item<int64_t>() < lo || t.max().item<int64_t>() >= hi))
    return what + " must lie in [" + std::to_string(lo) + ", " + std::to_string(hi) + "), got values from " +
           std::to_string(t.min().item<int64_t>()) + " to " + std::to_string(t.max().item<int64_t>());
  return "";
}
} // namespace

std::string checkPairs(const DocumentChunk &pairs, const rt::Model &model) {
  if (!pairs.source.defined() || !pairs.base.defined())
    return "pairs: the clean and the corrupted documents are both needed";
  if (pairs.source.sizes() != pairs.base.sizes())
    return "pairs: clean " + shapeOf(pairs.source) + " and corrupted " + shapeOf(pairs.base) + " differ in shape";
  for (const auto &[what, tokens] : {std::pair{"clean", pairs.source}, std::pair{"corrupted", pairs.base}})
    if (std::string why = model.checkTokens(tokens); !why.empty())
      return std::string("pairs: ") + what + ": " + why;
  const int64_t n = pairs.source.size(0), T = pairs.source.size(1);
  if (std::string why = checkIndices("readout", pairs.readout, n, 0, T); !why.empty())
    return "pairs: " + why;
  if (std::string why = checkIndices("answer", pairs.target, n, 0, model.vocabulary()); !why.empty())
    return "pairs: " + why;
  for (const auto &[role, positions] : pairs.iv.roles)
    if (std::string why = checkIndices("the positions of role '" + role + "'", positions, n, 0, T); !why.empty())
      return "pairs: " + why;
  return "";
}

namespace {

std::string sixDigits(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", x);
  return buf;
}

/// Bootstrap replicates for Attrib's interval: the 2.5th and 97.5th
/// percentiles move by well under 0.01 between seeds at 1,000.
constexpr int kBootstrapReplicates = 1000;
constexpr double kMaxPerExampleValues = 4e6; // cells × documents in per-example.csv
constexpr double kMaxSavedValues = 2.5e8;     // floats --save may keep (1 GB)

/// per-example.csv: each document's readout (p, logit_diff or kl) in the
/// clean and the corrupted run and under each cell (column c<i> is
/// attrib.csv's cell i), for per-example analyses of one's own.
void writePerExample(const std::string &path, const std::string &readout, const std::vector<double> &clean,
                     const std::vector<double> &corrupt, const std::vector<std::vector<double>> &patched) {
  std::ostringstream csv;
  csv << "doc," << readout << "_clean," << readout << "_corrupt";
  for (size_t c = 0; c < patched.size(); ++c)
    csv << ",c" << c;
  csv << "\n";
  for (size_t i = 0; i < clean.size(); ++i) {
    csv << i << "," << sixDigits(clean[i]) << "," << sixDigits(corrupt[i]);
    for (const std::vector<double> &cell : patched)
      csv << "," << sixDigits(cell[i]);
    csv << "\n";
  }
  train::writeFileAtomically(path, csv.str());
}

/// One heatmap of cells that all have exactly two sweep coordinates.
void writeOneHeatmap(const std::string &path, const InterveneSpec &spec, const std::vector<CellResult> &res,
                     const std::string &title, const std::string &scale, double floor) {
  std::vector<std::string> rows, cols;
  for (const Cell &c : spec.cells) {
    if (c.coords.size() != 2)
      return;
    if (std::find(rows.begin(), rows.end(), c.coords[0].second) == rows.end())
      rows.push_back(c.coords[0].second);
    if (std::find(cols.begin(), cols.end(), c.coords[1].second) == cols.end())
      cols.push_back(c.coords[1].second);
  }
  if (rows.empty())
    return;
  support::Heatmap h{title, spec.cells[0].coords[0].first, spec.cells[0].coords[1].first, scale, rows, cols, {},
                     floor};
  for (size_t k = 0; k < spec.cells.size(); ++k) {
    const size_t i = std::find(rows.begin(), rows.end(), spec.cells[k].coords[0].second) - rows.begin();
    const size_t j = std::find(cols.begin(), cols.end(), spec.cells[k].coords[1].second) - cols.begin();
    const std::string hover = res[k].interval.valid // shown on hover
                                  ? "95% interval [" + sixDigits(res[k].interval.lo) + ", " + sixDigits(res[k].interval.hi) + "]"
                                  : "";
    h.cells.push_back({i, j, res[k].attrib, res[k].kept, hover});
  }
  train::writeFileAtomically(path, support::heatmapChart(h));
}

/// A file-name-safe form of "layer=0 head=3".
std::string fileSafe(const std::string &text) {
  std::string out;
  for (char c : text)
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '=' || c == '.' || c == '-' ? c : '_';
  return out;
}
} // namespace

namespace {
/// "layers[0].block_input" as "layers[*].block_input": indices written `*`.
std::string anyIndex(const std::string &name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    size_t j = i + 1;
    while (name[i] == '[' && j < name.size() && std::isdigit(static_cast<unsigned char>(name[j])))
      ++j;
    if (name[i] == '[' && j > i + 1 && j < name.size() && name[j] == ']') {
      out += "[*]";
      i = j;
    } else {
      out += name[i];
    }
  }
  return out;
}
} // namespace

std::string interventionTargets(const graph::Graph &g) {
  std::vector<std::string> seen;
  for (const graph::Node &n : g.nodes) {
    std::string target;
    if (n.op == "patch" || n.op == "ablate")
      target = n.inputs.empty() ? "" : n.inputs[0].substr(0, n.inputs[0].find('@')); // not the cell's chain
    else if (n.op == graph::kStateEditOp && n.attrs.count("target"))
      target = n.attrs.at("target").s + " (state)";
    if (target.empty())
      continue;
    const bool das = n.op == "patch" && n.attrs.count("das") && n.attrs.at("das").i > 0;
    const std::string t = (das ? "das " : n.op == "ablate" ? "ablate " : n.op == "patch" ? "patch " : "edit ") +
                          anyIndex(target);
    if (std::find(seen.begin(), seen.end(), t) == seen.end())
      seen.push_back(t);
  }
  std::string out;
  for (size_t i = 0; i < std::min<size_t>(seen.size(), 3); ++i)
    out += (i ? ", " : "") + seen[i];
  return seen.size() > 3 ? out + " and " + std::to_string(seen.size() - 3) + " more" : out;
}

std::vector<std::string> writeHeatmap(const std::string &path, const InterveneSpec &spec,
                                      const std::vector<CellResult> &res, const std::string &title,
                                      const std::string &scale, double floor) {
  if (spec.cells.empty())
    return {};
  const size_t axes = spec.cells[0].coords.size();
  for (const Cell &c : spec.cells) // one sweep: the same variables in every cell
    if (c.coords.size() != axes || axes < 2)
      return {};
    else
      for (size_t a = 0; a < axes; ++a)
        if (c.coords[a].first != spec.cells[0].coords[a].first)
          return {};
  if (axes == 2) {
    writeOneHeatmap(path, spec, res, title, scale, floor);
    return {path};
  }
  // More variables: a grid of the first two for each value of the others.
  std::vector<std::string> order;
  std::map<std::string, std::pair<InterveneSpec, std::vector<CellResult>>> groups;
  for (size_t k = 0; k < spec.cells.size(); ++k) {
    std::string key;
    for (size_t a = 2; a < axes; ++a)
      key += (a > 2 ? " " : "") + spec.cells[k].coords[a].first + "=" + spec.cells[k].coords[a].second;
    auto [it, fresh] = groups.try_emplace(key);
    if (fresh) {
      order.push_back(key);
      it->second.first = spec;
      it->second.first.cells.clear();
    }
    Cell cell = spec.cells[k];
    cell.coords.resize(2);
    it->second.first.cells.push_back(cell);
    it->second.second.push_back(res[k]);
  }
  std::vector<std::string> written;
  const std::filesystem::path p(path);
  for (const std::string &key : order) {
    const std::string file = (p.parent_path() / (p.stem().string() + "-" + fileSafe(key) + ".svg")).string();
    writeOneHeatmap(file, groups[key].first, groups[key].second, title + " (" + key + ")", scale, floor);
    written.push_back(file);
  }
  return written;
}

bool resolveSaveNames(const std::vector<std::string> &patterns, const graph::Graph &g, std::set<std::string> &out,
                      std::string &error) {
  std::vector<std::string> names;
  std::map<std::string, std::string> states; // name -> why it cannot be saved ("" when it can)
  std::set<std::string> scanStates;           // those of DSL scans (the .state alias reaches them)
  for (const auto &n : g.nodes) {
    if (n.name.find('@') == std::string::npos)
      names.push_back(n.name);
    if (auto it = n.attrs.find("state_name"); it != n.attrs.end())
      states[it->second.s] = graph::stateRefusal(n.op);
    if (n.op != "scan")
      continue;
    // A scan's states and the values of its step, read from its reference loop.
    for (int64_t k = 0; k < n.attrs.at("num_states").i && k < static_cast<int64_t>(n.bodyArgs.size()); ++k) {
      states[n.bodyArgs[k].name] = "";
      scanStates.insert(n.bodyArgs[k].name);
    }
    for (const graph::Node &inner : n.body) // per-row values only ([B, ...] a step), as `mixc names` marks them
      if (inner.name.find('@') == std::string::npos && inner.shapes.size() == 1 && !inner.shapes[0].empty() &&
          inner.shapes[0][0] < 0)
        names.push_back(inner.name);
  }
  for (const std::string &pattern : patterns) {
    size_t matched = 0;
    for (const std::string &name : names)
      if (dsl::matchesPattern(pattern, name))
        out.insert(name), ++matched;
    for (const auto &[state, why] : states) {
      if (!dsl::matchesStatePattern(pattern, state, scanStates.count(state) != 0))
        continue;
      if (!why.empty()) {
        error = "cannot save '" + state + "': " + why;
        return false;
      }
      out.insert(state), ++matched;
    }
    if (matched == 0) {
      std::vector<std::string> all = names;
      for (const auto &[state, why] : states)
        all.push_back(state);
      error = "no node matches '" + pattern + "'" + support::didYouMean(pattern, all);
      return false;
    }
  }
  return true;
}

namespace {
/// On the generated back end a node computed inside a fused region (not one
/// of the region's outputs) is never a tensor: --save could not save it.
/// "" or the refusal naming the node and its region.
std::string unsavedInsideKernels(const graph::Graph &g, const InterveneOptions &opts) {
  if (!opts.kernels || opts.save.empty())
    return "";
  const std::string target = kernels::targetKey(opts.kernels->target());
  for (const graph::Node &n : g.nodes) {
    auto fused = n.attrs.find("fused");
    if (!opts.save.count(n.name) || fused == n.attrs.end())
      continue;
    for (const graph::Region &r : g.regions)
      if (r.name == fused->second.s && !r.target(target).kernel.empty() &&
          std::find(r.outputs.begin(), r.outputs.end(), n.name) == r.outputs.end())
        return "--save: '" + n.name + "' is computed inside the fused region '" + r.name +
               "' of the generated back end, where it is never a tensor; run with --backend libtorch to save it";
  }
  return "";
}
} // namespace

namespace {
/// "" when `spec` and `opts` describe an intervention run, else why not.
std::string refusal(const graph::Graph &g, const InterveneSpec &spec, const InterveneOptions &opts) {
  // Checked here, under both front ends (Python's size=0 wrote a NaN table).
  if (opts.size < 1)
    return "intervene: size must be a positive number of test documents, got " + std::to_string(opts.size);
  if (spec.cells.empty() && opts.save.empty()) // e.g. a script of `remove` lines only: an empty table is no answer
    return "intervene: the script has no cell to measure (no patch, zero, mean, noise, add or das line); a script "
           "of `remove` lines only changes the model: train that model with `mixc train --rewrite SCRIPT`";
  if (std::string why = unsavedInsideKernels(g, opts); !why.empty())
    return why;
  if (opts.pairs && !opts.save.empty() && opts.outDir.empty())
    return "intervene: saving values of your own pairs needs an output folder (out=): the run's own folder holds "
           "the task's tables";
  for (const graph::Node &n : g.nodes)
    if (n.op == "patch" && rt::attrI(n, "das", 0) > 0)
      return "intervene: '" + n.name + "' is a das(k) cell, whose subspace is learned; "
             "`mixc align RUN SCRIPT` trains and evaluates it";
  return "";
}

/// Every cell's readouts: per document (the bootstrap and per-example.csv
/// need them) of the clean and corrupted runs and of each cell, and the
/// sums of p(true answer), reported whatever the readout.
struct Measured {
  std::vector<double> docClean, docCorrupt;
  std::vector<std::vector<double>> docPatched; // [cell][document]
  double pClean = 0, pCorrupt = 0;
  std::vector<double> pPatched;                // [cell]
  int64_t block = 0, chunk = 0;                // cells and documents a forward
};

/// Floats one row of a forward keeps (every node's values, which the
/// interpreter holds until the forward ends): an upper bound for documents
/// of `T` tokens. A node's run-time dims are the batch (its first) and T
/// (each other one: an attention score [B, T, T] grows with T twice).
double floatsPerRow(const graph::Graph &g, int64_t T) {
  double floats = 0;
  for (const graph::Node &n : g.nodes)
    for (const std::vector<int64_t> &shape : n.shapes) {
      double f = 1;
      bool batch = false;
      for (size_t i = 0; i < shape.size(); ++i)
        f *= shape[i] >= 0 ? static_cast<double>(shape[i]) : (i == 0 ? (batch = true, 1.0) : static_cast<double>(T));
      floats += batch ? f : 0; // a weight is held once, not per row
    }
  return floats;
}

/// How many documents a forward of `block` cells takes (`wanted`, the
/// ~512-row rule, or fewer where documents are long enough that it would
/// take over a quarter of the machine's memory); 0 when not even one fits,
/// with `why` said before anything is allocated (the caller's own pairs may
/// be any length).
int64_t documentsPerForward(const graph::Graph &g, int64_t T, int64_t block, int64_t wanted, std::string &why) {
  const double perDocument = 4 * floatsPerRow(g, T) * static_cast<double>(block + 2);
  why = support::tooLargeForMemory(perDocument, "a forward over one document of " + std::to_string(T) +
                                                    " tokens (clean, corrupted and " + std::to_string(block) +
                                                    " cells) needs about");
  if (!why.empty())
    return 0;
  const double budget = static_cast<double>(support::machineMemoryBytes()) / 4;
  return std::max<int64_t>(1, std::min<int64_t>(wanted, static_cast<int64_t>(budget / perDocument)));
}

/// Whether an intervention of the graph is a mean ablation (of a node, a
/// state or a value in a scan's step): its mean is over the source rows of
/// one forward, so those must be all of the run's documents.
bool hasMean(const std::vector<graph::Node> &nodes) {
  for (const graph::Node &n : nodes) {
    if ((n.op == "patch" || n.op == "ablate" || n.op == graph::kStateEditOp) && n.attrs.count("kind") &&
        rt::nodeAction(n) == Action::Mean)
      return true;
    if (hasMean(n.body))
      return true;
  }
  return false;
}

/// Runs the cells in blocks of at most 64 (one batched forward per block
/// and chunk of documents), so memory follows the block, not the script: a
/// 10,000-cell sweep needs no more than a 64-cell one. A forward keeps to
/// ~512 rows: documents are chunked by the number of blocks in the batch.
Measured measureCells(CorruptionExperiment &exp, const InterveneSpec &spec, const InterveneOptions &opts,
                      ActivationSaver *saver) {
  const int64_t n = exp.docs(), C = static_cast<int64_t>(spec.cells.size());
  Measured r;
  r.block = std::min<int64_t>(std::max<int64_t>(C, 1), 64);
  std::string unused; // checked by the caller before any work
  const graph::Graph &g = exp.model().graph();
  if (hasMean(g.nodes)) { // "mean over the source run": every document in each forward, fewer cells
    r.block = std::clamp<int64_t>(512 / std::max<int64_t>(n, 1) - 2, 1, r.block);
    while (r.block > 1 && documentsPerForward(g, exp.seqLen(), r.block, n, unused) < n)
      r.block /= 2;
    r.chunk = n;
  } else {
    r.chunk = documentsPerForward(g, exp.seqLen(), r.block, std::max<int64_t>(1, 512 / (r.block + 2)), unused);
  }
  r.docClean.assign(n, 0), r.docCorrupt.assign(n, 0), r.docPatched.assign(C, std::vector<double>(n));
  r.pPatched.assign(C, 0);
  const int64_t cleanBlock = spec.swap ? 1 : 0, corruptBlock = spec.swap ? 0 : 1;
  torch::NoGradGuard noGrad;
  at::manual_seed(opts.seed); // noise ablations
  for (int64_t c0 = 0; c0 < std::max<int64_t>(C, 1); c0 += r.block) {
    const int64_t cells = std::min(C - c0, r.block);
    for (int64_t i = 0; i < n; i += r.chunk) {
      DocumentChunk k = exp.chunk(i, std::min(n, i + r.chunk));
      const int64_t m = k.m;
      std::vector<at::Tensor> blocks = {k.source, k.base};
      for (int64_t c = 0; c < cells; ++c)
        blocks.push_back(k.base);
      rt::Model::Options o;
      o.readout = k.readout.repeat({cells + 2});
      k.iv.firstCell = c0;
      k.iv.numCells = cells;
      o.interventions = k.iv;
      if (saver) {
        o.observe = [&](const std::string &name, const at::Tensor &value) {
          saver->observe(name, value, i, m, c0, cells, spec.swap);
        };
        o.saveStates = o.saveStepValues = opts.save; // the recurrent states and scan-step values among the names
      }
      at::Tensor logits = exp.model().forward(at::cat(blocks, 0), o).squeeze(1); // [(cells+2)m, V]
      logits = logits.view({cells + 2, m, logits.size(-1)});                    // [cells+2, m, V]
      Readouts out = readouts(logits, k.target, corruptBlock, spec.readout);
      auto p = out.p.accessor<double, 2>(), v = out.value.accessor<double, 2>(); // [cells + 2, m]
      for (int64_t d = 0; d < m; ++d) {
        if (c0 == 0) { // the clean and corrupted runs: once, not per block
          r.docClean[i + d] = v[cleanBlock][d], r.docCorrupt[i + d] = v[corruptBlock][d];
          r.pClean += p[cleanBlock][d], r.pCorrupt += p[corruptBlock][d];
        }
        for (int64_t c = 0; c < cells; ++c) {
          r.docPatched[c0 + c][i + d] = v[c + 2][d];
          r.pPatched[c0 + c] += p[c + 2][d];
        }
      }
    }
  }
  return r;
}

double meanOf(const std::vector<double> &v) {
  double sum = 0;
  for (double x : v)
    sum += x;
  return sum / static_cast<double>(v.size());
}

/// Attrib per cell, a ratio of means kept when the clean and corrupted runs
/// differ by more than 0.01, with its bootstrap interval.
std::vector<CellResult> attribution(const Measured &m, uint64_t seed) {
  const double n = static_cast<double>(m.docClean.size());
  const double rO = meanOf(m.docClean), rC = meanOf(m.docCorrupt), denom = rO - rC;
  std::vector<Interval> intervals = bootstrapAttrib(m.docClean, m.docCorrupt, m.docPatched, kBootstrapReplicates, seed);
  std::vector<CellResult> results(m.docPatched.size());
  for (size_t c = 0; c < results.size(); ++c) {
    CellResult &r = results[c];
    r.pClean = m.pClean / n, r.pCorrupt = m.pCorrupt / n, r.pPatched = m.pPatched[c] / n;
    r.rClean = rO, r.rCorrupt = rC, r.rPatched = meanOf(m.docPatched[c]);
    r.kept = denom > 0.01;
    r.attrib = r.kept ? (r.rPatched - rC) / denom : 0;
    r.interval = r.kept ? intervals[c] : Interval{};
  }
  return results;
}

/// attrib.csv: a row a cell, its sweep coordinates as columns.
std::string attribCsv(const InterveneSpec &spec, const std::vector<CellResult> &results) {
  std::ostringstream csv;
  csv << "cell,label";
  std::vector<std::string> coordNames;
  if (!spec.cells.empty())
    for (const auto &[k, v] : spec.cells[0].coords)
      coordNames.push_back(k);
  for (const std::string &k : coordNames)
    csv << "," << k;
  csv << ",p_clean,p_corrupt,p_patched,attrib,kept,attrib_lo,attrib_hi,readout,r_clean,r_corrupt,r_patched\n";
  for (size_t c = 0; c < results.size(); ++c) {
    const CellResult &r = results[c];
    csv << c << ",\"" << spec.cells[c].label << "\"";
    for (size_t k = 0; k < coordNames.size(); ++k)
      csv << "," << (k < spec.cells[c].coords.size() ? spec.cells[c].coords[k].second : "");
    csv << "," << sixDigits(r.pClean) << "," << sixDigits(r.pCorrupt) << "," << sixDigits(r.pPatched) << "," << sixDigits(r.attrib) << ","
        << (r.kept ? 1 : 0) << ",";
    if (r.interval.valid) // else empty fields
      csv << sixDigits(r.interval.lo) << "," << sixDigits(r.interval.hi);
    else
      csv << ",";
    csv << "," << spec.readout << "," << sixDigits(r.rClean) << "," << sixDigits(r.rCorrupt) << "," << sixDigits(r.rPatched) << "\n";
  }
  return csv.str();
}

/// The table on the console: the clean and corrupted runs, then a row a cell.
void printTable(std::ostream &out, const graph::Graph &g, const InterveneSpec &spec, int64_t n,
                const std::vector<CellResult> &results, const Measured &m) {
  using support::format;
  const double pO = m.pClean / static_cast<double>(n), pC = m.pCorrupt / static_cast<double>(n);
  const double rO = meanOf(m.docClean), rC = meanOf(m.docCorrupt);
  out << format("%s, %lld documents, corrupt %s, %s: p(y|clean) %.4f, p(y|corrupt) %.4f%s\n", g.model.c_str(),
                (long long)n, spec.corrupt.c_str(), spec.swap ? "swap (base = clean)" : "restore (base = corrupted)",
                pO, pC, rO - rC > 0.01 ? "" : "  [difference <= 0.01: Attrib not reported]");
  if (spec.readout != "p")
    out << format("readout %s: clean %.4f, corrupted %.4f (Attrib is the ratio of its differences)\n",
                  spec.readout.c_str(), rO, rC);
  out << format("%-44s %10s %10s  %s\n", "cell", "p_patched", "Attrib", "95% interval");
  for (size_t c = 0; c < results.size(); ++c) {
    const CellResult &r = results[c];
    // Rounded before printing, + 0.0: a tiny negative prints as 0.000, not -0.000.
    auto shown = [](double x, double scale) { return std::round(x * scale) / scale + 0.0; };
    std::string interval = r.interval.valid ? format("[%.3f, %.3f]", shown(r.interval.lo, 1e3), shown(r.interval.hi, 1e3)) : "";
    if (r.kept)
      out << format("%-44s %10.4f %10.4f  %s\n", spec.cells[c].label.c_str(), r.pPatched, shown(r.attrib, 1e4),
                    interval.c_str());
    else
      out << format("%-44s %10.4f %10s\n", spec.cells[c].label.c_str(), r.pPatched, "n/a");
  }
}

/// --save's activations.safetensors, with what it holds in its metadata.
support::Status writeActivations(ActivationSaver &saver, const fs::path &folder, const graph::Graph &g,
                                 const InterveneSpec &spec, const InterveneOptions &opts, int64_t n, std::ostream &out) {
  std::vector<std::string> cellLabels;
  for (const Cell &cell : spec.cells)
    cellLabels.push_back(cell.label);
  const std::string path = (folder / "activations.safetensors").string();
  if (support::Status s = saver.write(path, {{"format", "mixc-activations"}, {"model", g.model},
                                             {"documents", std::to_string(n)},
                                             {"cells", nlohmann::json(cellLabels).dump()}, {"corrupt", spec.corrupt},
                                             {"direction", spec.swap ? "swap" : "restore"}, {"readout", spec.readout}});
      !s.isOk())
    return s;
  out << "saved " << opts.save.size() << " nodes' values (clean, corrupted, each cell) to " << path << "\n";
  return support::Status::ok();
}
} // namespace

support::Status intervene(const std::string &checkpoint, const graph::Graph &g, const InterveneSpec &spec,
                          const InterveneOptions &opts, std::vector<CellResult> &results, std::ostream &out) {
  if (std::string why = refusal(g, spec, opts); !why.empty())
    return support::Status::failed(why);
  CorruptionExperiment exp;
  if (support::Status opened = opts.pairs ? exp.open(checkpoint, g, spec, opts.kernels, opts.pairs)
                                          : exp.open(checkpoint, g, spec, opts.kernels, opts.size, opts.seed);
      !opened.isOk())
    return opened;
  const int64_t cells = static_cast<int64_t>(spec.cells.size());
  if (std::string tooLarge; documentsPerForward(g, exp.seqLen(), std::min<int64_t>(std::max<int64_t>(cells, 1), 64),
                                                1, tooLarge) == 0)
    return support::Status::failed(tooLarge); // before any work or folder
  if (std::string unused; hasMean(g.nodes) && documentsPerForward(g, exp.seqLen(), 1, exp.docs(), unused) < exp.docs())
    return support::Status::failed("a mean ablation averages over all " + std::to_string(exp.docs()) +
                                   " source documents in one forward, and they do not fit in memory at once; "
                                   "give fewer documents (--size)");
  // Before the work: a folder that cannot be written, or that holds
  // another script's tables, is refused at once. The caller's own documents
  // write only where asked: the run's folder holds the task's tables.
  std::string folderPath;
  const bool writeFiles = !opts.pairs || !opts.outDir.empty();
  if (std::string error;
      writeFiles && !train::analysisFolder(checkpoint, "interventions", opts.outDir, opts.script, folderPath, error))
    return support::Status::failed(error);
  const fs::path folder = folderPath;
  const int64_t n = exp.docs(), C = static_cast<int64_t>(spec.cells.size());
  std::unique_ptr<ActivationSaver> saver;
  if (!opts.save.empty())
    saver = std::make_unique<ActivationSaver>(opts.save, n, exp.seqLen(), C, kMaxSavedValues);
  const auto start = std::chrono::steady_clock::now();
  const Measured m = measureCells(exp, spec, opts, saver.get());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (saver && !saver->status().isOk())
    return saver->status();
  results = attribution(m, opts.seed);
  if (!writeFiles) {
    printTable(out, g, spec, n, results, m);
    return support::Status::ok();
  }
  train::writeFileAtomically((folder / "attrib.csv").string(), attribCsv(spec, results));
  // Capped so that a 10,000-cell sweep does not write hundreds of megabytes.
  const bool perExample = static_cast<double>(C) * static_cast<double>(n) <= kMaxPerExampleValues;
  if (perExample)
    writePerExample((folder / "per-example.csv").string(), spec.readout, m.docClean, m.docCorrupt, m.docPatched);
  std::string title = g.model + ": Attrib of " + interventionTargets(g) + " (readout " + spec.readout + "), " +
                      (spec.swap ? "swap" : "restore") + (opts.pairs ? ", the caller's pairs" : ", corrupt " + spec.corrupt);
  const std::vector<std::string> heatmaps = writeHeatmap((folder / "heatmap.svg").string(), spec, results, title);
  if (heatmaps.size() > 1)
    out << "heatmaps: " << heatmaps.size() << ", one per value of the variables after the first two ("
        << fs::path(heatmaps[0]).filename().string() << ", ...)\n";
  if (saver)
    if (support::Status s = writeActivations(*saver, folder, g, spec, opts, n, out); !s.isOk())
      return s;
  printTable(out, g, spec, n, results, m);
  if (!perExample)
    out << "per-example.csv not written: " << C << " cells x " << n << " documents is over "
        << static_cast<int64_t>(kMaxPerExampleValues) << " values\n";
  out << support::format("%lld cells in %.2fs (one batched forward per %lld documents and %lld cells); wrote %s\n",
                         (long long)C, seconds, (long long)m.chunk, (long long)m.block,
                         (folder / "attrib.csv").string().c_str())
      << std::flush;
  return support::Status::ok();
}

} // namespace mixc::analysis
