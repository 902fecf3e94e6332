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

namespace {
/// The value axis of a bar or box chart: from min(0, data) to max(1, data)
/// at nice ticks, drawn over `plotH` pixels from `y0` down.
struct ValueAxis {
  std::vector<double> ticks;
  double lo = 0, hi = 1;
  int y0 = 0, plotH = 0;
  double y(double v) const { return y0 + plotH * (1 - (std::clamp(v, lo, hi) - lo) / (hi - lo)); }
};

ValueAxis valueAxis(const std::vector<double> &data, int y0, int plotH) {
  double lo = 0, hi = 1;
  for (double v : data)
    if (std::isfinite(v))
      lo = std::min(lo, v), hi = std::max(hi, v);
  // The axis ends just past the data (an Attrib of -0.03 does not stretch
  // it to -0.25); the ticks are the nice values inside it.
  const double pad = 0.03 * (hi - lo);
  ValueAxis a;
  a.lo = lo < 0 ? lo - pad : 0, a.hi = hi > 1 ? hi + pad : 1, a.y0 = y0, a.plotH = plotH;
  for (double t : niceTicks(lo, hi, 5))
    if (t >= a.lo - 1e-9 && t <= a.hi + 1e-9)
      a.ticks.push_back(t);
  return a;
}

/// Legend entries (a swatch and a name each) flowed left to right from
/// x = 10, wrapping before `width`; the lines they take.
int legendLines(const std::vector<std::string> &names, int width) {
  int lines = names.empty() ? 0 : 1, x = 10;
  for (const std::string &n : names) {
    const int w = 16 + textWidth(n, 11) + 18;
    if (x + w > width && x > 10)
      ++lines, x = 10;
    x += w;
  }
  return lines;
}

void flowLegend(std::ostringstream &s, const std::vector<std::string> &names, int y, int width) {
  int x = 10;
  for (size_t k = 0; k < names.size(); ++k) {
    const int w = 16 + textWidth(names[k], 11) + 18;
    if (x + w > width && x > 10)
      y += 16, x = 10;
    s << "<rect x='" << x << "' y='" << y - 9 << "' width='10' height='10' fill='" << kColours[k % 7]
      << "'/><text x='" << x + 16 << "' y='" << y << "'>" << escape(names[k]) << "</text>\n";
    x += w;
  }
}

/// Categories side by side, each a group of `slots` slots `slotW` wide: the
/// x positions, tilted category labels under the axis and the x title under
/// them; the picture's size fitted to the labels, legend and title.
struct Groups {
  int x0 = 55, y0 = 40, plotH = 180, slotW = 14, gap = 18, slots = 1;
  int width = 0, height = 0, labelsBottom = 0;
  int groupW() const { return slots * slotW + gap; }
  int left(size_t c) const { return x0 + 8 + static_cast<int>(c) * groupW(); }
  int centre(size_t c) const { return left(c) + slots * slotW / 2; }
};

Groups groupLayout(const std::string &title, const std::vector<std::string> &categories,
                   const std::vector<std::string> &series, const std::string &xLabel, int slots) {
  Groups g;
  g.slots = slots;
  g.slotW = slots == 1 ? 24 : 14; // one bar a group: a wider one
  // The right-most point of the groups and of their labels, tilted by 35°
  // (cos 0.82), for the current gap.
  auto rightEdge = [&] {
    int right = g.x0 + g.groupW() * static_cast<int>(categories.size()) + 10;
    for (size_t c = 0; c < categories.size(); ++c)
      right = std::max(right, g.centre(c) + static_cast<int>(0.82 * textWidth(categories[c], 10)) + 10);
    return right;
  };
  int drop = 0;
  for (const std::string &c : categories)
    drop = std::max(drop, static_cast<int>(0.57 * textWidth(c, 10)) + 20);
  const int right = rightEdge();
  g.width = fitTitle(std::max(right, 20 + textWidth(xLabel, 11)), title);
  // A picture widened by its title spreads the groups over the room left.
  const int n = std::max<int>(1, static_cast<int>(categories.size()));
  g.gap += std::max(0, (g.width - right) / n);
  g.width = std::max(g.width, rightEdge());
  g.labelsBottom = g.y0 + g.plotH + drop;
  g.height = g.labelsBottom + (xLabel.empty() ? 0 : 18) + 10 + 16 * legendLines(series, g.width);
  return g;
}

/// The frame of a bar or box chart: title, y grid and ticks, y title,
/// category labels and x title. Returns the y of the legend's first line.
int groupFrame(std::ostringstream &s, const Groups &g, const ValueAxis &a, const std::string &title,
               const std::string &yLabel, const std::vector<std::string> &categories, const std::string &xLabel) {
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << g.width << "' height='" << g.height
    << "' font-family='sans-serif' font-size='11'>\n<rect width='100%' height='100%' fill='white'/>\n"
    << "<text x='10' y='18' font-size='13'>" << escape(title) << "</text>\n";
  const double spacing = a.ticks.size() > 1 ? a.ticks[1] - a.ticks[0] : 1;
  for (double t : a.ticks)
    s << "<line x1='" << g.x0 << "' x2='" << g.width - 10 << "' y1='" << a.y(t) << "' y2='" << a.y(t)
      << "' stroke='" << (t == 0 && a.lo < 0 ? "#999" : "#ddd") << "'/>\n<text x='" << g.x0 - 5 << "' y='"
      << a.y(t) + 4 << "' text-anchor='end'>" << tickLabel(t, spacing) << "</text>\n";
  if (!yLabel.empty())
    s << "<text transform='translate(12," << g.y0 + g.plotH / 2 << ") rotate(-90)' text-anchor='middle'>"
      << escape(yLabel) << "</text>\n";
  for (size_t c = 0; c < categories.size(); ++c)
    s << "<text transform='translate(" << g.centre(c) << "," << g.y0 + g.plotH + 12
      << ") rotate(35)' font-size='10'>" << escape(categories[c]) << "</text>\n";
  int y = g.labelsBottom;
  if (!xLabel.empty()) {
    y += 14;
    s << "<text x='" << (g.x0 + g.width - 10) / 2 << "' y='" << y << "' text-anchor='middle'>" << escape(xLabel)
      << "</text>\n";
  }
  return y + 20;
}

/// A vertical interval from `lo` to `hi` at x, with caps.
void whisker(std::ostringstream &s, double x, double yLo, double yHi, double cap) {
  s << "<path d='M" << x << "," << yLo << " V" << yHi << " M" << x - cap << "," << yLo << " H" << x + cap << " M"
    << x - cap << "," << yHi << " H" << x + cap << "' stroke='#333' stroke-width='1' fill='none'/>\n";
}

/// A dashed horizontal line at height y from x0 to the right edge, named at
/// its right end (e.g. chance): the bar and line charts' reference line.
void referenceLine(std::ostringstream &s, double x0, int width, double y, const std::string &label) {
  s << "<line x1='" << x0 << "' x2='" << width - 10 << "' y1='" << y << "' y2='" << y
    << "' stroke='#c00' stroke-dasharray='5,3'/>\n<text x='" << width - 12 << "' y='" << y - 3
    << "' font-size='9' fill='#c00' text-anchor='end'>" << escape(label) << "</text>\n";
}

double at(const std::vector<std::vector<double>> &m, size_t k, size_t c) {
  return k < m.size() && c < m[k].size() ? m[k][c] : NAN;
}

bool allMissing(const std::vector<std::vector<double>> &m, size_t c) {
  for (size_t k = 0; k < m.size(); ++k)
    if (!std::isnan(at(m, k, c)))
      return false;
  return true;
}

/// A slot without a value: one "n/a" over a category that has none, else a
/// dash in the slot (three "n/a" side by side would overlap).
void missing(std::ostringstream &s, const Groups &g, const ValueAxis &a, size_t c, size_t k, bool wholeCategory) {
  if (wholeCategory && k > 0)
    return;
  const double x = wholeCategory ? g.centre(c) : g.left(c) + static_cast<double>(k) * g.slotW + g.slotW / 2.0 - 1;
  s << "<text x='" << x << "' y='" << a.y(0) - 3 << "' font-size='9' text-anchor='middle'>"
    << (wholeCategory ? "n/a" : "–") << "</text>\n";
}
} // namespace

