//===- Config.cpp - training configs (TOML) and their validation ------------===//
#include "runtime/train/Config.h"
#include "abi/ChunkPlan.h"
#include "support/Suggest.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

namespace mixc::train {
namespace fs = std::filesystem;

namespace {
struct ConfigError {
  std::string message;
};

std::string where(const std::string &path, const toml::source_region &r) {
  // A value from the command line (--set KEY=VALUE) is named as it was given.
  if (r.path && r.path->rfind("--set ", 0) == 0)
    return *r.path;
  return path + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
}

/// `--set a.b.c=value` over the parsed config: the value read as TOML (3e-3,
/// true, [1, 2], "text"; anything else is taken as a string), its source
/// named "--set a.b.c=value" so that every later error names the setting.
/// Missing tables on the way are created; a key that is not a table on the
/// way, or a section the schema lacks, is an error here.
bool applySetting(toml::table &root, const std::string &setting, std::string &error) {
  const std::string name = "--set " + setting;
  const size_t eq = setting.find('=');
  std::vector<std::string> parts;
  for (size_t start = 0; eq != std::string::npos && start <= eq;) {
    size_t dot = setting.find('.', start);
    size_t end = std::min(dot == std::string::npos ? eq : dot, eq);
    parts.push_back(setting.substr(start, end - start));
    start = end + 1;
  }
  auto plain = [](const std::string &k) {
    return !k.empty() && k.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
                             std::string::npos;
  };
  if (eq == std::string::npos || parts.size() < 2 || !std::all_of(parts.begin(), parts.end(), plain)) {
    error = name + ": error: --set takes section.key=value (e.g. train.lr=3e-3, model.config.d=64)";
    return false;
  }
  static const std::set<std::string> sections = {"model", "task", "train", "output"};
  if (!sections.count(parts[0])) {
    error = name + ": error: unknown section [" + parts[0] + "]; valid sections: model, task, train, output";
    return false;
  }
  const std::string value = setting.substr(eq + 1);
  if (value.find_first_of(std::string("\n\r\0", 3)) != std::string::npos) {
    error = name + ": error: the value holds a line break or NUL";
    return false;
  }
  toml::table doc;
  try {
    doc = toml::parse(std::string_view(parts.back() + " = " + value), std::string_view(name));
  } catch (const toml::parse_error &) { // a bare word: a string
    std::string quoted = "'" + value + "'";
    try {
      doc = toml::parse(std::string_view(parts.back() + " = " + quoted), std::string_view(name));
    } catch (const toml::parse_error &e) {
      error = name + ": error: cannot read the value: " + std::string(e.description());
      return false;
    }
  }
  toml::table *t = &root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    toml::node *n = t->get(parts[i]);
    if (!n)
      n = &t->insert_or_assign(parts[i], toml::table{}).first->second;
    if (!n->is_table()) {
      error = name + ": error: '" + parts[i] + "' is a value in the config, not a table";
      return false;
    }
    t = n->as_table();
  }
  // The key as parsed from the setting keeps its source: an unknown key is
  // reported as the setting too.
  auto parsed = doc.begin();
  t->insert_or_assign(parsed->first, std::move(parsed->second));
  return true;
}

class Reader {
public:
  Reader(const std::string &path, const toml::table &root) : path_(path), root_(root) {}

  /// The table `name`, checked to hold only `keys`.
  const toml::table *section(const std::string &name, const std::set<std::string> &keys) {
    const toml::node *n = root_.get(name);
    if (!n)
      return nullptr;
    const toml::table *t = n->as_table();
    if (!t)
      fail(n->source(), "[" + name + "] must be a table");
    for (const auto &[k, v] : *t) {
      if (keys.count(std::string(k.str())))
        continue;
      std::string valid;
      for (const std::string &s : keys)
        valid += (valid.empty() ? "" : ", ") + s;
      fail(k.source(), "unknown key '" + std::string(k.str()) + "' in [" + name + "]" +
                           support::didYouMean(std::string(k.str()), {keys.begin(), keys.end()}) +
                           "; valid keys: " + valid);
    }
    return t;
  }

