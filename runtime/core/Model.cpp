//===- Model.cpp - the graph interpreter ------------------------------------===//
#include "runtime/core/Model.h"
#include "abi/OpRegistry.h"
#include "abi/StateLayout.h"
#include "support/Memory.h"
#include "runtime/core/Init.h"
#include "runtime/core/Interventions.h"
#include "runtime/core/NodeAttrs.h"
#include "runtime/core/Primitives.h"
#include "runtime/core/Scan.h"
#include "runtime/core/ScanChunked.h"

#include <ATen/Parallel.h>
#include <algorithm>
#include <dlfcn.h>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

namespace mixc::rt {
namespace {
using Inputs = std::vector<at::Tensor>;
using Outputs = std::vector<at::Tensor>;
using graph::Node;

at::Tensor optional(const Inputs &in, size_t i) { return i < in.size() ? in[i] : at::Tensor(); }

// How to run each mix op; its operands and attributes are its ODS
// definition's (abi/OpRegistry.h).
using OpFn = Outputs (*)(const Inputs &, const Node &);

Outputs one(at::Tensor t) { return {std::move(t)}; }

const std::map<std::string, OpFn> &opTable() {
  static const std::map<std::string, OpFn> table = [] {
    std::map<std::string, OpFn> t = {
      {"constant", [](const Inputs &, const Node &n) {
                      return one(at::scalar_tensor(attrF(n, "value", 0), at::kFloat));
                    }},
      {"time_slice", [](const Inputs &in, const Node &) {
                        int64_t T = in[1].size(1);
                        TORCH_CHECK(T <= in[0].size(0), "sequence length ", T,
                                    " exceeds the table's ", in[0].size(0), " rows");
                        return one(in[0].slice(0, 0, T));
                      }},
      {"embedding", [](const Inputs &in, const Node &) { return one(at::embedding(in[1], in[0])); }},
      {"unembed", [](const Inputs &in, const Node &) { return one(at::matmul(in[0], in[1].t())); }},
      {"linear", [](const Inputs &in, const Node &) { return one(at::linear(in[0], in[1], optional(in, 2))); }},
      {"add", [](const Inputs &in, const Node &) { return one(in[0] + in[1]); }},
      {"sub", [](const Inputs &in, const Node &) { return one(in[0] - in[1]); }},
      {"mul", [](const Inputs &in, const Node &) { return one(broadcastMul(in[0], in[1])); }},
      {"div", [](const Inputs &in, const Node &) { return one(in[0] / in[1]); }},
      {"neg", [](const Inputs &in, const Node &) { return one(-in[0]); }},
      {"abs", [](const Inputs &in, const Node &) { return one(at::abs(in[0])); }},
      {"exp", [](const Inputs &in, const Node &) { return one(at::exp(in[0])); }},
      {"sin", [](const Inputs &in, const Node &) { return one(at::sin(in[0])); }},
      {"silu", [](const Inputs &in, const Node &) { return one(at::silu(in[0])); }},
      {"gelu", [](const Inputs &in, const Node &) { return one(at::gelu(in[0])); }},
      {"relu", [](const Inputs &in, const Node &) { return one(at::relu(in[0])); }},
      {"softplus", [](const Inputs &in, const Node &) { return one(at::softplus(in[0])); }},
      {"sigmoid", [](const Inputs &in, const Node &) { return one(at::sigmoid(in[0])); }},
      {"tap", [](const Inputs &in, const Node &) { return one(in[0]); }},
      {"layernorm", [](const Inputs &in, const Node &n) {
                       return one(at::layer_norm(in[0], {in[0].size(-1)}, in[1], in[2], attrF(n, "eps")));
                     }},
      {"rmsnorm", [](const Inputs &in, const Node &n) { return one(rmsNorm(in[0], in[1], attrF(n, "eps"))); }},
      {"l2norm", [](const Inputs &in, const Node &n) { return one(l2Norm(in[0], attrF(n, "eps"))); }},
      {"split", [](const Inputs &in, const Node &n) {
                   std::vector<at::Tensor> parts = at::split_with_sizes(in[0], attrInts(n, "sizes"), -1);
                   return Outputs(parts.begin(), parts.end());
                 }},
      {"concat", [](const Inputs &in, const Node &) { return one(at::cat(in, -1)); }},
      {"reshape", [](const Inputs &in, const Node &n) {
                     std::vector<int64_t> shape(in[0].sizes().begin(), in[0].sizes().begin() + attrI(n, "keep"));
                     for (int64_t d : attrInts(n, "shape"))
                       shape.push_back(d);
                     return one(in[0].reshape(shape));
                   }},
      {"permute", [](const Inputs &in, const Node &n) { return one(in[0].permute(attrInts(n, "perm"))); }},
      {"sum", [](const Inputs &in, const Node &n) {
                 return one(sumOver(in[0], attrI(n, "axis"), attrB(n, "keepdim", false)));
               }},
      {"causal_conv", [](const Inputs &in, const Node &) { return one(causalConv(in[0], in[1], optional(in, 2))); }},
      {"long_conv", [](const Inputs &in, const Node &) { return one(longConv(in[0], in[1])); }},
      {"shift_conv", [](const Inputs &in, const Node &) {
                        return one(longConv(in[0], shiftKernel(in[1], in[2], in[0].size(1))));
                      }},
      {"diag_ssm", [](const Inputs &in, const Node &) { return one(diagSSM(in[0], in[1], in[2], in[3], in[4], in[5])); }},
      {"softmax_attention", [](const Inputs &in, const Node &) { return one(softmaxAttention(in[0], in[1], in[2])); }},
      {"taylor_map", [](const Inputs &in, const Node &) { return one(taylorMap(in[0])); }},
      // A DSL-defined recurrence: its step, node by node, once a time step.
      {"scan", [](const Inputs &in, const Node &n) { return runScan(in, n); }},
      // Interventions need the batch layout: Model::forward runs them.
      {"patch", nullptr},
      {"ablate", nullptr},
      // Read by the recurrence named `target` (Model::create collects them).
      {graph::kStateEditOp, nullptr},
    };
    // The recurrences with an explicit state (abi/OpRegistry.h) run through one entry.
    for (const ops::OpSpec &op : ops::allOps())
      if (op.hasState())
        t.emplace(op.name, [](const Inputs &in, const Node &n) { return one(runRecurrence(n, in, nullptr)); });
    return t;
  }();
  return table;
}

/// Whether no two of a scan's state edits share a cell (a row's kernel
/// state access holds one edit; two in a cell run the reference loop).
bool oneEditACell(const std::vector<const Node *> &edits) {
  std::set<int64_t> cells;
  for (const Node *e : edits)
    if (!cells.insert(attrI(*e, "cell")).second)
      return false;
  return true;
}

/// Whether a scan's step holds intervention nodes (they need the batch layout).
bool scanIntervenes(const Node &scan) {
  return std::any_of(scan.body.begin(), scan.body.end(),
                     [](const Node &n) { return n.op == "patch" || n.op == "ablate"; });
}

/// "" when this runtime can run node `n` (op, input count, attributes), else why not.
std::string checkNode(const Node &n) {
  auto it = opTable().find(n.op);
  if (it == opTable().end())
    return "node '" + n.name + "' has op '" + n.op + "', which this runtime does not implement";
  const ops::OpSpec *spec = ops::findOp(n.op);
  if (!spec) // an op the interpreter runs must be one of the dialect's
    return "node '" + n.name + "' has op '" + n.op + "', which is not a mix op";
  if (n.inputs.size() < spec->minOperands() || n.inputs.size() > spec->maxOperands())
    return "node '" + n.name + "' (" + n.op + ") has " + std::to_string(n.inputs.size()) + " inputs";
  for (const ops::AttrSpec &a : spec->attrs)
    if (a.required() && !n.attrs.count(a.name))
      return "node '" + n.name + "' (" + n.op + ") lacks attribute '" + a.name +
             "' (a graph written by an older mixc? compile the model again)";
  // An unknown kind would run as another ablation (a silent wrong answer).
  if (n.op == "ablate" || n.op == graph::kStateEditOp) {
    std::optional<Action> a = actionNamed(n.attrs.at("kind").s);
    if (!a || !(isAblation(*a) || (n.op == graph::kStateEditOp && *a == Action::Patch)))
      return "node '" + n.name + "' (" + n.op + ") has kind '" + n.attrs.at("kind").s +
           "', which is no intervention of this op";
  }
  return "";
}

/// The inputs of the source block: row values cut to their first `docs` rows.
Inputs sourceRows(const Inputs &in, const std::vector<bool> &isRow, int64_t docs) {
  Inputs out = in;
  for (size_t i = 0; i < in.size(); ++i)
    if (isRow[i])
      out[i] = in[i].slice(0, 0, docs);
  return out;
}
} // namespace

void setThreads(int threads) {
  threads = std::max(threads, 1);
  at::set_num_threads(threads);
  using SetThreads = void (*)(int);
  if (auto fn = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    fn(threads);
}

std::vector<at::Tensor> runPrimitive(const graph::Node &node, const std::vector<at::Tensor> &inputs) {
  auto it = opTable().find(node.op);
  TORCH_CHECK(it != opTable().end() && it->second, "no primitive '", node.op, "'");
  return it->second(inputs, node);
}

namespace {
/// Why `kernels` must not run beside `g` (generated for another graph:
/// another model or width, or a graph.json edited since), or "".
std::string kernelsForAnotherGraph(const graph::Graph &g, const kernels::Library *kernels) {
  if (!kernels)
    return "";
  const std::string digest = graph::graphDigest(g);
  if (kernels->graphDigest() == digest)
    return "";
  return "the kernel library " + kernels->path() + " was generated for the graph " +
         (kernels->graphDigest().empty() ? "(it does not say which)" : kernels->graphDigest()) +
         ", not for this one (" + digest +
         "): the kernels of another model, or a graph changed after compiling; compile the model again";
}
} // namespace

std::unique_ptr<Model> Model::create(graph::Graph g, std::string &error,
                                     std::shared_ptr<const kernels::Library> kernels) {
  error = graph::validate(g);
  if (!error.empty())
    return nullptr;
  if (g.inputs.size() != 1 || g.inputs[0].dtype != "i64" || g.inputs[0].shape.size() != 2) {
    error = "the model must have one input of token ids [B, T] (i64)";
    return nullptr;
  }
  if (g.outputs.empty()) {
    error = "the model has no output";
    return nullptr;
  }
  if (error = kernelsForAnotherGraph(g, kernels.get()); !error.empty())
    return nullptr;
  if (error = support::tooLargeForMemory(4 * graph::parameterFloats(g, false), "the model's weights need");
      !error.empty())
    return nullptr;
  std::unique_ptr<Model> m(new Model(std::move(g)));
  std::unordered_map<std::string, int> ids;
  ids[m->graph_.inputs[0].name] = m->numValues_++;
  for (const graph::Param &p : m->graph_.params) {
    InitRule rule;
    if (std::string e = parseInit(p.init, rule); !e.empty()) {
      error = "parameter '" + p.name + "': " + e;
      return nullptr;
    }
    ids[p.name] = m->numValues_;
    m->paramValues_.push_back(m->numValues_++);
    // Trainable ones are leaves that collect gradients from the start, so a
    // model restored from a checkpoint (weights copied in) is differentiable
    // as a freshly initialised one (attribution, the Python module).
    m->tensors_.push_back({p.name, at::zeros(p.shape, at::kFloat).set_requires_grad(p.trainable)});
  }
  for (const graph::Node &n : m->graph_.nodes) {
    if (error = checkNode(n); !error.empty())
      return nullptr;
    if (n.op == "scan")
      if (error = checkScanBody(n, [](const graph::Node &inner) {
            return inner.op == "scan" || inner.op == graph::kStateEditOp
                       ? "node '" + inner.name + "' (" + inner.op + ") cannot run inside a scan's step"
                       : checkNode(inner);
          });
          !error.empty())
        return nullptr;
    if (n.op == graph::kStateEditOp) { // not a step: its recurrence runs it
      m->stateEdits_[n.attrs.at("target").s].push_back(&n);
      continue;
    }
    Step s{&n, {}, m->numValues_, opTable().at(n.op)};
    for (const std::string &in : n.inputs)
      s.inputs.push_back(ids.at(in));
    for (size_t r = 0; r < n.shapes.size(); ++r)
      ids[r == 0 ? n.name : n.name + "#" + std::to_string(r)] = m->numValues_++;
    m->steps_.push_back(std::move(s));
  }
  m->outputValue_ = ids.at(m->graph_.outputs[0]);
  // An intervention on the LM head's output needs its every position: the
  // readout then gathers after the graph, not before `unembed`.
  for (const graph::Node &n : m->graph_.nodes)
    if ((n.op == "patch" || n.op == "ablate") && !n.inputs.empty())
      for (const graph::Node &in : m->graph_.nodes)
        if (in.name == n.inputs[0] && in.op == "unembed")
          m->readoutAtOutput_ = true;
  // Each recurrence with an explicit state learns its state's name and size
  // and which inputs are [B, T, ...] rows (the source block's cut); one
  // under state edits must keep a state.
  const auto shapes = graph::valueShapes(m->graph_);
  for (Step &s : m->steps_) {
    auto it = m->stateEdits_.find(s.node->name);
    const std::string why = graph::stateRefusal(s.node->op);
    if (it != m->stateEdits_.end() && !why.empty()) {
      error = "state edit '" + it->second[0]->name + "' targets '" + s.node->name + "': " + why;
      return nullptr;
    }
    if (s.node->op == "scan") { // its states are its own (runScan edits them)
      if (it != m->stateEdits_.end())
        s.edits = &it->second;
      continue;
    }
    auto name = s.node->attrs.find("state_name");
    if (name == s.node->attrs.end() || !why.empty())
      continue;
    s.stateName = &name->second.s;
    if (it != m->stateEdits_.end())
      s.edits = &it->second;
    std::vector<std::vector<int64_t>> operands;
    for (const std::string &in : s.node->inputs) {
      operands.push_back(shapes.at(in));
      s.inputIsRow.push_back(!operands.back().empty() && operands.back()[0] == graph::kDynamic);
    }
    s.stateSize = graph::stateSize(s.node->op, operands);
  }
  for (const auto &[target, edits] : m->stateEdits_)
    if (!ids.count(target)) {
      error = "state edit '" + edits[0]->name + "' targets '" + target + "', which is no node";
      return nullptr;
    }
  m->kernels_ = std::move(kernels);
  m->bindRegions(ids);
  for (const graph::Node &n : m->graph_.nodes) {
    if (n.op != "scan")
      continue;
    std::optional<graph::ChunkPlan> plan;
    if (std::string problem = readChunkPlan(n, plan); !problem.empty()) {
      error = problem;
      return nullptr;
    }
    if (plan)
      m->chunkPlans_[&n] = std::move(*plan);
  }
  return m;
}

void Model::bindRegions(const std::unordered_map<std::string, int> &ids) {
  auto noRefusal = [](const std::vector<Step> &, const std::vector<size_t> &) { return std::string(); };
  // The region's node steps stay in steps_ until the replacement ends.
  auto regionStep = [this](const Step &last, const BoundRegion &b, const std::vector<size_t> &members) {
    Step s{last.node, {}, -1, nullptr, &b, {}};
    for (size_t m : members) // the recurrence's state, if any
      if (const Step &n = steps_[m]; n.stateName || n.node->op == "scan") {
        s.stateName = n.stateName, s.edits = n.edits, s.inputIsRow = b.inputIsRow;
        // A scan's kernels keep all its states in a row, one after another.
        s.stateSize = n.node->op == "scan" ? scanStates(*n.node).floats : n.stateSize;
      }
    return s;
  };
  bindRegionSteps(graph_, kernels_.get(), steps_, ids, bound_, regionStatus_, noRefusal, regionStep);
}

void Model::initParameters(uint64_t seed) {
  at::manual_seed(seed);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const graph::Param &p = graph_.params[i];
    InitRule rule;
    parseInit(p.init, rule);
    at::Tensor t = initTensor(rule, p.shape);
    tensors_[i].second = t.set_requires_grad(p.trainable);
  }
}

void Model::to(const at::Device &device) {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    // A new leaf on the device (not a differentiable copy of the old one).
    at::Tensor t = tensors_[i].second.detach().to(device);
    tensors_[i].second = t.set_requires_grad(graph_.params[i].trainable);
  }
}

