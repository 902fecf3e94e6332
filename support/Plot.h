//===- Plot.h - every SVG chart mixc draws --------------------------*- C++ -*-===//
//
// The one plotting library: the report's bars, lines and scatter plots,
// training curves, and intervention heatmaps, each returned as SVG text
// (the caller writes it). Text is escaped; axis ticks come from Ticks.h.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_SUPPORT_PLOT_H
#define MIXC_SUPPORT_PLOT_H

#include <string>
#include <vector>

namespace mixc::support {

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

/// A grid of shaded cells, e.g. Attrib per (layer, position): rows and
/// columns named `rowAxis`=value and `colAxis`=value, each cell shaded from
/// white (0) to blue (1, values clamped) with its number written in it
/// ("n/a" when not shown) and `hover` on hover, and a colour bar titled
/// `scale`.
struct Heatmap {
  struct Cell {
    size_t row, col;
    double value;
    bool shown;        // false: "n/a", unshaded
    std::string hover; // e.g. the 95 % interval; "" for none
  };
  std::string title, rowAxis, colAxis, scale;
  std::vector<std::string> rows, cols;
  std::vector<Cell> cells;
};
std::string heatmapChart(const Heatmap &h);

/// Panels of curves over a numeric x (training steps), side by side: each
/// series a polyline through its finite points, nice ticks and a grid on both
/// axes; y over [0, 1] or fitted to the data; a legend when a panel has
/// several series.
struct Curve {
  std::string name, colour;
  std::vector<double> x, y;
};
struct CurvePanel {
  std::string label, xLabel;
  std::vector<Curve> curves;
  bool unitRange; // y from 0 to 1, else fitted
};
std::string curvesChart(const std::string &title, const std::vector<CurvePanel> &panels);

} // namespace mixc::support

#endif
