//===- Replicas.cpp - K copies of a model in one program --------------------===//
#include "runtime/core/Replicas.h"
#include "abi/OpRegistry.h"
#include "runtime/core/NodeAttrs.h"
#include "runtime/core/Primitives.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace mixc::rt {
namespace {
using Layout = ReplicatedModel::Layout;
using Tensors = std::vector<at::Tensor>;

/// An operand that lends the op only its sizes (time_slice's `like`, whose
/// T it reads): its rows do not make the result a row value.
bool sizesOnly(const graph::Node &n, size_t operand) {
  const ops::OpSpec *spec = ops::findOp(n.op);
  return spec && operand < spec->operands.size() && std::string(spec->operands[operand].name) == "like";
}

/// Why `n`, reading rows, would mix rows of different replicas (or "").
std::string mixesRows(const graph::Node &n, const std::vector<std::vector<int64_t>> &inputShapes) {
  const int64_t rank = inputShapes.empty() ? 0 : static_cast<int64_t>(inputShapes[0].size());
  if (n.op == "sum") {
    int64_t axis = attrI(n, "axis");
    if ((axis < 0 ? axis + rank : axis) == 0)
      return "sums over the batch";
  } else if (n.op == "reshape" && attrI(n, "keep") == 0) {
    return "reshapes the batch dimension";
  } else if (n.op == "permute" && !attrInts(n, "perm").empty() && attrInts(n, "perm")[0] != 0) {
    return "moves the batch dimension";
  }
  return "";
}

/// Replica k's part of an operand: its rows, or its slice of the weights.
at::Tensor replicaPart(const at::Tensor &t, Layout layout, int64_t k, int64_t rows) {
  if (layout == Layout::Rows)
    return t.narrow(0, k * rows, rows);
  return layout == Layout::PerReplica ? t.select(0, k) : t;
}

/// The reference rule: the op once a replica, results joined again.
Tensors runEachReplica(const graph::Node &n, const Tensors &args, const std::vector<Layout> &layouts, Layout out,
                       int64_t K, int64_t rows) {
  std::vector<Tensors> parts; // [result][replica]
  for (int64_t k = 0; k < K; ++k) {
    Tensors in;
    for (size_t i = 0; i < args.size(); ++i)
      in.push_back(replicaPart(args[i], layouts[i], k, rows));
    Tensors res = runPrimitive(n, in);
    parts.resize(res.size());
    for (size_t r = 0; r < res.size(); ++r)
      parts[r].push_back(std::move(res[r]));
  }
  Tensors joined;
  for (Tensors &p : parts)
    joined.push_back(out == Layout::Rows ? at::cat(p, 0) : at::stack(p, 0));
  return joined;
}

/// Per element: rows as [K, B, ...], weights [K, ...] padded with unit dims
/// after K to the same rank, so LibTorch's broadcasting pairs each replica's
/// rows with its weights.
Tensors broadcastRule(const graph::Node &n, const Tensors &args, const std::vector<Layout> &layouts, Layout out,
                      int64_t K, int64_t rows) {
  int64_t rank = 0; // the largest rank of an operand as the model alone sees it
  for (size_t i = 0; i < args.size(); ++i)
    rank = std::max<int64_t>(rank, args[i].dim() - (layouts[i] == Layout::PerReplica ? 1 : 0));
  Tensors in;
  for (size_t i = 0; i < args.size(); ++i) {
    at::Tensor t = args[i];
    if (layouts[i] == Layout::Rows) {
      std::vector<int64_t> shape{K, rows};
      shape.insert(shape.end(), t.sizes().begin() + 1, t.sizes().end());
      t = t.view(shape);
    }
    if (layouts[i] != Layout::Shared)
      while (t.dim() < rank + 1)
        t = t.unsqueeze(1);
    in.push_back(t);
  }
  Tensors res = runPrimitive(n, in);
  if (out == Layout::Rows)
    for (at::Tensor &r : res)
      r = r.flatten(0, 1);
  return res;
}

/// x [.., I] by weight [O, I] (+ bias [O]) per replica as one bmm:
/// [K, rows, I] × [K, I, O].
Tensors matmulRule(const Tensors &args) {
  const at::Tensor &x = args[0], &w = args[1];
  const int64_t K = w.size(0), I = x.size(-1);
  at::Tensor x3 = x.reshape({K, -1, I}), wt = w.transpose(1, 2);
  at::Tensor y = args.size() > 2 && args[2].defined() ? at::baddbmm(args[2].unsqueeze(1), x3, wt) : at::bmm(x3, wt);
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape.back() = w.size(1); // O, or unembed's V
  return {y.view(shape)};
}

/// ids [K·B, T] into tables [K, V, D]: replica k's ids offset by k·V in the
/// tables laid end to end.
Tensors gatherRule(const Tensors &args, int64_t rows) {
  const at::Tensor &ids = args[0], &table = args[1];
  const int64_t K = table.size(0), V = table.size(1);
  at::Tensor offset = (at::arange(K, ids.options()) * V).repeat_interleave(rows).view({-1, 1});
  return {at::embedding(table.reshape({K * V, table.size(2)}), ids + offset)};
}

/// Normalise each row as the op does with a unit weight, then weight [K, D]
/// (and bias) per replica: x·rsqrt(·)·w is the same product rmsNorm forms.
Tensors normAffineRule(const graph::Node &n, const Tensors &args) {
  const at::Tensor &x = args[0], &w = args[1];
  const int64_t K = w.size(0), D = x.size(-1);
  const double eps = attrF(n, "eps");
  at::Tensor normed = n.op == "rmsnorm" ? rmsNorm(x, at::ones({}, x.options()), eps)
                                        : at::layer_norm(x, {D}, {}, {}, eps);
  at::Tensor y = normed.reshape({K, -1, D}) * w.view({K, 1, D});
  if (n.op == "layernorm")
    y = y + args[2].view({K, 1, D});
  return {y.view(x.sizes())};
}

/// Depthwise over the last dim: rows [K·B, T, C] as [B, T, K·C] with weights
/// [K·C, ...], then back.
Tensors channelsRule(const graph::Node &n, const Tensors &args, int64_t rows) {
  const at::Tensor &x = args[0];
  const int64_t K = args[1].size(0), T = x.size(1), C = x.size(2);
  Tensors in{x.view({K, rows, T, C}).permute({1, 2, 0, 3}).reshape({rows, T, K * C})};
  for (size_t i = 1; i < args.size(); ++i) {
    std::vector<int64_t> shape{K * C};
    shape.insert(shape.end(), args[i].sizes().begin() + 2, args[i].sizes().end());
    in.push_back(args[i].defined() ? args[i].reshape(shape) : args[i]);
  }
  at::Tensor y = runPrimitive(n, in)[0];
  return {y.view({rows, T, K, C}).permute({2, 0, 1, 3}).reshape({K * rows, T, C})};
}
} // namespace

