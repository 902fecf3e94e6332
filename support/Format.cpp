//===- Format.cpp - printf-style formatting into a std::string ------------===//
#include "support/Format.h"

#include <cstdarg>
#include <cstdio>

namespace mixc::support {

std::string format(const char *fmt, ...) {
  va_list args, copy;
  va_start(args, fmt);
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0)
    std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  va_end(args);
  return out;
}

} // namespace mixc::support
