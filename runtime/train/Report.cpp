//===- Report.cpp - progress bar, metrics CSV and SVG curves of a run -------===//
#include "runtime/train/Report.h"
#include "support/AtomicWrite.h"
#include "support/Ticks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace mixc::train {

Progress::Progress(int64_t total, bool quiet, std::ostream &log)
    : total_(std::max<int64_t>(total, 1)), quiet_(quiet), tty_(&log == &std::cerr && ::isatty(2)), log_(log) {}

std::string formatDuration(double s) {
  if (!std::isfinite(s) || s < 0)
    return "?";
  char buf[32];
  int64_t t = static_cast<int64_t>(s + 0.5);
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)(t / 3600), (long long)(t / 60 % 60));
  else if (t >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)(t / 60), (long long)(t % 60));
  else
    std::snprintf(buf, sizeof buf, "%llds", (long long)t);
  return buf;
}

void Progress::update(int64_t step, double loss, double acc, double tps, double eta) {
  if (quiet_)
    return;
  int64_t every = std::max<int64_t>(total_ / 20, 1);
  if (!tty_ && step / every == lastLogged_ && step != total_)
    return;
  lastLogged_ = step / every;
  const int width = 24;
  int filled = static_cast<int>(width * step / total_);
  std::string bar(filled, '#');
  bar.resize(width, '.');
  char line[256];
  std::snprintf(line, sizeof line, "[%s] %lld/%lld loss %.4f acc %.3f  %.0f tok/s  ETA %s",
                bar.c_str(), (long long)step, (long long)total_, loss, acc, tps,
                formatDuration(eta).c_str());
  if (tty_)
    log_ << "\r" << line << "\033[K" << std::flush;
  else
    log_ << line << "\n";
}

void Progress::finish() {
  if (!quiet_ && tty_)
    log_ << "\n";
}

void writeFileAtomically(const std::string &path, const std::string &text) {
  std::string error;
  if (!support::writeFileAtomically(path, text, error))
    throw std::runtime_error(error);
}

bool analysisFolder(const std::string &checkpoint, const std::string &kind, const std::string &outDir,
                    const std::string &scriptName, std::string &folder, std::string &error) {
  namespace fs = std::filesystem;
  folder = outDir.empty() ? (fs::path(checkpoint).parent_path() / kind / scriptName).string() : outDir;
  if (!support::makeFolder(folder, error))
    return false;
  support::removeStaleTemporaries(folder);
  return true;
}

void writeMetricsCsv(const std::string &path, const std::vector<MetricsRow> &rows) {
  std::ostringstream ss;
  ss << "step,epoch,lr,train_loss,train_acc,eval_acc,eval_prob,tokens_per_s,elapsed_s\n";
  char buf[256];
  for (const MetricsRow &r : rows) {
    std::snprintf(buf, sizeof buf, "%lld,%.4f,%.6g,%.6f,%.6f,%.6f,%.6f,%.1f,%.2f\n",
                  (long long)r.step, r.epoch, r.lr, r.trainLoss, r.trainAcc, r.evalAcc,
                  r.evalProb, r.tokensPerSec, r.elapsed);
    ss << buf;
  }
  writeFileAtomically(path, ss.str());
}

std::vector<MetricsRow> readMetricsCsv(const std::string &path) {
  std::vector<MetricsRow> rows;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line); // header
  while (std::getline(in, line)) {
    MetricsRow r;
    long long step = 0;
    if (std::sscanf(line.c_str(), "%lld,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf", &step, &r.epoch, &r.lr,
                    &r.trainLoss, &r.trainAcc, &r.evalAcc, &r.evalProb, &r.tokensPerSec,
                    &r.elapsed) == 9) {
      r.step = step;
      rows.push_back(r);
    }
  }
  return rows;
}

