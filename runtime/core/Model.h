//===- Model.h - execute a runtime graph on LibTorch -----------*- C++ -*-===//
#ifndef MIXC_RUNTIME_CORE_MODEL_H
#define MIXC_RUNTIME_CORE_MODEL_H

#include "runtime/core/Generated.h"
#include "abi/ChunkPlan.h"
#include "abi/Graph.h"
#include "runtime/kernels/KernelBuild.h"

#include <deque>

#include <ATen/ATen.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace mixc::rt {

/// Sets LibTorch's intra-op threads and, when the BLAS is OpenBLAS, its own
/// pool too (it otherwise spins one thread per core beside ours). 0 or less
/// means 1: these models are small, and 2 threads ran 3× slower than 1 on 2 cores.
void setThreads(int threads);

/// Runs one primitive of the op table on `inputs` with `node`'s attributes
/// (tests use it to check each primitive on its own).
std::vector<at::Tensor> runPrimitive(const graph::Node &node, const std::vector<at::Tensor> &inputs);

/// A compiled model: the graph, its parameters (LibTorch leaf tensors) and
/// a precomputed schedule of primitive calls.
class Model {
public:
  /// Validates the graph against this runtime (every op implemented, arity,
  /// attributes, init rules); returns nullptr and sets `error` otherwise.
  /// With `kernels` (--backend=generated), every region of the graph whose
  /// kernel the library holds runs as one generated call.
  static std::unique_ptr<Model> create(graph::Graph graph, std::string &error,
                                       std::shared_ptr<const kernels::Library> kernels = nullptr);

  /// Per region of the graph: "" when it runs generated, else why it runs
  /// node by node on LibTorch (always the latter without a kernel library).
  const std::vector<std::pair<std::string, std::string>> &regionStatus() const { return regionStatus_; }

  /// Draws every parameter from its init rule, in graph order, after
  /// at::manual_seed(seed): same seed, same weights.
  void initParameters(uint64_t seed);

  /// Moves every parameter and buffer to `device` (before the optimiser
  /// takes them). Generated regions need a kernel library for that device.
  void to(const at::Device &device);
  /// Where the parameters are (the CPU for a model without any).
  at::Device device() const { return tensors_.empty() ? at::Device(at::kCPU) : tensors_[0].second.device(); }

  const graph::Graph &graph() const { return graph_; }
  /// All parameters and buffers, by name, in graph order.
  const std::vector<std::pair<std::string, at::Tensor>> &tensors() const { return tensors_; }
  /// The trainable ones (requires_grad).
  std::vector<at::Tensor> trainable() const;
  /// Runs on `tensor` for the parameter or buffer `name` from now on (the
  /// same tensor object, not a copy: Python's nn.Parameter, or another
  /// model's tensor so that two models share weights). "" or why not: an
  /// unknown name, or another shape, dtype or device.
  std::string setTensor(const std::string &name, const at::Tensor &tensor);

  /// How the batch is laid out for `patch`/`ablate` nodes: blocks of `docs`
  /// rows — block 0 the source run, block 1 the untouched base run, block
  /// 2 + c the base run of intervention cell c — and where each task role
  /// sits in each document ([docs] int64).
  struct Interventions {
    int64_t docs = 0;
    std::map<std::string, at::Tensor> roles;
    /// The batch holds cells [firstCell, firstCell + numCells) after the
    /// source and base blocks; nodes of other cells pass their input
    /// through. Memory then grows with the block, not the script.
    int64_t firstCell = 0, numCells = -1; // -1: every cell
    /// When not empty: the batch's cell blocks hold these cells, in this
    /// order (firstCell and numCells are then unused); others pass through.
    std::vector<int64_t> cells;
    /// The learned subspace of each das(k) patch node, by node name: Q
    /// [k, W] with orthonormal rows (W the values at a position); gradients
    /// reach it through the forward (`mixc align` trains it).
    std::map<std::string, at::Tensor> rotations;
  };

  struct Options {
    /// Read the logits at one time step per row ([B] int64): the final
    /// `unembed` is applied to those positions only, giving [B, 1, V].
    std::optional<at::Tensor> readout;
    /// Called with each node's name and first result after it is computed.
    std::function<void(const std::string &, const at::Tensor &)> observe;
    /// Called before `observe` with each node's name and first result: a
    /// defined tensor returned replaces the value every later node reads
    /// (same shape, dtype and device, or the forward fails naming the node);
    /// an undefined one leaves it. Python's hooks (run_with_hooks).
    std::function<at::Tensor(const std::string &, const at::Tensor &)> edit;
    /// Recurrent states (a built-in recurrence's `state_name` or a scan's
    /// state) also passed to `edit`, as [B, T, S] (every step's state): the
    /// steps where the replacement differs are edited as `patch … state` at
    /// that step (the state handed on; docs/protocol.md §6.1), the recurrence
    /// carrying on from it. A built-in recurrence takes one edited step a
    /// row and no gradients (its kernels keep none); a scan, any steps, with
    /// gradients (its reference loop runs).
    std::set<std::string> hookStates;
    /// Values inside a `scan`'s step also passed to `edit`, as [B, T, ...]
    /// (every step's value): the steps where the replacement differs take
    /// it, the rest of the step and the later steps reading it (the scan's
    /// reference loop runs, with gradients).
    std::set<std::string> hookStepValues;
    /// Recurrent states (their `state_name`s) also passed to `observe`, as
    /// [B, T, S] (every step's state, after any edit; layouts in
    /// abi/StateLayout.h). Without gradients only.
    std::set<std::string> saveStates;
    /// Values inside a `scan`'s step (its body's nodes) also passed to
    /// `observe`, as [B, T, ...] (every step's value, gradients kept). A scan
    /// read so runs its reference loop, and so does one whose states are
    /// read (there both with and without gradients).
    std::set<std::string> saveStepValues;
    /// Required when the graph holds intervention nodes.
    std::optional<Interventions> interventions;
    /// Attribution (train/Attribute.h): patch and ablate nodes pass their
    /// input through unchanged, as probes whose observed values and their
    /// gradients give the first-order estimate of each cell's effect.
    bool probes = false;
  };