std::unique_ptr<ReplicatedModel> ReplicatedModel::create(graph::Graph g, int64_t replicas, std::string &error,
                                                         std::shared_ptr<const kernels::Library> kernels) {
  if (replicas < 1) {
    error = "a pack needs at least one replica, not " + std::to_string(replicas);
    return nullptr;
  }
  std::unique_ptr<ReplicatedModel> m(new ReplicatedModel());
  m->replicas_ = replicas;
  m->member_ = Model::create(std::move(g), error);
  if (!m->member_)
    return nullptr;
  const graph::Graph &graph = m->member_->graph();
  const auto shapes = graph::valueShapes(graph);
  std::unordered_map<std::string, int> ids;
  ids[graph.inputs[0].name] = m->numValues_++;
  m->layouts_.push_back(Layout::Rows);
  for (const graph::Param &p : graph.params) {
    ids[p.name] = m->numValues_;
    m->paramValues_.push_back(m->numValues_++);
    m->layouts_.push_back(Layout::PerReplica);
  }
  for (const graph::Node &n : graph.nodes) {
    if (n.op == "patch" || n.op == "ablate" || n.op == graph::kStateEditOp) {
      error = "node '" + n.name + "' (" + n.op + ") is an intervention: a packed model trains; intervene on "
              "each member's run alone";
      return nullptr;
    }
    Step s{&n, {}, m->numValues_, Layout::Shared};
    std::vector<std::vector<int64_t>> inputShapes;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const int v = ids.at(n.inputs[i]);
      s.inputs.push_back(v);
      inputShapes.push_back(shapes.count(n.inputs[i]) ? shapes.at(n.inputs[i]) : std::vector<int64_t>{});
      const Layout in = m->layouts_[v];
      if (in == Layout::Rows && !sizesOnly(n, i))
        s.layout = Layout::Rows;
      else if (in == Layout::PerReplica && s.layout == Layout::Shared)
        s.layout = Layout::PerReplica;
    }
    if (s.layout == Layout::Rows)
      if (std::string why = mixesRows(n, inputShapes); !why.empty()) {
        error = "node '" + n.name + "' (" + n.op + ") " + why + ", which would mix the replicas' rows: this "
                "model cannot be packed";
        return nullptr;
      }
    for (size_t r = 0; r < n.shapes.size(); ++r) {
      ids[r == 0 ? n.name : n.name + "#" + std::to_string(r)] = m->numValues_++;
      m->layouts_.push_back(s.layout);
    }
    m->steps_.push_back(std::move(s));
  }
  m->bindRegions(kernels.get(), ids);
  m->outputValue_ = ids.at(graph.outputs[0]);
  if (m->layouts_[m->outputValue_] != Layout::Rows) {
    error = "the model's output '" + graph.outputs[0] + "' does not depend on the tokens";
    return nullptr;
  }
  // Zeros until initParameters draws them, as Model::create leaves its own.
  for (size_t i = 0; i < graph.params.size(); ++i) {
    std::vector<int64_t> shape{replicas};
    shape.insert(shape.end(), graph.params[i].shape.begin(), graph.params[i].shape.end());
    m->tensors_.push_back({graph.params[i].name, at::zeros(shape, at::kFloat).set_requires_grad(graph.params[i].trainable)});
  }
  return m;
}

