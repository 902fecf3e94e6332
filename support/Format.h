//===- Format.h - printf-style formatting into a std::string ----*- C++ -*-===//
//
// Library code writes to the streams it is given (support::Console), not to
// stdout; this keeps the printf column layouts of its tables.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_SUPPORT_FORMAT_H
#define MIXC_SUPPORT_FORMAT_H

#include <string>

namespace mixc::support {

/// `fmt` with its arguments, as printf would write it (any length).
std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/// `text` with every line longer than `width` bytes cut there and marked
/// ("... (N more bytes)"): an error that quotes a generated 800 KB source
/// line, or a name as long, stays readable.
std::string clipLongLines(const std::string &text, size_t width = 400);

} // namespace mixc::support

#endif
