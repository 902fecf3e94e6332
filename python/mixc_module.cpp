//===- mixc_module.cpp - the `mixc` Python module (pybind11) ----------------===//
//
// The C++ half of `import mixc` (python/mixc/__init__.py is the other):
// compile a .mix file or load a run, call the model on torch tensors (the
// same LibTorch build as Debian's python3-torch, so tensors and autograd
// cross without copies), take named values out, list the intervention
// points, and run a `.rw` script on a run. Errors are Python exceptions
// with the compiler's located messages.
//
//===----------------------------------------------------------------------===//
#include "app/Compile.h"
#include "app/Kernels.h"
#include "app/Models.h"
#include "app/Names.h"
#include "app/Scripts.h"
#include "dsl/Rewrite.h"
#include "runtime/core/Device.h"
#include "runtime/core/Model.h"
#include "runtime/core/ScanChunked.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/Trainer.h"
#include "runtime/train/Weights.h"
#include "runtime/analysis/Experiment.h"
#include "runtime/analysis/Intervene.h"
#include "runtime/train/Batches.h"

#include <filesystem>
#include <torch/extension.h>

#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace py = pybind11;
using mixc::rt::Model;

namespace {

/// A compiled or loaded model with its graph. With the generated back end
/// a second model runs the fused kernels on the same tensors: plain calls
/// (training) take it; hooks and caches take the LibTorch one, where every
/// node is a tensor (inside a fused kernel most are not).
struct PyModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Model> fast; // the generated kernels, sharing model's tensors; null: LibTorch only
  std::string source;          // the .mix file or run it came from, for repr()
  std::string notes;           // what choosing the kernels said (auto's fallback, unfused nodes)

  const Model &get() const {
    if (!model)
      throw std::runtime_error("mixc: the model is empty");
    return *model;
  }

  void checkTokens(const at::Tensor &tokens) const {
    if (std::string why = get().checkTokens(tokens); !why.empty())
      throw py::value_error("mixc: " + why);
  }

  /// How linear scans run (Model::ScanForm): "sequential" or "chunked"
  /// with `chunk` steps a chunk; returns, per scan, "" or why it keeps its loop.
  std::map<std::string, std::string> setScanForm(const std::string &form, int64_t chunk) {
    if (form != "sequential" && form != "chunked")
      throw py::value_error("mixc: scan_form is \"sequential\" or \"chunked\", got \"" + form + "\"");
    if (chunk < 1 || chunk > mixc::graph::kMaxScanChunk)
      throw py::value_error("mixc: scan_chunk is in [1, " + std::to_string(mixc::graph::kMaxScanChunk) + "], got " +
                            std::to_string(chunk));
    const Model::ScanForm f{form == "chunked", chunk};
    model->setScanForm(f);
    if (fast)
      fast->setScanForm(f);
    std::map<std::string, std::string> status;
    for (const auto &[scan, why] : get().scanFormStatus())
      status[scan] = form == "chunked" ? why : "scan_form is sequential";
    return status;
  }

  /// tokens [B, T] int64 -> logits [B, T, V]; differentiable in the
  /// parameters (torch autograd records the LibTorch ops).
  at::Tensor forward(const at::Tensor &tokens, const std::optional<at::Tensor> &readout) const {
    checkTokens(tokens);
    return runAt(fast ? *fast : get(), tokens, Model::Options{}, readout);
  }

  /// `m` on `tokens` with `o`; with `readout`, only those positions' logits [B, V].
  static at::Tensor runAt(const Model &m, const at::Tensor &tokens, Model::Options o,
                          const std::optional<at::Tensor> &readout) {
    if (readout)
      o.readout = checkReadout(tokens, *readout);
    at::Tensor logits = m.forward(tokens, o);
    return readout ? logits.squeeze(1) : logits;
  }

  /// `readout` [B] int64 in [0, T): one position per row, whose logits alone
  /// are computed (the LM head, [B, V], as the CLI's training step does).
  static at::Tensor checkReadout(const at::Tensor &tokens, const at::Tensor &readout) {
    if (readout.scalar_type() != at::kLong || readout.dim() != 1 || readout.size(0) != tokens.size(0))
      throw py::value_error("mixc: readout must be int64 [B] = [" + std::to_string(tokens.size(0)) +
                            "] (one position per row)");
    if (readout.device() != tokens.device())
      throw py::value_error("mixc: readout is on " + readout.device().str() + " and the tokens on " +
                            tokens.device().str());
    if (readout.numel() > 0 && (readout.min().item<int64_t>() < 0 || readout.max().item<int64_t>() >= tokens.size(1)))
      throw py::value_error("mixc: readout positions must lie in [0, " + std::to_string(tokens.size(1)) + ")");
    return readout;
  }

