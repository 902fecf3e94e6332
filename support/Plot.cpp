//===- Plot.cpp - every SVG chart mixc draws ---------------------------------===//
#include "support/Plot.h"
#include "support/Ticks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace mixc::support {
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

/// A text's width in pixels at `fontSize`, generously (0.6 em a character:
/// sans-serif letters average about 0.5 em); UTF-8 continuation bytes do
/// not count.
int textWidth(const std::string &text, double fontSize) {
  int chars = 0;
  for (unsigned char c : text)
    chars += (c & 0xC0) != 0x80;
  return static_cast<int>(std::ceil(0.6 * fontSize * chars));
}

/// A picture `width` wide, widened when the title (13 px, from x = 10) needs it.
int fitTitle(int width, const std::string &title) { return std::max(width, 20 + textWidth(title, 13)); }

/// The frame: title, y grid 0..1 in steps of 0.25 (to `xEnd`, by default
/// the right margin), and the y axis title.
void frame(std::ostringstream &s, int width, int height, int x0, int y0, int plotH,
           const std::string &title, const std::string &yLabel = "", int xEnd = -1) {
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height
    << "' font-family='sans-serif' font-size='11'>\n<rect width='100%' height='100%' fill='white'/>\n"
    << "<text x='10' y='18' font-size='13'>" << escape(title) << "</text>\n";
  for (int k = 0; k <= 4; ++k) {
    double y = y0 + plotH - plotH * k / 4.0;
    s << "<line x1='" << x0 << "' x2='" << (xEnd < 0 ? width - 10 : xEnd) << "' y1='" << y << "' y2='" << y
      << "' stroke='#ddd'/>\n<text x='" << x0 - 5 << "' y='" << y + 4 << "' text-anchor='end'>"
      << num(k / 4.0) << "</text>\n";
  }
  if (!yLabel.empty())
    s << "<text transform='translate(12," << y0 + plotH / 2 << ") rotate(-90)' text-anchor='middle'>"
      << escape(yLabel) << "</text>\n";
}

/// Legend entries per line in a plot `width` wide (150 px an entry, at most 3).
int legendColumns(int width) { return std::clamp((width - 10) / 150, 1, 3); }
int legendRows(size_t entries, int width) {
  const int cols = legendColumns(width);
  return static_cast<int>((entries + cols - 1) / cols);
}

/// Legend rows of coloured swatches under the plot, as many to a line as fit.
void legend(std::ostringstream &s, const std::vector<std::string> &series, int y, bool lines, int width) {
  const size_t cols = static_cast<size_t>(legendColumns(width));
  for (size_t k = 0; k < series.size(); ++k) {
    int lx = 10 + static_cast<int>(k % cols) * 150, ly = y + 16 * static_cast<int>(k / cols);
    if (lines)
      s << "<line x1='" << lx << "' x2='" << lx + 12 << "' y1='" << ly - 4 << "' y2='" << ly - 4
        << "' stroke='" << kColours[k % 7] << "' stroke-width='2.5'/>";
    else
      s << "<rect x='" << lx << "' y='" << ly - 9 << "' width='10' height='10' fill='" << kColours[k % 7] << "'/>";
    s << "<text x='" << lx + 16 << "' y='" << ly << "'>" << escape(series[k]) << "</text>\n";
  }
}
} // namespace

std::string barChart(const std::string &title, const std::vector<std::string> &categories,
                     const std::vector<std::string> &series,
                     const std::vector<std::vector<double>> &values, const std::string &yLabel) {
  const int barW = 14, gap = 18, x0 = 55, y0 = 40, plotH = 180;
  const int groupW = static_cast<int>(series.size()) * barW + gap;
  const int width = fitTitle(std::max(360, x0 + groupW * static_cast<int>(categories.size()) + 70), // the last tilted label
                             title);
  const int height = y0 + plotH + 110 + 16 * legendRows(series.size(), width);
  std::ostringstream s;
  frame(s, width, height, x0, y0, plotH, title, yLabel);
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
  legend(s, series, y0 + plotH + 95, false, width);
  s << "</svg>\n";
  return s.str();
}

