//===- Scan.cpp - the reference loop of a DSL-defined recurrence ------------===//
#include "runtime/core/Scan.h"
#include "runtime/core/Model.h"
#include "runtime/core/Interventions.h"
#include "runtime/core/NodeAttrs.h"
#include "runtime/core/Primitives.h"
#include "abi/StateLayout.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

namespace mixc::rt {

std::string checkScanBody(const graph::Node &scan, const std::function<std::string(const graph::Node &)> &check) {
  const int64_t states = attrI(scan, "num_states");
  const std::vector<int64_t> &sliced = attrInts(scan, "sliced");
  if (states < 0 || static_cast<size_t>(states) + scan.inputs.size() != scan.bodyArgs.size() ||
      sliced.size() != scan.inputs.size() ||
      scan.bodyResults.size() != static_cast<size_t>(states) + scan.shapes.size())
    return "scan '" + scan.name + "': its step takes " + std::to_string(scan.bodyArgs.size()) + " arguments for " +
           std::to_string(states) + " states and " + std::to_string(scan.inputs.size()) + " inputs, and returns " +
           std::to_string(scan.bodyResults.size()) + " values for its " + std::to_string(scan.shapes.size()) +
           " results";
  if (std::find(sliced.begin(), sliced.end(), 1) == sliced.end())
    return "scan '" + scan.name + "' slices no input over time";
  for (const graph::Node &n : scan.body)
    if (std::string why = check(n); !why.empty())
      return "scan '" + scan.name + "': " + why;
  return "";
}

namespace {
/// One state edit resolved for this batch: the state it edits, the first
/// row of its cell, each document's step P, and for `mean` the value.
struct ActiveEdit {
  const graph::Node *node;
  size_t state;
  int64_t first, docs;
  at::Tensor pos, mean; // pos undefined: every step (`all`)
};

std::vector<std::string> stateNames(const graph::Node &scan) {
  std::vector<std::string> out;
  const std::string &joined = scan.attrs.at("state_names").s;
  for (size_t start = 0; start <= joined.size();) {
    size_t comma = joined.find(',', start);
    out.push_back(joined.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return out;
}

} // namespace

ScanStates scanStates(const graph::Node &scan) {
  ScanStates out;
  const std::vector<std::string> names = stateNames(scan);
  for (size_t k = 0; k < names.size() && k < scan.bodyArgs.size(); ++k) {
    const int64_t size = graph::scanStateLayout(scan.bodyArgs[k].shape).second;
    out.range[names[k]] = {out.floats, size};
    out.floats += size;
  }
  return out;
}

namespace {
/// `state` [rows, ...] (a state, or a value of the step) with edit `a`
/// applied to its cell's rows whose P is step t (every step for `all`).
at::Tensor applyEdit(const ActiveEdit &a, const at::Tensor &state, int64_t t) {
  at::Tensor docs = a.pos.defined() ? (a.pos == t).nonzero().view(-1) : at::arange(a.docs, at::kLong);
  if (docs.numel() == 0)
    return state;
  at::Tensor rows = docs + a.first;
  const Action kind = nodeAction(*a.node);
  at::Tensor current = state.index({rows}), value;
  if (kind == Action::Patch)
    value = state.index({docs}); // the source rows, this same step
  else if (kind == Action::Zero)
    value = at::zeros_like(current);
  else if (kind == Action::Mean)
    value = a.mean.to(current.dtype()).expand_as(current);
  else if (kind == Action::Noise)
    value = current + attrF(*a.node, "sigma", 0) * at::randn_like(current);
  else { // add
    const std::vector<double> &v = a.node->attrs.at("vector").floats;
    TORCH_CHECK(static_cast<int64_t>(v.size()) * current.size(0) == current.numel(), "state edit '", a.node->name,
                "' adds ", v.size(), " numbers to a state of ", current.numel() / std::max<int64_t>(current.size(0), 1));
    value = current + at::tensor(v, at::kDouble).to(current.dtype()).view(current.sizes().slice(1));
  }
  return state.index_put({rows}, value);
}
} // namespace

namespace {
/// Step t's `current` [B, ...] with the rows the override changed replaced.
at::Tensor overridden(const StepOverride &o, int64_t t, const at::Tensor &current) {
  if (o.probe)
    return current + probeTerm(o.value, t);
  std::vector<int64_t> rowShape(current.dim(), 1); // [B, 1, ...]: each row's flag over its value
  rowShape[0] = current.size(0);
  return at::where(o.changed.select(1, t).view(rowShape), o.value.select(1, t), current);
}
} // namespace

std::vector<at::Tensor> runScan(const std::vector<at::Tensor> &inputs, const graph::Node &scan,
                                const ScanEdits &edits, std::vector<at::Tensor> *states, ScanReads *readOut,
                                const std::vector<StepOverride> *overrides) {
  const int64_t numStates = attrI(scan, "num_states");
  const std::vector<int64_t> &sliced = attrInts(scan, "sliced");
  at::Tensor sequence;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (sliced[i]) {
      TORCH_CHECK(inputs[i].dim() >= 2, "scan '", scan.name, "': input ", i, " is sliced over time but is ",
                  inputs[i].sizes());
      TORCH_CHECK(!sequence.defined() || (inputs[i].size(0) == sequence.size(0) && inputs[i].size(1) == sequence.size(1)),
                  "scan '", scan.name, "': its sliced inputs disagree on [B, T]");
      if (!sequence.defined())
        sequence = inputs[i];
    }
  const int64_t B = sequence.size(0), T = sequence.size(1);

  // Slots: the step's arguments, then each node's results; inputs by slot.
  std::unordered_map<std::string, size_t> slot;
  for (const graph::Input &a : scan.bodyArgs)
    slot.emplace(a.name, slot.size());
  std::vector<std::vector<size_t>> reads(scan.body.size());
  std::vector<size_t> firstResult(scan.body.size());
  for (size_t k = 0; k < scan.body.size(); ++k) {
    const graph::Node &n = scan.body[k];
    for (const std::string &in : n.inputs)
      reads[k].push_back(slot.at(in));
    firstResult[k] = slot.size();
    for (size_t r = 0; r < n.shapes.size(); ++r)
      slot.emplace(r == 0 ? n.name : n.name + "#" + std::to_string(r), slot.size());
  }
  std::vector<size_t> results;
  for (const std::string &r : scan.bodyResults)
    results.push_back(slot.at(r));

  std::vector<at::Tensor> values(slot.size());
  for (int64_t k = 0; k < numStates; ++k) { // zero states, a row per batch element
    std::vector<int64_t> shape = scan.bodyArgs[k].shape;
    shape[0] = B;
    values[k] = at::zeros(shape, sequence.options());
  }
  // Interventions on the step's own values (patch/ablate nodes in the body),
  // by body node: at each document's step P, in its cell's rows.
  std::vector<std::optional<ActiveEdit>> valueEdits(scan.body.size());
  std::vector<bool> probe(scan.body.size());
  for (size_t k = 0; k < scan.body.size(); ++k) {
    const graph::Node &n = scan.body[k];
    if (n.op != "patch" && n.op != "ablate")
      continue;
    if (edits.probes) { // attribution's probe: the value passes on (its override gives the gradient)
      probe[k] = true;
      continue;
    }
    TORCH_CHECK(edits.iv, "scan '", scan.name, "' has an intervention on '", n.name,
                "' in its step; run the model with `mixc intervene`");
    const int64_t first = cellRow(n, *edits.iv, B);
    TORCH_CHECK(nodeAction(n) != Action::Mean, "'", n.name,
                "': mean is not defined on a scan step's value (patch, zero, noise or add)");
    at::Tensor pos = n.attrs.at("role").s == "all" ? at::Tensor() : interventionPositions(n, *edits.iv, T);
    valueEdits[k] = ActiveEdit{&n, 0, first, edits.iv->docs, pos, {}};
  }
  // The edits of this batch's cells, by state.
  std::vector<ActiveEdit> active;
  if (edits.edits && !edits.probes) {
    TORCH_CHECK(edits.iv, "scan '", scan.name, "' has state edits; run the model with `mixc intervene`");
    const std::vector<std::string> names = stateNames(scan);
    for (const graph::Node *e : *edits.edits) {
      const int64_t first = cellRow(*e, *edits.iv, B);
      if (first < 0)
        continue;
      auto k = std::find(names.begin(), names.end(), e->attrs.count("state") ? e->attrs.at("state").s : "");
      TORCH_CHECK(k != names.end(), "state edit '", e->name, "' names no state of scan '", scan.name, "'");
      active.push_back({e, static_cast<size_t>(k - names.begin()), first, edits.iv->docs,
                        interventionPositions(*e, *edits.iv, T), {}});
    }
    for (ActiveEdit &a : active)
      if (nodeAction(*a.node) == Action::Mean) { // the source run's states, at each document's P
        const int64_t docs = edits.iv->docs;
        std::vector<at::Tensor> sourceIn = inputs, sourceStates;
        for (size_t i = 0; i < inputs.size(); ++i)
          if (sliced[i])
            sourceIn[i] = inputs[i].slice(0, 0, docs);
        // The source run's rows carry no cell's edit: the step's own
        // interventions pass its values through there (as attribution's
        // probes do), so a mean ablation of the state works beside an edit
        // of a step value (each line alone did; together they were refused).
        runScan(sourceIn, scan, ScanEdits{nullptr, nullptr, /*probes=*/true}, &sourceStates);
        a.mean = sourceStates[a.state].index({at::arange(docs, at::kLong), a.pos}).mean(0);
      }
  }
  std::vector<std::vector<at::Tensor>> emitted(results.size() - numStates), kept(states ? numStates : 0);
  std::vector<std::vector<at::Tensor>> readSteps(scan.body.size()); // [body node][t], the ones `reads` names
  std::vector<bool> isRead(scan.body.size());
  for (size_t k = 0; k < scan.body.size(); ++k)
    isRead[k] = readOut && readOut->names && readOut->names->count(scan.body[k].name);
  for (int64_t t = 0; t < T; ++t) {
    for (size_t i = 0; i < inputs.size(); ++i)
      values[numStates + i] = sliced[i] ? inputs[i].select(1, t) : inputs[i];
    for (size_t k = 0; k < scan.body.size(); ++k) {
      std::vector<at::Tensor> in;
      for (size_t s : reads[k])
        in.push_back(values[s]);
      if (valueEdits[k]) { // patch / ablate of a step value: its cell's rows at step P
        values[firstResult[k]] = valueEdits[k]->first < 0 ? in[0] : applyEdit(*valueEdits[k], in[0], t);
      } else if (probe[k]) {
        values[firstResult[k]] = in[0];
      } else {
        std::vector<at::Tensor> out = runPrimitive(scan.body[k], in);
        for (size_t r = 0; r < out.size(); ++r)
          values[firstResult[k] + r] = std::move(out[r]);
      }
      if (overrides)
        for (const StepOverride &o : *overrides)
          if (o.kind == StepOverride::Value && o.index == k)
            values[firstResult[k]] = overridden(o, t, values[firstResult[k]]);
      if (isRead[k])
        readSteps[k].push_back(values[firstResult[k]]);
    }
    std::vector<at::Tensor> next(numStates);
    for (int64_t k = 0; k < numStates; ++k)
      next[k] = values[results[k]];
    // The state step t hands on is edited; what step t emitted stays (its
    // body computed it from the unedited state), so outputs from t + 1 change.
    for (const ActiveEdit &a : active)
      next[a.state] = applyEdit(a, next[a.state], t);
    if (overrides)
      for (const StepOverride &o : *overrides)
        if (o.kind == StepOverride::State)
          next[o.index] = overridden(o, t, next[o.index]);
    for (int64_t k = 0; k < static_cast<int64_t>(kept.size()); ++k)
      kept[k].push_back(next[k]);
    for (size_t j = 0; j < emitted.size(); ++j)
      emitted[j].push_back(values[results[numStates + j]]);
    for (int64_t k = 0; k < numStates; ++k)
      values[k] = next[k];
  }
  std::vector<at::Tensor> out;
  for (std::vector<at::Tensor> &steps : emitted)
    out.push_back(at::stack(steps, 1)); // [B, T, ...]
  if (states)
    for (std::vector<at::Tensor> &steps : kept)
      states->push_back(at::stack(steps, 1));
  for (size_t k = 0; k < scan.body.size(); ++k)
    if (isRead[k] && !readSteps[k].empty())
      readOut->values[scan.body[k].name] = at::stack(readSteps[k], 1); // [B, T, ...]
  return out;
}

} // namespace mixc::rt
