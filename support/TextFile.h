//===- TextFile.h - read a whole file, saying why not -----------*- C++ -*-===//
#ifndef MIXC_SUPPORT_TEXTFILE_H
#define MIXC_SUPPORT_TEXTFILE_H

#include <string>

namespace mixc::support {

/// Reads `path` into `contents`, byte for byte. On failure `error` says
/// which: the file is missing, is a directory or not a regular file (a FIFO
/// would block), cannot be read, or is larger than `maxBytes` (the message
/// starts with the quoted path).
bool readWholeFile(const std::string &path, std::string &contents, std::string &error,
                   size_t maxBytes = size_t(1) << 30);

/// readWholeFile for text (sources, scripts, configs): a UTF-8 byte-order
/// mark at the start is dropped.
bool readTextFile(const std::string &path, std::string &contents, std::string &error,
                  size_t maxBytes = size_t(1) << 30);

} // namespace mixc::support

#endif
