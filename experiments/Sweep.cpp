//===- Sweep.cpp - `mixc sweep`: a grid of runs as child processes ----------===//
#include "experiments/Sweep.h"
#include "support/StepTiming.h"
#include "support/Format.h"
#include "experiments/Csv.h"
#include "experiments/Packs.h"
#include "experiments/Slurm.h"
#include "runtime/train/Config.h"
#include "support/AtomicWrite.h"
#include "support/FileLock.h"
#include "support/Process.h"
#include "support/TextFile.h"

#include <toml++/toml.h>

#include <chrono>
#include <csignal>
#include <deque>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace mixc::experiments {
namespace fs = std::filesystem;

namespace {
struct SweepError {
  std::string message;
};

/// One grid axis: a config path and its values (kept as TOML nodes, so a
/// cell's config gets them with their types).
struct Axis {
  std::string path;
  toml::array values;
  toml::source_region where; // the axis's key (copied arrays lose their positions)
};

struct Spec {
  std::string name, title, description, scale;
  fs::path file, base, out;
  int64_t jobs = 0, pack = 0;
  std::vector<Axis> axes;
  toml::table fixed; // path → value, applied to every cell
  std::vector<std::string> scripts;
  int64_t interveneSize = 320;
  std::vector<std::pair<std::string, std::string>> slurm; // #SBATCH --key=value, in order
  std::vector<std::string> slurmExtra;                    // #SBATCH lines as written
  std::vector<std::string> reportWith; // [sweep] report_with: sweeps whose rows the report's accuracy plot adds
};

struct Cell {
  std::string name;
  std::vector<std::pair<std::string, std::string>> coords; // axis path → display value
  std::vector<const toml::node *> values;
};

std::string where(const fs::path &file, const toml::source_region &r) {
  return file.string() + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
}

[[noreturn]] void fail(const fs::path &file, const toml::source_region &r, const std::string &msg) {
  throw SweepError{where(file, r) + ": error: " + msg};
}
[[noreturn]] void fail(const fs::path &file, const toml::node &n, const std::string &msg) {
  fail(file, n.source(), msg);
}

const std::set<std::string> kSections = {"model", "task", "train", "output"};

/// "model.config.d" → ok; the first part must be a config section.
void checkPath(const fs::path &file, const toml::source_region &at, const std::string &path) {
  std::string section = path.substr(0, path.find('.'));
  if (path.find('.') == std::string::npos || !kSections.count(section))
    fail(file, at, "'" + path + "' is not a config path; write section.key, e.g. \"train.lr\" or "
                   "\"model.config.d\" (sections: model, task, train, output)");
  if (path == "output.dir")
    fail(file, at, "output.dir is set per cell by the sweep; use [sweep] out");
}

/// The shortest decimal that reads back as `x`: 0.001 rather than
/// 0.0010000000000000000208, yet two different values never print alike
/// (cell names and result columns are built from it).
std::string shortestDouble(double x) {
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, x);
    if (std::strtod(buf, nullptr) == x)
      break;
  }
  return buf;
}

std::string display(const toml::node &v) {
  if (auto s = v.as_string())
    return s->get();
  std::ostringstream ss;
  if (auto f = v.as_floating_point())
    return shortestDouble(f->get());
  else if (auto i = v.as_integer())
    ss << i->get();
  else if (auto b = v.as_boolean())
    ss << (b->get() ? "true" : "false");
  return ss.str();
}

/// The short form of a value in a cell's name: a file's stem, else the
/// key's last part followed by the value ("d64", "lr0.001").
std::string nameComponent(const std::string &path, const toml::node &v) {
  std::string key = path.substr(path.rfind('.') + 1), value = display(v);
  const std::string raw = key == "file" ? fs::path(value).stem().string() : key + value;
  std::string out;
  for (char c : raw) {
    if (c == '+' && key != "file") // 1e+06 is "1e06": as '-' it would read 1e-06, a millionth
      continue;
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ? c : '-';
  }
  // A folder name, never "." or ".." (a stem of "...mix" would put the run in
  // the sweep's parent) nor hidden; a comma is gone above (--cell a,b is a pack).
  if (out.empty() || out.front() == '.')
    out.insert(out.begin(), '-');
  return out;
}

/// Reads a [grid]-like table into axes (arrays) and fixed values (scalars);
/// an axis given again replaces the earlier one (a scale preset).
void readGrid(const fs::path &file, const toml::table &t, Spec &s) {
  for (const auto &[k, v] : t) {
    std::string path(k.str());
    checkPath(file, k.source(), path);
    for (auto it = s.axes.begin(); it != s.axes.end();)
      it = it->path == path ? s.axes.erase(it) : it + 1;
    s.fixed.erase(path);
    if (const toml::array *a = v.as_array()) {
      if (a->empty())
        fail(file, v, "the axis '" + path + "' has no values");
      for (const toml::node &e : *a)
        if (e.is_array() || e.is_table())
          fail(file, e, "axis values must be strings, numbers or booleans");
      s.axes.push_back({path, *a, k.source()});
    } else if (v.is_table()) {
      fail(file, v, "'" + path + "' must be a value or a list of values");
    } else {
      s.fixed.insert(path, v);
    }
  }
}

/// --set KEY=VALUE: KEY set to VALUE in every cell, as a scalar in [grid]
/// would be (a bare word is a string); refused for a key the grid sweeps.
void applySweepSetting(const std::string &setting, Spec &s) {
  const size_t eq = setting.find('=');
  const std::string path = setting.substr(0, eq), name = "--set " + setting;
  if (eq == std::string::npos || eq == 0)
    throw SweepError{name + ": error: --set takes section.key=value (e.g. train.max_steps=100)"};
  for (const Axis &a : s.axes)
    if (a.path == path)
      throw SweepError{name + ": error: the sweep's grid varies " + path + "; --set fixes keys it does not vary"};
  toml::table line;
  for (const std::string &value : {setting.substr(eq + 1), "'" + setting.substr(eq + 1) + "'"}) {
    try {
      line = toml::parse("\"" + path + "\" = " + value, std::string_view(name));
      break;
    } catch (const toml::parse_error &e) {
      if (value.front() == '\'') // not a value, not a bare word either
        throw SweepError{name + ": error: cannot read the value: " + std::string(e.description())};
    }
  }
  readGrid(name, line, s);
}

const toml::table &tableAt(const fs::path &file, const toml::table &root, const char *key) {
  static const toml::table empty;
  const toml::node *n = root.get(key);
  if (!n)
    return empty;
  if (!n->is_table())
    fail(file, *n, std::string("[") + key + "] must be a table");
  return *n->as_table();
}

/// Checks that `t` only holds `keys` (named in the error otherwise).
void onlyKeys(const fs::path &file, const toml::table &t, const std::string &section,
              const std::set<std::string> &keys) {
  for (const auto &[k, v] : t)
    if (!keys.count(std::string(k.str()))) {
      std::string valid;
      for (const auto &s : keys)
        valid += (valid.empty() ? "" : ", ") + s;
      throw SweepError{where(file, k.source()) + ": error: unknown key '" + std::string(k.str()) +
                       "' in [" + section + "]; valid keys: " + valid};
    }
}

fs::path resolveNear(const fs::path &p, const std::vector<fs::path> &dirs) {
  if (p.is_absolute())
    return p;
  for (const fs::path &d : dirs) {
    std::error_code ec;
    if (fs::exists(d / p, ec))
      return fs::absolute(d / p).lexically_normal();
  }
  return p;
}

const std::set<std::string> kSlurmKeys = {"partition", "time", "cpus_per_task", "mem", "gres",
                                          "account", "qos", "extra"};

/// One #SBATCH setting ("cpus_per_task" is written --cpus-per-task).
void setSlurm(Spec &s, const std::string &key, const std::string &value) {
  std::string flag = key;
  for (char &c : flag)
    c = c == '_' ? '-' : c;
  for (auto &[k, v] : s.slurm)
    if (k == flag) {
      v = value;
      return;
    }
  s.slurm.push_back({flag, value});
}