  /// Why `tokens` cannot be this model's input, or "" when they can: a
  /// [B, T] int64 tensor with B, T >= 1 on the model's device, every token
  /// in [0, vocabulary). The front ends ask before `forward` (task data is
  /// checked when it is loaded), so the library says what is wrong, naming
  /// the token and the vocabulary, instead of LibTorch's "index out of range".
  std::string checkTokens(const at::Tensor &tokens) const;
  /// Why the parameters and buffers cannot run, or "": each must still be
  /// what the graph declares (its shape, f32) and all on one device. Python
  /// may replace a Parameter's `.data` with any tensor, and the generated
  /// kernels index by the declared shape (another would read and write out
  /// of bounds): `forward` asks first, so every front end is covered.
  std::string checkTensors() const;
  /// The embedding's rows: tokens are in [0, vocabulary()); 0 without one.
  int64_t vocabulary() const;

  /// How linear scans run (docs/chunked-form.md): their step loop (or its
  /// generated kernel), or chunkwise from the compiler's plan
  /// (runtime/core/ScanChunked.h) with `chunk` steps a chunk. A scan without
  /// a plan, or one that an intervention, a hook or a read reaches inside,
  /// runs its loop either way.
  struct ScanForm {
    bool chunked = false;
    int64_t chunk = 64;
  };
  void setScanForm(ScanForm form) { scanForm_ = form; }
  /// Per scan of the graph: "" when it runs chunkwise under the chunked
  /// form, else why it keeps its loop.
  std::vector<std::pair<std::string, std::string>> scanFormStatus() const;

  /// tokens [B, T] int64 -> the graph's first output (logits).
  at::Tensor forward(const at::Tensor &tokens, const Options &options) const;
  at::Tensor forward(const at::Tensor &tokens) const { return forward(tokens, Options{}); }

private:
  struct Step {
    const graph::Node *node; // a region step: its last node
    std::vector<int> inputs; // value ids
    int firstResult;         // value id of result 0
    using Fn = std::vector<at::Tensor> (*)(const std::vector<at::Tensor> &, const graph::Node &);
    Fn fn;
    const BoundRegion *region = nullptr; // runs the generated kernel instead
    std::vector<int> regionResults;      // value ids of the region's outputs
    /// A recurrence (or its region) whose state is edited: the state_edit
    /// nodes, the state's floats per row, which inputs are [B, T, ...] rows.
    const std::string *stateName = nullptr; // a recurrence with an explicit state (abi/StateLayout.h)
    const std::vector<const graph::Node *> *edits = nullptr;
    int64_t stateSize = 0;
    std::vector<bool> inputIsRow;
  };
  /// Replaces the node steps of each region `kernels_` can run by one call.
  void bindRegions(const std::unordered_map<std::string, int> &ids);
  void forwardScanLoop(const Step &s, const std::vector<at::Tensor> &args, const Options &options,
                       std::vector<at::Tensor> &values) const;
  void storeScanResults(const Step &s, std::vector<at::Tensor> out, const Options &options,
                        std::vector<at::Tensor> &values) const;
  explicit Model(graph::Graph g) : graph_(std::move(g)) {}

  graph::Graph graph_;
  std::vector<std::pair<std::string, at::Tensor>> tensors_;
  std::vector<Step> steps_;
  std::shared_ptr<const kernels::Library> kernels_;
  std::deque<BoundRegion> bound_; // steps point into it: a deque keeps addresses
  std::vector<std::pair<std::string, std::string>> regionStatus_;
  std::map<std::string, std::vector<const graph::Node *>> stateEdits_; // by target recurrence
  int numValues_ = 0;
  bool readoutAtOutput_ = false; // an intervention reads the LM head's output: no gather before it
  int inputValue_ = 0;
  std::vector<int> paramValues_;
  int outputValue_ = 0;
  ScanForm scanForm_;
  std::map<const graph::Node *, graph::ChunkPlan> chunkPlans_; // the scans that have one
};

} // namespace mixc::rt

#endif