/// As Model::bindRegions (bindRegionSteps), on the pack's node steps (one
/// a node), and not a region that holds the LM head (the readout gathers
/// rows before `unembed`). The library stays open while the model lives:
/// the bound regions keep its functions.
void ReplicatedModel::bindRegions(const kernels::Library *kernels, const std::unordered_map<std::string, int> &ids) {
  auto holdsHead = [](const std::vector<Step> &steps, const std::vector<size_t> &idx) {
    for (size_t i : idx)
      if (steps[i].node->op == "unembed")
        return std::string("it holds the LM head");
    return std::string();
  };
  auto regionStep = [](const Step &last, const BoundRegion &b, const std::vector<size_t> &) {
    return Step{last.node, {}, -1, last.layout, &b, {}};
  };
  bindRegionSteps(graph(), kernels, steps_, ids, bound_, regionStatus_, holdsHead, regionStep);
}

/// A region through its kernel: reading rows and constants only, once for
/// all replicas (a larger batch); else once a replica on its rows and its
/// weights, each output joined by its own layout.
std::vector<at::Tensor> ReplicatedModel::runRegionStep(const Step &s, const std::vector<at::Tensor> &args,
                                                       int64_t rows) const {
  bool perReplica = false;
  for (int v : s.inputs)
    perReplica = perReplica || layouts_[v] == Layout::PerReplica;
  if (!perReplica)
    return runRegion(*s.region, args);
  std::vector<Tensors> parts(s.regionResults.size()); // [output][replica]
  for (int64_t k = 0; k < replicas_; ++k) {
    Tensors in;
    for (size_t i = 0; i < args.size(); ++i)
      in.push_back(args[i].defined() ? replicaPart(args[i], layouts_[s.inputs[i]], k, rows) : args[i]);
    Tensors res = runRegion(*s.region, in);
    for (size_t r = 0; r < res.size() && r < parts.size(); ++r)
      parts[r].push_back(std::move(res[r]));
  }
  Tensors joined;
  for (size_t r = 0; r < parts.size(); ++r) {
    const Layout out = layouts_[s.regionResults[r]];
    joined.push_back(out == Layout::Rows ? at::cat(parts[r], 0)
                     : out == Layout::PerReplica ? at::stack(parts[r], 0)
                                                 : parts[r][0]); // from constants: the same in each
  }
  return joined;
}

void ReplicatedModel::initParameters(const std::vector<uint64_t> &seeds) {
  TORCH_CHECK(static_cast<int64_t>(seeds.size()) == replicas_, "initParameters: ", seeds.size(), " seeds for ",
              replicas_, " replicas");
  std::vector<Tensors> perTensor(member_->tensors().size());
  for (uint64_t seed : seeds) {
    member_->initParameters(seed);
    for (size_t i = 0; i < perTensor.size(); ++i)
      perTensor[i].push_back(member_->tensors()[i].second.detach());
  }
  for (size_t i = 0; i < perTensor.size(); ++i) // drawn on the host, then where the pack is
    tensors_[i].second =
        at::stack(perTensor[i], 0).to(tensors_[i].second.device()).set_requires_grad(graph().params[i].trainable);
}

std::string ReplicatedModel::setReplica(int64_t k, const Model &model) {
  if (k < 0 || k >= replicas_)
    return "replica " + std::to_string(k) + " of a pack of " + std::to_string(replicas_);
  if (model.tensors().size() != tensors_.size())
    return "the model has " + std::to_string(model.tensors().size()) + " tensors, the pack's members " +
           std::to_string(tensors_.size());
  at::NoGradGuard noGrad;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const auto &[name, t] = model.tensors()[i];
    if (name != tensors_[i].first || t.sizes() != tensors_[i].second.select(0, k).sizes())
      return "tensor '" + name + "' is not the pack's '" + tensors_[i].first + "' of the same shape";
    tensors_[i].second.select(0, k).copy_(t);
  }
  return "";
}

