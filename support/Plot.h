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

/// Grouped bars: one group per category, one bar per series, on a y axis
/// from min(0, data) to max(1, data) at nice ticks. NaN: no bar, "n/a".
/// `lo`/`hi` (empty, or shaped as `values`; NaN for none) draw each bar's
/// interval; `reference` (NaN: none) a dashed line named `referenceLabel`,
/// e.g. chance.
struct BarChart {
  std::string title, xLabel, yLabel;
  std::vector<std::string> categories, series;
  std::vector<std::vector<double>> values, lo, hi; // [series][category]
  double reference = 0.0 / 0.0;
  std::string referenceLabel;
};
std::string barChart(const BarChart &chart);

/// Box plots: per category a box per series over its samples (quartiles,
/// median, whiskers from least to greatest, every sample drawn as a dot:
/// a box of two runs shows both), as the paper's Attrib box plots.
struct BoxChart {
  std::string title, xLabel, yLabel;
  std::vector<std::string> categories, series;
  std::vector<std::vector<std::vector<double>>> samples; // [series][category] -> values
};
std::string boxChart(const BoxChart &chart);

/// One line per series over evenly spaced x positions (e.g. widths 16, 32,
/// 64), values in [0, 1] (NaN: a gap); each point's note (e.g. the
/// learning rate chosen) is marked by its shape, listed in the legend and
/// shown on hover; `reference` (NaN: none) a dashed line named
/// `referenceLabel`, e.g. chance.
struct LineChart {
  std::string title, xLabel, yLabel;
  std::vector<std::string> xs, series;
  std::vector<std::vector<double>> values;     // [series][x]
  std::vector<std::vector<std::string>> notes; // [series][x], or empty
  double reference = 0.0 / 0.0;
  std::string referenceLabel;
};
std::string lineChart(const LineChart &chart);

struct Point {
  std::string label;
  double x, y;
  /// The point's intervals (e.g. Attrib's 95 % bootstrap), NaN for none.
  double xLo = 0.0 / 0.0, xHi = 0.0 / 0.0, yLo = 0.0 / 0.0, yHi = 0.0 / 0.0;
};

/// Labelled points in [0, 1]² with axis titles (e.g. Attrib@Value vs @Query),
/// each label placed beside its point where it overlaps no other label or
/// point, and the picture only as wide as the labels need.
std::string scatterPlot(const std::string &title, const std::string &xLabel,
                        const std::string &yLabel, const std::vector<Point> &points);

/// A grid of shaded cells, e.g. Attrib per (layer, position): rows and
/// columns named `rowAxis`=value and `colAxis`=value, each cell shaded from
/// white (`floor`, default 0) to blue (1, values clamped) with its number written in it
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
  /// The value shaded white (the no-effect level, e.g. IIA's corrupted-run
  /// accuracy): cells shade from it to 1, and so does the colour bar.
  double floor = 0;
};
std::string heatmapChart(const Heatmap &h);

/// Panels of curves over a numeric x (training steps), side by side: each
/// series a polyline through its finite points, nice ticks and a grid on both
/// axes; y over [0, 1] or fitted to the data; a legend when a panel has
/// several series.
struct Curve {
  std::string name, colour;
  std::vector<double> x, y;
  bool markers = false; // a dot at each point (e.g. evaluations), besides the line
};
struct CurvePanel {
  std::string label, xLabel;
  std::vector<Curve> curves;
  bool unitRange; // y from 0 to 1, else fitted
};
std::string curvesChart(const std::string &title, const std::vector<CurvePanel> &panels);

} // namespace mixc::support

#endif