  /// The back end that plain calls run on.
  std::string backend() const { return fast ? "generated" : "libtorch"; }

  /// `name` runs on `tensor` (the same object: an nn.Parameter) in both models.
  void setTensor(const std::string &name, const at::Tensor &tensor) {
    std::string why = model->setTensor(name, tensor);
    if (why.empty() && fast)
      why = fast->setTensor(name, tensor);
    if (!why.empty())
      throw std::runtime_error("mixc: " + why);
  }

  /// Moves every tensor to `device` (new leaves: the caller adopts them again).
  void to(const std::string &device) {
    at::Device d(at::kCPU);
    std::string error;
    if (!mixc::rt::resolveDevice(device, d, error))
      throw std::runtime_error("mixc: " + error);
    if (fast && d != fast->device())
      throw std::runtime_error("mixc: the generated back end's kernels were built for " + fast->device().str() +
                               "; load or compile the model with backend=\"libtorch\" to move it to " + device);
    get();
    model->to(d);
  }

  /// Exact token-to-token contributions of layer `layer`'s linear scan
  /// (runtime/core/ScanChunked.h's scanContributions) on `tokens`: one
  /// [B, T, T, ...] tensor per value the scan emits, c[:, t, i] the part of
  /// its output at t that step i gives; the scan's inputs are read from one
  /// forward pass on the LibTorch path.
  std::vector<at::Tensor> contributions(const at::Tensor &tokens, int64_t layer) const {
    checkTokens(tokens);
    const std::string prefix = "layers[" + std::to_string(layer) + "].";
    const mixc::graph::Node *scan = nullptr;
    for (const mixc::graph::Node &n : get().graph().nodes)
      if (n.op == "scan" && n.name.rfind(prefix, 0) == 0)
        scan = &n;
    if (!scan)
      throw py::value_error("mixc: layer " + std::to_string(layer) +
                            " has no scan (contributions are for DSL scans that are linear in their states)");
    std::optional<mixc::graph::ChunkPlan> plan = mixc::rt::chunkPlanOf(*scan);
    if (!plan) {
      std::string why;
      for (const auto &[name, reason] : get().scanFormStatus())
        if (name == scan->name)
          why = reason;
      throw py::value_error("mixc: scan " + scan->name + " has no exact contributions: " + why);
    }
    std::map<std::string, at::Tensor> seen;
    Model::Options o;
    o.observe = [&](const std::string &name, const at::Tensor &value) {
      if (std::find(scan->inputs.begin(), scan->inputs.end(), name) != scan->inputs.end())
        seen[name] = value;
    };
    get().forward(tokens, o);
    std::vector<at::Tensor> inputs;
    for (const std::string &in : scan->inputs) {
      auto it = seen.find(in);
      if (it == seen.end())
        throw std::runtime_error("mixc: scan " + scan->name + "'s input " + in + " was not observed");
      inputs.push_back(it->second);
    }
    return mixc::rt::scanContributions(inputs, *scan, *plan);
  }

  /// The logits and every node (and, without gradients, recurrent state)
  /// whose name matches one of `patterns` (all nodes when empty).
  std::pair<at::Tensor, std::map<std::string, at::Tensor>> runWithCache(const at::Tensor &tokens,
                                                                       const std::vector<std::string> &patterns) const {
    checkTokens(tokens);
    // One resolver with --save: nodes, recurrent states and scan-step values;
    // a pattern that matches nothing is a KeyError naming the nearest names.
    std::set<std::string> wanted;
    if (std::string error; !patterns.empty() && !mixc::analysis::resolveSaveNames(patterns, get().graph(), wanted, error))
      throw py::key_error("mixc: " + error + " (mixc.names(model) lists them)");
    Model::Options o;
    o.saveStates = o.saveStepValues = wanted;
    // A built-in recurrence's states come from its kernels' capture, which
    // keeps no gradient; a scan's come from its reference loop, which does.
    if (at::GradMode::is_enabled())
      for (const mixc::app::NamedPoint &p : mixc::app::namedPoints(get().graph()))
        if (p.kind == "state" && p.op != "scan" && wanted.count(p.name))
          throw std::runtime_error("mixc: recurrent states (" + p.name +
                                   ") are read without gradients: call under torch.no_grad()");
    std::map<std::string, at::Tensor> cache;
    o.observe = [&](const std::string &name, const at::Tensor &value) {
      if (name.find('#') == std::string::npos && name.find('@') == std::string::npos &&
          (patterns.empty() || wanted.count(name)))
        cache[name] = value;
    };
    at::Tensor logits = get().forward(tokens, o);
    return {logits, cache};
  }

