//===- Replicas.h - K copies of a model in one program ----------*- C++ -*-===//
//
// Packed training (issue 35): the cells of a sweep that share a graph and
// differ only in learning rate, weight decay or init seed are K models with
// the same program. ReplicatedModel runs that program once for all K: every
// parameter gains a leading replica dimension, [K, ...shape], and every
// value computed from the tokens holds the K replicas' rows one block after
// another, [K·B, ...] (replica k's rows are [k·B, (k+1)·B)). Values computed
// from weights alone (a positional table's slice, Hyena's filter) are
// [K, ...] like the weights.
//
// An op whose operands are rows and constants only runs as it is: rows are
// independent, so the replicas are just a larger batch. An op with a per-
// replica operand runs by its batching rule, declared with its definition
// in MixOps.td (abi/OpRegistry.h's Batching): per-element ops broadcast
// [K, 1, ..., D] weights against [K, B, ...] rows, `linear` and `unembed` are
// one batched matmul, `embedding` one lookup in the K tables, norms scale per
// replica after normalising, depthwise convs fold the replicas into K·C
// channels, and every other op (the recurrences, scans, attention with a
// weight operand) runs once a replica on its rows — the reference the other
// rules are tested against (test/unit/ReplicasTest.cpp).
//
// Replica k computes exactly what the model alone computes with replica k's
// weights (up to float rounding of the batched matmul): the loss of the pack
// is the sum of the replicas' losses, so each replica's weights get the
// gradient of its own loss only.
//
// With a kernel library (--backend=generated), each fused region that has a
// kernel runs generated: once for all replicas where it reads only rows and
// constants, else once a replica on its rows and weights (the kernels take
// one set of weights a call). Interventions run on the members alone
// (ReplicatedModel::create refuses graphs with intervention nodes).
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_CORE_REPLICAS_H
#define MIXC_RUNTIME_CORE_REPLICAS_H

#include "abi/Graph.h"
#include "runtime/core/Generated.h"
#include "runtime/core/Model.h"

#include <ATen/ATen.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace mixc::rt {

class ReplicatedModel {
public:
  /// K ≥ 1 replicas of `graph`'s model; nullptr and `error` when the graph
  /// cannot run on this runtime or cannot be packed (an intervention node,
  /// an op that mixes the batch's rows). With `kernels`, the regions the
  /// library holds run generated (regionStatus says which).
  static std::unique_ptr<ReplicatedModel> create(graph::Graph graph, int64_t replicas, std::string &error,
                                                 std::shared_ptr<const kernels::Library> kernels = nullptr);

  int64_t replicas() const { return replicas_; }
  /// Per region of the graph: "" when it runs generated, else why it runs
  /// node by node (always the latter without a kernel library).
  const std::vector<std::pair<std::string, std::string>> &regionStatus() const { return regionStatus_; }
  const graph::Graph &graph() const { return member_->graph(); }

  /// Replica k's weights drawn as Model::initParameters(seeds[k]) draws
  /// them alone: same seed, same weights.
  void initParameters(const std::vector<uint64_t> &seeds);
  /// Replica k's weights from `model` (a member trained or restored alone).
  std::string setReplica(int64_t k, const Model &model);
  /// Copies replica k's weights into `model` (same graph): its checkpoint.
  void copyReplicaTo(int64_t k, Model &model) const;

  /// Every parameter and buffer [K, ...shape], by name, in graph order.
  const std::vector<std::pair<std::string, at::Tensor>> &tensors() const { return tensors_; }
  std::vector<at::Tensor> trainable() const;
  void to(const at::Device &device);
  at::Device device() const { return tensors_.empty() ? at::Device(at::kCPU) : tensors_[0].second.device(); }

  /// tokens [B, T] int64, the same documents for every replica -> logits
  /// [K, B, T, V]; with `readout` ([B] int64), the logits at one step per
  /// row, [K, B, V].
  at::Tensor forward(const at::Tensor &tokens, const std::optional<at::Tensor> &readout = std::nullopt) const;

  /// How a value is laid out across the replicas.
  enum class Layout { Shared, Rows, PerReplica };

private:
  struct Step {
    const graph::Node *node;
    std::vector<int> inputs;
    int firstResult;
    Layout layout; // of its results
    const BoundRegion *region = nullptr; // a region's step (at its last node): its kernel
    std::vector<int> regionResults;      // the region's outputs' value ids
  };
  ReplicatedModel() = default;
  std::vector<at::Tensor> runStep(const Step &s, const std::vector<at::Tensor> &args, int64_t rowsPerReplica) const;
  std::vector<at::Tensor> runRegionStep(const Step &s, const std::vector<at::Tensor> &args,
                                        int64_t rowsPerReplica) const;
  /// Replaces the node steps of each region `kernels` can run by one step.
  void bindRegions(const kernels::Library *kernels, const std::unordered_map<std::string, int> &ids);

  int64_t replicas_ = 1;
  std::unique_ptr<Model> member_; // the graph checked by Model::create; draws each replica's init
  std::vector<std::pair<std::string, at::Tensor>> tensors_;
  std::vector<Step> steps_;
  std::vector<Layout> layouts_; // per value
  int numValues_ = 0, outputValue_ = 0;
  std::vector<int> paramValues_;
  std::deque<BoundRegion> bound_; // steps point into it: a deque keeps addresses
  std::vector<std::pair<std::string, std::string>> regionStatus_;
};

} // namespace mixc::rt

#endif
