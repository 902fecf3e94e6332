//===- Process.cpp - run external programs without a shell ----------------===//
#include "support/Process.h"

#include "support/Stop.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

namespace mixc::support {
namespace {
std::vector<char *> cArgv(const std::vector<std::string> &argv) {
  std::vector<char *> a;
  for (const std::string &s : argv)
    a.push_back(const_cast<char *>(s.c_str()));
  a.push_back(nullptr);
  return a;
}

/// Waits for `pid`; a stop request (SIGINT/SIGTERM under StopOnSignals)
/// passes SIGTERM on to it, so a stopped mixc never waits out a long
/// compile. Returns the exit status, 128 + signal, or -1.
int waitFor(pid_t pid) {
  int status = 0;
  bool passedOn = false;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      break;
    if (r < 0 && errno != EINTR)
      return -1;
    if (stopRequested() && !passedOn) {
      ::kill(-pid, SIGTERM); // its process group: a compiler driver and the compiler it started
      passedOn = true;
    }
    ::usleep(10000);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// Starts `argv` in a process group of its own, with stdout on `outFd` and
/// stderr on `errFd`, every other descriptor closed (a folder lock held by
/// mixc is not held by its children), dying with mixc (SIGKILL). A program
/// that cannot be run exits 127.
int spawn(const std::vector<std::string> &argv, bool searchPath, int outFd, int errFd, pid_t &pid,
          std::string &error) {
  if (argv.empty() || argv[0].empty()) {
    error = "no program to run";
    return -1;
  }
  std::vector<char *> a = cArgv(argv); // built before fork: the child only calls what exec allows
  const pid_t parent = ::getpid();
  pid = ::fork();
  if (pid < 0) {
    error = "cannot run " + argv[0] + ": " + std::strerror(errno);
    return -1;
  }
  if (pid == 0) {
    ::setpgid(0, 0); // a group of its own, which waitFor stops as a whole
    dieWithParent(parent, SIGKILL);
    if (::dup2(outFd, 1) < 0 || ::dup2(errFd, 2) < 0)
      ::_exit(127);
    ::close_range(3, ~0u, 0);
    if (searchPath)
      ::execvp(a[0], a.data());
    else
      ::execv(a[0], a.data());
    ::_exit(127);
  }
  return 0;
}
} // namespace

void dieWithParent(pid_t parent, int signal) {
  ::prctl(PR_SET_PDEATHSIG, signal);
  if (::getppid() != parent) // it died before prctl
    ::_exit(128 + signal);
}

int runToFile(const std::vector<std::string> &argv, const std::string &logFile,
              std::string &error) {
  int log = ::open(logFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log < 0) {
    error = "cannot write " + logFile + ": " + std::strerror(errno);
    return -1;
  }
  pid_t pid = 0;
  int rc = spawn(argv, argv[0].find('/') == std::string::npos, log, log, pid, error);
  ::close(log);
  if (rc != 0)
    return -1;
  int status = waitFor(pid);
  if (status < 0)
    error = "lost track of " + argv[0] + ": " + std::strerror(errno);
  if (status == 127)
    error = "cannot run " + argv[0] + " (not found, or not executable)";
  if (stopRequested())
    error = "interrupted while " + argv[0] + " ran";
  return status;
}

int runCapture(const std::vector<std::string> &argv, std::string &out, std::string &err) {
  int outPipe[2], errPipe[2];
  if (pipe(outPipe) != 0)
    return -1;
  if (pipe(errPipe) != 0) {
    close(outPipe[0]);
    close(outPipe[1]);
    return -1;
  }
  pid_t pid = 0;
  std::string error;
  int rc = spawn(argv, false, outPipe[1], errPipe[1], pid, error);
  close(outPipe[1]);
  close(errPipe[1]);
  if (rc != 0) {
    close(outPipe[0]);
    close(errPipe[0]);
    err = error;
    return -1;
  }
  // Read both pipes at once (poll): a child that fills one pipe while we
  // wait on the other would otherwise block forever.
  struct pollfd fds[2] = {{outPipe[0], POLLIN, 0}, {errPipe[0], POLLIN, 0}};
  std::string *into[2] = {&out, &err};
  int open = 2;
  while (open > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      char buf[4096];
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        into[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  for (auto &f : fds)
    if (f.fd >= 0)
      close(f.fd);
  return waitFor(pid);
}

std::vector<std::string> splitWords(const std::string &command) {
  std::istringstream in(command);
  std::vector<std::string> words;
  for (std::string w; in >> w;)
    words.push_back(w);
  return words;
}

std::string findProgram(const std::string &name) {
  if (name.find('/') != std::string::npos)
    return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char *path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t colon = dirs.find(':', start);
    std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    if (colon == std::string::npos)
      break;
    start = colon + 1;
  }
  return "";
}

void restartWithEnvironment(const std::string &name, const std::string &value) {
  if (std::getenv(name.c_str()))
    return;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t start = 0; start < all.size();) {
    size_t end = all.find('\0', start);
    if (end == std::string::npos)
      end = all.size();
    args.push_back(all.substr(start, end - start));
    start = end + 1;
  }
  if (args.empty() || ::setenv(name.c_str(), value.c_str(), 1) != 0)
    return;
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execv("/proc/self/exe", argv.data());
  // exec failed: carry on as we are (the variable stays set for children).
}

} // namespace mixc::support