  /// The logits with `hooks` applied: (pattern, fn) pairs, fn(value, name)
  /// returning a replacement tensor or None; every node a pattern matches
  /// gets its fn, in the order the hooks were given. Gradients flow through
  /// what the hooks return (autograd records their torch ops).
  at::Tensor runWithHooks(const at::Tensor &tokens, const std::vector<std::pair<std::string, py::object>> &hooks,
                          const std::optional<at::Tensor> &readout) const {
    checkTokens(tokens);
    std::vector<std::string> patterns;
    for (const auto &h : hooks) {
      if (!PyCallable_Check(h.second.ptr()))
        throw py::type_error("mixc: the hook for '" + h.first + "' is not callable: give (name, fn(value, name))");
      patterns.push_back(h.first);
    }
    std::vector<std::vector<std::string>> targets;
    if (std::string error; !mixc::app::hookTargets(get().graph(), patterns, targets, error))
      throw py::key_error("mixc: " + error);
    std::map<std::string, std::vector<py::object>> fnsOf; // node -> its hooks, in order
    for (size_t i = 0; i < hooks.size(); ++i)
      for (const std::string &node : targets[i])
        fnsOf[node].push_back(hooks[i].second);
    Model::Options o;
    for (const mixc::app::NamedPoint &p : mixc::app::namedPoints(get().graph()))
      if (p.kind == "state" && fnsOf.count(p.name))
        o.hookStates.insert(p.name);
    for (const mixc::graph::Node &n : get().graph().nodes) // values inside a scan's step
      for (const mixc::graph::Node &inner : n.body)
        if (fnsOf.count(inner.name))
          o.hookStepValues.insert(inner.name);
    o.edit = [&](const std::string &name, const at::Tensor &value) {
      auto it = fnsOf.find(name);
      if (it == fnsOf.end())
        return at::Tensor();
      at::Tensor current = value;
      for (const py::object &fn : it->second) {
        py::object r = fn(current, name);
        if (r.is_none())
          continue;
        if (!THPVariable_Check(r.ptr()))
          throw py::type_error("mixc: the hook on '" + name + "' returned " +
                               std::string(py::str(r.get_type().attr("__name__"))) + ", not a tensor or None");
        current = r.cast<at::Tensor>();
      }
      return current.is_same(value) ? at::Tensor() : current;
    };
    return runAt(get(), tokens, std::move(o), readout);
  }

  std::vector<std::pair<std::string, at::Tensor>> parameters() const { return get().tensors(); }

  /// The model's tensors as `mixc export` writes them (what --init-from reads).
  void saveWeights(const std::string &path) const {
    if (mixc::support::Status s = mixc::train::saveWeights(get(), path, {{"source", source}}, {source});
        !s.isOk())
      throw std::runtime_error("mixc: " + s.message());
  }
};

std::vector<mixc::dsl::ConfigEntry> configEntries(const std::map<std::string, std::string> &config) {
  std::vector<mixc::dsl::ConfigEntry> out;
  for (const auto &[k, v] : config)
    out.push_back({k, v});
  return out;
}

/// Front end and compiler up to the runtime graph; the messages in `err`.
mix::CompileResult compileGraph(const std::string &path, const std::map<std::string, std::string> &config,
                                const std::string &modelName, const std::vector<std::string> &include) {
  std::ostringstream err;
  mix::CompileResult result;
  mixc::app::ModelRequest request{path, modelName, configEntries(config), include, ""};
  if (mixc::support::Status s = mixc::app::compiler().compile(request, result, err); !s.isOk())
    throw std::runtime_error("mixc: cannot compile " + path + ":\n" + err.str() + s.message());
  return result;
}