  template <typename T>
  void get(const toml::table *t, const char *key, const char *section, T &out) {
    if (!t)
      return;
    const toml::node *n = t->get(key);
    if (!n)
      return;
    if constexpr (std::is_same_v<T, std::string>) {
      if (!n->is_string())
        fail(n->source(), std::string(section) + "." + key + " must be a string");
      out = n->as_string()->get();
    } else if constexpr (std::is_same_v<T, double>) {
      if (!n->is_number())
        fail(n->source(), std::string(section) + "." + key + " must be a number");
      out = n->value<double>().value();
    } else {
      if (!n->is_integer())
        fail(n->source(), std::string(section) + "." + key + " must be an integer");
      int64_t v = n->as_integer()->get();
      if (v < 0)
        fail(n->source(), std::string(section) + "." + key + " must not be negative");
      out = static_cast<T>(v);
    }
  }

  [[noreturn]] void fail(const toml::source_region &r, const std::string &msg) {
    throw ConfigError{where(path_, r) + ": error: " + msg};
  }

private:
  std::string path_;
  const toml::table &root_;
};

std::string resolve(const std::string &p, const std::string &baseDir, const std::string &root) {
  if (p.empty() || fs::path(p).is_absolute())
    return p;
  fs::path local = fs::path(baseDir) / p;
  std::error_code ec;
  if (fs::exists(local, ec))
    return local.lexically_normal().string();
  return (fs::path(root) / p).lexically_normal().string();
}

constexpr int64_t kMaxThreads = 1024;
constexpr int64_t kMaxEpochs = 1000000;

const std::set<std::string> kArKeys = {"num_kv", "num_pairs", "query"};
const std::set<std::string> kAtrKeys = {"num_terminals", "num_nonterminals", "max_rhs_len",
                                        "max_rules_per_nt", "max_depth",
                                        "terminal_occurrence_factor", "held_out", "max_string_len"};

/// [task]: the shared keys, then the chosen task's own (the other task's
/// keys are errors that say which task they belong to).
void readTask(Reader &r, const toml::table &root, TrainConfig &c) {
  std::set<std::string> keys = {"name", "train_size", "test_size", "seed", "cache_dir"};
  keys.insert(kArKeys.begin(), kArKeys.end());
  keys.insert(kAtrKeys.begin(), kAtrKeys.end());
  const toml::table *task = r.section("task", keys);
  tasks::TaskConfig &t = c.task;
  r.get(task, "name", "task", t.name);
  if (t.name != "ar" && t.name != "atr")
    r.fail(task->get("name")->source(), "unknown task '" + t.name + "'; available: ar, atr");
  r.get(task, "cache_dir", "task", c.cacheDir);
  std::error_code ec;
  if (!c.cacheDir.empty() && fs::exists(c.cacheDir, ec) && !fs::is_directory(c.cacheDir, ec))
    r.fail(task->get("cache_dir")->source(),
           "task.cache_dir '" + c.cacheDir + "' exists and is not a directory");
  if (task)
    for (const auto &[k, v] : *task) {
      const std::set<std::string> &other = t.isATR() ? kArKeys : kAtrKeys;
      if (other.count(std::string(k.str())))
        r.fail(k.source(), "task." + std::string(k.str()) + " belongs to task '" +
                               (t.isATR() ? "ar" : "atr") + "', but name = \"" + t.name + "\"");
    }
  auto sizes = [&](int64_t &train, int64_t &test, uint64_t &seed) {
    r.get(task, "train_size", "task", train);
    r.get(task, "test_size", "task", test);
    r.get(task, "seed", "task", seed);
    if (train < 1 || test < 1)
      r.fail(task ? task->source() : root.source(), "[task] train_size and test_size must be >= 1");
  };
  // Both sets are held in memory as int32 tokens: refuse a size that cannot be.
  auto tokenBudget = [&](int64_t documents, int64_t length) {
    constexpr int64_t kMaxTokens = 2000000000;
    if (documents > kMaxTokens / std::max<int64_t>(1, length))
      r.fail(task ? task->source() : root.source(),
             "[task] train_size + test_size documents of up to " + std::to_string(length) +
                 " tokens exceed " + std::to_string(kMaxTokens) + " tokens (8 GB) in memory");
  };
  if (!t.isATR()) {
    r.get(task, "num_kv", "task", t.ar.numKV);
    r.get(task, "num_pairs", "task", t.ar.numPairs);
    std::string query = "key";
    r.get(task, "query", "task", query);
    if (query != "key" && query != "value")
      r.fail(task->get("query")->source(),
             "task.query is what the query token is: \"key\" (AR) or \"value\" (reverse AR), got \"" + query + "\"");
    t.ar.queryValue = query == "value";
    sizes(t.ar.trainSize, t.ar.testSize, t.ar.seed);
    if (t.ar.numKV < 4 || t.ar.numKV % 2 || t.ar.numPairs < 1 || t.ar.numPairs > t.ar.keys())
      r.fail(task ? task->source() : root.source(),
             "[task] needs an even num_kv >= 4 and 1 <= num_pairs <= num_kv / 2");
    // Token ids are int32, and distinct keys are drawn by rejection (cost
    // grows with num_pairs²).
    if (t.ar.numKV > 100000000)
      r.fail(task->get("num_kv")->source(), "task.num_kv must be <= 100,000,000");
    if (t.ar.numPairs > 100000)
      r.fail(task->get("num_pairs")->source(), "task.num_pairs must be <= 100,000");
    tokenBudget(t.ar.trainSize + t.ar.testSize, t.ar.seqLen());
    return;
  }
  tasks::ATRConfig &a = t.atr;
  r.get(task, "num_terminals", "task", a.numTerminals);
  r.get(task, "num_nonterminals", "task", a.numNonterminals);
  r.get(task, "max_rhs_len", "task", a.maxRhsLen);
  r.get(task, "max_rules_per_nt", "task", a.maxRulesPerNt);
  r.get(task, "max_depth", "task", a.maxDepth);
  r.get(task, "terminal_occurrence_factor", "task", a.terminalFactor);
  r.get(task, "held_out", "task", a.heldOut);
  r.get(task, "max_string_len", "task", a.maxStringLen);
  sizes(a.trainSize, a.testSize, a.seed);
  tokenBudget(a.trainSize + a.testSize, a.maxStringLen + 6);
  auto need = [&](const char *key, bool ok, const std::string &msg) {
    if (ok)
      return;
    const toml::node *n = task ? task->get(key) : nullptr;
    r.fail(n ? n->source() : root.source(), msg);
  };
  need("num_terminals", a.numTerminals >= 2 && a.numTerminals <= 1000000,
       "task.num_terminals must be in [2, 1000000]");
  need("num_nonterminals", a.numNonterminals >= 1 && a.numNonterminals <= 100000,
       "task.num_nonterminals must be in [1, 100000]");
  need("max_rhs_len", a.maxRhsLen >= 2 && a.maxRhsLen <= 64, "task.max_rhs_len must be in [2, 64]");
  need("max_rules_per_nt", a.maxRulesPerNt >= 2 && a.maxRulesPerNt <= 64,
       "task.max_rules_per_nt must be in [2, 64]");
  need("max_depth", a.maxDepth >= 1 && a.maxDepth <= 64, "task.max_depth must be in [1, 64]");
  need("held_out", a.heldOut >= 0 && a.heldOut < 1,
       "task.held_out is a fraction of the label pairs, in [0, 1)");
  need("held_out", a.heldOut == 0 || a.numTerminals <= 10000,
       "task.held_out splits the |Σ|² label pairs: it needs num_terminals <= 10000");
  need("max_string_len", a.maxStringLen >= 3 && a.maxStringLen <= 100000,
       "task.max_string_len must be in [3, 100000]");
  // Building the grammar costs |N|² (which nonterminal may use which) and
  // |N| × |Σ| (each nonterminal's head distribution): refuse sizes whose
  // construction alone would take minutes or gigabytes.
  need("num_nonterminals", a.numNonterminals <= 10000,
       "task.num_nonterminals must be <= 10000 (the grammar's construction grows with its square)");
  need("num_terminals", a.numNonterminals * a.numTerminals <= 50000000,
       "task.num_nonterminals × num_terminals must be <= 50,000,000 (one head distribution over "
       "the terminals per nonterminal); this grammar has " +
           std::to_string(a.numNonterminals * a.numTerminals));
  // The split must leave label pairs on both sides, or one side's rejection
  // sampling could never finish.
  if (a.heldOut > 0) {
    const int64_t pairs = a.numTerminals * a.numTerminals;
    const auto held = static_cast<int64_t>(a.heldOut * static_cast<double>(pairs) + 0.5);
    need("held_out", held >= 1,
         "task.held_out = " + std::to_string(a.heldOut) + " holds out " + std::to_string(held) +
             " of the " + std::to_string(pairs) + " label pairs: the test set would have none");
    need("held_out", held < pairs,
         "task.held_out = " + std::to_string(a.heldOut) + " holds out all " +
             std::to_string(pairs) + " label pairs: the training set would have none");
  }
}
} // namespace

