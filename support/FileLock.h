//===- FileLock.h - one writer per folder -----------------------*- C++ -*-===//
//
// A run folder (or a sweep folder) has one writer at a time: the writer
// holds an exclusive flock on FOLDER/.lock for its whole life, and writes
// its pid there so a second writer is told who holds it. The kernel drops
// the lock when the holder dies, however it dies: no stale locks.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_SUPPORT_FILELOCK_H
#define MIXC_SUPPORT_FILELOCK_H

#include <memory>
#include <string>

namespace mixc::support {

class FolderLock {
public:
  /// Takes FOLDER/.lock without waiting; null with `error` set when another
  /// process holds it (its pid named) or the file cannot be opened.
  static std::unique_ptr<FolderLock> acquire(const std::string &folder, std::string &error);
  ~FolderLock();
  FolderLock(const FolderLock &) = delete;
  FolderLock &operator=(const FolderLock &) = delete;

private:
  explicit FolderLock(int fd) : fd_(fd) {}
  int fd_;
};

/// An exclusive flock on `file` held for a short critical section (a
/// sweep's tables, read, changed and rewritten by several processes,
/// possibly on several machines sharing the folder): waits for the holder.
class WaitLock {
public:
  static std::unique_ptr<WaitLock> acquire(const std::string &file, std::string &error);
  ~WaitLock();
  WaitLock(const WaitLock &) = delete;
  WaitLock &operator=(const WaitLock &) = delete;

private:
  explicit WaitLock(int fd) : fd_(fd) {}
  int fd_;
};

} // namespace mixc::support

#endif