void checkBackend(const std::string &backend) {
  if (backend != "libtorch" && backend != "generated" && backend != "auto")
    throw py::value_error("mixc: backend is \"libtorch\", \"generated\" or \"auto\", got \"" + backend + "\"");
}

/// Plain calls run `library`'s kernels of `compiled` on the model's own tensors.
void useKernels(PyModel &m, const mix::CompileResult &compiled, std::shared_ptr<const mixc::kernels::Library> library) {
  std::string error;
  m.fast = Model::create(compiled.graph, error, std::move(library));
  if (!m.fast)
    throw std::runtime_error("mixc: " + error);
  for (const auto &[name, tensor] : m.model->tensors())
    m.setTensor(name, tensor);
}

/// With `backend` generated or auto, the model's fused kernels (built into
/// the cache, as the CLI's) run plain calls on the model's own tensors.
void chooseBackend(PyModel &m, const std::string &backend, const mix::CompileResult &compiled) {
  std::shared_ptr<const mixc::kernels::Library> library;
  std::ostringstream notes;
  if (mixc::support::Status s = mixc::app::chooseKernels({backend, "cpu", true}, compiled, library, notes); !s.isOk())
    throw std::runtime_error("mixc: " + s.message());
  m.notes = notes.str();
  if (library)
    useKernels(m, compiled, library);
}

PyModel compileModel(const std::string &path, const std::map<std::string, std::string> &config,
                     const std::string &modelName, const std::vector<std::string> &include, uint64_t seed,
                     const std::string &backend) {
  checkBackend(backend);
  mix::CompileResult result = compileGraph(path, config, modelName, include);
  std::string error;
  PyModel m;
  m.model = Model::create(result.graph, error);
  if (!m.model)
    throw std::runtime_error("mixc: " + error);
  m.model->initParameters(seed);
  m.source = path;
  chooseBackend(m, backend, result);
  return m;
}

PyModel loadRun(const std::string &run, const std::string &backend) {
  checkBackend(backend);
  mixc::train::Restored restored;
  std::string error;
  if (!mixc::train::restore(run, nullptr, restored, error))
    throw std::runtime_error("mixc: cannot load " + run + ": " + error);
  PyModel m;
  m.model = std::move(restored.model);
  m.source = run;
  mix::CompileResult compiled;
  std::shared_ptr<const mixc::kernels::Library> library;
  std::ostringstream notes;
  const std::string runDir = std::filesystem::path(restored.path).parent_path().string();
  if (mixc::support::Status s =
          mixc::app::kernelsForRun(m.model->graph(), runDir, {backend, "cpu", true}, compiled, library, notes);
      !s.isOk())
    throw std::runtime_error("mixc: " + s.message());
  m.notes = notes.str();
  if (library)
    useKernels(m, compiled, library);
  return m;
}

py::list pointsToPython(const std::vector<mixc::app::NamedPoint> &points) {
  py::list out;
  for (const mixc::app::NamedPoint &p : points) {
    py::dict d;
    d["kind"] = p.kind, d["name"] = p.name, d["op"] = p.op, d["actions"] = p.actions, d["note"] = p.note;
    out.append(d);
  }
  return out;
}

/// The caller's documents (a dict as mixc.task's "pairs") as the library's
/// restore-order chunk; a key it does not know is an error, not ignored.
std::shared_ptr<const mixc::analysis::DocumentChunk> pairsFromPython(const py::dict &pairs) {
  auto chunk = std::make_shared<mixc::analysis::DocumentChunk>();
  static const std::map<std::string, std::string> roles = {
      {"key", "key"}, {"value", "value"}, {"query", "query"}, {"divider", "divider"}, {"answer_position", "answer"}};
  for (const auto &[k, v] : pairs) {
    const std::string key = py::str(k);
    if (key == "corrupt") // mixc.task's note of how its pairs were drawn
      continue;
    if (!THPVariable_Check(v.ptr()))
      throw py::type_error("mixc: pairs['" + key + "'] must be a tensor");
    at::Tensor t = v.cast<at::Tensor>();
    if (key == "clean")
      chunk->source = t;
    else if (key == "corrupted")
      chunk->base = t;
    else if (key == "readout")
      chunk->readout = t;
    else if (key == "answer")
      chunk->target = t;
    else if (auto r = roles.find(key); r != roles.end())
      chunk->iv.roles[r->second] = t;
    else
      throw py::key_error("mixc: pairs has no key '" + key +
                          "' (clean, corrupted, answer, readout, and the roles key, value, query, divider, "
                          "answer_position)");
  }
  chunk->m = chunk->source.defined() ? chunk->source.size(0) : 0;
  chunk->iv.docs = chunk->m;
  return chunk;
}