void readSlurm(const fs::path &file, const toml::table &t, Spec &s) {
  onlyKeys(file, t, "slurm", kSlurmKeys);
  for (const auto &[k, v] : t) {
    const std::string key(k.str());
    if (key == "extra") {
      const toml::array *lines = v.as_array();
      if (!lines)
        fail(file, v, "slurm.extra is a list of #SBATCH lines, e.g. [\"--constraint=avx2\"]");
      for (const toml::node &line : *lines) {
        if (!line.is_string())
          fail(file, line, "slurm.extra holds strings (#SBATCH lines without the #SBATCH)");
        if (std::string why = sbatchValueProblem(*line.value<std::string>()); !why.empty())
          fail(file, line, "slurm.extra cannot hold this line: " + why);
        s.slurmExtra.push_back(*line.value<std::string>());
      }
      continue;
    }
    if (!v.is_string() && !v.is_integer())
      fail(file, v, "slurm." + key + " is a string or an integer, e.g. time = \"02:00:00\"");
    if (std::string why = sbatchValueProblem(display(v)); !why.empty())
      fail(file, v, "slurm." + key + " cannot be written into the batch script: " + why);
    setSlurm(s, key, display(v));
  }
}

/// Why `name` cannot name a sweep, or "": it names the report's files
/// (csv/NAME-results.csv, plots/NAME-*.svg), the SLURM job and its lines,
/// so it is a plain file name: letters, digits, ' ', '.', '-', '_', not
/// starting with '.' or ' ', at most 100 characters.
std::string sweepNameProblem(const std::string &name) {
  if (name.empty() || name.size() > 100)
    return "must have 1 to 100 characters";
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != ' ' && c != '.' && c != '-' && c != '_')
      return std::string("holds '") + (c == '\n' ? "\\n" : std::string(1, c)) +
             "': a sweep's name names its report files and SLURM job, so it may hold letters, digits, ' ', '.', "
             "'-' and '_' only";
  if (name.front() == '.' || name.front() == ' ')
    return "starts with '" + std::string(1, name.front()) + "': a sweep's name names its report files";
  return "";
}

Spec readSpec(const SweepOptions &o) {
  Spec s;
  s.file = o.file;
  s.scale = o.scale;
  toml::table root;
  try {
    root = toml::parse_file(o.file);
  } catch (const toml::parse_error &e) {
    throw SweepError{where(s.file, e.source()) + ": error: " + std::string(e.description())};
  }
  for (const auto &[k, v] : root)
    if (k != "sweep" && k != "grid" && k != "scale" && k != "interventions" && k != "slurm")
      throw SweepError{where(s.file, k.source()) + ": error: unknown section [" +
                       std::string(k.str()) + "]; valid sections: sweep, grid, scale, interventions, slurm"};
  const toml::table &sweep = tableAt(s.file, root, "sweep");
  onlyKeys(s.file, sweep, "sweep", {"name", "title", "description", "base", "out", "jobs", "pack", "report_with"});
  s.name = sweep["name"].value_or(s.file.stem().string());
  if (std::string why = sweepNameProblem(s.name); !why.empty()) {
    if (const toml::node *n = sweep.get("name"))
      fail(s.file, *n, "[sweep] name '" + s.name + "' " + why);
    throw SweepError{s.file.string() + ": error: the sweep has no [sweep] name, and its file's name '" + s.name +
                     "' " + why + "; give [sweep] name"};
  }
  s.title = sweep["title"].value_or(s.name);
  s.description = sweep["description"].value_or(std::string());
  if (const toml::node *jobs = sweep.get("jobs")) {
    // A typo here used to fall back to one job per core without a word.
    if (!jobs->is_integer() || jobs->as_integer()->get() < 1 || jobs->as_integer()->get() > 1024)
      fail(s.file, *jobs, "[sweep] jobs is the number of cells run at once: an integer in [1, 1024]");
    s.jobs = jobs->as_integer()->get();
  }
  if (const toml::node *with = sweep.get("report_with")) {
    const toml::array *names = with->as_array();
    if (!names || names->empty())
      fail(s.file, *with, "[sweep] report_with names the sweeps drawn with this one: a list of sweep names");
    for (const toml::node &n : *names) {
      if (!n.is_string() || n.as_string()->get().empty() || n.as_string()->get() == s.name)
        fail(s.file, n, "[sweep] report_with: each entry is another sweep's name ([sweep] name), as a string");
      s.reportWith.push_back(n.as_string()->get());
    }
  }
  if (const toml::node *pack = sweep.get("pack")) {
    if (!pack->is_integer() || pack->as_integer()->get() < 1 || pack->as_integer()->get() > 1024)
      fail(s.file, *pack, "[sweep] pack is the most cells trained as one pack: an integer in [1, 1024]");
    s.pack = pack->as_integer()->get();
  }
  const fs::path dir = s.file.parent_path();
  const std::vector<fs::path> near = {dir, fs::current_path(), o.projectRoot};
  if (!sweep["base"].is_string())
    throw SweepError{where(s.file, sweep.source()) + ": error: [sweep] needs base = \"a training config.toml\""};
  s.base = resolveNear(*sweep["base"].value<std::string>(), near);
  if (!fs::exists(s.base))
    fail(s.file, *sweep.get("base"), "cannot find the base config '" + s.base.string() + "'");
  s.out = o.outDir.empty() ? fs::path(sweep["out"].value_or("runs/" + s.name)) : fs::path(o.outDir);
  readGrid(s.file, tableAt(s.file, root, "grid"), s);
  const toml::table &scales = tableAt(s.file, root, "scale");
  if (!o.scale.empty()) {
    const toml::node *preset = scales.get(o.scale);
    if (!preset || !preset->is_table()) {
      std::string known;
      for (const auto &[k, v] : scales)
        known += (known.empty() ? "" : ", ") + std::string(k.str());
      throw SweepError{s.file.string() + ": error: no [scale." + o.scale + "] preset" +
                       (known.empty() ? std::string(" (the file has none)") : "; presets: " + known)};
    }
    readGrid(s.file, *preset->as_table(), s);
  }
  if (std::string repeated = train::repeatedSetting(o.sets); !repeated.empty())
    throw SweepError{repeated};
  if (o.pack > 1024) // as [sweep] pack: one rule for both spellings
    throw SweepError{"--pack " + std::to_string(o.pack) +
                     ": error: --pack is the most cells trained as one pack, at most 1024"};
  for (const std::string &setting : o.sets)
    applySweepSetting(setting, s);
  const toml::table &iv = tableAt(s.file, root, "interventions");
  onlyKeys(s.file, iv, "interventions", {"scripts", "size"});
  if (const toml::array *a = iv["scripts"].as_array())
    for (const toml::node &e : *a) {
      if (!e.is_string())
        fail(s.file, e, "interventions.scripts holds paths to .rw files");
      fs::path p = resolveNear(*e.value<std::string>(), near);
      if (!fs::exists(p))
        fail(s.file, e, "cannot find the intervention script '" + p.string() + "'");
      // Each cell keeps a script's tables in interventions/<file stem>/.
      for (const std::string &other : s.scripts)
        if (fs::path(other).stem() == p.stem())
          fail(s.file, e, "'" + p.string() + "' and '" + other + "' have the same file name, and a cell keeps each "
                          "script's tables in interventions/" + p.stem().string() + "/: rename one");
      s.scripts.push_back(p.string());
    }
  if (const toml::node *size = iv.get("size")) {
    if (!size->is_integer() || size->as_integer()->get() < 1)
      fail(s.file, *size, "interventions.size is a number of test documents: a positive integer");
    s.interveneSize = size->as_integer()->get();
  }
  readSlurm(s.file, tableAt(s.file, root, "slurm"), s);
  for (const auto &[key, value] : o.slurm) { // --slurm key=value wins over the file
    if (!kSlurmKeys.count(key) || key == "extra")
      throw SweepError{"--slurm " + key + "=" + value + ": unknown setting; valid: partition, time, "
                       "cpus_per_task, mem, gres, account, qos"};
    if (std::string why = sbatchValueProblem(value); !why.empty())
      throw SweepError{"--slurm " + key + ": the value cannot be written into the batch script: " + why};
    setSlurm(s, key, value);
  }
  return s;
}