std::string barChart(const BarChart &b) {
  std::vector<double> data;
  for (const auto *m : {&b.values, &b.lo, &b.hi})
    for (const auto &row : *m)
      data.insert(data.end(), row.begin(), row.end());
  data.push_back(b.reference);
  const Groups g = groupLayout(b.title, b.categories, b.series, b.xLabel, static_cast<int>(b.series.size()));
  const ValueAxis a = valueAxis(data, g.y0, g.plotH);
  std::ostringstream s;
  const int legendY = groupFrame(s, g, a, b.title, b.yLabel, b.categories, b.xLabel);
  for (size_t c = 0; c < b.categories.size(); ++c)
    for (size_t k = 0; k < b.series.size(); ++k) {
      const double v = at(b.values, k, c), x = g.left(c) + static_cast<int>(k) * g.slotW;
      if (std::isnan(v)) {
        missing(s, g, a, c, k, allMissing(b.values, c));
        continue;
      }
      const double lo = at(b.lo, k, c), hi = at(b.hi, k, c);
      s << "<rect x='" << x << "' y='" << std::min(a.y(v), a.y(0)) << "' width='" << g.slotW - 2 << "' height='"
        << std::abs(a.y(v) - a.y(0)) << "' fill='" << kColours[k % 7] << "'><title>" << escape(b.categories[c])
        << ", " << escape(b.series[k]) << ": " << num(v)
        << (std::isfinite(lo) && std::isfinite(hi) ? " [" + num(lo) + ", " + num(hi) + "]" : "")
        << "</title></rect>\n";
      if (std::isfinite(lo) && std::isfinite(hi))
        whisker(s, x + (g.slotW - 2) / 2.0, a.y(lo), a.y(hi), 3);
    }
  if (std::isfinite(b.reference))
    referenceLine(s, g.x0, g.width, a.y(b.reference), b.referenceLabel);
  flowLegend(s, b.series, legendY, g.width);
  s << "</svg>\n";
  return s.str();
}

