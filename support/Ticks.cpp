//===- Ticks.cpp - axis ticks for the SVG plots ----------------------------===//
#include "support/Ticks.h"

#include <cmath>
#include <cstdio>

namespace mixc::support {

std::vector<double> niceTicks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi))
    return {0, 1};
  if (hi < lo)
    std::swap(lo, hi);
  if (hi - lo < 1e-12)
    hi = lo + 1;
  const double raw = (hi - lo) / std::max(target, 1);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double spacing = power;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * power >= raw) {
      spacing = m * power;
      break;
    }
  std::vector<double> ticks;
  const double first = std::floor(lo / spacing + 1e-9) * spacing;
  for (int k = 0; k < 100; ++k) { // by index: no drift from summing the spacing
    const double t = first + k * spacing;
    ticks.push_back(std::abs(t) < spacing * 1e-9 ? 0.0 : t);
    if (t >= hi - spacing * 1e-9)
      break;
  }
  return ticks;
}

std::string tickLabel(double value, double spacing) {
  char buf[32];
  if (std::abs(value) >= 10000 && std::fmod(value, 1000) == 0) {
    std::snprintf(buf, sizeof buf, "%gk", value / 1000);
    return buf;
  }
  int decimals = 0;
  while (decimals < 6 && std::abs(spacing * std::pow(10.0, decimals) - std::round(spacing * std::pow(10.0, decimals))) > 1e-6)
    ++decimals;
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value + 0.0);
  return buf;
}

} // namespace mixc::support
