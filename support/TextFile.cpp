//===- TextFile.cpp - read a whole file, saying why not --------------------===//
#include "support/TextFile.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mixc::support {
namespace fs = std::filesystem;

bool readWholeFile(const std::string &path, std::string &contents, std::string &error, size_t maxBytes) {
  const std::string quoted = "\"" + path + "\"";
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) { // e.g. a symlink loop: say so, not "does not exist"
    error = "cannot open " + quoted + ": " + ec.message();
    return false;
  }
  if (!fs::exists(st)) {
    error = quoted + " does not exist";
    return false;
  }
  // An ifstream opens a directory without complaint and reads nothing.
  if (fs::is_directory(st)) {
    error = quoted + " is a directory, not a file";
    return false;
  }
  // A FIFO (or a device, a socket) would block the read until someone writes.
  if (!fs::is_regular_file(st)) {
    error = quoted + " is not a regular file (a FIFO, socket or device)";
    return false;
  }
  if (fs::is_regular_file(st) && fs::file_size(path, ec) > maxBytes && !ec) {
    error = quoted + " is larger than " + std::to_string(maxBytes >> 20) + " MiB";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open " + quoted + ": " + std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    error = "cannot read " + quoted;
    return false;
  }
  contents = ss.str();
  if (contents.size() > maxBytes) {
    error = quoted + " is larger than " + std::to_string(maxBytes >> 20) + " MiB";
    return false;
  }
  return true;
}

bool readTextFile(const std::string &path, std::string &contents, std::string &error, size_t maxBytes) {
  if (!readWholeFile(path, contents, error, maxBytes))
    return false;
  // Editors on Windows start files with a UTF-8 byte-order mark: not text.
  if (contents.compare(0, 3, "\xEF\xBB\xBF") == 0)
    contents.erase(0, 3);
  return true;
}

} // namespace mixc::support