/// The Attrib table of `script` on the run, as columns (dict of lists).
py::dict intervene(const std::string &run, const std::string &script, int64_t size, const std::string &outDir,
                   const std::vector<std::string> &save, const py::object &pairs) {
  // As `mixc intervene`: the run opened with the script applied (app/Scripts.h).
  mixc::app::ScriptRun opened;
  std::ostringstream err;
  if (mixc::support::Status s = mixc::app::openScriptRun(run, script, opened, err); !s.isOk())
    throw std::runtime_error("mixc: " + script + ":\n" + err.str() + s.message());
  const std::string &checkpoint = opened.checkpoint;
  const mix::CompileResult &rewritten = opened.rewritten;
  const mixc::analysis::InterveneSpec &spec = opened.spec;
  mixc::analysis::InterveneOptions opts;
  opts.outDir = outDir;
  opts.script = script;
  opts.size = size;
  opts.quiet = true;
  if (!pairs.is_none()) {
    if (!py::isinstance<py::dict>(pairs))
      throw py::type_error("mixc: pairs must be a dict as mixc.task(run)['pairs'] (clean, corrupted, answer, readout "
                           "and the positions of the roles the script names), got " +
                           std::string(py::str(pairs.get_type().attr("__name__"))));
    opts.pairs = pairsFromPython(pairs.cast<py::dict>());
  }
  // The same resolution and checks as `mixc intervene --save` (patterns;
  // a name that matches nothing is an error, not an empty file).
  if (std::string error; !mixc::analysis::resolveSaveNames(save, rewritten.graph, opts.save, error))
    throw py::key_error("mixc: save: " + error);
  std::vector<mixc::analysis::CellResult> results;
  std::ostringstream table;
  if (mixc::support::Status s = mixc::analysis::intervene(checkpoint, rewritten.graph, spec, opts, results, table);
      !s.isOk())
    throw std::runtime_error("mixc: " + s.message());
  py::list label, pClean, pCorrupt, pPatched, attrib, lo, hi, kept;
  for (size_t c = 0; c < results.size(); ++c) {
    const mixc::analysis::CellResult &r = results[c];
    label.append(spec.cells[c].label);
    pClean.append(r.pClean), pCorrupt.append(r.pCorrupt), pPatched.append(r.pPatched);
    attrib.append(r.kept ? py::cast(r.attrib) : py::none());
    lo.append(r.interval.valid ? py::cast(r.interval.lo) : py::none());
    hi.append(r.interval.valid ? py::cast(r.interval.hi) : py::none());
    kept.append(r.kept);
  }
  py::dict out;
  out["label"] = label, out["p_clean"] = pClean, out["p_corrupt"] = pCorrupt, out["p_patched"] = pPatched;
  out["attrib"] = attrib, out["attrib_lo"] = lo, out["attrib_hi"] = hi, out["kept"] = kept;
  out["readout"] = spec.readout;
  out["report"] = table.str();
  return out;
}

/// A dataset's documents and roles as tensors (rows padded with PAD).
py::dict datasetToPython(const mixc::tasks::Dataset &d) {
  using mixc::train::int64Slice;
  py::dict out;
  out["tokens"] = mixc::train::int64Rows(d.tokens, 0, d.size(), d.seqLen);
  out["length"] = int64Slice(d.length, 0, d.size());
  out["readout"] = int64Slice(d.readout, 0, d.size());
  out["answer"] = int64Slice(d.target, 0, d.size());
  out["key"] = int64Slice(d.keyPos, 0, d.size()), out["value"] = int64Slice(d.valuePos, 0, d.size());
  out["query"] = int64Slice(d.queryPos, 0, d.size()), out["divider"] = int64Slice(d.dividerPos, 0, d.size());
  return out;
}