/// An axis's name components, one per value. Files are named by their stem
/// unless two share one (stdlib/mamba.mix, mine/mamba.mix): then by their
/// path. Values that still name alike (strings that differ only in
/// characters a folder name cannot hold, a value listed twice) are an error
/// here, at planning time, not two cells writing one folder.
std::vector<std::string> axisComponents(const fs::path &file, const Axis &a) {
  auto components = [&](bool fullPaths) {
    std::vector<std::string> out;
    for (const toml::node &v : a.values)
      out.push_back(fullPaths && v.is_string() && a.path.substr(a.path.rfind('.') + 1) == "file"
                        ? nameComponent("path", toml::value<std::string>(
                              fs::path(display(v)).replace_extension().string()))
                        : nameComponent(a.path, v));
    return out;
  };
  auto firstClash = [](const std::vector<std::string> &names) {
    std::map<std::string, size_t> seen;
    for (size_t i = 0; i < names.size(); ++i)
      if (!seen.emplace(names[i], i).second)
        return std::make_pair(seen[names[i]], i);
    return std::make_pair(size_t(0), size_t(0));
  };
  std::vector<std::string> names = components(false);
  if (firstClash(names).second != 0)
    names = components(true);
  auto [i, j] = firstClash(names);
  if (j != 0)
    fail(file, a.where, "the values " + display(a.values[i]) + " and " + display(a.values[j]) +
                                " of the axis '" + a.path + "' give cells one name (" + names[j] +
                                "); list each value once, with names that differ in letters, "
                                "digits, '.', '-' or '_'");
  return names;
}

/// The most cells a sweep plans: its tables, cell list and estimate are
/// held in memory, and a grid this large is almost always a typo.
constexpr size_t kMaxCells = 100000;

std::vector<Cell> cellsOf(const Spec &s) {
  size_t count = 1;
  for (const Axis &a : s.axes) {
    count = count > kMaxCells / a.values.size() ? kMaxCells + 1 : count * a.values.size();
    if (count > kMaxCells)
      fail(s.file, a.where, "the grid has more than " + std::to_string(kMaxCells) +
                                 " cells (at the axis '" + a.path + "'); split it into sweeps");
  }
  std::vector<Cell> cells(1);
  for (const Axis &a : s.axes) {
    std::vector<std::string> components = axisComponents(s.file, a);
    std::vector<Cell> next;
    for (const Cell &c : cells)
      for (size_t i = 0; i < a.values.size(); ++i) {
        const toml::node &v = a.values[i];
        Cell n = c;
        n.coords.push_back({a.path, display(v)});
        n.values.push_back(&v);
        n.name += (n.name.empty() ? "" : "__") + components[i];
        next.push_back(n);
      }
    cells = next;
  }
  if (cells.size() == 1 && cells[0].name.empty())
    cells[0].name = "run";
  return cells;
}

void setPath(toml::table &root, const std::string &path, const toml::node &value) {
  toml::table *t = &root;
  size_t start = 0;
  for (size_t dot; (dot = path.find('.', start)) != std::string::npos; start = dot + 1) {
    std::string key = path.substr(start, dot - start);
    if (!t->get(key) || !t->get(key)->is_table())
      t->insert_or_assign(key, toml::table{});
    t = t->get(key)->as_table();
  }
  value.visit([&](const auto &v) { t->insert_or_assign(path.substr(start), v); });
}

/// The cell's training config: the base, the fixed values, the cell's
/// coordinates, its run folder, and absolute paths (the child runs from the
/// cell's folder's point of view).
toml::table cellTable(const Spec &s, const Cell &c, const fs::path &cellDir,
                      const std::string &projectRoot) {
  toml::table cfg = toml::parse_file(s.base.string());
  for (const auto &[k, v] : s.fixed)
    setPath(cfg, std::string(k.str()), v);
  for (size_t i = 0; i < c.values.size(); ++i)
    setPath(cfg, c.coords[i].first, *c.values[i]);
  const std::vector<fs::path> near = {s.base.parent_path(), s.file.parent_path(),
                                      fs::current_path(), projectRoot};
  if (auto file = cfg["model"]["file"].value<std::string>())
    setPath(cfg, "model.file", toml::value<std::string>(resolveNear(*file, near).string()));
  if (auto cache = cfg["task"]["cache_dir"].value<std::string>(); cache && fs::path(*cache).is_relative())
    setPath(cfg, "task.cache_dir", toml::value<std::string>(fs::absolute(*cache).lexically_normal().string()));
  if (!cfg["train"]["threads"])
    setPath(cfg, "train.threads", toml::value<int64_t>(1));
  setPath(cfg, "output.dir", toml::value<std::string>(fs::absolute(cellDir).string()));
  return cfg;
}

std::string cellConfig(const Spec &s, const Cell &c, const fs::path &cellDir,
                       const std::string &projectRoot) {
  std::ostringstream ss;
  ss << "# sweep " << s.name << ", cell " << c.name << " (written by mixc sweep)\n"
     << cellTable(s, c, cellDir, projectRoot) << "\n";
  return ss.str();
}

/// What decides a cell's cost: its config without the learning rate, the
/// seed and the run folder (cells that differ only there cost the same).
std::string costKey(toml::table cfg) {
  if (toml::table *train = cfg["train"].as_table()) {
    train->erase("lr");
    train->erase("seed");
  }
  cfg.erase("output");
  std::ostringstream ss;
  ss << cfg;
  return ss.str();
}

/// Cells at once: --jobs, else [sweep] jobs, else one per core.
int64_t jobsOf(const SweepOptions &o, const Spec &s) {
  return o.jobs > 0 ? o.jobs : s.jobs > 0 ? s.jobs : std::max<int64_t>(1, sysconf(_SC_NPROCESSORS_ONLN));
}

/// "a,b,c" → {"a", "b", "c"} (cell names hold no commas: letters, digits, . - _).
std::vector<std::string> splitNames(const std::string &list) {
  std::vector<std::string> names;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');)
    if (!name.empty())
      names.push_back(name);
  return names;
}

/// Cells trained as one pack: --pack, else [sweep] pack, else 1.
int64_t packOf(const SweepOptions &o, const Spec &s) { return o.pack > 0 ? o.pack : s.pack > 0 ? s.pack : 1; }

/// The cells `todo` as the units a sweep launches: one cell, or a pack's
/// members (experiments/Packs.h). --cell a,b,c: those cells as one pack.
std::vector<std::vector<size_t>> unitsOf(const Spec &s, const SweepOptions &o, const std::vector<Cell> &cells,
                                         const std::vector<size_t> &todo) {
  const int64_t k = o.cell.find(',') != std::string::npos ? static_cast<int64_t>(todo.size()) : packOf(o, s);
  std::vector<PackCandidate> candidates;
  for (size_t i : todo) {
    const fs::path dir = s.out / cells[i].name;
    PackCandidate c;
    if (k > 1)
      c.key = packKey(cellTable(s, cells[i], dir, o.projectRoot));
    if (fs::exists(dir / "result.toml"))
      c.start = PackCandidate::Start::Trained;
    else if (fs::exists(dir / "checkpoint.pt")) {
      c.start = PackCandidate::Start::Resumes;
      std::string unread; // no pack.txt: it trained alone before
      if (!support::readWholeFile((dir / "pack.txt").string(), c.packedWith, unread))
        c.packedWith.clear();
    }
    candidates.push_back(c);
  }
  std::vector<std::vector<size_t>> units = formPacks(candidates, k);
  for (auto &unit : units)
    for (size_t &i : unit)
      i = todo[i];
  return units;
}

