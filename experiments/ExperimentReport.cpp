//===- ExperimentReport.cpp - `mixc report`: markdown, plots and CSVs over sweeps ---===//
#include "experiments/ExperimentReport.h"
#include "experiments/Csv.h"
#include "support/Plot.h"
#include "support/OutputGuard.h"

#include <sys/stat.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace mixc::experiments {
namespace fs = std::filesystem;

namespace {
using Row = std::map<std::string, std::string>;
using support::barChart;
using support::Point;
using support::scatterPlot;

/// A relative link's target as markdown reads it: blanks, brackets, '%',
/// '#', '?', quotes and bytes outside ASCII percent-encoded (a sweep named
/// "AR small" gives plots/AR%20small-box.svg, not a broken image); the
/// characters a URL path keeps as they are ("layer=0_node=x") stay.
std::string urlPath(const std::string &path) {
  static const char *hex = "0123456789ABCDEF";
  static const std::string kept = "/.-_~=+,;@:!$*";
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || kept.find(static_cast<char>(c)) != std::string::npos) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

double number(const Row &r, const std::string &k, double fallback = NAN) {
  auto it = r.find(k);
  if (it == r.end() || it->second.empty())
    return fallback;
  return std::strtod(it->second.c_str(), nullptr);
}

std::string get(const Row &r, const std::string &k) {
  auto it = r.find(k);
  return it == r.end() ? "" : it->second;
}

std::string pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", 100 * x);
  return b;
}

std::string two(double x) {
  if (std::isnan(x))
    return "n/a";
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", std::round(x * 100) / 100 + 0.0);
  return b;
}

/// Attrib, and its 95 % bootstrap interval in brackets when the run recorded
/// one: "0.97 (0.95–0.99)".
std::string attribText(const Row &r) {
  std::string text = two(number(r, "attrib"));
  if (!get(r, "attrib_lo").empty() && !get(r, "attrib_hi").empty())
    text += " (" + two(number(r, "attrib_lo")) + "–" + two(number(r, "attrib_hi")) + ")";
  return text;
}

/// How an axis value reads in a table: a model file as its stem.
std::string shown(const std::string &axis, const std::string &value) {
  if (axis.size() >= 4 && axis.compare(axis.size() - 4, 4, "file") == 0)
    return fs::path(value).stem().string();
  return value;
}

