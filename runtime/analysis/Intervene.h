//===- Intervene.h - `mixc intervene` ----------------------------*- C++ -*-===//
//
// Interchange interventions (protocol §6) on a trained checkpoint: clean
// documents o, corrupted documents c (the key in context replaced by another
// key, or the value by a key, tinylang's quirk), and for every cell of the
// rewrite script the probability of the true answer when the intervened
// nodes take the source run's values:
//   Attrib = mean(p_patched − p_c) / (mean p_o − mean p_c),
// a ratio of means, reported when the denominator exceeds 0.01, with its 95 %
// bootstrap interval over documents (Bootstrap.h). Each document's
// probabilities are written too (per-example.csv).
// All cells run in one batched forward per chunk of documents.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_TRAIN_INTERVENE_H
#define MIXC_RUNTIME_TRAIN_INTERVENE_H

#include "abi/Graph.h"
#include "runtime/core/Model.h"
#include "runtime/analysis/Bootstrap.h"
#include "support/Status.h"

#include <cstdint>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mixc::kernels {
class Library;
} // namespace mixc::kernels

namespace mixc::tasks {
struct Dataset;
} // namespace mixc::tasks

namespace mixc::analysis {

struct DocumentChunk;

struct Cell {
  std::string label;
  std::vector<std::pair<std::string, std::string>> coords; // sweep coordinates
};

/// --save, run_with_cache (and Python's save=): the graph's nodes, recurrent
/// states (a scan's too) and the values inside a scan's step that
/// each of `patterns` (a name, or a pattern such as layers[*].block_input)
/// matches, every match of each; false with `error` when one matches
/// nothing (with the nearest names) or names a state that cannot be saved.
bool resolveSaveNames(const std::vector<std::string> &patterns, const graph::Graph &g, std::set<std::string> &out,
                      std::string &error);

struct InterveneSpec {
  std::string corrupt = "key"; // key | value | none
  bool swap = false;           // base = clean, source = corrupted
  // What Attrib is a ratio of, per document: p (p(true answer)), logit_diff
  // (its logit minus that of the corrupted run's top other answer) or kl
  // (KL(run ‖ corrupted run) over the vocabulary: 0 for the corrupted run).
  std::string readout = "p";
  std::vector<Cell> cells;
};

struct InterveneOptions {
  std::string outDir;   // CSV + heatmap; empty: <run>/interventions/<script's stem>
  /// The script's path: each script gets a folder of its own under the run
  /// (interventions/, attribution/), named by its file stem, so running a
  /// second script never replaces the first one's tables
  /// (train::analysisFolder). Empty: attribute's script-less every-node.
  std::string script;
  std::string scriptless = "every-node"; // the folder without a script (attribute --edges: every-edge)
  int64_t size = 320;   // documents (the paper's eval set)
  uint64_t seed = 42;   // corruption draws
  std::set<std::string> save; // nodes whose values go to activations.safetensors (Activations.h)
  /// The rewritten graph's generated kernels (mixc intervene --backend
  /// generated); null: the LibTorch interpreter runs every node.
  std::shared_ptr<const kernels::Library> kernels;
  bool quiet = false;
  /// Documents the caller brings instead of the task's test set (Python's
  /// mixc.intervene(pairs=)): in restore order, `source` the clean documents
  /// and `base` their corrupted twins, [n, T] each, with readouts, answers and
  /// the roles' positions [n] (checkPairs). The script's `corrupt` is then
  /// not drawn; `swap` still exchanges the two; `size` is ignored. Files are
  /// written only to `outDir` (never to the run's own folder, which holds the
  /// task's tables).
  std::shared_ptr<const DocumentChunk> pairs;
};

struct CellResult {
  double pClean = 0, pCorrupt = 0, pPatched = 0; // mean p(true answer), whatever the readout
  double rClean = 0, rCorrupt = 0, rPatched = 0; // means of the readout
  double attrib = 0;
  bool kept = false; // denominator > 0.01
  Interval interval; // Attrib's 95 % bootstrap interval over documents (Bootstrap.h)
};

/// The corrupted copy of the first `n` documents of `d` (`what`: key, value
/// or none): per document the key in context (or its value) replaced by a
/// uniformly drawn other token of the task's corruption range (§6).
std::vector<int32_t> corruptTokens(const tasks::Dataset &d, int64_t n, const std::string &what, uint64_t seed);

/// Documents [i, j) of a test set as intervention runs see them: the source
/// and base runs' tokens (cut to the chunk's longest document), the readout
/// positions, the answers, and the task roles for Model::Interventions.
struct DocumentChunk {
  int64_t m = 0;
  at::Tensor source, base, readout, target;
  rt::Model::Interventions iv;
};
DocumentChunk documentChunk(const tasks::Dataset &d, const std::vector<int32_t> &corrupted, int64_t i, int64_t j,
                            bool swap);
/// Rows [i, j) of `pairs` (restore order), with source and base exchanged for `swap`.
DocumentChunk sliceChunk(const DocumentChunk &pairs, int64_t i, int64_t j, bool swap);
/// "" when `pairs` are documents `model` can run: int64 tokens [n, T] of its
/// vocabulary, equal shapes, readout in [0, T) and answers in the vocabulary
/// [n], each role's positions [n] in [0, T); else what is wrong, naming it.
std::string checkPairs(const DocumentChunk &pairs, const rt::Model &model);

/// Heatmaps of the cells' Attrib as SVG: with two sweep coordinates one, at
/// `path` (rows: the first, columns: the second); with more, one per value
/// of the others, at `<path stem>-<var=value...>.svg`, titled with them.
/// `scale` names the shaded quantity (0 white to 1 blue) on the colour bar.
/// Returns the files written: none when the cells are not all one sweep of
/// two or more variables.
/// `floor`: the value shaded white (IIA's corrupted-run accuracy; 0 for Attrib).
std::vector<std::string> writeHeatmap(const std::string &path, const InterveneSpec &spec,
                                      const std::vector<CellResult> &res, const std::string &title,
                                      const std::string &scale = "Attrib", double floor = 0);

/// What a rewritten graph's interventions act on, for plot titles: each
/// action with its node, layer indices that differ written `*` ("patch
/// layers[*].block_input"); at most three, then how many more.
std::string interventionTargets(const graph::Graph &g);

/// The graph stored in a checkpoint (or run folder), as JSON.
bool checkpointGraph(const std::string &checkpointOrRun, std::string &graphJson,
                     std::string &checkpointPath, std::string &error);

/// Runs `rewritten` (the checkpoint's graph with intervention nodes) with the
/// checkpoint's weights; writes a table to `out`, and attrib.csv and
/// heatmap.svg to the output folder. Fills `results` (one per cell).
support::Status intervene(const std::string &checkpoint, const graph::Graph &rewritten,
                          const InterveneSpec &spec, const InterveneOptions &options,
                          std::vector<CellResult> &results, std::ostream &out);

} // namespace mixc::analysis

#endif