/// "a,b,c": the names of a unit's cells (a SLURM array task's --cell).
std::string unitName(const std::vector<Cell> &cells, const std::vector<size_t> &unit) {
  std::string name;
  for (size_t i : unit)
    name += (name.empty() ? "" : ",") + cells[i].name;
  return name;
}

std::string hours(double seconds) {
  char buf[64];
  if (seconds < 3600)
    std::snprintf(buf, sizeof buf, "%.0f min", seconds / 60);
  else
    std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600);
  return buf;
}

/// The line of a child's stderr that says why it failed: the first one
/// holding "error" (its banner or a warning may come first), else the first.
std::string firstErrorLine(const std::string &err) {
  std::istringstream lines(err);
  std::string line, first;
  while (std::getline(lines, line)) {
    if (line.find("error") != std::string::npos)
      return line;
    if (first.empty())
      first = line;
  }
  return first;
}

/// Seconds of one unit of cells like `files` (a cell, or a pack of them)
/// from `mixc train FILES --time-steps 5` (< 0: it could not be timed, said).
double timeUnit(const SweepOptions &o, const std::vector<std::string> &files, const fs::path &timed,
                const std::string &name, std::ostream &out) {
  using support::format;
  std::vector<std::string> argv = {o.self, "train"};
  argv.insert(argv.end(), files.begin(), files.end());
  argv.insert(argv.end(), {"--time-steps", "5", "--out", timed.string()}); // its step-timing.json
  argv.push_back("--backend=" + o.backend);
  if (!o.devices.empty() && o.engine == "local") // timed where the cells will run
    argv.push_back("--device=" + o.devices.front());
  std::string printed, err;
  out << std::flush;
  const int code = support::runCapture(argv, printed, err);
  support::StepTiming t;
  std::string unread;
  const bool read = code == 0 && support::readStepTiming(timed.string(), t, unread);
  const double secs = read && t.totalSteps > 0 && t.stepSec > 0 ? t.totalSteps * t.stepSec + std::max(0.0, t.evalSec) : -1;
  const std::string what = files.size() == 1 ? name + " and cells like it"
                                             : "packs of " + std::to_string(files.size()) + " like " + name;
  if (secs < 0) {
    const std::string why = code != 0 ? firstErrorLine(err) : unread;
    out << format("estimate: cannot time %s (exit %d): %s\n", what.c_str(), code, why.c_str());
  } else {
    out << format("estimate: %s: %s each (%lld steps x %.1f ms, %s back end)\n", what.c_str(), hours(secs).c_str(),
                  static_cast<long long>(t.totalSteps), 1e3 * t.stepSec, t.backend.c_str());
  }
  return secs;
}

/// --dry-run's estimate: a few timed steps for each distinct shape of unit
/// (a cell, or a pack of a size; in a scratch folder, removed after), scaled
/// to every unit's steps and evaluations. Interventions and early stopping
/// are left out: the first costs a few forward passes per cell, the second
/// only shortens.
/// Returns how many cells could not be timed (their errors said).
size_t printEstimate(const Spec &s, const std::vector<Cell> &cells, const std::vector<std::vector<size_t>> &units,
                     const SweepOptions &o, std::ostream &out) {
  using support::format;
  char scratchTemplate[] = "/tmp/mixc-estimate-XXXXXX";
  if (!mkdtemp(scratchTemplate)) {
    out << "estimate: cannot create a scratch folder in /tmp\n";
    return 0;
  }
  const fs::path scratch = scratchTemplate;
  std::map<std::string, double> costOf; // cost key and pack size → seconds of one unit (< 0: failed)
  double total = 0;
  size_t counted = 0, shapes = 0, packs = 0, packedCells = 0, untimed = 0;
  for (const std::vector<size_t> &unit : units) {
    std::string key = costKey(cellTable(s, cells[unit[0]], scratch, o.projectRoot)) + "\npack " +
                      std::to_string(unit.size());
    auto it = costOf.find(key);
    if (it == costOf.end()) {
      ++shapes;
      std::vector<std::string> files;
      for (size_t m = 0; m < unit.size(); ++m) { // each member's own settings, a scratch run folder
        const fs::path file = scratch / format("shape%zu-%zu.toml", shapes, m);
        std::ostringstream text;
        text << cellTable(s, cells[unit[m]], scratch / format("run%zu", m), o.projectRoot) << "\n";
        writeFileAtomically(file.string(), text.str());
        files.push_back(file.string());
      }
      const double secs = timeUnit(o, files, scratch / format("timed%zu", shapes), cells[unit[0]].name, out);
      it = costOf.emplace(key, secs).first;
    }
    if (it->second >= 0) {
      total += it->second;
      counted += unit.size();
      packs += unit.size() > 1;
      packedCells += unit.size() > 1 ? unit.size() : 0;
    } else {
      untimed += unit.size();
    }
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);
  int64_t jobs = jobsOf(o, s);
  const std::string packed = packs ? format("%zu in %zu packs; ", packedCells, packs) : "";
  out << format("estimate: %zu cells to run (%s%zu distinct shapes timed, 5 steps each, --backend=%s): "
                "%s of %s time, about %s wall at --jobs %lld (training and evaluation; "
                "interventions and early stopping not counted)\n",
                counted, packed.c_str(), shapes, o.backend.c_str(), hours(total).c_str(),
                o.devices.empty() || o.engine != "local" ? "CPU" : o.devices.front().c_str(),
                hours(total / static_cast<double>(jobs)).c_str(), (long long)jobs);
  if (untimed)
    out << format("estimate: %zu of %zu cells to run could not be timed (the errors above): they would fail\n",
                  untimed, untimed + counted);
  return untimed;
}

volatile std::sig_atomic_t gStop = 0;
void onStop(int) { gStop = 1; }
void ignoreButKeepDefaultOnExec(int) {}

/// Forks a runner in its own process group (a terminal's Ctrl-C reaches
/// only the sweep, which then stops the runs in order) that runs each
/// command in turn, output appended to `log`, and exits with the first
/// failure's status.
pid_t spawnRunner(const std::vector<std::vector<std::string>> &commands, const fs::path &log) {
  // Everything the child needs is built before fork().
  std::vector<std::vector<char *>> argvs;
  for (const auto &cmd : commands) {
    std::vector<char *> a;
    for (const std::string &s : cmd)
      a.push_back(const_cast<char *>(s.c_str()));
    a.push_back(nullptr);
    argvs.push_back(a);
  }
  std::string logPath = log.string();
  const pid_t sweep = getpid();
  pid_t pid = fork();
  if (pid != 0)
    return pid;
  setpgid(0, 0);
  // A sweep killed outright (SIGKILL) takes its runner with it, and the
  // runner's run gets SIGTERM (it checkpoints and stops): nothing trains on
  // as an orphan.
  support::dieWithParent(sweep, SIGKILL);
  std::signal(SIGINT, ignoreButKeepDefaultOnExec);
  std::signal(SIGTERM, ignoreButKeepDefaultOnExec);
  int fd = open(logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
  }
  // The sweep's folder lock (and any other descriptor) stays with the sweep.
  close_range(3, ~0u, 0);
  const pid_t runner = getpid();
  for (auto &argv : argvs) {
    pid_t child = fork();
    if (child == 0) {
      support::dieWithParent(runner, SIGTERM);
      execv(argv[0], argv.data());
      _exit(127);
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0)
      _exit(code);
  }
  _exit(0);
}