/// A table cell's text for GitHub-flavoured markdown: a `|` inside a cell
/// ends the cell unless escaped, so `p(y|o)` would split the row.
/// A name or a user's text in markdown: '<', '>' and '&' as entities, so a
/// sweep titled "<script>" or "a<b" reads as written instead of as HTML.
std::string mdText(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

/// mdText in a table cell, where '|' would end the cell.
std::string mdCell(const std::string &text) {
  std::string out;
  for (char c : mdText(text)) {
    if (c == '|')
      out += '\\';
    out += c;
  }
  return out;
}

std::string shortAxis(const std::string &axis) {
  if (axis == "model.file")
    return "model";
  return axis.substr(axis.rfind('.') + 1);
}

/// Attrib at one position with its 95 % bootstrap interval (NaN: none).
struct Reading {
  double attrib = NAN, lo = NAN, hi = NAN;
};

/// Attrib of the last layer at key / value / query (the paper's readout of
/// the mechanism, on block inputs), from a script with (layer, position)
/// sweep coordinates. NaN where the script has no such cell or the run's
/// p(y|o) − p(y|c) was too small.

struct Mechanism {
  double key = NAN, value = NAN, query = NAN;
  Reading at[3]; // key, value, query, with their intervals
  bool found = false, kept = false;
  std::string layer;
};

Mechanism mechanismOf(const std::vector<Row> &cells) {
  Mechanism m;
  int last = -1;
  std::set<std::string> positions;
  for (const Row &r : cells)
    if (r.count("layer") && r.count("position")) {
      last = std::max(last, std::atoi(get(r, "layer").c_str()));
      positions.insert(get(r, "position"));
    }
  // Only a sweep over layers × {key, value, query} reads as a mechanism.
  if (last < 0 || !positions.count("key") || !positions.count("value") || !positions.count("query"))
    return m;
  m.layer = std::to_string(last);
  for (const Row &r : cells) {
    if (get(r, "layer") != m.layer)
      continue;
    m.found = true;
    m.kept = get(r, "kept") == "1";
    const Reading a = m.kept ? Reading{number(r, "attrib"), number(r, "attrib_lo"), number(r, "attrib_hi")}
                             : Reading{};
    std::string p = get(r, "position");
    if (p == "key")
      m.key = a.attrib, m.at[0] = a;
    else if (p == "value")
      m.value = a.attrib, m.at[1] = a;
    else if (p == "query")
      m.query = a.attrib, m.at[2] = a;
  }
  return m;
}

std::string classify(const Mechanism &m) {
  if (!m.found)
    return "";
  if (!m.kept)
    return "n/a (p(y|o) − p(y|c) ≤ 0.01)";
  if (m.value >= 0.5 && m.value >= m.query)
    return "induction at the value";
  if (m.query >= 0.5)
    return "direct retrieval at the query";
  if (m.key >= 0.5)
    return "direct retrieval from the key";
  return "no single position";
}

struct Sweep {
  fs::path dir;
  std::string name, title, description, scale;
  std::vector<std::string> axes;
  std::vector<std::string> reportWith; // sweeps whose rows join this one's accuracy plot
  Table results, attrib;
};

/// A list of strings in sweep-meta.toml (none when the key is absent).
std::vector<std::string> strings(const toml::table &meta, const char *key) {
  std::vector<std::string> out;
  if (const toml::array *a = meta[key].as_array())
    for (const toml::node &n : *a)
      out.push_back(n.value_or(std::string()));
  return out;
}

bool readSweep(const fs::path &dir, Sweep &s, std::string &error) {
  s.dir = dir;
  toml::table meta;
  try {
    meta = toml::parse_file((dir / "sweep-meta.toml").string());
  } catch (const std::exception &) {
    error = dir.string() + " is not a sweep folder (no readable sweep-meta.toml; run mixc sweep first)";
    return false;
  }
  s.name = meta["name"].value_or(dir.filename().string());
  s.title = meta["title"].value_or(s.name);
  s.description = meta["description"].value_or(std::string());
  s.scale = meta["scale"].value_or(std::string());
  s.axes = strings(meta, "axes");
  s.reportWith = strings(meta, "report_with");
  s.results = readCsv((dir / "results.csv").string());
  s.attrib = readCsv((dir / "attrib.csv").string());
  return true;
}

/// Each finished cell's learning curve beside the report: its metrics.csv
/// (every evaluation: train loss, train and test accuracy) as
/// csv/metrics/SWEEP/CELL.csv and its curves.svg (train and test accuracy)
/// as plots/curves/SWEEP/CELL.svg, so a claim about a run's course has its
/// data. Cells whose folder is gone (rows seeded from a committed table)
/// keep what an earlier report copied.
void copyLearningCurves(const Sweep &s, const fs::path &outDir, std::ostringstream &md) {
  std::vector<std::pair<std::string, bool>> linked; // cell, whether its plot is there
  for (const Row &r : s.results.rows) {
    const std::string cell = get(r, "cell");
    if (cell.empty() || cell.find('/') != std::string::npos || cell.front() == '.')
      continue;
    const fs::path csv = outDir / "csv" / "metrics" / s.name / (cell + ".csv");
    const fs::path svg = outDir / "plots" / "curves" / s.name / (cell + ".svg");
    const fs::path loss = outDir / "csv" / "metrics" / s.name / (cell + "-loss.csv"); // the plot's logged lines
    std::error_code ec;
    for (auto [from, to] : {std::pair{s.dir / cell / "metrics.csv", csv}, std::pair{s.dir / cell / "curves.svg", svg},
                            std::pair{s.dir / cell / "loss.csv", loss}})
      if (fs::is_regular_file(from, ec)) {
        fs::create_directories(to.parent_path(), ec);
        fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
      }
    if (fs::is_regular_file(csv, ec))
      linked.push_back({cell, fs::is_regular_file(svg, ec)});
  }
  if (linked.empty())
    return;
  md << "Learning curves (train loss, train and test accuracy at every evaluation; `<cell>-loss.csv` beside a "
        "cell's table, where its run logged one, holds the train loss and accuracy every log_every steps):";
  for (size_t i = 0; i < linked.size(); ++i) {
    const auto &[c, plot] = linked[i];
    md << (i ? "," : "") << " " << c << " ([csv](" << urlPath("csv/metrics/" + s.name + "/" + c + ".csv") << ")";
    if (plot)
      md << ", [plot](" << urlPath("plots/curves/" + s.name + "/" + c + ".svg") << ")";
    md << ")";
  }
  md << ".\n\n";
}

/// A sweep's finished runs grouped by every coordinate but the learning
/// rate (the model first: the tables' rows), with each group's best run.
struct Grid {
  std::vector<std::string> groupAxes;
  bool hasLr = false;
  std::vector<std::string> groups; // in the results' order
  std::map<std::string, Row> best;
  std::map<std::string, std::vector<std::string>> coordsOf;
  double wall = 0;
  size_t ok = 0, failed = 0;
  /// The group of a finished run: its values of the group axes, joined.
  std::string groupOf(const Row &r) const {
    if (get(r, "status") != "ok")
      return "";
    std::string g;
    for (const std::string &a : groupAxes)
      g += (g.empty() ? "" : ", ") + shown(a, get(r, a));
    return g;
  }
};

/// The title of an axis of groups: their axes' short names ("model, d").
std::string axesTitle(const std::vector<std::string> &axes) {
  std::string t;
  for (const std::string &a : axes)
    t += (t.empty() ? "" : ", ") + shortAxis(a);
  return t;
}

/// The axes other than the model and the rate (the settings a model is
/// compared across, e.g. the width), in the sweep's order.
std::vector<std::string> settingAxes(const std::vector<std::string> &axes) {
  std::vector<std::string> out;
  for (const std::string &a : axes)
    if (a != "train.lr" && a != "model.file")
      out.push_back(a);
  return out;
}

Grid gridOf(const Sweep &s) {
  Grid grid;
  std::vector<std::string> &groupAxes = grid.groupAxes;
  for (const std::string &a : s.axes)
    if (a == "model.file")
      groupAxes.push_back(a);
  for (const std::string &a : settingAxes(s.axes))
    groupAxes.push_back(a);
  grid.hasLr = std::find(s.axes.begin(), s.axes.end(), "train.lr") != s.axes.end();
  for (const Row &r : s.results.rows) {
    grid.wall += number(r, "wall_s", 0);
    if (get(r, "status") != "ok") {
      ++grid.failed;
      continue;
    }
    ++grid.ok;
    const std::string g = grid.groupOf(r);
    std::vector<std::string> coords;
    for (const std::string &a : groupAxes)
      coords.push_back(shown(a, get(r, a)));
    if (!grid.best.count(g)) {
      grid.groups.push_back(g);
      grid.coordsOf[g] = coords;
      grid.best[g] = r;
    } else if (number(r, "eval_acc", -1) > number(grid.best[g], "eval_acc", -1)) {
      grid.best[g] = r;
    }
  }
  return grid;
}

/// The chance accuracy every finished run recorded (results.csv's `chance`),
/// when they agree; none when a run has none (finished before mixc wrote
/// it) or they differ (e.g. a grid over task.num_pairs).
std::optional<double> commonChance(const Sweep &s) {
  std::optional<double> chance;
  for (const Row &r : s.results.rows) {
    if (get(r, "status") != "ok")
      continue;
    const double c = number(r, "chance");
    if (std::isnan(c) || (chance && std::abs(*chance - c) > 1e-9))
      return std::nullopt;
    chance = c;
  }
  return chance;
}

/// Draws chance as the chart's reference line where every run agrees on it.
template <class Chart> void setChanceLine(const Sweep &s, Chart &chart) {
  if (std::optional<double> chance = commonChance(s)) {
    chart.reference = *chance;
    chart.referenceLabel = "chance " + two(*chance);
  }
}

/// The accuracy table (first axis as rows, the others as columns) and its
/// plot: the paper's figure where the grid has it (accuracy against the
/// second axis, the width, a line per value of the first, each point marked
/// with its learning rate), else bars per run.
void accuracySection(const Sweep &s, Grid &grid, const fs::path &outDir, std::ostringstream &md) {
  const std::vector<std::string> &groupAxes = grid.groupAxes, &groups = grid.groups;
  const bool hasLr = grid.hasLr;
  std::map<std::string, Row> &best = grid.best;
  std::map<std::string, std::vector<std::string>> &coordsOf = grid.coordsOf;
  std::vector<std::string> rowsK, colsK;
  std::map<std::pair<std::string, std::string>, std::string> cellOf;
  for (const std::string &g : groups) {
    const auto &c = coordsOf[g];
    std::string rk = c.empty() ? "run" : c[0], ck;
    for (size_t i = 1; i < c.size(); ++i)
      ck += (ck.empty() ? "" : ", ") + shortAxis(groupAxes[i]) + "=" + c[i];
    if (ck.empty())
      ck = "accuracy";
    if (std::find(rowsK.begin(), rowsK.end(), rk) == rowsK.end())
      rowsK.push_back(rk);
    if (std::find(colsK.begin(), colsK.end(), ck) == colsK.end())
      colsK.push_back(ck);
    cellOf[{rk, ck}] = g;
  }
  md << "**Test accuracy (%)" << (hasLr ? ", best over the learning rate" : "") << "**\n\n| "
     << mdCell(groupAxes.empty() ? "run" : shortAxis(groupAxes[0])) << " |";
  for (const auto &c : colsK)
    md << " " << mdCell(c) << " |";
  md << "\n|---|";
  for (size_t i = 0; i < colsK.size(); ++i)
    md << "---|";
  md << "\n";
  for (const auto &rk : rowsK) {
    md << "| " << mdCell(rk) << " |";
    for (const auto &ck : colsK) {
      auto it = cellOf.find({rk, ck});
      if (it == cellOf.end()) {
        md << " – |";
        continue;
      }
      const Row &r = best[it->second];
      md << " " << pct(number(r, "eval_acc")) << (hasLr ? " (lr " + get(r, "train.lr") + ")" : "") << " |";
    }
    md << "\n";
  }
  md << "\n";

  std::string accPlot = s.name + "-accuracy.svg";
  const std::string accTitle = s.title + ": test accuracy" + (hasLr ? " (best lr)" : "");
  if (groupAxes.size() == 2 && colsK.size() >= 2) {
    std::vector<std::vector<double>> values(rowsK.size(), std::vector<double>(colsK.size(), NAN));
    std::vector<std::vector<std::string>> notes(rowsK.size(), std::vector<std::string>(colsK.size()));
    for (size_t i = 0; i < rowsK.size(); ++i)
      for (size_t j = 0; j < colsK.size(); ++j)
        if (auto it = cellOf.find({rowsK[i], colsK[j]}); it != cellOf.end()) {
          values[i][j] = number(best[it->second], "eval_acc");
          if (hasLr)
            notes[i][j] = "lr " + get(best[it->second], "train.lr");
        }
    support::LineChart lines;
    lines.title = accTitle, lines.xLabel = shortAxis(groupAxes[1]), lines.yLabel = "test accuracy";
    lines.xs = colsK, lines.series = rowsK, lines.values = values, lines.notes = notes;
    setChanceLine(s, lines);
    writeFileAtomically((outDir / "plots" / accPlot).string(), support::lineChart(lines));
  } else {
    std::vector<double> accs;
    for (const std::string &g : groups)
      accs.push_back(number(best[g], "eval_acc", 0));
    support::BarChart bars;
    bars.title = accTitle, bars.yLabel = "test accuracy", bars.xLabel = axesTitle(groupAxes);
    setChanceLine(s, bars);
    bars.categories = groups, bars.series = {"accuracy"}, bars.values = {accs};
    writeFileAtomically((outDir / "plots" / accPlot).string(), barChart(bars));
  }
  md << "![accuracy](" << urlPath("plots/" + accPlot) << ")\n\n";

}

/// The paper's box plots (Figs. 4b, 5c, 6b): per setting (a group: every
/// learning rate), Attrib@Key/@Value/@Query at the last layer's block input
/// over its runs whose Attrib is kept.
void boxPlot(const Sweep &s, const Grid &grid, std::map<std::string, std::vector<Row>> &cellsOfScript,
             const std::string &base, const fs::path &outDir, std::ostringstream &md) {
  support::BoxChart box;
  box.series = {"@key", "@value", "@query"};
  box.samples.assign(3, std::vector<std::vector<double>>(grid.groups.size()));
  std::string layer;
  size_t runs = 0;
  for (const Row &r : s.results.rows) {
    auto g = std::find(grid.groups.begin(), grid.groups.end(), grid.groupOf(r));
    if (g == grid.groups.end())
      continue;
    const Mechanism m = mechanismOf(cellsOfScript[get(r, "cell")]);
    if (!m.found || !m.kept)
      continue;
    layer = m.layer, ++runs;
    for (int k = 0; k < 3; ++k)
      box.samples[k][static_cast<size_t>(g - grid.groups.begin())].push_back(m.at[k].attrib);
  }
  if (runs == 0)
    return;
  box.title = s.title + ": Attrib at layer " + layer + " block input over every run kept";
  box.yLabel = "Attrib", box.xLabel = axesTitle(grid.groupAxes) + " (each box: its learning rates)";
  box.categories = grid.groups;
  writeFileAtomically((outDir / "plots" / (base + "-box.svg")).string(), boxChart(box));
  md << "![Attrib per setting](" << urlPath("plots/" + base + "-box.svg") << ") (" << runs << " runs)\n\n";
}

/// A script swept over `offset` (positions after the corrupted key, e.g.
/// mamba-internals.rw): per remaining coordinates (the label without its
/// offset, e.g. "layer=0 node=conv"), Attrib against the offset, a line per
/// group's best run (unkept cells are gaps).
void offsetPlots(const Sweep &s, const Grid &grid, const std::string &sc,
                 std::map<std::string, std::vector<Row>> &cellsOfScript, const fs::path &outDir,
                 std::ostringstream &md) {
  std::vector<std::string> panels;
  std::set<long> offsets;
  std::map<std::tuple<std::string, std::string, long>, double> attribOf; // (panel, group, offset)
  for (const std::string &g : grid.groups)
    for (const Row &r : cellsOfScript[get(grid.best.at(g), "cell")]) {
      const std::string offset = get(r, "offset"), label = get(r, "intervention");
      const size_t at = label.find("offset=" + offset);
      if (offset.empty() || at == std::string::npos)
        continue;
      std::string panel = label.substr(0, at) + label.substr(at + 7 + offset.size());
      panel = panel.substr(0, panel.find_last_not_of(' ') + 1);
      if (std::find(panels.begin(), panels.end(), panel) == panels.end())
        panels.push_back(panel);
      const long k = std::stol(offset);
      offsets.insert(k);
      attribOf[{panel, g, k}] = get(r, "kept") == "1" ? number(r, "attrib") : NAN;
    }
  if (panels.empty())
    return;
  md << "Attrib against the offset from the corrupted key (best run of each):\n\n";
  for (const std::string &panel : panels) {
    support::LineChart c;
    c.title = s.title + ": Attrib of " + panel + " at key+k";
    c.xLabel = "position (offset k from the corrupted key)", c.yLabel = "Attrib";
    for (long k : offsets)
      c.xs.push_back("key+" + std::to_string(k));
    for (const std::string &g : grid.groups) {
      c.series.push_back(axesTitle(grid.groupAxes) + " = " + g);
      c.values.emplace_back();
      for (long k : offsets) {
        auto it = attribOf.find({panel, g, k});
        c.values.back().push_back(it == attribOf.end() ? NAN : it->second);
      }
    }
    std::string file = s.name + "-" + sc + "-offset-";
    for (char ch : panel)
      file += std::isalnum(static_cast<unsigned char>(ch)) || ch == '=' ? ch : '_';
    writeFileAtomically((outDir / "plots" / (file + ".svg")).string(), support::lineChart(c));
    md << "![" << mdCell(panel) << "](" << urlPath("plots/" + file + ".svg") << ") ";
  }
  md << "\n\n";
}

/// One script's interventions: a row per group's best run (Attrib per cell,
/// the mechanism it reads as), and the Attrib plots where every run has
/// the layer's block-input cells.
void interventionSection(const Sweep &s, Grid &grid, const std::string &sc,
                         std::map<std::string, std::vector<Row>> &cellsOfScript, const fs::path &outDir,
                         std::ostringstream &md) {
  const std::vector<std::string> &groups = grid.groups;
  std::map<std::string, Row> &best = grid.best;
  std::vector<std::string> labels;
  for (const std::string &g : groups)
    for (const Row &r : cellsOfScript[get(best[g], "cell")]) {
      std::string l = get(r, "intervention");
      if (std::find(labels.begin(), labels.end(), l) == labels.end())
        labels.push_back(l);
    }
  if (labels.empty())
    return;
  md << "**Interventions: `" << sc << ".rw`** (best run of each; Attrib = (p_patched − p(y|c)) / "
     << "(p(y|o) − p(y|c)), ratio of means)\n\n| run | " << mdCell("p(y|o)") << " | " << mdCell("p(y|c)") << " |";
  for (const auto &l : labels)
    md << " " << mdCell(l) << " |";
  bool anyMechanism = false;
  for (const std::string &g : groups)
    anyMechanism |= mechanismOf(cellsOfScript[get(best[g], "cell")]).found;
  if (anyMechanism)
    md << " mechanism |";
  md << "\n|---|---|---|";
  for (size_t i = 0; i < labels.size() + anyMechanism; ++i)
    md << "---|";
  md << "\n";
  support::BarChart bars;
  bars.series = {"@key", "@value", "@query"};
  bars.values = bars.lo = bars.hi = std::vector<std::vector<double>>(3);
  std::vector<Point> scatterVQ, scatterQK;
  std::string layer;
  for (const std::string &g : groups) {
    const std::vector<Row> &rs = cellsOfScript[get(best[g], "cell")];
    if (rs.empty())
      continue;
    md << "| " << mdCell(g) << " | " << two(number(rs[0], "p_clean")) << " | "
       << two(number(rs[0], "p_corrupt")) << " |";
    for (const auto &l : labels) {
      auto it = std::find_if(rs.begin(), rs.end(), [&](const Row &r) { return get(r, "intervention") == l; });
      md << " " << (it == rs.end() ? "–" : get(*it, "kept") == "1" ? attribText(*it) : "n/a") << " |";
    }
    Mechanism m = mechanismOf(rs);
    if (anyMechanism)
      md << " " << mdCell(classify(m)) << " |";
    md << "\n";
    if (m.found) {
      layer = m.layer;
      for (int k = 0; k < 3; ++k)
        bars.values[k].push_back(m.at[k].attrib), bars.lo[k].push_back(m.at[k].lo), bars.hi[k].push_back(m.at[k].hi);
      if (m.kept) {
        const Reading &key = m.at[0], &value = m.at[1], &query = m.at[2];
        scatterVQ.push_back({g, value.attrib, query.attrib, value.lo, value.hi, query.lo, query.hi});
        scatterQK.push_back({g, query.attrib, key.attrib, query.lo, query.hi, key.lo, key.hi});
      }
    }
  }
  md << "\n";
  if (!layer.empty() && bars.values[0].size() == groups.size()) {
    std::string base = s.name + "-" + sc;
    bars.title = s.title + ": Attrib at layer " + layer + " block input (95 % intervals)";
    bars.yLabel = "Attrib", bars.xLabel = axesTitle(grid.groupAxes), bars.categories = groups;
    writeFileAtomically((outDir / "plots" / (base + "-attrib.svg")).string(), barChart(bars));
    writeFileAtomically((outDir / "plots" / (base + "-value-vs-query.svg")).string(),
              scatterPlot(s.title + ": Attrib@Value vs Attrib@Query (layer " + layer + ")",
                          "Attrib@Value", "Attrib@Query", scatterVQ));
    writeFileAtomically((outDir / "plots" / (base + "-query-vs-key.svg")).string(),
              scatterPlot(s.title + ": Attrib@Query vs Attrib@Key (layer " + layer + ")",
                          "Attrib@Query", "Attrib@Key", scatterQK));
    md << "![Attrib](" << urlPath("plots/" + base + "-attrib.svg") << ") ![value vs query]("
       << urlPath("plots/" + base + "-value-vs-query.svg") << ") ![query vs key]("
       << urlPath("plots/" + base + "-query-vs-key.svg") << ")\n\n";
    boxPlot(s, grid, cellsOfScript, base, outDir, md);
  }
  offsetPlots(s, grid, sc, cellsOfScript, outDir, md);
}

/// The sweeps a sweep's `report_with` names, found among the report's
/// inputs by name; a name that is missing, or a sweep with an axis this one
/// lacks (its rows would differ in a setting the plot does not show), is
/// said in the report and left out.
std::vector<const Sweep *> sweepsDrawnWith(const Sweep &s, const std::vector<Sweep> &all, std::ostringstream &md) {
  std::vector<const Sweep *> with;
  for (const std::string &name : s.reportWith) {
    auto it = std::find_if(all.begin(), all.end(), [&](const Sweep &o) { return o.name == name; });
    if (it == all.end()) {
      md << "*(`" << s.name << "` is drawn with `" << name << "`, which is not among this report's sweep folders: "
         << "its rows are missing from the plot below.)*\n\n";
      continue;
    }
    std::string extra;
    for (const std::string &a : it->axes)
      if (std::find(s.axes.begin(), s.axes.end(), a) == s.axes.end())
        extra += (extra.empty() ? "" : ", ") + a;
    if (!extra.empty()) {
      md << "*(`" << name << "` varies " << extra << ", which `" << s.name << "` does not: its rows are left out.)*\n\n";
      continue;
    }
    with.push_back(&*it);
  }
  return with;
}

/// The accuracy table and plot over this sweep's rows and those of the
/// sweeps it names in `report_with` (e.g. the same models at other widths),
/// in the order of each numeric axis (d = 16, 32, 64, 128).
void combinedAccuracySection(const Sweep &s, const std::vector<Sweep> &all, const fs::path &outDir,
                             std::ostringstream &md) {
  std::vector<const Sweep *> with = sweepsDrawnWith(s, all, md);
  if (with.empty())
    return;
  Sweep merged = s;
  merged.name = s.name + "-combined";
  merged.title = s.title + ", with ";
  for (size_t i = 0; i < with.size(); ++i) {
    merged.title += (i ? ", " : "") + with[i]->name;
    for (const Row &r : with[i]->results.rows)
      merged.results.rows.push_back(r);
  }
  const std::vector<std::string> ordered = settingAxes(s.axes); // what a row is sorted by
  auto sortKey = [](const Row &r, const std::string &a) { // not a number: last
    const double v = number(r, a);
    return std::isnan(v) ? INFINITY : v;
  };
  std::stable_sort(merged.results.rows.begin(), merged.results.rows.end(), [&](const Row &x, const Row &y) {
    for (const std::string &a : ordered) {
      const double u = sortKey(x, a), v = sortKey(y, a);
      if (u != v)
        return u < v;
    }
    return false;
  });
  md << "### " << mdText(merged.title) << "\n\n";
  Grid grid = gridOf(merged);
  if (!grid.groups.empty())
    accuracySection(merged, grid, outDir, md);
}

void reportSweep(const Sweep &s, const std::vector<Sweep> &all, const fs::path &outDir, std::ostringstream &md) {
  md << "## " << mdText(s.title) << "\n\n";
  if (!s.description.empty())
    md << mdText(s.description) << "\n\n";
  Grid grid = gridOf(s);
  md << grid.ok << " runs finished" << (grid.failed ? ", " + std::to_string(grid.failed) + " failed" : "")
     << " (" << std::lround(grid.wall / 60) << " min of runs, scale: " << s.scale << ").\n\n";
  if (grid.groups.empty())
    return;
  accuracySection(s, grid, outDir, md);
  if (!s.reportWith.empty())
    combinedAccuracySection(s, all, outDir, md);
  // Interventions of each group's best run, script by script.
  std::map<std::string, std::map<std::string, std::vector<Row>>> cells; // script → cell → rows
  std::vector<std::string> scripts;
  for (const Row &r : s.attrib.rows) {
    std::string sc = get(r, "script");
    if (!cells.count(sc))
      scripts.push_back(sc);
    cells[sc][get(r, "cell")].push_back(r);
  }
  for (const std::string &sc : scripts)
    interventionSection(s, grid, sc, cells[sc], outDir, md);
  copyLearningCurves(s, outDir, md);
  // The sweep's own tables, for anyone re-plotting; only those it has are linked.
  std::vector<std::string> tables;
  for (const char *f : {"results.csv", "attrib.csv"})
    if (fs::exists(s.dir / f)) {
      const std::string copy = "csv/" + s.name + "-" + f;
      fs::create_directories(outDir / "csv");
      fs::copy_file(s.dir / f, outDir / copy, fs::copy_options::overwrite_existing);
      tables.push_back("[`" + mdText(copy) + "`](" + urlPath(copy) + ")");
    }
  for (size_t i = 0; i < tables.size(); ++i)
    md << (i ? ", " : "Tables: ") << tables[i] << (i + 1 == tables.size() ? ".\n\n" : "");
}

/// Why `outFile` cannot be a report, or "": the report writes plots/ and
/// csv/ beside its file, so it must be a file in a folder of the user's
/// (not a device, a FIFO or a folder: `-o /dev/null` would write into /dev).
std::string reportTargetProblem(const std::string &outFile) {
  struct stat st {};
  if (::stat(outFile.c_str(), &st) != 0 || S_ISREG(st.st_mode))
    return "";
  if (S_ISDIR(st.st_mode))
    return "the report's -o " + outFile + " is a folder; give a file in it (e.g. " +
           (fs::path(outFile) / "report.md").string() + ")";
  return "the report's -o " + outFile +
         " is not a regular file (a device or a pipe), and the report writes plots/ and csv/ beside it; "
         "give a file path such as out/report.md";
}
} // namespace

