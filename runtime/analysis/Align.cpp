//===- Align.cpp - `mixc align`: DAS, trained for every cell at once --------===//
#include "runtime/analysis/Align.h"
#include "runtime/analysis/Experiment.h"
#include "runtime/core/Model.h"
#include "runtime/core/NodeAttrs.h"
#include "runtime/tasks/Task.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/Report.h"
#include "runtime/analysis/Rotation.h"
#include "support/Format.h"
#include "support/Safetensors.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>

namespace mixc::analysis {
namespace fs = std::filesystem;
namespace {

/// Cells a forward holds at most in evaluation (as intervene's blocks).
constexpr int64_t kEvalBlock = 32;
constexpr int64_t kEvalChunk = 64; // documents a forward in evaluation

/// The values a position of node `n`'s result holds (its dimensions after
/// [B, T]); 0 when a dimension is unknown.
int64_t valuesAtPosition(const graph::Node &n) {
  if (n.shapes.empty() || n.shapes[0].size() < 3)
    return 0;
  int64_t w = 1;
  for (size_t i = 2; i < n.shapes[0].size(); ++i) {
    if (n.shapes[0][i] <= 0)
      return 0;
    w *= n.shapes[0][i];
  }
  return w;
}

/// Logits at each document's readout for the source block, the base block
/// and one block per cell of `cells` ([2 + cells, m, V]).
at::Tensor cellLogits(const rt::Model &model, DocumentChunk &k, const std::vector<int64_t> &cells) {
  k.iv.cells = cells;
  const int64_t n = static_cast<int64_t>(cells.size());
  std::vector<at::Tensor> blocks = {k.source, k.base};
  for (int64_t c = 0; c < n; ++c)
    blocks.push_back(k.base);
  rt::Model::Options o;
  o.readout = k.readout.repeat({n + 2});
  o.interventions = k.iv;
  return model.forward(at::cat(blocks, 0), o).squeeze(1).view({n + 2, k.m, -1});
}

std::string fourDigits(double x) { return support::format("%.4f", x); }
} // namespace

namespace {
using DasNodes = std::vector<std::vector<const graph::Node *>>; // per cell, its das(k) patch nodes

/// Each cell's das nodes; a failure for a script align cannot train.
support::Status dasNodesOf(const graph::Graph &g, const InterveneSpec &spec, const AlignOptions &opts,
                           DasNodes &dasNodes) {
  if (spec.swap)
    return support::Status::failed("align: direction swap makes the corrupted run the source, whose answer is "
                                   "not defined; align trains toward the clean answer (direction restore)");
  if (spec.corrupt == "none")
    return support::Status::failed("align: with corrupt none the base and source runs are the same documents; "
                                   "there is nothing to interchange");
  const int64_t C = static_cast<int64_t>(spec.cells.size());
  dasNodes.assign(C, {});
  for (const graph::Node &n : g.nodes) {
    if (n.op == graph::kStateEditOp || n.op == "ablate")
      return support::Status::failed("align: '" + n.name + "' is not a patch; align trains das(k) cells, "
                                     "with whole-vector patches beside them at most");
    if (n.op == "patch" && rt::attrI(n, "das", 0) > 0) {
      const int64_t cell = rt::attrI(n, "cell");
      if (cell >= 0 && cell < C)
        dasNodes[cell].push_back(&n);
    }
  }
  for (int64_t c = 0; c < C; ++c)
    if (dasNodes[c].empty())
      return support::Status::failed("align: cell '" + spec.cells[c].label +
                                     "' has no das(k) action; `mixc intervene` runs plain patches");
  if (opts.steps < 0 || opts.batch < 1 || !(opts.lr > 0))
    return support::Status::failed("align: steps ≥ 0, batch ≥ 1 and lr > 0 are needed");

  return support::Status::ok();
}

/// One rotation per das node, drawn in graph order from one seeded stream.
support::Status makeRotations(const DasNodes &dasNodes, uint64_t seed, std::map<std::string, Rotation> &rotations) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  for (const auto &cell : dasNodes)
    for (const graph::Node *n : cell) {
      const int64_t width = valuesAtPosition(*n), k = rt::attrI(*n, "das");
      if (width < k)
        return support::Status::failed("align: '" + n->name + "' has " +
                                       (width ? std::to_string(width) : std::string("an unknown number of")) +
                                       " values a position, too few for das(" + std::to_string(k) + ")");
      rotations.emplace(n->name, Rotation(width, k, gen));
    }
  return support::Status::ok();
}

/// Trains every cell's rotations at once on training pairs (batches of
/// `batch` documents from a random start); each cell's mean loss over the
/// last tenth of the steps, NaN without steps.
std::vector<double> trainRotations(rt::Model &model, const tasks::Dataset &train, const std::vector<int32_t> &corrupted,
                                   int64_t nTrain, int64_t batch, int64_t C, std::map<std::string, Rotation> &rotations,
                                   const AlignOptions &opts, std::ostream &out) {
  std::vector<at::Tensor> params;
  for (auto &[name, r] : rotations)
    params.push_back(r.parameter());
  std::vector<int64_t> all(C);
  std::iota(all.begin(), all.end(), 0);
  torch::optim::Adam adam(params, torch::optim::AdamOptions(opts.lr));
  std::mt19937_64 rng(opts.seed);
  std::uniform_int_distribution<int64_t> start(0, nTrain - batch);
  std::vector<double> lossSum(C, 0.0);
  int64_t lossSteps = 0;
  const int64_t tail = std::max<int64_t>(1, opts.steps / 10), every = std::max<int64_t>(1, opts.steps / 10);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < opts.steps; ++step) {
    const int64_t i = start(rng);
    DocumentChunk k = documentChunk(train, corrupted, i, i + batch, /*swap=*/false);
    for (auto &[name, r] : rotations)
      k.iv.rotations[name] = r.rows();
    torch::AutoGradMode grad(true);
    at::Tensor logits = cellLogits(model, k, all).slice(0, 2); // [C, m, V]
    at::Tensor perDoc = at::cross_entropy_loss(logits.reshape({C * k.m, -1}), k.target.repeat({C}),
                                               /*weight=*/{}, at::Reduction::None);
    at::Tensor perCell = perDoc.view({C, k.m}).mean(1); // [C]
    adam.zero_grad();
    perCell.sum().backward(); // each rotation sees only its cell's rows
    adam.step();
    if (step >= opts.steps - tail) {
      at::Tensor l = perCell.detach().to(at::kDouble);
      for (int64_t c = 0; c < C; ++c)
        lossSum[c] += l[c].item<double>();
      ++lossSteps;
    }
    if (!opts.quiet && ((step + 1) % every == 0 || step + 1 == opts.steps)) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      out << support::format("  step %lld/%lld  mean loss %.4f  %.0fs\n", static_cast<long long>(step + 1),
                             static_cast<long long>(opts.steps), perCell.mean().item<double>(), s)
          << std::flush;
    }
  }
  for (double &l : lossSum)
    l = lossSteps ? l / static_cast<double>(lossSteps) : std::nan("");
  return lossSum;
}