/// The log's last line that mentions an error (else its first line); one
/// that names `dir` (as "DIR: ...") first: a pack's log holds every
/// member's errors, and lr0.001's folder is a prefix of lr0.0010000001's.
std::string errorLine(const fs::path &log, const std::string &dir) {
  std::ifstream in(log);
  std::string line, last, own;
  while (std::getline(in, line)) {
    if (line.find("error") != std::string::npos || last.empty())
      last = line;
    if (line.find("error") != std::string::npos && line.find(dir + ":") != std::string::npos)
      own = line;
  }
  return own.empty() ? last : own;
}

/// Changes the sweep's tables as one writer (module comment in Sweep.h):
/// reads both under OUT/.tables.lock, lets `change` edit them, writes both.
support::Status updateTables(const fs::path &out, const std::function<void(Table &, Table &)> &change) {
  std::string error;
  if (!support::makeFolder(out.string(), error))
    return support::Status::failed(error);
  auto lock = support::WaitLock::acquire((out / ".tables.lock").string(), error);
  if (!lock)
    return support::Status::failed(error);
  Table results = readCsv((out / "results.csv").string()), attrib = readCsv((out / "attrib.csv").string());
  change(results, attrib);
  // A table with nothing in it stays unwritten (no header-only files).
  if (!attrib.columns.empty() || fs::exists(out / "attrib.csv"))
    writeFileAtomically((out / "attrib.csv").string(), attrib.text());
  if (!results.columns.empty() || fs::exists(out / "results.csv"))
    writeFileAtomically((out / "results.csv").string(), results.text());
  return support::Status::ok();
}

/// `table` without the rows of `cell` (a failed attempt, before its rerun).
void dropCell(Table &table, const std::string &cell) {
  std::vector<std::map<std::string, std::string>> kept;
  for (auto &r : table.rows)
    if (!r.count("cell") || r.at("cell") != cell)
      kept.push_back(std::move(r));
  table.rows = std::move(kept);
}

/// Before cells `run` again: the rows of those that failed before go.
support::Status dropFailedAttempts(const fs::path &out, const std::vector<Cell> &cells, const std::vector<size_t> &run,
                                   const std::map<std::string, std::string> &status) {
  return updateTables(out, [&](Table &r, Table &a) {
    for (size_t i : run)
      if (status.count(cells[i].name)) {
        dropCell(r, cells[i].name);
        dropCell(a, cells[i].name);
      }
  });
}

/// The job ids of the sweep's SLURM submissions and the cells of each, by
/// "<job>_<task>" (OUT/slurm/jobs.txt and the scripts it names).
std::map<std::string, std::string> submittedTasks(const fs::path &out, std::vector<std::string> &jobIds) {
  std::map<std::string, std::string> cellOf;
  std::ifstream jobs(out / "slurm" / "jobs.txt");
  std::string id, script;
  while (jobs >> id >> script) {
    jobIds.push_back(id);
    std::ifstream in(script);
    std::stringstream text;
    text << in.rdbuf();
    std::vector<std::string> cells = cellsOfScript(text.str()); // a task's cell, or its pack "a,b,c"
    for (size_t i = 0; i < cells.size(); ++i)
      cellOf[id + "_" + std::to_string(i)] = cells[i];
  }
  return cellOf;
}

/// Each cell's state from the tables, the run folders and SLURM's queue:
/// finished, failed, queued/running (a submitted array task squeue lists),
/// running (its run folder is locked by a `mixc train`), interrupted (a
/// checkpoint, no result: it resumes), or to run.
std::map<std::string, std::string> cellStates(const fs::path &out, const std::vector<Cell> &cells,
                                              const std::map<std::string, std::string> &status, std::string &note) {
  std::vector<std::string> jobIds;
  std::map<std::string, std::string> cellOf = submittedTasks(out, jobIds);
  std::map<std::string, std::string> queued; // cell -> squeue state
  for (const auto &[task, state] : slurmQueue(jobIds, note))
    if (auto it = cellOf.find(task); it != cellOf.end())
      for (const std::string &cell : splitNames(it->second))
        queued[cell] = state;
  std::map<std::string, std::string> states;
  for (const Cell &c : cells) {
    std::string state;
    if (auto it = status.find(c.name); it != status.end())
      state = it->second == "ok" ? "finished" : "failed";
    else if (auto q = queued.find(c.name); q != queued.end())
      state = q->second == "RUNNING" ? "running" : q->second == "PENDING" ? "queued" : "slurm:" + q->second;
    else if (fs::exists(out / c.name / "metrics.csv")) {
      std::string busy;
      auto lock = support::FolderLock::acquire((out / c.name).string(), busy);
      state = lock ? (fs::exists(out / c.name / "checkpoint.pt") ? "interrupted" : "to-run") : "running";
    } else
      state = "to-run";
    states[c.name] = state;
  }
  return states;
}

} // namespace