namespace {
/// The comparison with a reference (`--compare FILE.csv`), first in the
/// report: how many rows have each verdict, then every row as the file has
/// it (any columns; a `verdict` column is required), the file linked.
support::Status comparisonSection(const std::string &file, const fs::path &outDir, std::ostringstream &md) {
  Table t;
  try {
    t = readCsv(file);
  } catch (const std::exception &e) {
    return support::Status::failed(e.what());
  }
  std::error_code ec;
  if (!fs::is_regular_file(file, ec) || t.columns.empty())
    return support::Status::failed("--compare " + file + ": no such table (a CSV with a header)");
  if (std::find(t.columns.begin(), t.columns.end(), "verdict") == t.columns.end()) {
    std::string columns;
    for (const std::string &c : t.columns)
      columns += (columns.empty() ? "" : ", ") + c;
    return support::Status::failed("--compare " + file + ": the table has no 'verdict' column (its columns: " +
                                   columns + ")");
  }
  std::vector<std::pair<std::string, int>> counts; // in first-seen order
  for (const Row &r : t.rows) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto &c) { return c.first == get(r, "verdict"); });
    if (it == counts.end())
      counts.push_back({get(r, "verdict"), 1});
    else
      ++it->second;
  }
  const std::string copy = "csv/" + fs::path(file).filename().string();
  if (fs::weakly_canonical(outDir / copy, ec) != fs::weakly_canonical(file, ec)) {
    fs::create_directories(outDir / "csv", ec);
    fs::copy_file(file, outDir / copy, fs::copy_options::overwrite_existing, ec);
  }
  md << "## Comparison with the reference\n\n" << t.rows.size() << " rows (";
  for (size_t i = 0; i < counts.size(); ++i)
    md << (i ? ", " : "") << counts[i].second << " " << mdText(counts[i].first.empty() ? "(no verdict)" : counts[i].first);
  md << "), from [`" << mdText(copy) << "`](" << urlPath(copy) << ").\n\n|";
  for (const std::string &c : t.columns)
    md << " " << mdCell(c) << " |";
  md << "\n|";
  for (size_t i = 0; i < t.columns.size(); ++i)
    md << "---|";
  md << "\n";
  for (const Row &r : t.rows) {
    md << "|";
    for (const std::string &c : t.columns) {
      const std::string v = mdCell(get(r, c));
      md << " " << (c == "verdict" && (v == "contradicts" || v == "differs") ? "**" + v + "**" : v) << " |";
    }
    md << "\n";
  }
  md << "\n";
  return support::Status::ok();
}
} // namespace

