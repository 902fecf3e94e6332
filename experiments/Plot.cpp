//===- Plot.cpp - SVG bar and scatter plots for reports ---------------------===//
#include "experiments/Plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace mixc::experiments {
namespace {
const char *kColours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1"};

std::string escape(const std::string &s) {
  std::string out;
  for (char c : s)
    out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return out;
}

std::string num(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", std::round(x * 100) / 100 + 0.0);
  return b;
}

/// The frame: title, y grid 0..1 in steps of 0.25.
void frame(std::ostringstream &s, int width, int height, int x0, int y0, int plotH,
           const std::string &title) {
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height
    << "' font-family='sans-serif' font-size='11'>\n<rect width='100%' height='100%' fill='white'/>\n"
    << "<text x='10' y='18' font-size='13'>" << escape(title) << "</text>\n";
  for (int k = 0; k <= 4; ++k) {
    double y = y0 + plotH - plotH * k / 4.0;
    s << "<line x1='" << x0 << "' x2='" << width - 10 << "' y1='" << y << "' y2='" << y
      << "' stroke='#ddd'/>\n<text x='" << x0 - 5 << "' y='" << y + 4 << "' text-anchor='end'>"
      << num(k / 4.0) << "</text>\n";
  }
}
} // namespace

std::string barChart(const std::string &title, const std::vector<std::string> &categories,
                     const std::vector<std::string> &series,
                     const std::vector<std::vector<double>> &values) {
  const int barW = 14, gap = 18, x0 = 45, y0 = 40, plotH = 180;
  const int groupW = static_cast<int>(series.size()) * barW + gap;
  const int width = std::max(360, x0 + groupW * static_cast<int>(categories.size()) + 20);
  const int height = y0 + plotH + 110 + 16 * static_cast<int>((series.size() + 2) / 3);
  std::ostringstream s;
  frame(s, width, height, x0, y0, plotH, title);
  for (size_t c = 0; c < categories.size(); ++c) {
    int gx = x0 + 8 + static_cast<int>(c) * groupW;
    for (size_t k = 0; k < series.size(); ++k) {
      double v = values[k][c];
      int x = gx + static_cast<int>(k) * barW;
      if (std::isnan(v)) {
        s << "<text x='" << x + barW / 2 << "' y='" << y0 + plotH - 3
          << "' font-size='8' text-anchor='middle'>n/a</text>\n";
        continue;
      }
      double h = plotH * std::clamp(v, 0.0, 1.0);
      s << "<rect x='" << x << "' y='" << y0 + plotH - h << "' width='" << barW - 2 << "' height='"
        << h << "' fill='" << kColours[k % 7] << "'><title>" << escape(categories[c]) << ", "
        << escape(series[k]) << ": " << num(v) << "</title></rect>\n";
    }
    int cx = gx + static_cast<int>(series.size()) * barW / 2;
    s << "<text transform='translate(" << cx << "," << y0 + plotH + 12
      << ") rotate(35)' font-size='10'>" << escape(categories[c]) << "</text>\n";
  }
  for (size_t k = 0; k < series.size(); ++k) {
    int lx = 10 + static_cast<int>(k % 3) * 150, ly = y0 + plotH + 95 + 16 * static_cast<int>(k / 3);
    s << "<rect x='" << lx << "' y='" << ly - 9 << "' width='10' height='10' fill='"
      << kColours[k % 7] << "'/><text x='" << lx + 14 << "' y='" << ly << "'>" << escape(series[k])
      << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

std::string scatterPlot(const std::string &title, const std::string &xLabel,
                        const std::string &yLabel, const std::vector<Point> &points) {
  const int x0 = 45, y0 = 40, plot = 260, width = x0 + plot + 140, height = y0 + plot + 45;
  std::ostringstream s;
  frame(s, width, height, x0, y0, plot, title);
  for (int k = 0; k <= 4; ++k)
    s << "<text x='" << x0 + plot * k / 4 << "' y='" << y0 + plot + 14 << "' text-anchor='middle'>"
      << num(k / 4.0) << "</text>\n";
  s << "<line x1='" << x0 << "' y1='" << y0 << "' x2='" << x0 << "' y2='" << y0 + plot
    << "' stroke='#999'/>\n<text x='" << x0 + plot / 2 << "' y='" << height - 8
    << "' text-anchor='middle'>" << escape(xLabel) << "</text>\n<text transform='translate(12,"
    << y0 + plot / 2 << ") rotate(-90)' text-anchor='middle'>" << escape(yLabel) << "</text>\n";
  for (size_t i = 0; i < points.size(); ++i) {
    const Point &p = points[i];
    double x = x0 + plot * std::clamp(p.x, 0.0, 1.0), y = y0 + plot - plot * std::clamp(p.y, 0.0, 1.0);
    s << "<circle cx='" << x << "' cy='" << y << "' r='5' fill='" << kColours[i % 7]
      << "' fill-opacity='0.8'><title>" << escape(p.label) << ": (" << num(p.x) << ", " << num(p.y)
      << ")</title></circle>\n<text x='" << x + 7 << "' y='" << y - 5 + 11 * static_cast<int>(i % 2)
      << "' font-size='9'>" << escape(p.label) << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

} // namespace mixc::experiments