std::string lineChart(const std::string &title, const std::string &xLabel, const std::string &yLabel,
                      const std::vector<std::string> &xs, const std::vector<std::string> &series,
                      const std::vector<std::vector<double>> &values,
                      const std::vector<std::vector<std::string>> &notes) {
  // Each distinct note (e.g. "lr 0.003") gets a marker shape, listed in the
  // legend: visible in a printed plot, where hover titles are not.
  std::vector<std::string> kinds;
  for (const auto &row : notes)
    for (const std::string &n : row)
      if (!n.empty() && std::find(kinds.begin(), kinds.end(), n) == kinds.end())
        kinds.push_back(n);
  std::sort(kinds.begin(), kinds.end());
  const int x0 = 55, y0 = 40, plotH = 220;
  const int gaps = static_cast<int>(std::max<size_t>(xs.size(), 2) - 1);
  const int step = std::max(90, 320 / gaps), plotW = step * gaps + 40;
  const int width = fitTitle(std::max(480, x0 + plotW + 30), title);
  const int height = y0 + plotH + 55 + 16 * (legendRows(series.size(), width) + (kinds.empty() ? 0 : 1));
  std::ostringstream s;
  frame(s, width, height, x0, y0, plotH, title, yLabel);
  auto X = [&](size_t i) { return x0 + 20 + step * static_cast<int>(i); };
  auto Y = [&](double v) { return y0 + plotH - plotH * std::clamp(v, 0.0, 1.0); };
  auto marker = [&](double x, double y, const std::string &note, const char *colour) {
    size_t kind = std::find(kinds.begin(), kinds.end(), note) - kinds.begin();
    std::ostringstream m;
    if (note.empty() || kind % 4 == 0)
      m << "<circle cx='" << x << "' cy='" << y << "' r='4'";
    else if (kind % 4 == 1)
      m << "<rect x='" << x - 4 << "' y='" << y - 4 << "' width='8' height='8'";
    else if (kind % 4 == 2)
      m << "<path d='M" << x << "," << y - 5 << " L" << x + 5 << "," << y + 4 << " L" << x - 5 << "," << y + 4 << " Z'";
    else
      m << "<path d='M" << x << "," << y - 5 << " L" << x + 5 << "," << y << " L" << x << "," << y + 5 << " L" << x - 5
        << "," << y << " Z'";
    m << " fill='" << colour << "'";
    return m.str();
  };
  for (size_t i = 0; i < xs.size(); ++i)
    s << "<line x1='" << X(i) << "' x2='" << X(i) << "' y1='" << y0 + plotH << "' y2='" << y0 + plotH + 4
      << "' stroke='#999'/><text x='" << X(i) << "' y='" << y0 + plotH + 16 << "' text-anchor='middle'>"
      << escape(xs[i]) << "</text>\n";
  s << "<text x='" << X(0) + (X(xs.size() - 1) - X(0)) / 2 << "' y='" << y0 + plotH + 32
    << "' text-anchor='middle'>" << escape(xLabel) << "</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const char *colour = kColours[k % 7];
    std::string path; // a NaN breaks the line: the next point moves the pen
    bool down = false;
    for (size_t i = 0; i < xs.size(); ++i) {
      double v = values[k][i];
      if (std::isnan(v)) {
        down = false;
        continue;
      }
      path += std::string(path.empty() ? "" : " ") + (down ? "L" : "M") + std::to_string(X(i)) + "," +
              std::to_string(Y(v));
      down = true;
    }
    s << "<path d='" << path << "' fill='none' stroke='" << colour << "' stroke-width='2'/>\n";
    for (size_t i = 0; i < xs.size(); ++i) {
      double v = values[k][i];
      if (std::isnan(v))
        continue;
      const std::string &note = i < notes[k].size() ? notes[k][i] : "";
      s << marker(X(i), Y(v), note, colour) << "><title>" << escape(series[k]) << ", " << escape(xs[i]) << ": "
        << num(v) << (note.empty() ? "" : " (" + escape(note) + ")") << "</title></" 
        << (note.empty() || (std::find(kinds.begin(), kinds.end(), note) - kinds.begin()) % 4 == 0 ? "circle"
            : (std::find(kinds.begin(), kinds.end(), note) - kinds.begin()) % 4 == 1           ? "rect"
                                                                                                 : "path")
        << ">\n";
    }
  }
  const int legendY = y0 + plotH + 52;
  legend(s, series, legendY, true, width);
  for (size_t k = 0; k < kinds.size(); ++k) {
    double lx = 16 + 110.0 * k, ly = legendY + 16 * legendRows(series.size(), width);
    s << marker(lx, ly - 4, kinds[k], "#555") << "/><text x='" << lx + 10 << "' y='" << ly << "'>"
      << escape(kinds[k]) << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

std::string scatterPlot(const std::string &title, const std::string &xLabel,
                        const std::string &yLabel, const std::vector<Point> &points) {
  // x0 leaves the rotated y title clear of the tick values; the grid stops
  // at x = 1, where the x ticks end (the margin on the right is for labels).
  const int x0 = 62, y0 = 40, plot = 260, width = fitTitle(x0 + plot + 140, title), height = y0 + plot + 45;
  std::ostringstream s;
  frame(s, width, height, x0, y0, plot, title, "", x0 + plot);
  for (int k = 0; k <= 4; ++k)
    s << "<text x='" << x0 + plot * k / 4 << "' y='" << y0 + plot + 14 << "' text-anchor='middle'>"
      << num(k / 4.0) << "</text>\n";
  s << "<line x1='" << x0 << "' y1='" << y0 << "' x2='" << x0 << "' y2='" << y0 + plot
    << "' stroke='#999'/>\n<text x='" << x0 + plot / 2 << "' y='" << height - 8
    << "' text-anchor='middle'>" << escape(xLabel) << "</text>\n<text transform='translate(12,"
    << y0 + plot / 2 << ") rotate(-90)' text-anchor='middle'>" << escape(yLabel) << "</text>\n";
  // Points at the same place (within 0.02) share one marker and list their
  // labels one under another, instead of printing them over each other.
  std::vector<std::vector<size_t>> groups;
  for (size_t i = 0; i < points.size(); ++i) {
    auto near = [&](size_t j) {
      return std::abs(points[j].x - points[i].x) < 0.02 && std::abs(points[j].y - points[i].y) < 0.02;
    };
    auto it = std::find_if(groups.begin(), groups.end(), [&](const std::vector<size_t> &g) { return near(g[0]); });
    if (it == groups.end())
      groups.push_back({i});
    else
      it->push_back(i);
  }
  for (const std::vector<size_t> &g : groups) {
    const Point &p = points[g[0]];
    double x = x0 + plot * std::clamp(p.x, 0.0, 1.0), y = y0 + plot - plot * std::clamp(p.y, 0.0, 1.0);
    std::string names;
    for (size_t i : g)
      names += (names.empty() ? "" : "; ") + points[i].label;
    s << "<circle cx='" << x << "' cy='" << y << "' r='5' fill='" << kColours[g[0] % 7]
      << "' fill-opacity='0.8'><title>" << escape(names) << ": (" << num(p.x) << ", " << num(p.y)
      << ")</title></circle>\n";
    // Labels run downwards from the point, or upwards near the bottom edge.
    const double dir = y > y0 + plot - 11.0 * g.size() ? -1 : 1;
    for (size_t k = 0; k < g.size(); ++k)
      s << "<text x='" << x + 7 << "' y='" << y + 3 + dir * 11.0 * k << "' font-size='9'>"
        << escape(points[g[k]].label) << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

std::string heatmapChart(const Heatmap &h) {
  // Row labels are right-aligned at x0: room for the longest (12 px text,
  // 0.6 em a character), and the picture as wide as its title (14 px).
  size_t longest = 0;
  for (const std::string &r : h.rows)
    longest = std::max(longest, h.rowAxis.size() + 1 + r.size());
  const int cw = 125, ch = 40, y0 = 60;
  const int x0 = std::max(120, 18 + static_cast<int>(7.2 * static_cast<double>(longest)));
  const int width = std::max(x0 + cw * static_cast<int>(h.cols.size()) + 110,
                             20 + static_cast<int>(8.4 * static_cast<double>(h.title.size())));
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width
    << "' height='" << y0 + ch * h.rows.size() + 50 << "' font-family='sans-serif'>\n"
    << "<rect width='100%' height='100%' fill='white'/>\n"
    << "<text x='10' y='22' font-size='14'>" << escape(h.title) << "</text>\n";
  for (size_t j = 0; j < h.cols.size(); ++j)
    s << "<text x='" << x0 + cw * j + cw / 2 << "' y='" << y0 - 8 << "' font-size='12' text-anchor='middle'>"
      << escape(h.colAxis + "=" + h.cols[j]) << "</text>\n";
  for (size_t i = 0; i < h.rows.size(); ++i)
    s << "<text x='" << x0 - 8 << "' y='" << y0 + ch * i + ch / 2 + 4 << "' font-size='12' text-anchor='end'>"
      << escape(h.rowAxis + "=" + h.rows[i]) << "</text>\n";
  for (const Heatmap::Cell &c : h.cells) {
    double a = c.shown ? std::clamp(c.value, 0.0, 1.0) : 0;
    int shade = static_cast<int>(255 - 200 * a);
    s << "<rect x='" << x0 + cw * c.col << "' y='" << y0 + ch * c.row << "' width='" << cw << "' height='" << ch
      << "' fill='rgb(" << shade << "," << shade << ",255)' stroke='#999'>";
    if (!c.hover.empty())
      s << "<title>" << escape(c.hover) << "</title>";
    s << "</rect>\n";
    char buf[32];
    if (c.shown) // + 0.0 turns a printed "-0.00" into "0.00"
      std::snprintf(buf, sizeof buf, "%.2f", std::round(c.value * 100) / 100 + 0.0);
    else
      std::snprintf(buf, sizeof buf, "n/a");
    s << "<text x='" << x0 + cw * c.col + cw / 2 << "' y='" << y0 + ch * c.row + ch / 2 + 4
      << "' font-size='12' text-anchor='middle'>" << buf << "</text>\n";
  }
  // The colour scale: 0 (white) to 1 (blue), as the cells are shaded.
  const int sx = x0 + cw * static_cast<int>(h.cols.size()) + 30;
  const int sh = std::max(ch * static_cast<int>(h.rows.size()), 80);
  s << "<defs><linearGradient id='attrib' x1='0' y1='1' x2='0' y2='0'><stop offset='0' stop-color='rgb(255,255,255)'/>"
    << "<stop offset='1' stop-color='rgb(55,55,255)'/></linearGradient></defs>\n"
    << "<rect x='" << sx << "' y='" << y0 << "' width='14' height='" << sh << "' fill='url(#attrib)' stroke='#999'/>\n";
  for (int k = 0; k <= 4; ++k)
    s << "<text x='" << sx + 18 << "' y='" << y0 + sh - sh * k / 4 + 4 << "' font-size='10'>" << k * 0.25 << "</text>\n";
  s << "<text x='" << sx << "' y='" << y0 - 8 << "' font-size='11'>" << escape(h.scale) << "</text>\n";
  s << "</svg>\n";
  return s.str();
}

namespace {
/// One panel of curves at (x0, y0), w × h.
std::string curvePanel(const CurvePanel &p, double x0, double y0, double w, double h) {
  std::ostringstream s;
  double maxX = 1;
  for (const Curve &c : p.curves)
    for (double x : c.x)
      maxX = std::max(maxX, x);
  double lo = p.unitRange ? 0 : 1e300, hi = p.unitRange ? 1 : -1e300;
  if (!p.unitRange)
    for (const Curve &c : p.curves)
      for (double y : c.y)
        if (std::isfinite(y)) {
          lo = std::min(lo, y);
          hi = std::max(hi, y);
        }
  if (!(hi > lo)) {
    lo = p.unitRange ? 0 : (lo < 1e300 ? lo - 1 : 0);
    hi = lo + (p.unitRange ? 1 : 2);
  }
  const std::vector<double> yTicks = niceTicks(lo, hi, 5), xTicks = niceTicks(0, maxX, 5);
  lo = yTicks.front(), hi = yTicks.back();
  const double xMax = xTicks.back();
  auto X = [&](double x) { return x0 + w * x / xMax; };
  auto Y = [&](double v) { return y0 + h * (1 - (v - lo) / (hi - lo)); };
  s << "<text x='" << x0 << "' y='" << y0 - 8 << "' font-size='13'>" << escape(p.label) << "</text>\n";
  const double ySpacing = yTicks.size() > 1 ? yTicks[1] - yTicks[0] : 1;
  for (double t : yTicks)
    s << "<line x1='" << x0 << "' x2='" << x0 + w << "' y1='" << Y(t) << "' y2='" << Y(t)
      << "' stroke='#e5e5e5'/><text x='" << x0 - 4 << "' y='" << Y(t) + 3.5
      << "' font-size='10' text-anchor='end'>" << tickLabel(t, ySpacing) << "</text>\n";
  const double xSpacing = xTicks.size() > 1 ? xTicks[1] - xTicks[0] : 1;
  for (double t : xTicks)
    s << "<line x1='" << X(t) << "' x2='" << X(t) << "' y1='" << y0 << "' y2='" << y0 + h
      << "' stroke='#e5e5e5'/><text x='" << X(t) << "' y='" << y0 + h + 13
      << "' font-size='10' text-anchor='middle'>" << tickLabel(t, xSpacing) << "</text>\n";
  s << "<rect x='" << x0 << "' y='" << y0 << "' width='" << w << "' height='" << h
    << "' fill='none' stroke='#888'/>\n";
  s << "<text x='" << x0 + w / 2 << "' y='" << y0 + h + 28 << "' font-size='11' text-anchor='middle'>"
    << escape(p.xLabel) << "</text>\n";
  for (size_t k = 0; k < p.curves.size(); ++k) {
    const Curve &c = p.curves[k];
    s << "<polyline fill='none' stroke='" << c.colour << "' stroke-width='1.5' points='";
    for (size_t i = 0; i < c.x.size() && i < c.y.size(); ++i)
      if (std::isfinite(c.y[i]))
        s << X(c.x[i]) << "," << Y(c.y[i]) << " ";
    s << "'/>\n";
    if (p.curves.size() > 1) { // the legend sits on the title line, clear of the curves
      const double lx = x0 + w - 90.0 * static_cast<double>(p.curves.size() - k);
      s << "<line x1='" << lx << "' x2='" << lx + 15 << "' y1='" << y0 - 12 << "' y2='" << y0 - 12 << "' stroke='"
        << c.colour << "' stroke-width='2'/><text x='" << lx + 19 << "' y='" << y0 - 8
        << "' font-size='10'>" << escape(c.name) << "</text>\n";
    }
  }
  return s.str();
}
} // namespace

std::string curvesChart(const std::string &title, const std::vector<CurvePanel> &panels) {
  const int width = 20 + 360 * static_cast<int>(panels.size());
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='320' font-family='sans-serif'>\n";
  s << "<rect width='" << width << "' height='320' fill='white'/>\n";
  s << "<text x='" << width / 2 << "' y='20' font-size='14' text-anchor='middle'>" << escape(title) << "</text>\n";
  for (size_t i = 0; i < panels.size(); ++i)
    s << curvePanel(panels[i], 60 + 370.0 * static_cast<double>(i), 50, 280, 210);
  s << "</svg>\n";
  return s.str();
}

} // namespace mixc::support