support::Status writeReport(const std::vector<std::string> &dirs, const std::string &outFile,
                            const std::string &title, std::ostream &console, const std::string &compare) {
  std::vector<std::string> inputs = dirs;
  if (!compare.empty())
    inputs.push_back(compare);
  if (std::string why = support::outputClash(outFile, inputs); !why.empty())
    return support::Status::failed(why);
  if (std::string why = reportTargetProblem(outFile); !why.empty())
    return support::Status::failed(why);
  std::vector<Sweep> sweeps;
  for (const std::string &d : dirs) {
    Sweep s;
    std::string error;
    if (!readSweep(d, s, error))
      return support::Status::failed(error);
    // The sweep's name names its plots and tables: two alike would share files.
    for (const Sweep &earlier : sweeps)
      if (earlier.name == s.name)
        return support::Status::failed("the sweep folders " + earlier.dir.string() + " and " + d +
                                       " are both named '" + s.name +
                                       "' ([sweep] name): their plots and tables would replace each other; "
                                       "report them separately (-o in two folders) or rename one");
    sweeps.push_back(std::move(s));
  }
  fs::path out = fs::absolute(outFile);
  std::ostringstream md;
  md << "# " << mdText(title) << "\n\n"
     << "Written by `mixc report` from " << sweeps.size() << (sweeps.size() == 1 ? " sweep folder" : " sweep folders") << ". Accuracy is on the "
     << "test set at the run's last step (where a run stopped early, that step); interventions follow protocol §6 (key corrupted, "
     << "clean activations patched into the corrupted run, 320 documents). The mechanism column "
     << "reads the last layer's block input: Attrib@Value ≥ 0.5 (and ≥ @Query) is induction at "
     << "the value; Attrib@Query ≥ 0.5 is direct retrieval. In brackets: Attrib's 95 % bootstrap interval "
     << "over documents, where the run recorded one.\n\n";
  if (!compare.empty())
    if (support::Status st = comparisonSection(compare, out.parent_path(), md); !st.isOk())
      return st;
  for (const Sweep &s : sweeps)
    reportSweep(s, sweeps, out.parent_path(), md);
  writeFileAtomically(out.string(), md.str());
  console << "wrote " << out.string() << " (" << sweeps.size() << (sweeps.size() == 1 ? " sweep" : " sweeps") << "; plots/ and csv/ beside it)\n";
  return support::Status::ok();
}

} // namespace mixc::experiments
