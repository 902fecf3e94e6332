//===- Interventions.cpp - patch, ablate and state edits in the batch -------===//
#include "runtime/core/Interventions.h"
#include "runtime/core/NodeAttrs.h"

#include <algorithm>
#include <tuple>

namespace mixc::rt {
using graph::Node;

int64_t cellRow(const Node &n, const Model::Interventions &iv, int64_t rows) {
  int64_t docs = iv.docs, cell = attrI(n, "cell"), block = cell - iv.firstCell;
  if (!iv.cells.empty()) {
    auto it = std::find(iv.cells.begin(), iv.cells.end(), cell);
    if (it == iv.cells.end())
      return -1;
    block = it - iv.cells.begin();
  } else if (cell < iv.firstCell || (iv.numCells >= 0 && cell >= iv.firstCell + iv.numCells)) {
    return -1;
  }
  int64_t first = (block + 2) * docs;
  TORCH_CHECK(rows >= first + docs, "intervention node '", n.name, "' is for cell ", cell, " but the batch holds ",
              rows / std::max<int64_t>(docs, 1) - 2, " cells");
  return first;
}

namespace {
/// "file:line:col: " of the script line that made intervention node `n`
/// (its loc), so a refusal names the line, not the node's internal name.
std::string located(const Node &n) { return n.loc.empty() ? "" : n.loc + ": "; }
} // namespace

at::Tensor interventionPositions(const Node &n, const Model::Interventions &iv, int64_t T) {
  const std::string &role = n.attrs.at("role").s;
  at::Tensor pos;
  if (role == "pos") {
    pos = at::full({iv.docs}, attrI(n, "index"), at::kLong);
  } else {
    auto it = iv.roles.find(role);
    TORCH_CHECK(it != iv.roles.end(), located(n), "the script's position '", role,
                "' has no positions in the documents given (with mixc.intervene(pairs=), give pairs['",
                role == "answer" ? "answer_position" : role, "'], [n] int64, as mixc.task(run)['pairs'] has it)");
    pos = it->second + attrI(n, "offset");
  }
  const int64_t offset = attrI(n, "offset");
  const std::string where = role == "pos" ? "pos(" + std::to_string(attrI(n, "index")) + ")"
                            : offset == 0 ? role
                                          : role + (offset > 0 ? "+" : "") + std::to_string(offset);
  TORCH_CHECK(pos.min().item<int64_t>() >= 0 && pos.max().item<int64_t>() < T, located(n), "position ", where,
              " falls outside documents of ", T, " tokens (positions 0..", T - 1, ")");
  return pos;
}

at::Tensor interchangeSubspace(const at::Tensor &base, const at::Tensor &source, const at::Tensor &rows) {
  return base + at::matmul(at::matmul(source - base, rows.t()), rows); // [N, W] → [N, k] → [N, W]
}

at::Tensor intervene(const at::Tensor &x, const Node &n, const Model::Interventions &iv) {
  const int64_t docs = iv.docs, first = cellRow(n, iv, x.size(0));
  if (first < 0)
    return x; // another block's cell
  if (const int64_t k = attrI(n, "das", 0); k > 0) { // one position a document, the whole vector
    auto it = iv.rotations.find(n.name);
    TORCH_CHECK(it != iv.rotations.end(), "'", n.name, "' is a das(", k,
                ") cell with no learned subspace: `mixc align RUN SCRIPT` trains and evaluates das cells");
    const at::Tensor &rows = it->second;
    // Any number of rows: `mixc align` also evaluates the node's first k
    // channels and the whole vector (rows = I) through this same path.
    TORCH_CHECK(rows.dim() == 2 && rows.size(1) * x.size(0) * x.size(1) == x.numel(), "'", n.name,
                "': its subspace is ", rows.sizes(), ", not [k, values at a position]");
    at::Tensor pos = interventionPositions(n, iv, x.size(1));
    at::Tensor cellRows = at::arange(first, first + docs, at::kLong), src = at::arange(docs, at::kLong);
    at::Tensor base = x.index({cellRows, pos}), source = x.index({src, pos}); // [docs, ...]
    at::Tensor mixed = interchangeSubspace(base.reshape({docs, -1}), source.reshape({docs, -1}), rows.to(x.dtype()));
    return x.index_put({cellRows, pos}, mixed.view(base.sizes()));
  }
  const Action kind = nodeAction(n);
  double sigma = attrF(n, "sigma", 0);
  const int64_t lo = attrI(n, "lo", -1), hi = attrI(n, "hi", -1), head = attrI(n, "head", -1);
  // The subspace the node changes, of a tensor whose head dimension (of x
  // [B, T, H, ...]) is `headDim`: channels [lo, hi) of the last dimension,
  // head `head`, or all of it.
  auto part = [&](const at::Tensor &t, int64_t headDim) {
    return hi >= 0 ? t.narrow(-1, lo, hi - lo) : head >= 0 ? t.select(headDim, head) : t;
  };
  at::Tensor out = x.clone();
  at::Tensor source = x.slice(0, 0, docs);
  auto value = [&](const at::Tensor &src, const at::Tensor &current) {
    switch (kind) {
    case Action::Patch:
      return src;
    case Action::Zero:
      return at::zeros_like(current);
    case Action::Mean:
      return src.mean(0, /*keepdim=*/true).expand_as(current);
    case Action::Noise:
      return current + sigma * at::randn_like(current);
    case Action::Add: { // the vector spans the subspace's values at one position
      const std::vector<double> &v = n.attrs.at("vector").floats;
      const int64_t trailing = head >= 0 ? x.dim() - 3 : 1;
      at::Tensor add = at::tensor(v, current.options().dtype(at::kDouble)).to(current.scalar_type());
      return current + add.view(current.sizes().slice(current.dim() - trailing));
    }
    default:
      TORCH_CHECK(false, "'", n.name, "': ", actionName(kind), " is not an ablation");
    }
  };
  if (n.attrs.at("role").s == "all") {
    at::Tensor target = part(out.slice(0, first, first + docs), 2); // [docs, T, ...]
    target.copy_(value(part(source, 2), target));
    return out;
  }
  at::Tensor pos = interventionPositions(n, iv, x.size(1));
  at::Tensor rows = at::arange(first, first + docs, at::kLong), src = at::arange(docs, at::kLong);
  at::Tensor current = x.index({rows, pos}); // [docs, ...]: a copy
  at::Tensor target = part(current, 1);
  target.copy_(value(part(x.index({src, pos}), 1), target.clone()));
  out.index_put_({rows, pos}, current);
  return out;
}

std::vector<at::Tensor> runWithStateEdits(const std::vector<const Node *> &edits, const Model::Interventions &iv,
                                          int64_t rows, int64_t T, int64_t stateSize,
                                          const at::TensorOptions &options, const RecurrenceRun &run,
                                          const at::Tensor &capture, const StateRange &rangeOf) {
  const int64_t docs = iv.docs;
  std::vector<std::pair<const Node *, int64_t>> active; // the edits of this block's cells, their first rows
  bool needsSource = false;
  for (const Node *e : edits)
    if (int64_t first = cellRow(*e, iv, rows); first >= 0) {
      active.push_back({e, first});
      needsSource |= readsSource(nodeAction(*e));
    }
  if (active.empty()) {
    StateAccess plain;
    plain.capture = capture;
    return run(plain, false);
  }
  const at::TensorOptions f32 = options.dtype(at::kFloat);
  // The source run's states at every step, [docs, T, S]: patch and mean read them.
  at::Tensor sourceStates;
  if (needsSource) {
    StateAccess sourceRun;
    sourceRun.capture = at::empty({docs, T, stateSize}, f32);
    run(sourceRun, true);
    sourceStates = sourceRun.capture.cpu();
  }
  // Per row: the step after which its state is edited, the value, add or replace.
  at::Tensor pos = at::full({rows}, -1, at::kLong), add = at::zeros({rows}, at::kInt);
  at::Tensor value = at::zeros({rows, stateSize}, at::kFloat);
  at::Tensor range = rangeOf ? at::zeros({rows, 2}, at::kLong) : at::Tensor();
  at::Tensor reader; // per row MIXK_EDIT_*, where an edit is an edge out of the state
  at::Tensor docIds = at::arange(docs, at::kLong);
  for (const auto &[e, first] : active) {
    at::Tensor p = interventionPositions(*e, iv, T); // [docs]
    const Action kind = nodeAction(*e);
    at::Tensor cell = at::arange(first, first + docs, at::kLong);
    pos.index_put_({cell}, p);
    if (const int r = stateEditReader(*e); r != MIXK_EDIT_BOTH) {
      if (!reader.defined())
        reader = at::full({rows}, MIXK_EDIT_BOTH, at::kInt);
      reader.index_put_({cell}, r);
    }
    int64_t from = 0, count = stateSize; // the floats this edit acts on
    if (rangeOf) {
      std::tie(from, count) = rangeOf(*e);
      range.index_put_({cell, 0}, from);
      range.index_put_({cell, 1}, count);
    }
    if (kind == Action::Patch) {
      value.index_put_({cell}, sourceStates.index({docIds, p}));
    } else if (kind == Action::Mean) {
      value.index_put_({cell}, sourceStates.index({docIds, p}).mean(0, /*keepdim=*/true).expand({docs, stateSize}));
    } else if (kind == Action::Noise) {
      value.index_put_({cell}, attrF(*e, "sigma", 0) * at::randn({docs, stateSize}, at::kFloat));
      add.index_put_({cell}, 1);
    } else if (kind == Action::Add) {
      const std::vector<double> &v = e->attrs.at("vector").floats;
      TORCH_CHECK(static_cast<int64_t>(v.size()) == count, "state edit '", e->name, "' adds ", v.size(),
                  " numbers to a state of ", count);
      at::Tensor shift = at::zeros({stateSize}, at::kFloat);
      shift.slice(0, from, from + count).copy_(at::tensor(v, at::kDouble).to(at::kFloat));
      value.index_put_({cell}, shift.expand({docs, stateSize}));
      add.index_put_({cell}, 1);
    } // zero: value 0, replace
  }
  StateAccess access;
  access.capture = capture;
  access.editPos = pos.to(options.device());
  access.editValue = value.to(options.device());
  access.editAdd = add.to(options.device());
  if (range.defined())
    access.editRange = range.to(options.device());
  if (reader.defined())
    access.editReader = reader.to(options.device());
  return run(access, false);
}

} // namespace mixc::rt
