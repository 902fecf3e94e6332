//===- Generated.h - run a fused region through its generated kernel -*- C++ -*-===//
//
// `--backend=generated`: a region of the graph (graph::Region) whose kernel
// was generated runs as one autograd function calling the kernel's forward
// and backward (abi/KernelAbi.h) instead of one LibTorch op per
// node. The same code serves both libraries: the CPU one takes host
// pointers, the CUDA one device pointers (tensors on the current device,
// kernels launched on the default stream, which LibTorch also uses unless a
// caller sets another).
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_CORE_GENERATED_H
#define MIXC_RUNTIME_CORE_GENERATED_H

#include "abi/Graph.h"
#include "runtime/core/Primitives.h"
#include "runtime/kernels/KernelBuild.h"

#include <ATen/ATen.h>

#include <deque>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace mixc::rt {

/// A region bound to its kernel: what the call needs to size its tensors.
struct BoundRegion {
  const graph::Region *region = nullptr;
  kernels::RegionFns fns;
  kernels::Target target = kernels::Target::Cpu; // where its tensors must live
  std::vector<bool> inputIsRow; // leads with the rowRank run-time dims
  std::vector<bool> inputIsFilter; // a long conv's [L, C] filter: L ≥ T rows
  std::vector<bool> outputIsRow;
  std::vector<std::vector<int64_t>> outputShapes; // run-time dims as graph::kDynamic
};

/// A node-by-node schedule's steps of each region, by their nodes' `fused`
/// attribute, in schedule order. `Step` has `node` (a graph::Node *),
/// `inputs` (value ids) and `firstResult` (the value id of result 0), as
/// Model's and ReplicatedModel's steps do.
template <class Step>
std::map<std::string, std::vector<size_t>> regionSteps(const std::vector<Step> &steps) {
  std::map<std::string, std::vector<size_t>> members;
  for (size_t i = 0; i < steps.size(); ++i)
    if (auto it = steps[i].node->attrs.find("fused"); it != steps[i].node->attrs.end())
      members[it->second.s].push_back(i);
  return members;
}

/// Why a region's steps `idx` cannot become one call where its last node
/// was: a step between them, outside the region, reads one of its results
/// ("" when none does).
template <class Step>
std::string readBetweenRegionSteps(const std::vector<Step> &steps, const std::vector<size_t> &idx) {
  if (idx.empty())
    return "";
  std::set<int> produced;
  for (size_t i : idx)
    for (size_t k = 0; k < steps[i].node->shapes.size(); ++k)
      produced.insert(steps[i].firstResult + static_cast<int>(k));
  const std::set<size_t> inside(idx.begin(), idx.end());
  for (size_t i = idx.front(); i < idx.back(); ++i)
    if (!inside.count(i))
      for (int v : steps[i].inputs)
        if (produced.count(v))
          return "node '" + steps[i].node->name + "' between its nodes reads its results";
  return "";
}

/// Binds `region` to `library`'s symbols, reading value shapes from the
/// graph; "" on success, else why the region cannot run generated.
std::string bindRegion(const graph::Graph &g, const graph::Region &region,
                       const kernels::Library &library, BoundRegion &bound);

/// Replaces the node steps of each region of `g` that `kernels` can run
/// (none without a library) by one step where its last node was, for Model
/// and ReplicatedModel alike. `refuse(steps, idx)` gives a caller's own
/// reason not to bind a region ("" for none); `regionStep(last, b, idx)`
/// makes the region's step from its last node's step; its `inputs` and
/// `regionResults` (value ids by `ids`) are filled here. Appends one
/// status a region ("" when it runs generated, else why not) and the
/// bound regions (which the new steps point into).
template <class Step, class Refuse, class RegionStep>
void bindRegionSteps(const graph::Graph &g, const kernels::Library *kernels, std::vector<Step> &steps,
                     const std::unordered_map<std::string, int> &ids, std::deque<BoundRegion> &bound,
                     std::vector<std::pair<std::string, std::string>> &status, Refuse refuse,
                     RegionStep regionStep) {
  std::map<std::string, std::vector<size_t>> members = regionSteps(steps);
  std::vector<int> replacedBy(steps.size(), -1); // step -> index into bound
  for (const graph::Region &r : g.regions) {
    std::string why = kernels ? "" : "the libtorch back end";
    BoundRegion b;
    if (why.empty())
      why = bindRegion(g, r, *kernels, b);
    const std::vector<size_t> &idx = members[r.name];
    if (why.empty() && idx.empty())
      why = "no node is tagged with it";
    if (why.empty())
      why = refuse(steps, idx);
    if (why.empty())
      why = readBetweenRegionSteps(steps, idx);
    status.push_back({r.name, why});
    if (!why.empty())
      continue;
    bound.push_back(std::move(b));
    for (size_t i : idx)
      replacedBy[i] = static_cast<int>(bound.size()) - 1;
  }
  std::vector<Step> out;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (replacedBy[i] < 0) {
      out.push_back(std::move(steps[i]));
      continue;
    }
    const BoundRegion &b = bound[replacedBy[i]];
    const std::vector<size_t> &idx = members[b.region->name];
    if (idx.back() != i)
      continue; // the region's call goes where its last node was
    Step s = regionStep(steps[i], b, idx);
    s.region = &b;
    s.inputs.clear(), s.regionResults.clear();
    for (const std::string &v : b.region->inputs)
      s.inputs.push_back(ids.at(v));
    for (const std::string &v : b.region->outputs)
      s.regionResults.push_back(ids.at(v));
    out.push_back(std::move(s));
  }
  steps = std::move(out);
}

/// Runs the region: inputs in region order, outputs in region order.
/// Differentiable (the kernel's backward) when grad mode is on.
std::vector<at::Tensor> runRegion(const BoundRegion &region, const std::vector<at::Tensor> &inputs);

/// The region's forward with a state access for its recurrence (forward
/// only, under no-grad): the kernel captures or edits the state itself, so
/// the region stays one call.
std::vector<at::Tensor> runRegion(const BoundRegion &region, const std::vector<at::Tensor> &inputs,
                                  const StateAccess &access);

} // namespace mixc::rt

#endif