namespace {
struct Series {
  double MetricsRow::*field;
  std::string name, colour;
};

/// One panel: each series as a polyline of (step, value), with ticks and a
/// grid on both axes, axis titles and, for more than one series, a legend.
std::string panel(const std::vector<MetricsRow> &rows, const std::vector<Series> &series, const std::string &label,
                  double x0, double y0, double w, double h, bool unitRange) {
  std::ostringstream s;
  double maxStep = rows.empty() ? 1 : std::max<double>(1, rows.back().step);
  double lo = unitRange ? 0 : 1e300, hi = unitRange ? 1 : -1e300;
  if (!unitRange)
    for (const MetricsRow &r : rows)
      for (const Series &ser : series)
        if (std::isfinite(r.*ser.field)) {
          lo = std::min(lo, r.*ser.field);
          hi = std::max(hi, r.*ser.field);
        }
  if (!(hi > lo)) {
    lo = unitRange ? 0 : (lo < 1e300 ? lo - 1 : 0);
    hi = lo + (unitRange ? 1 : 2);
  }
  const std::vector<double> yTicks = support::niceTicks(lo, hi, 5), xTicks = support::niceTicks(0, maxStep, 5);
  lo = yTicks.front(), hi = yTicks.back();
  const double xMax = xTicks.back();
  auto X = [&](double step) { return x0 + w * step / xMax; };
  auto Y = [&](double v) { return y0 + h * (1 - (v - lo) / (hi - lo)); };
  s << "<text x='" << x0 << "' y='" << y0 - 8 << "' font-size='13'>" << label << "</text>\n";
  const double ySpacing = yTicks.size() > 1 ? yTicks[1] - yTicks[0] : 1;
  for (double t : yTicks)
    s << "<line x1='" << x0 << "' x2='" << x0 + w << "' y1='" << Y(t) << "' y2='" << Y(t)
      << "' stroke='#e5e5e5'/><text x='" << x0 - 4 << "' y='" << Y(t) + 3.5
      << "' font-size='10' text-anchor='end'>" << support::tickLabel(t, ySpacing) << "</text>\n";
  const double xSpacing = xTicks.size() > 1 ? xTicks[1] - xTicks[0] : 1;
  for (double t : xTicks)
    s << "<line x1='" << X(t) << "' x2='" << X(t) << "' y1='" << y0 << "' y2='" << y0 + h
      << "' stroke='#e5e5e5'/><text x='" << X(t) << "' y='" << y0 + h + 13
      << "' font-size='10' text-anchor='middle'>" << support::tickLabel(t, xSpacing) << "</text>\n";
  s << "<rect x='" << x0 << "' y='" << y0 << "' width='" << w << "' height='" << h
    << "' fill='none' stroke='#888'/>\n";
  s << "<text x='" << x0 + w / 2 << "' y='" << y0 + h + 28 << "' font-size='11' text-anchor='middle'>training step</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    s << "<polyline fill='none' stroke='" << series[k].colour << "' stroke-width='1.5' points='";
    for (const MetricsRow &r : rows)
      if (std::isfinite(r.*series[k].field))
        s << X(r.step) << "," << Y(r.*series[k].field) << " ";
    s << "'/>\n";
    if (series.size() > 1) { // the legend sits on the title line, clear of the curves
      const double lx = x0 + w - 90.0 * static_cast<double>(series.size() - k);
      s << "<line x1='" << lx << "' x2='" << lx + 15 << "' y1='" << y0 - 12 << "' y2='" << y0 - 12 << "' stroke='"
        << series[k].colour << "' stroke-width='2'/><text x='" << lx + 19 << "' y='" << y0 - 8
        << "' font-size='10'>" << series[k].name << "</text>\n";
    }
  }
  return s.str();
}
} // namespace

void writeCurvesSvg(const std::string &path, const std::string &title,
                    const std::vector<MetricsRow> &rows) {
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='740' height='320' font-family='sans-serif'>\n";
  s << "<rect width='740' height='320' fill='white'/>\n";
  s << "<text x='370' y='20' font-size='14' text-anchor='middle'>" << title << "</text>\n";
  s << panel(rows, {{&MetricsRow::trainLoss, "train loss", "#1f77b4"}}, "train loss", 60, 50, 280, 210, false);
  s << panel(rows,
             {{&MetricsRow::trainAcc, "train", "#ff7f0e"}, {&MetricsRow::evalAcc, "test (eval)", "#1f77b4"}},
             "accuracy", 430, 50, 280, 210, true);
  s << "</svg>\n";
  writeFileAtomically(path, s.str());
}

} // namespace mixc::train