/// The run's task (mixc.task): train and test sets, and the corruption
/// pairs `mixc intervene` uses on its first `size` test documents.
py::dict taskOfRun(const std::string &run, const std::string &corrupt, int64_t size, uint64_t seed) {
  mixc::analysis::RunTask t;
  if (mixc::support::Status s = mixc::analysis::openRunTask(run, corrupt, size, seed, t); !s.isOk())
    throw std::runtime_error("mixc: task of " + run + ": " + s.message());
  py::dict pairs;
  pairs["clean"] = t.pairs.source, pairs["corrupted"] = t.pairs.base;
  pairs["answer"] = t.pairs.target, pairs["readout"] = t.pairs.readout;
  for (const auto &[role, positions] : t.pairs.iv.roles) // positions; the answer's is answer_position
    pairs[(role == "answer" ? "answer_position" : role).c_str()] = positions;
  pairs["corrupt"] = corrupt;
  py::dict out;
  out["name"] = t.config.name, out["chance"] = t.config.chance(), out["vocab"] = t.config.vocabSize();
  out["train"] = datasetToPython(t.data.train), out["test"] = datasetToPython(t.data.test);
  out["pairs"] = pairs;
  return out;
}

/// Seconds per training step of the library's own loop (`mixc train
/// --time-steps`: forward at the readout, cross-entropy, backward, fused
/// AdamW) for the training config at `config`, in this process: the
/// yardstick of bench/python_step.py.
py::dict timeTrainingSteps(const std::string &config, const std::vector<std::string> &settings, int64_t steps,
                           const std::string &backend) {
  mixc::train::TrainConfig c;
  mixc::support::StepTiming t;
  std::ostringstream diagnostics;
  mixc::support::Status timed = mixc::support::Status::ok();
  {
    py::gil_scoped_release noGil; // C++ autograd must not hold the GIL (no Python runs inside)
    timed = mixc::app::timeTrainingSteps(config, settings, steps, backend, c, t, diagnostics);
  }
  if (!timed.isOk())
    throw std::runtime_error("mixc: " + diagnostics.str() + timed.message());
  py::dict out;
  out["step_s"] = t.stepSec, out["backend"] = t.backend, out["batch"] = c.batchSize, out["threads"] = c.threads;
  return out;
}

} // namespace

PYBIND11_MODULE(_mixc, m) {
  m.doc() = "mixc's C++ core (use the `mixc` package: python/mixc/__init__.py)";
  py::class_<PyModel>(m, "Model")
      .def("forward", &PyModel::forward, py::arg("tokens"), py::arg("readout") = py::none())
      .def("run_with_cache", &PyModel::runWithCache, py::arg("tokens"), py::arg("names"))
      .def("contributions", &PyModel::contributions, py::arg("tokens"), py::arg("layer"))
      .def("run_with_hooks", &PyModel::runWithHooks, py::arg("tokens"), py::arg("hooks"),
           py::arg("readout") = py::none())
      .def("parameters", &PyModel::parameters)
      .def("save_weights", &PyModel::saveWeights, py::arg("path"))
      .def("set_tensor", &PyModel::setTensor, py::arg("name"), py::arg("tensor"))
      .def("to", &PyModel::to, py::arg("device"))
      .def_property_readonly("backend", &PyModel::backend)
      .def("set_scan_form", &PyModel::setScanForm, py::arg("form"), py::arg("chunk"))
      .def_readonly("notes", &PyModel::notes)
      .def("names", [](const PyModel &p) { return pointsToPython(mixc::app::namedPoints(p.get().graph())); })
      .def("graph_json", [](const PyModel &p) { return mixc::graph::toJson(p.get().graph()); })
      .def_property_readonly("model_name", [](const PyModel &p) { return p.get().graph().model; })
      .def_readonly("source", &PyModel::source);
  m.def("compile", &compileModel, py::arg("path"), py::arg("config"), py::arg("model"), py::arg("include"),
        py::arg("seed"), py::arg("backend"));
  m.def("load", &loadRun, py::arg("run"), py::arg("backend"));
  m.def("time_training_steps", &timeTrainingSteps, py::arg("config"), py::arg("settings"), py::arg("steps"),
        py::arg("backend"));
  m.def("task", &taskOfRun, py::arg("run"), py::arg("corrupt"), py::arg("size"), py::arg("seed"));
  m.def("intervene", &intervene, py::arg("run"), py::arg("script"), py::arg("size"), py::arg("out"),
        py::arg("save"), py::arg("pairs"));
}