namespace {
/// `text` fit for a TOML comment line: a control character (a newline in a
/// file name would end the comment, and what follows be read as config)
/// written as an escape.
std::string commentText(const std::string &text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\n')
      out += "\\n";
    else if (c < 0x20 || c == 0x7f)
      out += "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 15];
    else
      out += static_cast<char>(c);
  }
  return out;
}
} // namespace

std::string repeatedSetting(const std::vector<std::string> &settings) {
  std::map<std::string, std::string> first; // key -> its first setting
  for (const std::string &setting : settings) {
    const std::string key = setting.substr(0, setting.find('='));
    if (auto [it, fresh] = first.emplace(key, setting); !fresh)
      return "--set " + setting + ": error: " + key + " is set twice (--set " + it->second +
             " before it); give each key once";
  }
  return "";
}

bool parseConfig(const std::string &text, const std::string &path, const std::string &baseDir,
                 const std::string &projectRoot, TrainConfig &c, std::string &error,
                 const std::vector<std::string> &settings) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error &e) {
    error = where(path, e.source()) + ": error: " + std::string(e.description());
    return false;
  }
  if (error = repeatedSetting(settings); !error.empty())
    return false;
  for (const std::string &setting : settings)
    if (!applySetting(root, setting, error))
      return false;
  try {
    Reader r(path, root);
    for (const auto &[k, v] : root)
      if (k != "model" && k != "task" && k != "train" && k != "output")
        r.fail(k.source(), "unknown section [" + std::string(k.str()) +
                               "]; valid sections: model, task, train, output");
    const toml::table *model = r.section("model", {"file", "name", "config", "scan_form", "scan_chunk"});
    if (!model || !model->get("file"))
      r.fail(root.source(), "[model] needs file = \"path/to/model.mix\"");
    r.get(model, "file", "model", c.modelFile);
    r.get(model, "name", "model", c.modelName);
    r.get(model, "scan_form", "model", c.scanForm);
    r.get(model, "scan_chunk", "model", c.scanChunk);
    if (c.scanForm != "sequential" && c.scanForm != "chunked")
      r.fail(model->get("scan_form")->source(), "model.scan_form must be \"sequential\" or \"chunked\"");
    if (c.scanChunk < 1 || c.scanChunk > graph::kMaxScanChunk)
      r.fail(model->get("scan_chunk")->source(),
             "model.scan_chunk must be in [1, " + std::to_string(graph::kMaxScanChunk) + "] (steps per chunk)");
    c.modelFile = resolve(c.modelFile, baseDir, projectRoot);
    if (const toml::node *cfg = model->get("config")) {
      const toml::table *t = cfg->as_table();
      if (!t)
        r.fail(cfg->source(), "[model.config] must be a table of model parameters");
      for (const auto &[k, v] : *t) {
        std::string value;
        if (v.is_boolean())
          value = v.as_boolean()->get() ? "true" : "false";
        else if (v.is_integer())
          value = std::to_string(v.as_integer()->get());
        else if (v.is_floating_point()) {
          std::ostringstream ss;
          ss.precision(17);
          ss << v.as_floating_point()->get();
          value = ss.str();
        } else
          r.fail(v.source(), "model parameter '" + std::string(k.str()) +
                                 "' must be an integer, a number or a boolean");
        c.modelConfig.push_back({std::string(k.str()), value});
      }
    }
    readTask(r, root, c);

    const toml::table *train = r.section(
        "train", {"epochs", "batch_size", "lr", "warmup", "schedule", "seed", "eval_every",
                  "eval_size", "eval_batch", "checkpoint_every", "max_steps", "threads",
                  "early_stop_acc", "log_every"});
    r.get(train, "epochs", "train", c.epochs);
    r.get(train, "batch_size", "train", c.batchSize);
    r.get(train, "lr", "train", c.lr);
    r.get(train, "warmup", "train", c.warmup);
    r.get(train, "schedule", "train", c.schedule);
    r.get(train, "seed", "train", c.seed);
    r.get(train, "eval_every", "train", c.evalEvery);
    r.get(train, "eval_size", "train", c.evalSize);
    r.get(train, "eval_batch", "train", c.evalBatch);
    r.get(train, "checkpoint_every", "train", c.checkpointEvery);
    r.get(train, "max_steps", "train", c.maxSteps);
    r.get(train, "threads", "train", c.threads);
    r.get(train, "early_stop_acc", "train", c.earlyStopAcc);
    r.get(train, "log_every", "train", c.logEvery);
    auto bad = [&](const char *key, const std::string &msg) {
      const toml::node *n = train ? train->get(key) : nullptr;
      r.fail(n ? n->source() : root.source(), msg);
    };
    if (c.schedule != "cosine" && c.schedule != "linear")
      bad("schedule", "train.schedule must be \"cosine\" or \"linear\"");
    if (c.batchSize < 1)
      bad("batch_size", "train.batch_size must be >= 1");
    if (c.epochs < 1)
      bad("epochs", "train.epochs must be >= 1");
    if (!(c.lr > 0))
      bad("lr", "train.lr must be positive");
    if (c.warmup < 0 || c.warmup >= 1)
      bad("warmup", "train.warmup is a fraction of the steps, in [0, 1)");
    if (c.evalSize < 1 || c.evalBatch < 1)
      bad("eval_size", "train.eval_size and eval_batch must be >= 1");
    if (c.evalSize > c.task.testSize())
      bad("eval_size", "train.eval_size (" + std::to_string(c.evalSize) +
                           ") exceeds task.test_size (" + std::to_string(c.task.testSize()) + ")");
    if (!(c.earlyStopAcc >= 0 && c.earlyStopAcc <= 1))
      bad("early_stop_acc", "train.early_stop_acc is an eval accuracy in [0, 1] (0: never stop early)");
    if (c.batchSize > c.task.trainSize())
      bad("batch_size", "train.batch_size exceeds task.train_size");
    // Periods are divisors in the step loop: 0 would trap.
    if (c.evalEvery < 1)
      bad("eval_every", "train.eval_every must be >= 1 (steps between evaluations)");
    if (c.logEvery < 0)
      bad("log_every", "train.log_every must be >= 0 (steps a loss.csv row averages; 0: eval_every / 10)");
    if (c.checkpointEvery < 1)
      bad("checkpoint_every", "train.checkpoint_every must be >= 1 (steps between checkpoints)");
    if (c.threads > kMaxThreads)
      bad("threads", "train.threads must be in [0, " + std::to_string(kMaxThreads) +
                         "] (0: one thread)");
    // epochs × steps per epoch must fit in int64 (and a run that long is a typo).
    if (c.epochs > kMaxEpochs)
      bad("epochs", "train.epochs must be <= " + std::to_string(kMaxEpochs));
    // NaN passes every ordered comparison above: refuse non-finite floats by name.
    for (const auto &[key, v] : {std::pair<const char *, double>{"lr", c.lr},
                                 {"warmup", c.warmup}, {"early_stop_acc", c.earlyStopAcc}})
      if (!std::isfinite(v))
        bad(key, std::string("train.") + key + " must be a finite number");

    const toml::table *out = r.section("output", {"dir"});
    r.get(out, "dir", "output", c.outDir);
    if (c.outDir.empty())
      r.fail(out && out->get("dir") ? out->get("dir")->source() : root.source(),
             "output.dir must not be empty");
  } catch (const ConfigError &e) {
    error = e.message;
    return false;
  }
  c.text = text;
  if (!settings.empty()) { // the run's config.toml is what it trained with
    std::ostringstream ss;
    ss << "# " << commentText(path) << " with";
    for (const std::string &setting : settings)
      ss << " --set " << commentText(setting);
    ss << "\n" << root << "\n";
    c.text = ss.str();
  }
  return true;
}

