//===- AtomicWrite.cpp - replace a file all at once ------------------------===//
#include "support/AtomicWrite.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

namespace mixc::support {
namespace fs = std::filesystem;

namespace {
/// Writes all of `text` to `fd`; false with errno set otherwise.
bool writeAll(int fd, const std::string &text) {
  const char *p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n == 0)
        errno = EIO;
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

/// `path` with every symlink in its last component followed, as `echo > link`
/// does: the link stays and what it names is written. "" when the chain
/// loops or is longer than the kernel's own limit (40).
std::string followLinks(const std::string &path) {
  fs::path p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode))
      return p.string();
    std::error_code ec;
    fs::path target = fs::read_symlink(p, ec);
    if (ec)
      return "";
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  return "";
}

/// A character device or a FIFO (`/dev/stdout`, `/dev/null`, a pipe) is
/// written in place: renaming a file over it would replace the device.
bool writeInPlace(const std::string &path, const std::string &shown, const std::string &text, std::string &error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot write " + shown + ": " + std::strerror(errno);
    return false;
  }
  const bool ok = writeAll(fd, text);
  const int saved = errno;
  ::close(fd);
  if (!ok)
    error = "cannot write " + shown + ": " + std::strerror(saved);
  return ok;
}

/// The pid in a temporary's name ("x.csv.tmp123", "ab12.tmp123.so"), or 0.
pid_t temporaryOwner(const std::string &name) {
  for (size_t at = name.rfind(".tmp"); at != std::string::npos && at > 0;
       at = name.rfind(".tmp", at - 1)) {
    size_t end = at + 4;
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end])))
      ++end;
    if (end > at + 4 && end - at - 4 < 10 && (end == name.size() || name[end] == '.'))
      return static_cast<pid_t>(std::stol(name.substr(at + 4, end - at - 4)));
  }
  return 0;
}

/// A temporary of this user's whose writer is gone (killed mid-write).
bool isStaleTemporary(const fs::path &file) {
  const pid_t pid = temporaryOwner(file.filename().string());
  struct stat st {};
  if (pid <= 0 || pid == ::getpid() || ::lstat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_uid != ::geteuid())
    return false;
  return ::kill(pid, 0) != 0 && errno == ESRCH; // not still running (nor someone else's to ask)
}

/// Removes the temporaries of `target` ("NAME.tmp<pid>") that a writer
/// killed mid-write left: `-o` may name any folder, where no run or sweep
/// cleans up.
void removeStaleTemporariesOf(const fs::path &target) {
  const std::string prefix = target.filename().string() + ".tmp";
  std::error_code ec;
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) == 0 && name.find('.', prefix.size()) == std::string::npos &&
        isStaleTemporary(it->path())) {
      std::error_code removeError;
      fs::remove(it->path(), removeError);
    }
  }
}

/// The regular file (or nothing yet) at `path` replaced by a temporary
/// renamed over it, the folder then synced.
bool replaceRegularFile(const std::string &path, const std::string &shown, const std::string &text,
                        std::string &error) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = "cannot write " + shown + ": " + std::strerror(errno);
    return false;
  }
  if (!writeAll(fd, text) || ::fsync(fd) != 0) {
    error = "cannot write " + shown + ": " + std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    return false;
  }
  if (::close(fd) != 0) {
    error = "cannot write " + shown + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot replace " + shown + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  // The rename itself is durable once the folder is synced.
  fs::path dir = fs::path(path).parent_path();
  int d = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d >= 0) {
    ::fsync(d);
    ::close(d);
  }
  removeStaleTemporariesOf(path);
  return true;
}
} // namespace

bool writeFileAtomically(const std::string &path, const std::string &text, std::string &error) {
  if (path.find('\0') != std::string::npos) { // the OS would stop at it and write another file
    error = "cannot write '" + path.substr(0, path.find('\0')) + "\\0...': a path cannot hold a NUL character";
    return false;
  }
  const std::string target = followLinks(path);
  if (target.empty()) {
    error = "cannot write " + path + ": its symlinks loop or chain too deep";
    return false;
  }
  const std::string shown = target == path ? path : path + " (a symlink to " + target + ")";
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0)
    return replaceRegularFile(target, shown, text, error); // a new file
  if (S_ISDIR(st.st_mode)) {
    error = "cannot write " + shown + ": it is a directory";
    return false;
  }
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
    return writeInPlace(target, shown, text, error);
  if (!S_ISREG(st.st_mode)) {
    error = "cannot write " + shown + ": it is a block device or socket, not a file";
    return false;
  }
  return replaceRegularFile(target, shown, text, error);
}

int removeStaleTemporaries(const std::string &dir, double minAgeSeconds) {
  std::error_code ec;
  int removed = 0;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!isStaleTemporary(it->path()))
      continue;
    std::error_code timeError;
    const auto written = fs::last_write_time(it->path(), timeError);
    if (timeError || std::chrono::duration<double>(now - written).count() < minAgeSeconds)
      continue;
    removed += fs::remove(it->path(), timeError) ? 1 : 0;
  }
  return removed;
}

bool makeFolder(const std::string &dir, std::string &error) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    error = "cannot create " + dir + ": " + ec.message();
    return false;
  }
  return true;
}

} // namespace mixc::support