void ReplicatedModel::copyReplicaTo(int64_t k, Model &model) const {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    // On the member's device (a GPU pack's member is saved from the CPU).
    at::Tensor own = tensors_[i].second.select(0, k).detach().to(model.tensors()[i].second.device(),
                                                                 /*non_blocking=*/false, /*copy=*/true);
    std::string why = model.setTensor(tensors_[i].first, own.set_requires_grad(graph().params[i].trainable));
    TORCH_CHECK(why.empty(), "copyReplicaTo: ", why);
  }
}

std::vector<at::Tensor> ReplicatedModel::trainable() const {
  Tensors out;
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (graph().params[i].trainable)
      out.push_back(tensors_[i].second);
  return out;
}

void ReplicatedModel::to(const at::Device &device) {
  for (size_t i = 0; i < tensors_.size(); ++i)
    tensors_[i].second = tensors_[i].second.detach().to(device).set_requires_grad(graph().params[i].trainable);
}

std::vector<at::Tensor> ReplicatedModel::runStep(const Step &s, const std::vector<at::Tensor> &args,
                                                 int64_t rows) const {
  std::vector<Layout> layouts;
  bool perReplica = false;
  for (int v : s.inputs) {
    layouts.push_back(layouts_[v]);
    perReplica = perReplica || layouts_[v] == Layout::PerReplica;
  }
  const graph::Node &n = *s.node;
  if (!perReplica) // rows and constants: the replicas are a larger batch
    return runPrimitive(n, args);
  const int64_t K = replicas_;
  auto weightsOnly = [&](size_t from) {
    for (size_t i = from; i < args.size(); ++i)
      if (args[i].defined() && layouts[i] != Layout::PerReplica)
        return false;
    return true;
  };
  const bool rowsFirst = layouts[0] == Layout::Rows;
  switch (ops::findOp(n.op)->batching) {
  case ops::Batching::Broadcast:
    return broadcastRule(n, args, layouts, s.layout, K, rows);
  case ops::Batching::Matmul:
    if (layouts[0] != Layout::Shared && weightsOnly(1))
      return matmulRule(args);
    break;
  case ops::Batching::Gather:
    if (rowsFirst && weightsOnly(1))
      return gatherRule(args, rows);
    break;
  case ops::Batching::NormAffine:
    if (layouts[0] != Layout::Shared && weightsOnly(1))
      return normAffineRule(n, args);
    break;
  case ops::Batching::Channels:
    if (rowsFirst && args[0].dim() == 3 && weightsOnly(1))
      return channelsRule(n, args, rows);
    break;
  case ops::Batching::Loop:
    break;
  }
  return runEachReplica(n, args, layouts, s.layout, K, rows);
}

at::Tensor ReplicatedModel::forward(const at::Tensor &tokens, const std::optional<at::Tensor> &readout) const {
  TORCH_CHECK(tokens.dim() == 2 && tokens.scalar_type() == at::kLong, "tokens must be a [B, T] int64 tensor");
  const int64_t K = replicas_, rows = tokens.size(0);
  Tensors values(numValues_);
  values[0] = tokens.repeat({K, 1}); // [K·B, T]: every replica reads the same documents
  for (size_t i = 0; i < paramValues_.size(); ++i)
    values[paramValues_[i]] = tensors_[i].second;
  const std::optional<at::Tensor> readoutRows =
      readout ? std::optional<at::Tensor>(readout->repeat({K})) : std::nullopt;
  Tensors args;
  for (const Step &s : steps_) {
    args.clear();
    for (int v : s.inputs)
      args.push_back(values[v]);
    if (readoutRows && s.node->op == "unembed") { // as Model::forward: the head sees one step a row
      at::Tensor idx = readoutRows->view({-1, 1, 1}).expand({-1, 1, args[0].size(-1)});
      args[0] = args[0].gather(1, idx);
    }
    if (s.region) {
      Tensors out = runRegionStep(s, args, rows);
      for (size_t r = 0; r < out.size(); ++r)
        values[s.regionResults[r]] = std::move(out[r]);
      continue;
    }
    Tensors out = runStep(s, args, rows);
    for (size_t r = 0; r < out.size(); ++r)
      values[s.firstResult + static_cast<int>(r)] = std::move(out[r]);
  }
  at::Tensor logits = values[outputValue_]; // [K·B, T or 1, V]
  std::vector<int64_t> shape{K, rows};
  shape.insert(shape.end(), logits.sizes().begin() + 1, logits.sizes().end());
  logits = logits.view(shape);
  return readout ? logits.squeeze(2) : logits;
}

} // namespace mixc::rt