std::vector<at::Tensor> Model::trainable() const {
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (graph_.params[i].trainable)
      out.push_back(tensors_[i].second);
  return out;
}

std::string Model::setTensor(const std::string &name, const at::Tensor &tensor) {
  for (auto &[own, current] : tensors_) {
    if (own != name)
      continue;
    if (!tensor.defined() || tensor.sizes() != current.sizes() || tensor.scalar_type() != current.scalar_type() ||
        tensor.device() != current.device()) {
      std::ostringstream why;
      why << "'" << name << "' is " << current.sizes() << " " << current.scalar_type() << " on " << current.device()
          << "; the tensor given is ";
      if (tensor.defined())
        why << tensor.sizes() << " " << tensor.scalar_type() << " on " << tensor.device();
      else
        why << "undefined";
      return why.str();
    }
    current = tensor;
    return "";
  }
  return "the model has no parameter or buffer '" + name + "'";
}

int64_t Model::vocabulary() const {
  for (const graph::Node &n : graph_.nodes)
    if (n.op == "embedding" && n.inputs.size() == 2) // (tokens, weight [V, D])
      for (const graph::Param &p : graph_.params)
        if (p.name == n.inputs[1] && !p.shape.empty())
          return p.shape[0];
  return 0;
}

std::string Model::checkTokens(const at::Tensor &tokens) const {
  if (!tokens.defined())
    return "tokens are an undefined tensor";
  if (tokens.dim() != 2 || tokens.scalar_type() != at::kLong)
    return "tokens must be a [batch, time] int64 tensor, got " + std::string(c10::toString(tokens.scalar_type())) +
           " of " + std::to_string(tokens.dim()) + " dimensions";
  if (tokens.size(0) < 1 || tokens.size(1) < 1)
    return "tokens must hold at least one document of at least one token, got [" + std::to_string(tokens.size(0)) +
           ", " + std::to_string(tokens.size(1)) + "]";
  if (tokens.device() != device())
    return "tokens are on " + tokens.device().str() + " and the model on " + device().str() +
           " (move one of them: tokens.to(...))";
  int64_t vocab = vocabulary();
  if (vocab <= 0)
    return "";
  at::Tensor bad = ((tokens < 0) | (tokens >= vocab)).nonzero(); // [n, 2]: (row, step)
  if (bad.size(0) == 0)
    return "";
  at::Tensor at0 = bad[0].cpu();
  int64_t row = at0[0].item<int64_t>(), step = at0[1].item<int64_t>();
  return "token " + std::to_string(tokens[row][step].item<int64_t>()) + " at [" + std::to_string(row) + ", " +
         std::to_string(step) + "] is outside the model's vocabulary of " + std::to_string(vocab) + " (0.." +
         std::to_string(vocab - 1) + ")" +
         (bad.size(0) > 1 ? " (" + std::to_string(bad.size(0)) + " of the " + std::to_string(tokens.numel()) +
                                " tokens are)"
                          : "");
}