namespace {
/// sweep-meta.toml: what the report needs to know about the sweep.
std::string metaText(const Spec &s, const SweepOptions &o) {
  toml::table meta;
  meta.insert("name", s.name);
  meta.insert("title", s.title);
  meta.insert("description", s.description);
  meta.insert("scale", s.scale.empty() ? std::string("as written") : s.scale);
  toml::array axes;
  for (const Axis &a : s.axes)
    axes.push_back(a.path);
  meta.insert("axes", axes);
  auto insertList = [&meta](const char *key, const std::vector<std::string> &values) {
    toml::array list;
    for (const std::string &v : values)
      list.push_back(v);
    if (!values.empty())
      meta.insert(key, list);
  };
  insertList("report_with", s.reportWith);
  insertList("settings", o.sets); // --set: fixed in every cell (each cell.toml has the values)
  std::ostringstream metaText;
  metaText << meta << "\n";
  return metaText.str();
}

/// --status: each cell's state, and a count of each.
support::Status printStatus(const Spec &s, const std::vector<Cell> &cells, const std::map<std::string, std::string> &status,
                            const Table &results, const support::Console &io) {
  using support::format;
  std::string note;
  std::map<std::string, std::string> states = cellStates(s.out, cells, status, note);
  std::map<std::string, size_t> count;
  for (const Cell &c : cells) {
    const std::string &state = states[c.name];
    ++count[state];
    std::string detail;
    if (state == "failed")
      for (const auto &r : results.rows)
        if (r.at("cell") == c.name && r.count("error"))
          detail = "  " + r.at("error");
    io.out << format("%-12s %s%s\n", state.c_str(), c.name.c_str(), detail.c_str());
  }
  std::string summary;
  for (const auto &[state, n] : count)
    summary += (summary.empty() ? "" : ", ") + std::to_string(n) + " " + state;
  io.out << format("sweep %s: %zu cells: %s\n", s.name.c_str(), cells.size(), summary.c_str());
  if (!note.empty())
    io.out << "note: " << note << "\n";
  return support::Status::ok();
}

/// The cells to run: unfinished ones; with --retry-failed, or when
/// resubmitting to SLURM, failed ones too (their rows go first); with
/// --cell, that one (`finished` when it has finished already).
support::Status planCells(const Spec &s, const std::vector<Cell> &cells, const std::map<std::string, std::string> &status,
                          const SweepOptions &o, std::vector<size_t> &todo, bool &finished, const support::Console &io) {
  using support::format;
  using support::Status;
  const fs::path resultsPath = s.out / "results.csv";
  finished = false;
  const bool rerunFailed = o.retryFailed || o.engine == "slurm";
  todo.clear();
  for (size_t i = 0; i < cells.size(); ++i)
    if (!status.count(cells[i].name) || (rerunFailed && status.at(cells[i].name) == "failed"))
      todo.push_back(i);
  if (!o.cell.empty()) { // one cell (or one pack, "a,b,c"): a SLURM array task, or a user's
    todo.clear();
    for (const std::string &name : splitNames(o.cell)) {
      auto it = std::find_if(cells.begin(), cells.end(), [&](const Cell &c) { return c.name == name; });
      if (it == cells.end())
        return Status::failed("--cell " + name + ": the sweep " + s.name + " has no such cell (" +
                              std::to_string(cells.size()) + " cells; `mixc sweep " + o.file +
                              " --status` lists them)");
      if (status.count(name) && status.at(name) == "ok")
        io.out << "cell " << name << " has finished already (its rows are in " << resultsPath.string() << ")\n";
      else
        todo.push_back(static_cast<size_t>(it - cells.begin()));
    }
    finished = todo.empty();
    if (finished)
      return Status::ok();
  }
  if (o.cell.empty())
    io.out << format("sweep %s%s: %zu cells (%zu finished before, %zu to run) in %s\n", s.name.c_str(),
                     s.scale.empty() ? "" : (" (scale " + s.scale + ")").c_str(), cells.size(),
                     cells.size() - todo.size(), todo.size(), s.out.string().c_str());
  else
    io.out << format("sweep %s%s: cell %s in %s\n", s.name.c_str(),
                     s.scale.empty() ? "" : (" (scale " + s.scale + ")").c_str(), o.cell.c_str(),
                     s.out.string().c_str());
  return Status::ok();
}

/// Rows finished before runs recorded a uniform guess's accuracy (e.g.
/// seeded from a committed table) get it from their cell's config: it is a
/// property of the task, not of the run, so the report's chance line covers
/// them too.
support::Status fillChance(const Spec &s, const std::vector<Cell> &cells, const std::string &projectRoot) {
  std::map<std::string, std::string> chanceOf; // cell → chance, for rows that lack it
  const Table results = readCsv((s.out / "results.csv").string());
  for (const auto &r : results.rows) {
    auto c = std::find_if(cells.begin(), cells.end(), [&](const Cell &x) { return r.count("cell") && x.name == r.at("cell"); });
    if (c == cells.end() || (r.count("chance") && !r.at("chance").empty()))
      continue;
    std::ostringstream text;
    text << cellTable(s, *c, s.out / c->name, projectRoot);
    train::TrainConfig config;
    std::string error;
    if (train::parseConfig(text.str(), (s.out / c->name / "cell.toml").string(), s.out.string(), projectRoot, config, error))
      chanceOf[c->name] = support::format("%.6g", config.task.chance());
  }
  if (chanceOf.empty())
    return support::Status::ok();
  return updateTables(s.out, [&](Table &r, Table &) {
    for (auto &row : r.rows)
      if (row.count("cell") && chanceOf.count(row.at("cell")) && (!row.count("chance") || row.at("chance").empty()))
        row["chance"] = chanceOf.at(row.at("cell"));
    if (std::find(r.columns.begin(), r.columns.end(), "chance") == r.columns.end())
      r.columns.push_back("chance");
  });
}

/// --engine=slurm: the unfinished cells as one job array (cells already
/// queued or running under an earlier submission are not submitted again).
support::Status submitToSlurm(const Spec &s, const SweepOptions &o, const std::vector<Cell> &cells,
                              const std::vector<size_t> &todo, const std::map<std::string, std::string> &status,
                              const std::string &meta, const support::Console &io) {
  using support::format;
  using support::Status;
  std::string note;
  std::map<std::string, std::string> states = cellStates(s.out, cells, status, note);
  std::vector<size_t> submit;
  for (size_t i : todo)
    if (states[cells[i].name] != "queued" && states[cells[i].name] != "running")
      submit.push_back(i);
  SlurmJob job;
  job.name = s.name;
  for (const std::vector<size_t> &unit : unitsOf(s, o, cells, submit)) // a task per cell, or per pack
    job.cells.push_back(unitName(cells, unit));
  const fs::path out = fs::absolute(s.out).lexically_normal();
  job.command = {o.self, "sweep", fs::absolute(o.file).lexically_normal().string()};
  if (!o.scale.empty())
    job.command.insert(job.command.end(), {"--scale", o.scale});
  job.command.insert(job.command.end(), {"--out", out.string(), "--backend=" + o.backend});
  if (!o.devices.empty()) // each array task has its own GPU (gres): the device as given
    job.command.push_back("--device=" + o.devices.front().substr(0, o.devices.front().find(':')));
  job.workDir = fs::current_path().string();
  job.logDir = (out / "slurm").string();
  if (std::string why = sbatchValueProblem(job.logDir); !why.empty())
    return Status::failed("the sweep folder " + out.string() + " cannot be named in the batch script: " + why);
  job.settings = s.slurm;
  bool cpus = false;
  for (const auto &[k, v] : s.slurm)
    cpus |= k == "cpus-per-task";
  if (!cpus) // a cell trains on one thread unless its config says otherwise
    job.settings.push_back({"cpus-per-task", "1"});
  job.extra = s.slurmExtra;
  if (submit.empty()) {
    io.out << "nothing to submit: every cell has finished or is queued (mixc sweep " << o.file << " --status)\n";
    return Status::ok();
  }
  const std::string script = slurmScript(job);
  if (o.dryRun) {
    io.out << "--- the batch script (not submitted: --dry-run) ---\n" << script;
    return Status::ok();
  }
  if (Status st = slurmAvailable(); !st.isOk()) // before anything is written
    return st;
  if (std::string error; !support::makeFolder((out / "slurm").string(), error))
    return Status::failed(error);
  writeFileAtomically((out / "sweep-meta.toml").string(), meta);
  if (Status st = dropFailedAttempts(out, cells, submit, status); !st.isOk())
    return st;
  size_t number = 1;
  while (fs::exists(out / "slurm" / ("submit-" + std::to_string(number) + ".sh")))
    ++number;
  const fs::path path = out / "slurm" / ("submit-" + std::to_string(number) + ".sh");
  writeFileAtomically(path.string(), script);
  std::string jobId;
  if (Status st = submitSlurm(path.string(), jobId); !st.isOk())
    return st;
  std::ofstream(out / "slurm" / "jobs.txt", std::ios::app) << jobId << " " << path.string() << "\n";
  std::string again = "mixc sweep " + o.file + (o.scale.empty() ? "" : " --scale " + o.scale) +
                      (o.outDir.empty() ? "" : " --out " + o.outDir);
  io.out << format("submitted job %s: %zu cells as array tasks 0-%zu (%s); logs in %s; "
                   "progress: %s --status\n",
                   jobId.c_str(), submit.size(), job.cells.size() - 1, path.string().c_str(),
                   job.logDir.c_str(), again.c_str());
  return Status::ok();
}

/// A finished cell's row of results.csv and its rows of attrib.csv, from its
/// run folder, written to the tables (under their lock); the row says
/// "failed" with the error line when the cell or the writing failed.
std::map<std::string, std::string> recordCell(const Spec &s, const Cell &c, int code, double seconds) {
  using support::Status;
  fs::path dir = s.out / c.name;
  std::map<std::string, std::string> row = {{"cell", c.name}};
  std::vector<std::map<std::string, std::string>> attribRows;
  for (const auto &[k, v] : c.coords)
    row[k] = v;
  Table metrics = readCsv((dir / "metrics.csv").string());
  if (code == 0 && !metrics.rows.empty()) {
    const auto &last = metrics.rows.back();
    row["status"] = "ok";
    for (const char *k : {"step", "eval_acc", "eval_prob", "train_loss", "elapsed_s"})
      row[k] = last.count(k) ? last.at(k) : "";
    // result.toml (written by mixc train at the end): the back end that
    // ran, and whether train.early_stop_acc ended the run.
    try {
      toml::table result = toml::parse_file((dir / "result.toml").string());
      row["backend"] = result["backend"].value_or(std::string());
      row["stopped_early"] = result["stopped_early"].value_or(false) ? "1" : "0";
      // A uniform guess's accuracy (the report's chance line); runs finished
      // before mixc wrote it have none.
      if (std::optional<double> chance = result["chance"].value<double>())
        row["chance"] = support::format("%.6g", *chance);
    } catch (const toml::parse_error &) {
      row["backend"] = row["stopped_early"] = "";
    }
    for (const std::string &script : s.scripts) {
      std::string stem = fs::path(script).stem().string();
      Table a = readCsv((dir / "interventions" / stem / "attrib.csv").string());
      for (auto r : a.rows) {
        std::map<std::string, std::string> out = {{"cell", c.name}, {"script", stem}};
        for (const auto &[k, v] : c.coords)
          out[k] = v;
        for (const auto &[k, v] : r)
          if (k != "cell")
            out[k == "label" ? "intervention" : k] = v;
        attribRows.push_back(out);
      }
    }
  } else {
    row["status"] = "failed";
    row["error"] = errorLine(dir / "log.txt", fs::absolute(dir).string());
  }
  char wall[32];
  std::snprintf(wall, sizeof wall, "%.1f", seconds);
  row["wall_s"] = wall;
  Status written = updateTables(s.out, [&](Table &r, Table &a) {
    dropCell(r, c.name);
    dropCell(a, c.name);
    for (const auto &x : attribRows)
      a.add(x);
    r.add(row);
  });
  if (!written.isOk()) {
    row["status"] = "failed";
    row["error"] = written.message();
  }
  return row;
}

/// --engine=local: the units (a cell, or a pack's cells) as child
/// processes, `jobs` at a time. A cell alone runs `mixc train` then its
/// interventions; a pack runs one `mixc train` of all its configs, then
/// each trained member's interventions as a unit of its own (first in line).
/// A finished cell is recorded at once, an interrupted one is continued by
/// the next run of the same command.
class LocalSweep {
public:
  LocalSweep(const Spec &s, const SweepOptions &o, const std::vector<Cell> &cells, const support::Console &io)
      : s(s), o(o), cells(cells), io(io) {}

