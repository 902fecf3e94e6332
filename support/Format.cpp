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

std::string clipLongLines(const std::string &text, size_t width) {
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    const size_t length = (end == std::string::npos ? text.size() : end) - pos;
    if (length > width)
      out += text.substr(pos, width) + "... (" + std::to_string(length - width) + " more bytes)";
    else
      out += text.substr(pos, length);
    if (end == std::string::npos)
      break;
    out += '\n';
    pos = end + 1;
  }
  return out;
}

} // namespace mixc::support