namespace {
/// `edit`'s replacement of a value (a node's, or every step's state), checked
/// against it: undefined where the hook leaves it.
at::Tensor hookReplacement(const Model::Options &options, const std::string &name, const at::Tensor &value) {
  at::Tensor replaced = options.edit(name, value);
  if (replaced.defined())
    TORCH_CHECK(replaced.sizes() == value.sizes() && replaced.scalar_type() == value.scalar_type() &&
                    replaced.device() == value.device(),
                "the hook on '", name, "' returned a ", replaced.scalar_type(), " tensor of shape ", replaced.sizes(),
                " on ", replaced.device(), "; the ", options.hookStates.count(name) ? "state's" : "node's",
                " value is ", value.scalar_type(), " ", value.sizes(), " on ", value.device());
  return replaced;
}

/// A node's value as later nodes read it: `edit`'s replacement where it
/// gives one (checked against the value it replaces), then observed.
void publish(const Model::Options &options, const std::string &name, at::Tensor &value) {
  if (options.edit)
    if (at::Tensor replaced = hookReplacement(options, name, value); replaced.defined())
      value = replaced;
  if (options.observe)
    options.observe(name, value);
}

/// A built-in recurrence whose state `name` is hooked: run once capturing
/// every step's state [rows, T, S], let the hook replace it, and run again
/// with the one step of each row it changed edited (as `patch … state`).
/// `capture`, when defined, receives the states of the run returned.
/// Where a hook's result differs from what it was shown: NaN where both
/// hold NaN is unchanged (NaN != NaN would count a state that diverged as
/// edited, and a hook returning None would be refused).
at::Tensor differsFrom(const at::Tensor &replaced, const at::Tensor &seen) {
  return replaced.ne(seen).logical_and_(replaced.isnan().logical_and(seen.isnan()).logical_not_());
}

Outputs runWithStateHook(const std::string &name, const Model::Options &options, int64_t rows, int64_t T,
                         int64_t stateSize, const at::TensorOptions &like, const RecurrenceRun &run,
                         const at::Tensor &capture) {
  TORCH_CHECK(!at::GradMode::is_enabled(), "a hook on the recurrent state '", name,
              "' runs without gradients (the recurrence's kernels keep none): call under torch.no_grad(), or write "
              "the recurrence with `scan`");
  StateAccess first;
  first.capture = at::empty({rows, T, stateSize}, like.dtype(at::kFloat));
  Outputs out = run(first, false);
  // The hook sees a copy: one that edits it in place and returns None edits too.
  at::Tensor replaced = first.capture.clone();
  if (at::Tensor r = hookReplacement(options, name, replaced); r.defined())
    replaced = r;
  const at::Tensor changed = differsFrom(replaced, first.capture).any(-1); // [rows, T]
  if (!changed.any().item<bool>()) {
    if (capture.defined())
      capture.copy_(first.capture);
    return out;
  }
  const at::Tensor perRow = changed.sum(1);
  const int64_t worst = perRow.argmax().item<int64_t>();
  TORCH_CHECK(perRow[worst].item<int64_t>() == 1, "the hook on '", name, "' changed row ", worst,
              "'s state at ", perRow[worst].item<int64_t>(), " steps: a built-in recurrence takes one edited step a "
              "row (edit one, or write the recurrence with `scan`, which takes any)");
  StateAccess second;
  second.capture = capture;
  second.editPos = at::where(perRow > 0, changed.to(at::kLong).argmax(1), at::full_like(perRow, -1));
  second.editValue = replaced.index({at::arange(rows, perRow.options()), second.editPos.clamp_min(0)}).contiguous();
  second.editAdd = at::zeros({rows}, perRow.options().dtype(at::kInt));
  return run(second, false);
}

/// A scan's state over time [B, T, ...] as [B, T, S]: its floats in
/// row-major order, the layout `mixc names` prints.
at::Tensor stateRows(const at::Tensor &state) {
  return state.dim() > 2 ? state.flatten(2) : state.unsqueeze(-1);
}

/// A scan with hooked states or step values: run once for every step's
/// states and values, let each hook replace its [B, T, ...], and the steps
/// it changed become overrides the second run carries on from (with
/// gradients).
std::vector<StepOverride> scanHooks(const graph::Node &scan, const Model::Options &options,
                                    const std::vector<at::Tensor> &args, const ScanEdits &edits) {
  std::vector<at::Tensor> states;
  ScanReads reads{&options.hookStepValues, {}};
  runScan(args, scan, edits, &states, &reads);
  std::vector<StepOverride> overrides;
  // The hook sees a copy (edited in place, or replaced); a state as [B, T, S].
  auto hooked = [&](const std::string &name, const at::Tensor &seen, const at::Tensor &original) {
    at::Tensor replaced = seen.clone();
    if (at::Tensor r = hookReplacement(options, name, replaced); r.defined())
      replaced = r;
    const at::Tensor differs = differsFrom(replaced, seen);
    const at::Tensor changed = differs.dim() > 2 ? differs.flatten(2).any(-1) : differs; // [B, T]
    return std::make_pair(changed, replaced.reshape(original.sizes()));
  };
  for (size_t k = 0; k < states.size(); ++k)
    if (options.hookStates.count(scan.bodyArgs[k].name)) {
      auto [changed, value] = hooked(scan.bodyArgs[k].name, stateRows(states[k]), states[k]);
      overrides.push_back({StepOverride::State, k, changed, value});
    }
  for (size_t k = 0; k < scan.body.size(); ++k)
    if (auto it = reads.values.find(scan.body[k].name); it != reads.values.end()) {
      auto [changed, value] = hooked(scan.body[k].name, it->second, it->second);
      overrides.push_back({StepOverride::Value, k, changed, value});
    }
  return overrides;
}

/// Attribution's probes in a scan (Options::probes): the step's patch nodes
/// and the state edits aimed at the scan, each observed as a [B, T, ...]
/// tensor of its own that the loop's values are made to depend on (a
/// straight-through StepOverride), so the backward gives each probe its
/// gradient at every step. One pass without gradients reads the values;
/// `observed` gets each probe's name and tensor for after the real pass.
std::vector<StepOverride> scanProbes(const graph::Node &scan, const std::vector<const Node *> *stateEdits,
                                     const std::vector<at::Tensor> &args, const ScanEdits &edits,
                                     std::vector<std::pair<std::string, at::Tensor>> &observed) {
  std::set<std::string> probed;
  for (const graph::Node &n : scan.body)
    if (n.op == "patch" || n.op == "ablate")
      probed.insert(n.name);
  std::vector<at::Tensor> states;
  ScanReads reads{&probed, {}};
  {
    at::NoGradGuard noGrad;
    runScan(args, scan, edits, stateEdits ? &states : nullptr, &reads);
  }
  std::vector<StepOverride> overrides;
  for (size_t k = 0; k < scan.body.size(); ++k)
    if (auto it = reads.values.find(scan.body[k].name); it != reads.values.end()) {
      at::Tensor v = it->second.detach().requires_grad_();
      overrides.push_back({StepOverride::Value, k, {}, v, true});
      observed.emplace_back(it->first, v);
    }
  std::map<size_t, at::Tensor> byState;
  for (const Node *e : stateEdits ? *stateEdits : std::vector<const Node *>{}) {
    const std::string &state = e->attrs.at("state").s;
    size_t k = 0;
    while (k < states.size() && scan.bodyArgs[k].name != state)
      ++k;
    TORCH_CHECK(k < states.size(), "state edit '", e->name, "' names no state of scan '", scan.name, "'");
    if (!byState.count(k)) {
      byState[k] = states[k].detach().requires_grad_();
      overrides.push_back({StepOverride::State, k, {}, byState[k], true});
    }
    observed.emplace_back(e->name, byState[k]);
  }
  return overrides;
}

/// Attribution's probes of a built-in recurrence's state (Options::probes):
/// the states its sweep hands on, read without gradients, become one probe
/// per reader the edits name (next step, output, or both), and the
/// recurrence runs as a loop of LibTorch ops with them (probedRecurrence);
/// each edit is observed as its probe.
at::Tensor probeRecurrence(const Node &n, const std::vector<const Node *> &edits, const std::vector<at::Tensor> &args,
                           int64_t stateSize, const Model::Options &options) {
  StateAccess access; // args[0] is [B, T, ...] for every built-in recurrence
  access.capture = at::empty({args[0].size(0), args[0].size(1), stateSize}, args[0].options());
  {
    at::NoGradGuard noGrad;
    runRecurrence(n, args, &access);
  }
  StateProbes probes;
  std::vector<std::pair<std::string, at::Tensor>> observed;
  for (const Node *e : edits) {
    const int reader = stateEditReader(*e);
    at::Tensor &probe = reader == MIXK_EDIT_NEXT_STEP ? probes.next
                        : reader == MIXK_EDIT_OUTPUT ? probes.output
                                                     : probes.both;
    if (!probe.defined())
      probe = access.capture.clone().requires_grad_();
    observed.emplace_back(e->name, probe);
  }
  at::Tensor y = probedRecurrence(n, args, probes);
  if (options.observe)
    for (auto &[name, v] : observed)
      options.observe(name, v);
  return y;
}

/// Whether `options` read or hook a state of `scan`, or read a value of its step.
bool readsInsideScan(const graph::Node &scan, const Model::Options &options) {
  const int64_t numStates = attrI(scan, "num_states");
  for (int64_t k = 0; k < numStates && k < static_cast<int64_t>(scan.bodyArgs.size()); ++k)
    if ((options.observe && options.saveStates.count(scan.bodyArgs[k].name)) ||
        (options.edit && options.hookStates.count(scan.bodyArgs[k].name)))
      return true;
  for (const graph::Node &n : scan.body)
    if ((options.observe && options.saveStepValues.count(n.name)) ||
        (options.edit && options.hookStepValues.count(n.name)))
      return true;
  return false;
}

/// The scan's states read (as stateRows) and its step values, observed.
void observeScanReads(const graph::Node &scan, const Model::Options &options, const std::vector<at::Tensor> &states,
                      const ScanReads &reads) {
  for (size_t k = 0; k < states.size(); ++k)
    if (options.saveStates.count(scan.bodyArgs[k].name))
      options.observe(scan.bodyArgs[k].name, stateRows(states[k]));
  for (const graph::Node &n : scan.body) // in step order
    if (auto it = reads.values.find(n.name); it != reads.values.end())
      options.observe(n.name, it->second);
}
} // namespace