  support::Status run(const std::vector<std::vector<size_t>> &units);

private:
  struct Running {
    std::vector<size_t> cells; // one cell, or a pack's members
    bool packTraining = false; // the pack's `mixc train` (its members' interventions follow)
    std::chrono::steady_clock::time_point start;
    int64_t slot; // which of the `jobs` slots (its device: o.devices)
  };
  const Spec &s;
  const SweepOptions &o;
  const std::vector<Cell> &cells;
  const support::Console &io;
  std::map<pid_t, Running> running;
  std::deque<size_t> trained;             // pack members whose interventions are still to run
  std::map<size_t, double> trainSeconds;  // their pack's wall time
  size_t done = 0, failed = 0, total = 0;
  double busySeconds = 0;
  bool interrupted = false;
  std::chrono::steady_clock::time_point sweepStart;

  int64_t freeSlot() const {
    int64_t slot = 0;
    while (std::any_of(running.begin(), running.end(), [&](const auto &r) { return r.second.slot == slot; }))
      ++slot;
    return slot;
  }
  /// Cell i's folder and cell.toml; false (said) on a full disk or a read-only folder.
  bool prepare(size_t i) {
    const fs::path dir = s.out / cells[i].name;
    std::string error;
    if (!support::makeFolder(dir.string(), error) ||
        !support::writeFileAtomically((dir / "cell.toml").string(), cellConfig(s, cells[i], dir, o.projectRoot),
                                      error)) {
      io.log << "error: cannot start " << cells[i].name << ": " << error << "; stopping the sweep\n";
      return false;
    }
    return true;
  }
  std::vector<std::vector<std::string>> interventions(size_t i) const {
    const fs::path dir = s.out / cells[i].name;
    std::vector<std::vector<std::string>> cmds;
    for (const std::string &script : s.scripts)
      cmds.push_back({o.self, "intervene", dir.string(), script, "--size", std::to_string(s.interveneSize),
                      "--out", (dir / "interventions" / fs::path(script).stem()).string()});
    return cmds;
  }
  bool start(const std::vector<std::vector<std::string>> &cmds, const fs::path &log, Running r) {
    io.out << std::flush;
    pid_t pid = spawnRunner(cmds, log);
    if (pid < 0) {
      io.log << "error: cannot start a process for " << unitName(cells, r.cells) << "; stopping the sweep\n";
      return false;
    }
    r.start = std::chrono::steady_clock::now();
    running[pid] = r;
    return true;
  }
  bool launchCell(size_t i, bool trainedAlready);
  bool launchPack(const std::vector<size_t> &unit);

  /// A signal may arrive anywhere, also while a finished cell is recorded
  /// (not in waitpid): every pass looks at gStop before it waits.
  void stopRunning() {
    if (!gStop || interrupted)
      return;
    interrupted = true;
    io.log << "\nstopping " << running.size() << " running units (they save checkpoints)...\n";
    for (const auto &[p, r] : running)
      kill(-p, SIGTERM);
  }
  /// Records the unit that ended as `pid` with status `st` and prints its lines.
  void finish(pid_t pid, int st);
  void finishPack(const Running &r, int code, double secs);
  void record(size_t i, int code, double secs);
};

/// Cell i alone: `mixc train` (continuing its checkpoint), then its
/// interventions; `trainedAlready` (a pack trained it): the interventions only.
bool LocalSweep::launchCell(size_t i, bool trainedAlready) {
  const int64_t slot = freeSlot();
  if (!trainedAlready && !prepare(i))
    return false;
  const fs::path dir = s.out / cells[i].name;
  std::vector<std::vector<std::string>> cmds;
  if (!trainedAlready) {
    std::error_code ec; // trained alone from here on: an earlier pack no longer binds it (Packs.h)
    fs::remove(dir / "pack.txt", ec);
    std::vector<std::string> train = {o.self, "train", (dir / "cell.toml").string(), "--quiet",
                                      "--backend=" + o.backend};
    if (!o.devices.empty())
      train.push_back("--device=" + o.devices[static_cast<size_t>(slot) % o.devices.size()]);
    if (fs::exists(dir / "checkpoint.pt"))
      train.push_back("--resume"); // an interrupted cell continues
    cmds.push_back(train);
  }
  for (auto &cmd : interventions(i))
    cmds.push_back(cmd);
  return start(cmds, dir / "log.txt", {{i}, false, {}, slot});
}

/// A pack: every member's cell.toml and pack.txt, then one `mixc train` of
/// all their configs (continuing their checkpoints), its output in the first
/// member's pack.log (copied to every member's log.txt when it ends).
bool LocalSweep::launchPack(const std::vector<size_t> &unit) {
  const int64_t slot = freeSlot();
  std::vector<std::string> names;
  for (size_t i : unit)
    names.push_back(cells[i].name);
  std::vector<std::string> train = {o.self, "train"};
  bool resumes = false;
  for (size_t i : unit) {
    const fs::path dir = s.out / cells[i].name;
    std::string error;
    if (!prepare(i))
      return false;
    if (!support::writeFileAtomically((dir / "pack.txt").string(), packFileText(names), error)) {
      io.log << "error: cannot start " << cells[i].name << ": " << error << "; stopping the sweep\n";
      return false;
    }
    train.push_back((dir / "cell.toml").string());
    resumes |= fs::exists(dir / "checkpoint.pt");
  }
  train.push_back("--quiet");
  if (!o.devices.empty())
    train.push_back("--device=" + o.devices[static_cast<size_t>(slot) % o.devices.size()]);
  if (resumes)
    train.push_back("--resume"); // an interrupted pack continues (Packs.h: all its members have checkpoints)
  const fs::path log = s.out / cells[unit[0]].name / "pack.log";
  std::error_code ec;
  fs::remove(log, ec);
  return start({train}, log, {unit, true, {}, slot});
}

void LocalSweep::finish(pid_t pid, int st) {
  auto it = running.find(pid);
  if (it == running.end())
    return;
  const Running r = it->second;
  running.erase(it);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count();
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  if (code == 130 || gStop) { // interrupted: not recorded, continued next time
    interrupted = true;
    return;
  }
  busySeconds += secs;
  if (r.packTraining)
    return finishPack(r, code, secs);
  const size_t i = r.cells[0];
  if (auto t = trainSeconds.find(i); t != trainSeconds.end())
    secs += t->second;
  record(i, code, secs);
}

/// A pack's training ended: its log goes to every member's log.txt; a
/// member that finished (result.toml) runs its interventions next, one that
/// did not (its loss diverged, or the pack failed) is recorded as failed.
void LocalSweep::finishPack(const Running &r, int code, double secs) {
  const fs::path packLog = s.out / cells[r.cells[0]].name / "pack.log";
  for (size_t i : r.cells) {
    const fs::path dir = s.out / cells[i].name;
    {
      std::ifstream in(packLog);
      std::ofstream(dir / "log.txt", std::ios::app) << in.rdbuf();
    }
    const bool finished = fs::exists(dir / "result.toml");
    if (finished && !s.scripts.empty()) {
      trained.push_back(i);
      trainSeconds[i] = secs;
    } else
      record(i, finished ? 0 : code == 0 ? 1 : code, secs);
  }
}

/// Cell i's rows, and its line on the console.
void LocalSweep::record(size_t i, int code, double secs) {
  using support::format;
  auto row = recordCell(s, cells[i], code, secs);
  ++done;
  bool ok = row["status"] == "ok";
  failed += !ok;
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - sweepStart).count();
  double eta = elapsed / done * static_cast<double>(total - done);
  if (ok)
    io.out << format("[%zu/%zu] %-36s accuracy %s  p(answer) %s  %5.0fs  (ETA %.0f min)\n", done, total,
                     cells[i].name.c_str(), row["eval_acc"].c_str(), row["eval_prob"].c_str(), secs, eta / 60);
  else
    io.out << format("[%zu/%zu] %-36s FAILED (exit %d): %s; log: %s\n", done, total, cells[i].name.c_str(), code,
                     row["error"].c_str(), (s.out / cells[i].name / "log.txt").string().c_str());
  io.out << std::flush;
}

