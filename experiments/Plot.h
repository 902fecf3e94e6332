//===- Plot.h - small SVG charts for reports --------------------*- C++ -*-===//
#ifndef MIXC_RUNTIME_EXPERIMENTS_PLOT_H
#define MIXC_RUNTIME_EXPERIMENTS_PLOT_H

#include <string>
#include <vector>

namespace mixc::experiments {

/// Grouped bars: one group per category, one bar per series; values in
/// [0, 1] (NaN: no bar, "n/a"), on a y axis titled `yLabel`. Returns the
/// SVG text.
std::string barChart(const std::string &title, const std::vector<std::string> &categories,
                     const std::vector<std::string> &series,
                     const std::vector<std::vector<double>> &values /* [series][category] */,
                     const std::string &yLabel = "");

/// One line per series over evenly spaced x positions (e.g. widths 16, 32,
/// 64), values in [0, 1] (NaN: a gap); each point's note (e.g. the
/// learning rate chosen) is written beside it and shown on hover.
std::string lineChart(const std::string &title, const std::string &xLabel, const std::string &yLabel,
                      const std::vector<std::string> &xs, const std::vector<std::string> &series,
                      const std::vector<std::vector<double>> &values /* [series][x] */,
                      const std::vector<std::vector<std::string>> &notes /* [series][x] */);

struct Point {
  std::string label;
  double x, y;
};

/// Labelled points in [0, 1]² with axis titles (e.g. Attrib@Value vs @Query).
std::string scatterPlot(const std::string &title, const std::string &xLabel,
                        const std::string &yLabel, const std::vector<Point> &points);

} // namespace mixc::experiments

#endif