/// A scan step's results (its region's outputs, or the node's) into
/// `values`, the first published under the scan's name.
void Model::storeScanResults(const Step &s, std::vector<at::Tensor> out, const Options &options,
                             std::vector<at::Tensor> &values) const {
  for (size_t r = 0; r < out.size(); ++r)
    values[s.region ? s.regionResults[r] : s.firstResult + static_cast<int>(r)] = std::move(out[r]);
  publish(options, s.node->name, values[s.region ? s.regionResults[0] : s.firstResult]);
}

/// Step `s`, a scan, on its reference loop (Model::forward says when),
/// its results written to `values`: with attribution's probes, Python's
/// hooks on its states and step values, --save's reads of them.
void Model::forwardScanLoop(const Step &s, const std::vector<at::Tensor> &args, const Options &options,
                            std::vector<at::Tensor> &values) const {
  TORCH_CHECK(options.interventions || options.probes || (!s.edits && !scanIntervenes(*s.node)), "node '",
              s.node->name, "' has its state edited; run the model with `mixc intervene`");
  const bool readsScan = readsInsideScan(*s.node, options);
  // A scan's region (kind "scan") takes the scan's operands as they are,
  // so its inputs are the reference loop's too.
  std::vector<at::Tensor> states;
  ScanReads reads{&options.saveStepValues, {}};
  const ScanEdits edits{s.edits, options.interventions ? &*options.interventions : nullptr, options.probes};
  std::vector<std::pair<std::string, at::Tensor>> probed;
  const std::vector<StepOverride> overrides =
      options.probes && (s.edits || scanIntervenes(*s.node)) ? scanProbes(*s.node, s.edits, args, edits, probed)
      : readsScan && options.edit                           ? scanHooks(*s.node, options, args, edits)
                                                            : std::vector<StepOverride>{};
  Outputs out = runScan(args, *s.node, edits, readsScan ? &states : nullptr, readsScan ? &reads : nullptr,
                        overrides.empty() ? nullptr : &overrides);
  if (options.observe)
    for (auto &[name, v] : probed)
      options.observe(name, v);
  storeScanResults(s, out, options, values);
  observeScanReads(*s.node, options, states, reads);
}

