//===- Report.h - progress bar, metrics CSV, SVG curves ---------*- C++ -*-===//
#ifndef MIXC_RUNTIME_TRAIN_REPORT_H
#define MIXC_RUNTIME_TRAIN_REPORT_H

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace mixc::train {

/// One evaluation point of a run.
struct MetricsRow {
  int64_t step = 0;
  double epoch = 0, lr = 0, trainLoss = 0, trainAcc = 0, evalAcc = 0, evalProb = 0;
  double tokensPerSec = 0, elapsed = 0;
};

/// A one-line progress bar on `log`: redrawn in place when that is stderr
/// on a terminal, a line every ~5% otherwise (logs, CI).
class Progress {
public:
  Progress(int64_t total, bool quiet, std::ostream &log);
  void update(int64_t step, double loss, double acc, double tokensPerSec, double etaSec);
  void finish();

private:
  int64_t total_;
  bool quiet_, tty_;
  std::ostream &log_;
  int64_t lastLogged_ = -1;
};

std::string formatDuration(double seconds);

/// metrics.csv: header + rows (rewritten whole, via a temporary file).
void writeMetricsCsv(const std::string &path, const std::vector<MetricsRow> &rows);
/// Reads rows back (for --resume); missing file: empty.
std::vector<MetricsRow> readMetricsCsv(const std::string &path);

/// One loss.csv row: the train loss and accuracy averaged over the
/// `train.log_every` steps ending at `step`.
struct LossRow {
  int64_t step = 0;
  double loss = 0, acc = 0;
};
/// loss.csv: header + rows (rewritten whole, atomically, at each evaluation).
void writeLossCsv(const std::string &path, const std::vector<LossRow> &rows);
/// Reads rows back (for --resume); missing file: empty.
std::vector<LossRow> readLossCsv(const std::string &path);

/// curves.svg: the train loss and accuracy every log_every steps (lines), the
/// evaluations' windows and test accuracy (marked points), against step.
void writeCurvesSvg(const std::string &path, const std::string &title, const std::vector<MetricsRow> &rows,
                    const std::vector<LossRow> &losses = {});

/// Writes `text` to `path` atomically (temporary file + rename).
void writeFileAtomically(const std::string &path, const std::string &text);

/// The folder an analysis command (intervene, attribute, align) writes
/// into: `outDir`, else `<run>/<kind>/<script's file stem>` beside
/// `checkpoint` (`scriptless`, e.g. every-node, without a script). Created, with the
/// temporaries of a writer killed there mid-write removed. The default
/// folder records its script's path (script.txt) and refuses another script
/// of the same file name, whose tables would silently replace the first's.
/// A folder named by `outDir` is refused when it is a run, sweep or bundle
/// folder, or holds files but no analysis' mark (script.txt, written there
/// on first use); an analysis folder inside a run (what a sweep names) is
/// always mixc's.
/// False with `error` (the path and the OS's reason, or both scripts).
bool analysisFolder(const std::string &checkpoint, const std::string &kind, const std::string &outDir,
                    const std::string &script, std::string &folder, std::string &error,
                    const std::string &scriptless = "every-node");

} // namespace mixc::train

#endif