support::Status LocalSweep::run(const std::vector<std::vector<size_t>> &units) {
  using support::format;
  using support::Status;
  const int64_t jobs = jobsOf(o, s);
  for (const auto &unit : units)
    total += unit.size();
  gStop = 0;
  // Without SA_RESTART, so a signal wakes the waitpid() below.
  struct sigaction stop = {}, oldInt = {}, oldTerm = {};
  stop.sa_handler = onStop;
  sigemptyset(&stop.sa_mask);
  sigaction(SIGINT, &stop, &oldInt);
  sigaction(SIGTERM, &stop, &oldTerm);
  sweepStart = std::chrono::steady_clock::now();
  size_t next = 0;
  bool launchFailed = false;
  while (next < units.size() || !trained.empty() || !running.empty()) {
    while (!gStop && !launchFailed && static_cast<int64_t>(running.size()) < jobs &&
           (!trained.empty() || next < units.size())) {
      bool started;
      if (!trained.empty()) { // a trained member's interventions go first: its rows are nearly done
        started = launchCell(trained.front(), true);
        trained.pop_front();
      } else {
        const std::vector<size_t> &unit = units[next++];
        started = unit.size() == 1 ? launchCell(unit[0], false) : launchPack(unit);
      }
      launchFailed |= !started;
    }
    stopRunning();
    if (running.empty())
      break;
    int st = 0;
    pid_t pid = waitpid(-1, &st, 0);
    if (pid < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    finish(pid, st);
  }
  sigaction(SIGINT, &oldInt, nullptr);
  sigaction(SIGTERM, &oldTerm, nullptr);
  const fs::path resultsPath = s.out / "results.csv";
  if (interrupted || gStop)
    return Status::interrupted("interrupted: " + std::to_string(done) +
                               " cells finished; run the same command again to continue");
  // Never "done" with cells left: a process that could not start ends the
  // sweep as a failure naming what is left.
  if (launchFailed || done < total)
    return Status::failed(format("%zu of %zu cells did not run%s; run the same command again to continue",
                                 total - done, total, launchFailed ? " (a cell could not be started)" : ""));
  io.out << format("sweep %s done: %zu cells run (%zu failed), %.0f s of runs; results in %s\n", s.name.c_str(),
                   done, failed, busySeconds, resultsPath.string().c_str())
         << std::flush;
  if (failed)
    return Status::failed(std::to_string(failed) + " of " + std::to_string(done) + " cells failed (see " +
                          resultsPath.string() + ")");
  return Status::ok();
}

/// --engine=local after planning: the folder created and locked, the meta
/// written, then the cells run.
support::Status runHere(const Spec &s, const SweepOptions &o, const std::vector<Cell> &cells,
                        const std::vector<size_t> &todo, const std::map<std::string, std::string> &status,
                        const std::string &meta, const support::Console &io) {
  using support::Status;
  if (std::string error; !support::makeFolder(s.out.string(), error)) // not before: --dry-run creates nothing
    return Status::failed(error);
  // One sweep per folder: two would run the same cells. A --cell task (many
  // at once, on several machines) instead relies on its run folder's lock
  // (held by its `mixc train`) and the tables' lock.
  std::string lockError;
  std::unique_ptr<support::FolderLock> lock;
  if (o.cell.empty() && !(lock = support::FolderLock::acquire(s.out.string(), lockError)))
    return Status::failed(lockError);
  if (lock) // the tables' temporaries of a sweep killed mid-write
    support::removeStaleTemporaries(s.out.string());
  writeFileAtomically((s.out / "sweep-meta.toml").string(), meta);
  if (o.retryFailed || !o.cell.empty())
    if (Status st = dropFailedAttempts(s.out, cells, todo, status); !st.isOk())
      return st;
  return LocalSweep(s, o, cells, io).run(unitsOf(s, o, cells, todo));
}
} // namespace

support::Status runSweep(const SweepOptions &o, const support::Console &io) {
  using support::format;
  using support::Status;
  Spec s;
  std::vector<Cell> cells;
  try {
    s = readSpec(o);
    cells = cellsOf(s);
  } catch (const SweepError &e) {
    return Status::failed(e.message);
  }
  const std::string meta = metaText(s, o);
  if (o.engine != "local" && o.engine != "slurm")
    return Status::failed("--engine is local or slurm, got '" + o.engine + "'");
  const Table results = readCsv((s.out / "results.csv").string()); // read again under the lock before a change
  std::map<std::string, std::string> status; // cell → ok | failed
  for (const auto &r : results.rows)
    status[r.at("cell")] = r.count("status") ? r.at("status") : "ok";
  if (o.status)
    return printStatus(s, cells, status, results, io);
  std::vector<size_t> todo;
  bool finished = false;
  if (Status st = planCells(s, cells, status, o, todo, finished, io); !st.isOk() || finished)
    return st;
  if (o.dryRun && o.engine == "local") {
    for (const Cell &c : cells)
      io.out << format("%-9s %s\n", status.count(c.name) ? status[c.name].c_str() : "todo", c.name.c_str());
    if (!cells.empty())
      io.out << "--- " << cells[0].name << "/cell.toml ---\n"
             << cellConfig(s, cells[0], s.out / cells[0].name, o.projectRoot);
    if (size_t untimed = printEstimate(s, cells, unitsOf(s, o, cells, todo), o, io.out); untimed > 0)
      return Status::failed(std::to_string(untimed) + (untimed == 1 ? " cell" : " cells") +
                            " of the plan could not be timed; fix the errors above before running the sweep");
    return Status::ok();
  }
  if (Status st = fillChance(s, cells, o.projectRoot); !st.isOk())
    return st;
  if (o.engine == "slurm" && o.cell.empty())
    return submitToSlurm(s, o, cells, todo, status, meta, io);
  return runHere(s, o, cells, todo, status, meta, io);
}

} // namespace mixc::experiments