namespace {
/// The q-quantile of sorted values, by linear interpolation.
double quantile(const std::vector<double> &sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t i = static_cast<size_t>(pos);
  return i + 1 < sorted.size() ? sorted[i] + (pos - static_cast<double>(i)) * (sorted[i + 1] - sorted[i]) : sorted[i];
}
} // namespace

std::string boxChart(const BoxChart &b) {
  std::vector<double> data;
  for (const auto &series : b.samples)
    for (const auto &values : series)
      data.insert(data.end(), values.begin(), values.end());
  Groups g = groupLayout(b.title, b.categories, b.series, b.xLabel, static_cast<int>(b.series.size()));
  const ValueAxis a = valueAxis(data, g.y0, g.plotH);
  std::ostringstream s;
  const int legendY = groupFrame(s, g, a, b.title, b.yLabel, b.categories, b.xLabel);
  for (size_t c = 0; c < b.categories.size(); ++c)
    for (size_t k = 0; k < b.series.size(); ++k) {
      std::vector<double> v;
      if (k < b.samples.size() && c < b.samples[k].size())
        for (double x : b.samples[k][c])
          if (std::isfinite(x))
            v.push_back(x);
      const double x = g.left(c) + static_cast<int>(k) * g.slotW, mid = x + (g.slotW - 2) / 2.0;
      if (v.empty()) {
        bool none = true;
        for (size_t j = 0; j < b.series.size(); ++j)
          none &= j >= b.samples.size() || c >= b.samples[j].size() || b.samples[j][c].empty();
        missing(s, g, a, c, k, none);
        continue;
      }
      std::sort(v.begin(), v.end());
      const double q1 = quantile(v, 0.25), med = quantile(v, 0.5), q3 = quantile(v, 0.75);
      whisker(s, mid, a.y(v.front()), a.y(v.back()), 3);
      s << "<rect x='" << x << "' y='" << a.y(q3) << "' width='" << g.slotW - 2 << "' height='"
        << std::max(1.0, a.y(q1) - a.y(q3)) << "' fill='" << kColours[k % 7] << "' fill-opacity='0.6' stroke='"
        << kColours[k % 7] << "'><title>" << escape(b.categories[c]) << ", " << escape(b.series[k]) << ": median "
        << num(med) << " of " << v.size() << " (" << num(v.front()) << " to " << num(v.back())
        << ")</title></rect>\n<line x1='" << x << "' x2='" << x + g.slotW - 2 << "' y1='" << a.y(med) << "' y2='"
        << a.y(med) << "' stroke='#222' stroke-width='1.5'/>\n";
      for (double y : v)
        s << "<circle cx='" << mid << "' cy='" << a.y(y) << "' r='2' fill='#222'/>\n";
    }
  flowLegend(s, b.series, legendY, g.width);
  s << "</svg>\n";
  return s.str();
}

