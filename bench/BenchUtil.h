// The small helpers every bench program uses: comma-separated option lists
// and a wall clock in seconds.
#ifndef MIXC_BENCH_BENCHUTIL_H
#define MIXC_BENCH_BENCHUTIL_H

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

namespace mixc::bench {

/// "a,b,c" -> {"a", "b", "c"}.
inline std::vector<std::string> splitList(const std::string &s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    out.push_back(item);
  return out;
}

/// Seconds on the steady clock (differences are durations).
inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace mixc::bench

#endif
