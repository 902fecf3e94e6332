//===- TextFile.h - read a whole file, saying why not -----------*- C++ -*-===//
#ifndef MIXC_SUPPORT_TEXTFILE_H
#define MIXC_SUPPORT_TEXTFILE_H

#include <string>

namespace mixc::support {

/// Reads `path` into `contents`. On failure `error` says which: the file is
/// missing, is a directory, cannot be read, or is larger than `maxBytes`
/// (the message starts with the quoted path). A UTF-8 byte-order mark at
/// the start is dropped.
bool readTextFile(const std::string &path, std::string &contents, std::string &error,
                  size_t maxBytes = size_t(1) << 30);

} // namespace mixc::support

#endif