std::string lineChart(const LineChart &chart) {
  const std::string &title = chart.title, &xLabel = chart.xLabel, &yLabel = chart.yLabel;
  const std::vector<std::string> &xs = chart.xs, &series = chart.series;
  const std::vector<std::vector<double>> &values = chart.values;
  std::vector<std::vector<std::string>> notes = chart.notes;
  notes.resize(series.size());
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
  if (std::isfinite(chart.reference))
    referenceLine(s, x0, width, Y(chart.reference), chart.referenceLabel);
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

namespace {
struct Box {
  double x0, y0, x1, y1;
  bool overlaps(const Box &o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

/// Where a label goes beside the point (x, y), 9 px text `w` wide: the first
/// of right, left, above and below, then right and left a line and more
/// higher or lower, that overlaps no box in `taken` and keeps within [minX,
/// maxX] and [minY, maxY]; right when none does. Returns its box (text from
/// x0, baseline y1 - 2).
Box placeLabel(double x, double y, double w, const std::vector<Box> &taken, double minX, double maxX, double minY,
               double maxY) {
  std::vector<Box> candidates = {{x + 7, y - 6, x + 7 + w, y + 5},       {x - 7 - w, y - 6, x - 7, y + 5},
                                 {x - w / 2, y - 18, x + w / 2, y - 7}, {x - w / 2, y + 7, x + w / 2, y + 18}};
  for (double dy : {11.0, -11.0, 22.0, -22.0, 33.0, -33.0, 44.0, -44.0})
    candidates.push_back({x + 7, y - 6 + dy, x + 7 + w, y + 5 + dy}),
        candidates.push_back({x - 7 - w, y - 6 + dy, x - 7, y + 5 + dy});
  for (const Box &b : candidates) {
    if (b.x0 < minX || b.x1 > maxX || b.y0 < minY || b.y1 > maxY)
      continue;
    if (std::none_of(taken.begin(), taken.end(), [&](const Box &t) { return t.overlaps(b); }))
      return b;
  }
  return candidates[0];
}

/// Points within 0.02 of each other on both axes once clamped to [0, 1] (as
/// drawn: 1.06 and 1.00 meet at the top): one marker, labels joined ("a; b").
std::vector<std::vector<size_t>> coincident(const std::vector<Point> &points) {
  std::vector<std::vector<size_t>> groups;
  auto c = [](double v) { return std::clamp(v, 0.0, 1.0); };
  for (size_t i = 0; i < points.size(); ++i) {
    auto near = [&](const std::vector<size_t> &g) {
      const Point &p = points[g[0]], &q = points[i];
      return std::abs(c(p.x) - c(q.x)) < 0.02 && std::abs(c(p.y) - c(q.y)) < 0.02;
    };
    auto it = std::find_if(groups.begin(), groups.end(), near);
    if (it == groups.end())
      groups.push_back({i});
    else
      it->push_back(i);
  }
  return groups;
}
} // namespace

std::string scatterPlot(const std::string &title, const std::string &xLabel,
                        const std::string &yLabel, const std::vector<Point> &points) {
  // x0 leaves the rotated y title clear of the tick values; labels may reach
  // up to 120 px right of the plot, and the picture ends after the last.
  const int x0 = 62, y0 = 40, plot = 260, height = y0 + plot + 45;
  auto X = [&](double v) { return x0 + plot * std::clamp(v, 0.0, 1.0); };
  auto Y = [&](double v) { return y0 + plot - plot * std::clamp(v, 0.0, 1.0); };
  const std::vector<std::vector<size_t>> groups = coincident(points);
  std::vector<Box> taken;
  for (const auto &g : groups)
    taken.push_back({X(points[g[0]].x) - 5, Y(points[g[0]].y) - 5, X(points[g[0]].x) + 5, Y(points[g[0]].y) + 5});
  std::vector<Box> labels;
  std::vector<std::string> names;
  double right = x0 + plot + 12;
  for (const auto &g : groups) {
    std::string name;
    for (size_t i : g)
      name += (name.empty() ? "" : "; ") + points[i].label;
    const Box b = placeLabel(X(points[g[0]].x), Y(points[g[0]].y), textWidth(name, 9),
                             taken, x0 + 2, x0 + plot + 120, y0 - 10, y0 + plot + 10);
    taken.push_back(b), labels.push_back(b), names.push_back(name);
    right = std::max(right, b.x1 + 8);
  }
  const int width = fitTitle(static_cast<int>(std::ceil(right)), title);
  std::ostringstream s;
  frame(s, width, height, x0, y0, plot, title, "", x0 + plot);
  for (int k = 0; k <= 4; ++k)
    s << "<text x='" << x0 + plot * k / 4 << "' y='" << y0 + plot + 14 << "' text-anchor='middle'>"
      << num(k / 4.0) << "</text>\n";
  s << "<line x1='" << x0 << "' y1='" << y0 << "' x2='" << x0 << "' y2='" << y0 + plot
    << "' stroke='#999'/>\n<text x='" << x0 + plot / 2 << "' y='" << height - 8
    << "' text-anchor='middle'>" << escape(xLabel) << "</text>\n<text transform='translate(12,"
    << y0 + plot / 2 << ") rotate(-90)' text-anchor='middle'>" << escape(yLabel) << "</text>\n";
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Point &p = points[groups[gi][0]];
    const double x = X(p.x), y = Y(p.y);
    if (std::isfinite(p.xLo) && std::isfinite(p.xHi))
      s << "<path d='M" << X(p.xLo) << "," << y << " H" << X(p.xHi) << "' stroke='#999'/>\n";
    if (std::isfinite(p.yLo) && std::isfinite(p.yHi))
      s << "<path d='M" << x << "," << Y(p.yLo) << " V" << Y(p.yHi) << "' stroke='#999'/>\n";
    s << "<circle cx='" << x << "' cy='" << y << "' r='5' fill='" << kColours[groups[gi][0] % 7]
      << "' fill-opacity='0.85'><title>" << escape(names[gi]) << ": (" << num(p.x) << ", " << num(p.y)
      << ")</title></circle>\n<text x='" << labels[gi].x0 << "' y='" << labels[gi].y1 - 2 << "' font-size='9'>"
      << escape(names[gi]) << "</text>\n";
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
    << "' height='" << y0 + std::max<int>(ch * static_cast<int>(h.rows.size()), 80) + 16 << "' font-family='sans-serif'>\n"
    << "<rect width='100%' height='100%' fill='white'/>\n"
    << "<text x='10' y='22' font-size='14'>" << escape(h.title) << "</text>\n";
  for (size_t j = 0; j < h.cols.size(); ++j)
    s << "<text x='" << x0 + cw * j + cw / 2 << "' y='" << y0 - 8 << "' font-size='12' text-anchor='middle'>"
      << escape(h.colAxis + "=" + h.cols[j]) << "</text>\n";
  for (size_t i = 0; i < h.rows.size(); ++i)
    s << "<text x='" << x0 - 8 << "' y='" << y0 + ch * i + ch / 2 + 4 << "' font-size='12' text-anchor='end'>"
      << escape(h.rowAxis + "=" + h.rows[i]) << "</text>\n";
  for (const Heatmap::Cell &c : h.cells) {
    const double span = h.floor < 1 ? 1 - h.floor : 1;
    double a = c.shown ? std::clamp((c.value - h.floor) / span, 0.0, 1.0) : 0;
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
  for (int k = 0; k <= 4; ++k) // from the floor (white) to 1
    s << "<text x='" << sx + 18 << "' y='" << y0 + sh - sh * k / 4 + 4 << "' font-size='10'>"
      << num(h.floor + (1 - h.floor) * k / 4.0) << "</text>\n";
  s << "<text x='" << sx << "' y='" << y0 - 8 << "' font-size='11'>" << escape(h.scale) << "</text>\n";
  s << "</svg>\n";
  return s.str();
}

namespace {
const double kPanelW = 280, kPanelH = 210, kPanelTop = 50;

/// The lines a panel's legend takes, entries flowed by their widths (as
/// curvePanel draws them).
int curveLegendLines(const CurvePanel &p, double w) {
  if (p.curves.size() < 2)
    return 0;
  int lines = 1;
  double x = 0;
  for (const Curve &c : p.curves) {
    const double entry = 24 + textWidth(c.name, 10) + 12;
    if (x + entry > w && x > 0)
      ++lines, x = 0;
    x += entry;
  }
  return lines;
}

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
    if (c.markers)
      for (size_t i = 0; i < c.x.size() && i < c.y.size(); ++i)
        if (std::isfinite(c.y[i]))
          s << "<circle cx='" << X(c.x[i]) << "' cy='" << Y(c.y[i]) << "' r='2.2' fill='" << c.colour << "'/>\n";
  }
  // The legend under the x title, entries flowed by their widths.
  double lx = x0, ly = y0 + h + 46;
  for (size_t k = 0; p.curves.size() > 1 && k < p.curves.size(); ++k) {
    const Curve &c = p.curves[k];
    const double entry = 24 + textWidth(c.name, 10) + 12;
    if (lx + entry > x0 + w && lx > x0)
      lx = x0, ly += 14;
    s << "<line x1='" << lx << "' x2='" << lx + 15 << "' y1='" << ly - 4 << "' y2='" << ly - 4 << "' stroke='"
      << c.colour << "' stroke-width='2'/>";
    if (c.markers)
      s << "<circle cx='" << lx + 7.5 << "' cy='" << ly - 4 << "' r='2.2' fill='" << c.colour << "'/>";
    s << "<text x='" << lx + 19 << "' y='" << ly << "' font-size='10'>" << escape(c.name) << "</text>\n";
    lx += entry;
  }
  return s.str();
}
} // namespace

std::string curvesChart(const std::string &title, const std::vector<CurvePanel> &panels) {
  const int width = 20 + 360 * static_cast<int>(panels.size());
  int lines = 0; // the longest legend under a panel
  for (const CurvePanel &p : panels)
    lines = std::max(lines, curveLegendLines(p, kPanelW));
  const int height = static_cast<int>(kPanelTop + kPanelH) + (lines ? 46 + 14 * (lines - 1) + 8 : 36);
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height
    << "' font-family='sans-serif'>\n";
  s << "<rect width='" << width << "' height='" << height << "' fill='white'/>\n";
  s << "<text x='" << width / 2 << "' y='20' font-size='14' text-anchor='middle'>" << escape(title) << "</text>\n";
  for (size_t i = 0; i < panels.size(); ++i)
    s << curvePanel(panels[i], 60 + 370.0 * static_cast<double>(i), kPanelTop, kPanelW, kPanelH);
  s << "</svg>\n";
  return s.str();
}

} // namespace mixc::support
