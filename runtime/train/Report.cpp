//===- Report.cpp - progress bar, metrics CSV and SVG curves of a run -------===//
#include "runtime/train/Report.h"
#include "support/Plot.h"
#include "support/AtomicWrite.h"
#include "support/OutputGuard.h"
#include "support/TextFile.h"
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

namespace {
namespace fs = std::filesystem;

/// The analysis folders' mark: the script whose tables the folder holds.
constexpr const char *kAnalysisMark = "script.txt";

/// Whether `dir` is where an analysis of a run writes by default
/// (`RUN/interventions/NAME`, ...: inside a run folder's analysis folder), so
/// mixc's own, whatever it holds.
bool insideARun(const fs::path &dir) {
  std::error_code ec;
  const fs::path abs = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  const fs::path run = abs.parent_path().parent_path();
  const std::string kind = abs.parent_path().filename().string();
  return (kind == "interventions" || kind == "attribution" || kind == "align") &&
         (fs::exists(run / "checkpoint.pt", ec) || fs::exists(run / "result.toml", ec));
}

/// Why an analysis must not write into the folder the user named with
/// --out, or "": a run or sweep folder (its attrib.csv holds every cell's
/// rows, which `mixc report` reads), or a folder of files an analysis did
/// not write (a user's own attrib.csv).
std::string outFolderProblem(const fs::path &dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec) || insideARun(dir))
    return "";
  std::string mark = support::mixcFolderMark(dir.string());
  if (mark.empty() && fs::exists(dir / "cell.toml", ec)) // a sweep's cell before its run began
    mark = "cell.toml";
  if (!mark.empty())
    return "--out " + dir.string() + " is a run, sweep or bundle folder (it holds " + mark +
           "), and the analysis' tables would replace its own; give --out a folder of its own";
  return support::foreignFolder(dir.string(), {kAnalysisMark}, "an analysis folder");
}

/// The script's path as recorded in the mark (resolved, so that two
/// spellings of one file are one script).
std::string recordedScript(const std::string &script, const std::string &scriptless) {
  if (script.empty())
    return "(" + scriptless + ", no script)";
  std::error_code ec;
  std::string path = fs::weakly_canonical(script, ec).string();
  return ec ? script : path;
}
} // namespace

bool analysisFolder(const std::string &checkpoint, const std::string &kind, const std::string &outDir,
                    const std::string &script, std::string &folder, std::string &error,
                    const std::string &scriptless) {
  std::string stem = script.empty() ? scriptless : fs::path(script).stem().string();
  folder = outDir.empty() ? (fs::path(checkpoint).parent_path() / kind / stem).string() : outDir;
  if (!outDir.empty())
    if (error = outFolderProblem(outDir); !error.empty())
      return false;
  if (!support::makeFolder(folder, error))
    return false;
  support::removeStaleTemporaries(folder);
  const std::string path = recordedScript(script, scriptless);
  fs::path mark = fs::path(folder) / kAnalysisMark;
  if (outDir.empty() && script.empty())
    return true; // the script-less one: one per run
  std::error_code ec;
  if (!outDir.empty()) // the user's folder, marked as an analysis' for the next --out
    return fs::exists(mark, ec) || support::writeFileAtomically(mark.string(), path + "\n", error);
  std::string recorded;
  if (fs::exists(mark) && support::readWholeFile(mark.string(), recorded, error)) {
    while (!recorded.empty() && recorded.back() == '\n')
      recorded.pop_back();
    if (recorded != path) {
      error = folder + " holds the tables of " + recorded + ", and this script is " + path +
              " (another script of the same file name); give --out to write elsewhere, or rename the script";
      return false;
    }
    return true;
  }
  return support::writeFileAtomically(mark.string(), path + "\n", error);
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

void writeLossCsv(const std::string &path, const std::vector<LossRow> &rows) {
  std::ostringstream ss;
  ss << "step,train_loss,train_acc\n";
  char buf[96];
  for (const LossRow &r : rows) {
    std::snprintf(buf, sizeof buf, "%lld,%.6f,%.6f\n", (long long)r.step, r.loss, r.acc);
    ss << buf;
  }
  writeFileAtomically(path, ss.str());
}

std::vector<LossRow> readLossCsv(const std::string &path) {
  std::vector<LossRow> rows;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line); // header
  while (std::getline(in, line)) {
    LossRow r;
    long long step = 0;
    if (std::sscanf(line.c_str(), "%lld,%lf,%lf", &step, &r.loss, &r.acc) == 3) {
      r.step = step;
      rows.push_back(r);
    }
  }
  return rows;
}

void writeCurvesSvg(const std::string &path, const std::string &title, const std::vector<MetricsRow> &rows,
                    const std::vector<LossRow> &losses) {
  // Every evaluation: its window's train loss and accuracy, and the test
  // accuracy, as marked points; the loss.csv rows between them as lines.
  auto evals = [&](double MetricsRow::*field, const std::string &name, const std::string &colour) {
    support::Curve c{name, colour, {}, {}, true};
    for (const MetricsRow &r : rows)
      c.x.push_back(static_cast<double>(r.step)), c.y.push_back(r.*field);
    return c;
  };
  auto logged = [&](double LossRow::*field, const std::string &name, const std::string &colour) {
    support::Curve c{name, colour, {}, {}, false};
    for (const LossRow &r : losses)
      c.x.push_back(static_cast<double>(r.step)), c.y.push_back(r.*field);
    return c;
  };
  std::vector<support::Curve> loss, acc;
  if (!losses.empty()) {
    loss.push_back(logged(&LossRow::loss, "logged", "#9ecae1"));
    acc.push_back(logged(&LossRow::acc, "train, logged", "#fdd0a2"));
  }
  loss.push_back(evals(&MetricsRow::trainLoss, losses.empty() ? "train loss" : "at evaluations", "#1f77b4"));
  acc.push_back(evals(&MetricsRow::trainAcc, losses.empty() ? "train" : "train, at evaluations", "#ff7f0e"));
  acc.push_back(evals(&MetricsRow::evalAcc, "test", "#1f77b4"));
  writeFileAtomically(path, support::curvesChart(title, {{"train loss", "training step", loss, false},
                                                         {"accuracy", "training step", acc, true}}));
}

} // namespace mixc::train
