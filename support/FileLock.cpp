//===- FileLock.cpp - one writer per folder --------------------------------===//
#include "support/FileLock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mixc::support {

std::unique_ptr<FolderLock> FolderLock::acquire(const std::string &folder, std::string &error) {
  const std::string path = folder + "/.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = "cannot open " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    char buf[32] = {0};
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' '))
      holder.pop_back();
    if (err == EWOULDBLOCK && holder == std::to_string(::getpid())) {
      error = folder + " is already in use by this process (another name for a folder it writes, e.g. x and ./x?)";
      return nullptr;
    }
    error = err == EWOULDBLOCK
                ? folder + " is in use by another mixc process" +
                      (holder.empty() ? std::string() : " (pid " + holder + ")") +
                      "; wait for it to finish or stop it first"
                : "cannot lock " + path + ": " + std::strerror(err);
    return nullptr;
  }
  // Ours now: record the holder for the message above.
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The lock holds without the pid; only the message loses detail.
  }
  return std::unique_ptr<FolderLock>(new FolderLock(fd));
}

FolderLock::~FolderLock() { ::close(fd_); }

std::unique_ptr<WaitLock> WaitLock::acquire(const std::string &file, std::string &error) {
  int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = "cannot open " + file + ": " + std::strerror(errno);
    return nullptr;
  }
  int rc;
  while ((rc = ::flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
  }
  if (rc != 0) {
    error = "cannot lock " + file + ": " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  return std::unique_ptr<WaitLock>(new WaitLock(fd));
}

WaitLock::~WaitLock() { ::close(fd_); }

} // namespace mixc::support
