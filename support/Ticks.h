//===- Ticks.h - axis ticks for the SVG plots -------------------*- C++ -*-===//
//
// "Nice" tick values (1, 2 or 5 times a power of ten) covering a range, and
// their labels: the plots of runs (curves.svg) and of reports share them.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_SUPPORT_TICKS_H
#define MIXC_SUPPORT_TICKS_H

#include <string>
#include <vector>

namespace mixc::support {

/// About `target` ticks at a nice spacing, from the largest tick ≤ lo to the
/// smallest ≥ hi (so the axis can be drawn from the first to the last).
std::vector<double> niceTicks(double lo, double hi, int target = 5);

/// A tick's label with as many decimals as the spacing needs ("0.25",
/// "20000" as "20k").
std::string tickLabel(double value, double spacing);

} // namespace mixc::support

#endif
