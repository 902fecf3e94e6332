//===- Process.cpp - run external programs without a shell ----------------===//
#include "support/Process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

extern char **environ;

namespace mixc::support {
namespace {
std::vector<char *> cArgv(const std::vector<std::string> &argv) {
  std::vector<char *> a;
  for (const std::string &s : argv)
    a.push_back(const_cast<char *>(s.c_str()));
  a.push_back(nullptr);
  return a;
}

int waitFor(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// posix_spawn with the file actions set up by `actions`.
int spawn(const std::vector<std::string> &argv, bool searchPath, posix_spawn_file_actions_t *actions,
          pid_t &pid, std::string &error) {
  if (argv.empty() || argv[0].empty()) {
    error = "no program to run";
    return -1;
  }
  std::vector<char *> a = cArgv(argv);
  int rc = searchPath ? posix_spawnp(&pid, a[0], actions, nullptr, a.data(), environ)
                      : posix_spawn(&pid, a[0], actions, nullptr, a.data(), environ);
  if (rc != 0) {
    error = "cannot run " + argv[0] + ": " + std::strerror(rc);
    return -1;
  }
  return 0;
}
} // namespace

int runToFile(const std::vector<std::string> &argv, const std::string &logFile,
              std::string &error) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, logFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  int rc = spawn(argv, argv[0].find('/') == std::string::npos, &actions, pid, error);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    return -1;
  int status = waitFor(pid);
  if (status < 0)
    error = "lost track of " + argv[0] + ": " + std::strerror(errno);
  // posix_spawnp reports a missing program as exit 127 on glibc.
  if (status == 127)
    error = "cannot run " + argv[0] + " (not found, or not executable)";
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
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2);
  posix_spawn_file_actions_addclose(&actions, outPipe[0]);
  posix_spawn_file_actions_addclose(&actions, errPipe[0]);
  pid_t pid = 0;
  std::string error;
  int rc = spawn(argv, false, &actions, pid, error);
  posix_spawn_file_actions_destroy(&actions);
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