std::vector<std::pair<std::string, std::string>> Model::scanFormStatus() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const graph::Node &n : graph_.nodes) {
    if (n.op != "scan")
      continue;
    std::string why;
    if (!chunkPlans_.count(&n)) {
      auto reason = n.attrs.find("linearity_reason"), gap = n.attrs.find("chunk_plan_gap");
      why = reason != n.attrs.end() ? "not linear in its states: " + reason->second.s
            : gap != n.attrs.end()  ? "no chunked form yet: " + gap->second.s
                                    : "compiled without the linearity analysis (an older graph)";
    }
    out.emplace_back(n.name, why);
  }
  return out;
}

std::string Model::checkTensors() const {
  for (size_t i = 0; i < tensors_.size() && i < graph_.params.size(); ++i) {
    const at::Tensor &t = tensors_[i].second;
    const graph::Param &p = graph_.params[i];
    std::ostringstream why;
    if (!t.defined())
      why << "is undefined";
    else if (t.sizes() != at::IntArrayRef(p.shape) || t.scalar_type() != at::kFloat)
      why << "is " << t.sizes() << " " << t.scalar_type() << ", but the model declares " << at::IntArrayRef(p.shape)
          << " Float (was its .data replaced by a tensor of another shape? set it with copy_ or load_state_dict)";
    else if (t.device() != tensors_[0].second.device())
      why << "is on " << t.device() << " and '" << tensors_[0].first << "' on " << tensors_[0].second.device()
          << " (move the whole model with to())";
    if (!why.str().empty())
      return "the parameter '" + p.name + "' " + why.str();
  }
  return "";
}