/// Held-out IIA per cell: with the learned subspace, the first k channels,
/// and the whole vector; and the clean and corrupted runs' accuracies.
struct HeldOut {
  std::vector<double> hits[3];
  double cleanHits = 0, baseHits = 0;
};

HeldOut heldOutIia(CorruptionExperiment &exp, int64_t C, const std::map<std::string, Rotation> &rotations) {
  torch::NoGradGuard noGrad;
  HeldOut h;
  for (auto &v : h.hits)
    v.assign(C, 0.0);
  std::vector<int64_t> all(C);
  std::iota(all.begin(), all.end(), 0);
  const int64_t nTest = exp.docs();
  for (int variant = 0; variant < 3; ++variant)
    for (int64_t i = 0; i < nTest; i += kEvalChunk)
      for (int64_t b0 = 0; b0 < C; b0 += kEvalBlock) {
        DocumentChunk k = exp.chunk(i, std::min(nTest, i + kEvalChunk));
        std::vector<int64_t> cells(all.begin() + b0, all.begin() + std::min(C, b0 + kEvalBlock));
        for (const auto &[name, r] : rotations) {
          const int64_t w = r.parameter().size(0);
          k.iv.rotations[name] = variant == 0   ? r.rows()
                                 : variant == 1 ? at::eye(w).narrow(0, 0, r.k())
                                                : at::eye(w);
        }
        at::Tensor right = cellLogits(exp.model(), k, cells).argmax(-1).eq(k.target.unsqueeze(0)).to(at::kDouble).sum(1);
        if (variant == 0 && b0 == 0)
          h.cleanHits += right[0].item<double>(), h.baseHits += right[1].item<double>();
        for (size_t c = 0; c < cells.size(); ++c)
          h.hits[variant][cells[c]] += right[2 + static_cast<int64_t>(c)].item<double>();
      }
  return h;
}

/// iia.csv, its heatmap and rotations.safetensors in `folder`.
support::Status writeAlign(const fs::path &folder, const graph::Graph &g, const InterveneSpec &spec, double floor,
                           const std::vector<AlignResult> &results, const std::map<std::string, Rotation> &rotations) {
  std::ostringstream csv;
  csv << "cell,label,k,iia,iia_channels,iia_patch,train_loss,orthogonality\n";
  for (size_t c = 0; c < results.size(); ++c) {
    const AlignResult &r = results[c];
    csv << c << ",\"" << spec.cells[c].label << "\"," << r.k << "," << support::format("%.6f", r.iia) << ","
        << support::format("%.6f", r.iiaChannels) << "," << support::format("%.6f", r.iiaPatch) << ","
        << support::format("%.6f", r.trainLoss) << "," << support::format("%.3g", r.orthogonality) << "\n";
  }
  train::writeFileAtomically((folder / "iia.csv").string(), csv.str());
  std::vector<CellResult> shown(results.size());
  for (size_t c = 0; c < results.size(); ++c)
    shown[c].attrib = results[c].iia, shown[c].kept = true;
  // White is the corrupted run's accuracy: a subspace with no effect.
  writeHeatmap((folder / "iia.svg").string(), spec, shown,
               g.model + ": IIA of " + interventionTargets(g) + ", corrupt " + spec.corrupt +
                   " (white: the corrupted run, " + support::format("%.2f", floor) + ")",
               "IIA", floor);
  std::vector<support::StoredTensor> stored;
  for (const auto &[name, r] : rotations) {
    at::Tensor rows = r.rows().detach().contiguous();
    stored.push_back({name, "F32", {rows.size(0), rows.size(1)},
                      std::string(static_cast<const char *>(rows.data_ptr()), rows.nbytes())});
  }
  std::string error;
  if (!support::writeSafetensors((folder / "rotations.safetensors").string(), stored,
                                 {{"format", "mixc-das"}, {"model", g.model}, {"rows", "the learned [k, W] subspace of each das node"}},
                                 error))
    return support::Status::failed(error);
  return support::Status::ok();
}