std::string runSettings(const TrainConfig &c) {
  std::ostringstream ss;
  ss.precision(17);
  const tasks::TaskConfig &t = c.task;
  ss << "task.name = " << t.name << "\n";
  if (t.isATR()) {
    const tasks::ATRConfig &a = t.atr;
    ss << "task.num_terminals = " << a.numTerminals << "\ntask.num_nonterminals = "
       << a.numNonterminals << "\ntask.max_rhs_len = " << a.maxRhsLen
       << "\ntask.max_rules_per_nt = " << a.maxRulesPerNt << "\ntask.max_depth = " << a.maxDepth
       << "\ntask.terminal_occurrence_factor = " << a.terminalFactor << "\ntask.held_out = "
       << a.heldOut << "\ntask.max_string_len = " << a.maxStringLen;
  } else {
    ss << "task.num_kv = " << t.ar.numKV << "\ntask.num_pairs = " << t.ar.numPairs;
    if (t.ar.queryValue) // only then: the checkpoints of AR runs keep their settings
      ss << "\ntask.query = value";
  }
  ss << "\ntask.train_size = " << t.trainSize() << "\ntask.test_size = " << t.testSize()
     << "\ntask.seed = " << (t.isATR() ? t.atr.seed : t.ar.seed) << "\ntrain.epochs = " << c.epochs
     << "\ntrain.batch_size = " << c.batchSize << "\ntrain.lr = " << c.lr
     << "\ntrain.warmup = " << c.warmup << "\ntrain.schedule = " << c.schedule
     << "\ntrain.seed = " << c.seed << "\ntrain.max_steps = " << c.maxSteps
     << "\ntrain.eval_every = " << c.evalEvery << "\ntrain.eval_size = " << c.evalSize
     << "\ntrain.checkpoint_every = " << c.checkpointEvery
     << "\ntrain.early_stop_acc = " << c.earlyStopAcc << "\n";
  return ss.str();
}