at::Tensor Model::forward(const at::Tensor &tokens, const Options &options) const {
  TORCH_CHECK(tokens.dim() == 2 && tokens.scalar_type() == at::kLong,
              "tokens must be a [B, T] int64 tensor");
  if (std::string why = checkTensors(); !why.empty())
    throw std::invalid_argument(why);
  std::vector<at::Tensor> values(numValues_);
  values[inputValue_] = tokens;
  for (size_t i = 0; i < paramValues_.size(); ++i)
    values[paramValues_[i]] = tensors_[i].second;
  std::vector<at::Tensor> args;
  for (const Step &s : steps_) {
    args.clear();
    for (int v : s.inputs)
      args.push_back(values[v]);
    if (options.readout && s.node->op == "unembed" && !readoutAtOutput_) {
      // Per-position ops after the last mixer commute with this gather; the
      // LM head is the expensive one ([B, T, V]), so it sees one step per row.
      at::Tensor idx = options.readout->view({-1, 1, 1}).expand({-1, 1, args[0].size(-1)});
      args[0] = args[0].gather(1, idx);
    }
    // A scan's kernels take its state edits (below, as the built-in
    // recurrences'); its reference loop runs what they do not: an
    // intervention on a value of its step, two edits in one cell, no kernel,
    // reads and hooks inside it, attribution's probes.
    if (s.node->op == "scan" &&
        (readsInsideScan(*s.node, options) || scanIntervenes(*s.node) ||
         (s.edits && (options.probes || !s.region || !oneEditACell(*s.edits))))) {
      forwardScanLoop(s, args, options, values);
      continue;
    }
    if (scanForm_.chunked && s.node->op == "scan" && !s.edits) // the chunked form, where the scan has one
      if (auto plan = chunkPlans_.find(s.node); plan != chunkPlans_.end()) {
        storeScanResults(s, runScanChunked(args, *s.node, plan->second, scanForm_.chunk), options, values);
        continue;
      }
    if (options.probes && s.edits) { // attribution through a built-in recurrence's state
      TORCH_CHECK(!s.region, "'", *s.stateName, "' is probed on the LibTorch back end, not in a fused kernel");
      values[s.firstResult] = probeRecurrence(*s.node, *s.edits, args, s.stateSize, options);
      publish(options, s.node->name, values[s.firstResult]);
      continue;
    }
    const bool saveState = s.stateName && options.observe && options.saveStates.count(*s.stateName);
    const bool hookState = s.stateName && options.edit && options.hookStates.count(*s.stateName);
    if (s.edits || saveState || hookState) {
      TORCH_CHECK(!(s.edits && hookState), "'", *s.stateName,
                  "' is edited by the model's rewrite script and hooked: use one or the other");
      TORCH_CHECK(!s.edits || options.interventions, "node '", s.node->name,
                  "' has its state edited; run the model with `mixc intervene`");
      // A [B, T, ...] input gives the batch and sequence sizes (a region's
      // first input may be a weight).
      size_t row = 0;
      while (row + 1 < args.size() && !s.inputIsRow[row])
        ++row;
      const int64_t rows = args[row].size(0), T = args[row].size(1);
      const int64_t docs = options.interventions ? options.interventions->docs : rows;
      RecurrenceRun run = [&](const StateAccess &access, bool sourceOnly) {
        Inputs in = sourceOnly ? sourceRows(args, s.inputIsRow, docs) : args;
        return s.region ? runRegion(*s.region, in, access) : one(runRecurrence(*s.node, in, &access));
      };
      // Every state [rows, T, S], after any edit, when --save asks for it.
      at::Tensor capture = saveState ? at::empty({rows, T, s.stateSize}, args[row].options().dtype(at::kFloat))
                                     : at::Tensor();
      // A scan's edit acts on one of its states: its floats of the row.
      StateRange rangeOf;
      if (s.node->op == "scan")
        rangeOf = [&s, states = scanStates(*s.node)](const graph::Node &edit) {
          auto it = states.range.find(edit.attrs.count("state") ? edit.attrs.at("state").s : "");
          TORCH_CHECK(it != states.range.end(), "state edit '", edit.name, "' names no state of scan '",
                      s.node->name, "'");
          return it->second;
        };
      Outputs out;
      if (s.edits) {
        out = runWithStateEdits(*s.edits, *options.interventions, rows, T, s.stateSize, args[row].options(), run,
                                capture, rangeOf);
      } else if (hookState) {
        out = runWithStateHook(*s.stateName, options, rows, T, s.stateSize, args[row].options(), run, capture);
      } else {
        StateAccess access;
        access.capture = capture;
        out = run(access, false);
      }
      const std::vector<int> &results = s.region ? s.regionResults : std::vector<int>{s.firstResult};
      for (size_t r = 0; r < out.size(); ++r) {
        values[results[r]] = std::move(out[r]);
        const std::string &name = s.region ? s.region->region->outputs[r] : s.node->name;
        if (name.find('#') == std::string::npos)
          publish(options, name, values[results[r]]);
      }
      if (saveState)
        options.observe(*s.stateName, capture);
      continue;
    }
    if (s.region) {
      Outputs out = runRegion(*s.region, args);
      for (size_t r = 0; r < out.size(); ++r) {
        values[s.regionResults[r]] = std::move(out[r]);
        const std::string &name = s.region->region->outputs[r];
        if (name.find('#') == std::string::npos)
          publish(options, name, values[s.regionResults[r]]);
      }
      continue;
    }
    Outputs out;
    if (!s.fn) {
      TORCH_CHECK(options.interventions || options.probes, "node '", s.node->name,
                  "' is an intervention; run the model with `mixc intervene`");
      // A probe is a view of its input, a tensor of its own: its gradient is
      // what its readers send back, so an edge's probe (a patch read by one
      // receiver) gets that receiver's share, not the sender's total.
      out = one(options.probes ? args[0].view_as(args[0]) : intervene(args[0], *s.node, *options.interventions));
    } else {
      out = s.fn(args, *s.node);
    }
    for (size_t r = 0; r < out.size(); ++r)
      values[s.firstResult + r] = std::move(out[r]);
    publish(options, s.node->name, values[s.firstResult]);
  }
  if (options.readout && readoutAtOutput_) { // [B, T, V] -> [B, 1, V]
    const at::Tensor &out = values[outputValue_];
    return out.gather(1, options.readout->view({-1, 1, 1}).expand({-1, 1, out.size(-1)}));
  }
  return values[outputValue_];
}

} // namespace mixc::rt