void printAlign(std::ostream &out, const graph::Graph &g, const InterveneSpec &spec, const AlignOptions &opts,
                int64_t nTest, int64_t batch, const HeldOut &h, const std::vector<AlignResult> &results) {
  out << support::format("%s, %lld held-out documents, corrupt %s: accuracy clean %.4f, corrupted %.4f; "
                         "rotations trained %lld steps of %lld pairs (lr %g)\n",
                         g.model.c_str(), static_cast<long long>(nTest), spec.corrupt.c_str(), h.cleanHits / nTest,
                         h.baseHits / nTest, static_cast<long long>(opts.steps), static_cast<long long>(batch), opts.lr);
  out << support::format("%-40s %5s %8s %9s %8s %8s %9s\n", "cell", "k", "IIA", "channels", "whole", "loss",
                         "|RR'-I|");
  for (size_t c = 0; c < results.size(); ++c) {
    const AlignResult &r = results[c];
    out << support::format("%-40s %5lld %8s %9s %8s %8s %9.1e\n", spec.cells[c].label.c_str(),
                           static_cast<long long>(r.k), fourDigits(r.iia).c_str(), fourDigits(r.iiaChannels).c_str(),
                           fourDigits(r.iiaPatch).c_str(), fourDigits(r.trainLoss).c_str(), r.orthogonality);
  }
}
} // namespace

support::Status align(const std::string &checkpoint, const graph::Graph &g, const InterveneSpec &spec,
                      const AlignOptions &opts, std::vector<AlignResult> &results, std::ostream &out) {
  DasNodes dasNodes;
  if (support::Status st = dasNodesOf(g, spec, opts, dasNodes); !st.isOk())
    return st;
  const int64_t C = static_cast<int64_t>(spec.cells.size());
  // The test pairs are intervene's (same seed); the training pairs are drawn apart from them.
  CorruptionExperiment exp;
  if (support::Status opened = exp.open(checkpoint, g, spec, opts.kernels, opts.size, opts.seed); !opened.isOk())
    return opened;
  // Before the work: a folder that cannot be written, or that holds
  // another script's tables, is refused at once.
  std::string folderPath;
  if (std::string error; !train::analysisFolder(checkpoint, "align", opts.outDir, opts.script, folderPath, error))
    return support::Status::failed(error);
  const fs::path folder = folderPath;
  for (at::Tensor t : exp.model().trainable()) // the model is frozen: only the rotations learn
    t.requires_grad_(false);
  const tasks::Dataset &train = exp.data().train;
  const int64_t nTrain = std::min<int64_t>(opts.trainDocs, train.size()), nTest = exp.docs();
  const int64_t batch = std::min(opts.batch, nTrain);
  if (nTrain < 1 || nTest < 1)
    return support::Status::failed("align: the task has no training or test documents");
  std::vector<int32_t> corruptedTrain = corruptTokens(train, nTrain, spec.corrupt, opts.seed + 1);
  std::map<std::string, Rotation> rotations;
  if (support::Status st = makeRotations(dasNodes, opts.seed, rotations); !st.isOk())
    return st;
  const std::vector<double> trainLoss =
      trainRotations(exp.model(), train, corruptedTrain, nTrain, batch, C, rotations, opts, out);
  const HeldOut h = heldOutIia(exp, C, rotations);
  results.assign(C, {});
  for (int64_t c = 0; c < C; ++c) {
    AlignResult &r = results[c];
    r.k = rt::attrI(*dasNodes[c].front(), "das");
    r.iia = h.hits[0][c] / static_cast<double>(nTest);
    r.iiaChannels = h.hits[1][c] / static_cast<double>(nTest);
    r.iiaPatch = h.hits[2][c] / static_cast<double>(nTest);
    r.trainLoss = trainLoss[c];
    for (const graph::Node *n : dasNodes[c])
      r.orthogonality = std::max(r.orthogonality, rotations.at(n->name).orthogonalityError());
  }
  if (support::Status st = writeAlign(folder, g, spec, h.baseHits / static_cast<double>(nTest), results, rotations); !st.isOk())
    return st;
  printAlign(out, g, spec, opts, nTest, batch, h, results);
  out << "wrote " << (folder / "iia.csv").string() << "\n";
  return support::Status::ok();
}

} // namespace mixc::analysis
