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

bool writeFileAtomically(const std::string &path, const std::string &text, std::string &error) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    error = "cannot write " + path + ": it is a directory";
    return false;
  }
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  const char *p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error = "cannot write " + path + ": " + std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot replace " + path + ": " + std::strerror(errno);
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
  return true;
}

namespace {
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
} // namespace

int removeStaleTemporaries(const std::string &dir, double minAgeSeconds) {
  std::error_code ec;
  int removed = 0;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const pid_t pid = temporaryOwner(name);
    struct stat st {};
    if (pid <= 0 || pid == ::getpid() || ::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != ::geteuid())
      continue;
    if (!(::kill(pid, 0) != 0 && errno == ESRCH)) // still running (or not ours to ask)
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