std::vector<std::string> changedSettings(const std::string &before, const std::string &after) {
  auto parse = [](const std::string &text) {
    std::map<std::string, std::string> kv;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (size_t eq = line.find(" = "); eq != std::string::npos)
        kv[line.substr(0, eq)] = line.substr(eq + 3);
    return kv;
  };
  std::map<std::string, std::string> a = parse(before), b = parse(after);
  std::vector<std::string> changed;
  for (const auto &[k, v] : b)
    if (!a.count(k) || a[k] != v)
      changed.push_back(k);
  for (const auto &[k, v] : a)
    if (!b.count(k))
      changed.push_back(k);
  return changed;
}

bool overridableOnResume(const std::string &key) {
  static const std::set<std::string> keys = {"train.max_steps", "train.eval_every",
                                             "train.eval_size", "train.checkpoint_every",
                                             "train.early_stop_acc"};
  return keys.count(key) != 0;
}

const std::set<std::string> &packableSettings() {
  static const std::set<std::string> keys = {"train.lr", "train.seed", "train.warmup", "train.schedule",
                                             "train.early_stop_acc"};
  return keys;
}

std::string defaultConfigText() {
  // Based (BaseConv + Taylor linear attention), d = 64, on AR with 8 pairs
  // over a 128-key / 128-value vocabulary: reaches ~95% in about 6k steps
  // (~1.5 min on one core). The paper's full recipe is examples/ar/*.toml.
  return R"(# mixc's built-in default run (the main job).
[model]
file = "stdlib/based.mix"
[model.config]
d = 64

[task]
name = "ar"
num_kv = 256
num_pairs = 8
train_size = 100000
test_size = 1024

[train]
epochs = 2
lr = 1e-3
eval_every = 500
eval_size = 320

[output]
dir = "runs/default"
)";
}

} // namespace mixc::train
