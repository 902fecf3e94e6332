//===- Plot.h - small SVG charts for reports --------------------*- C++ -*-===//
#ifndef MIXC_RUNTIME_EXPERIMENTS_PLOT_H
#define MIXC_RUNTIME_EXPERIMENTS_PLOT_H

#include <string>
#include <vector>

namespace mixc::experiments {

/// Grouped bars: one group per category, one bar per series; values in
/// [0, 1] (NaN: no bar, "n/a"). Returns the SVG text.
std::string barChart(const std::string &title, const std::vector<std::string> &categories,
                     const std::vector<std::string> &series,
                     const std::vector<std::vector<double>> &values /* [series][category] */);

struct Point {
  std::string label;
  double x, y;
};

/// Labelled points in [0, 1]² with axis titles (e.g. Attrib@Value vs @Query).
std::string scatterPlot(const std::string &title, const std::string &xLabel,
                        const std::string &yLabel, const std::vector<Point> &points);

} // namespace mixc::experiments

#endif
