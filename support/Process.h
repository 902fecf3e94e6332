//===- Process.h - run external programs without a shell --------*- C++ -*-===//
//
// Every external tool mixc starts (the C++ compiler, nvcc, its own children)
// goes through here with an argument vector: no string a user controls (a
// cache path, an environment variable) is ever parsed by a shell.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_SUPPORT_PROCESS_H
#define MIXC_SUPPORT_PROCESS_H

#include <sys/types.h>

#include <string>
#include <vector>

namespace mixc::support {

/// Runs argv[0] (searched on PATH when it has no '/') with `argv`, its
/// stdout and stderr both written to `logFile` (truncated). Returns the exit
/// status, 128 + signal when killed, or -1 when it could not be started
/// (then `error` says why). The child holds none of mixc's descriptors and
/// dies with mixc; a stop request (support/Stop.h) is passed on to it as
/// SIGTERM (then `error` says it was interrupted).
int runToFile(const std::vector<std::string> &argv, const std::string &logFile,
              std::string &error);

/// In a child just forked from `parent`: it gets `signal` when the parent
/// dies, even by SIGKILL (PR_SET_PDEATHSIG), so it never runs on as an
/// orphan; if the parent died already, it exits now (128 + `signal`). Only
/// calls what a forked child of a threaded process may call.
void dieWithParent(pid_t parent, int signal);

/// Runs `argv` (argv[0] a path, no PATH search) and returns its exit status
/// as runToFile; stdout into `out`, stderr into `err`.
int runCapture(const std::vector<std::string> &argv, std::string &out, std::string &err);

/// The path of program `name` on PATH (or `name` itself when it holds a
/// '/'); "" when there is none.
std::string findProgram(const std::string &name);

/// Restarts this process (the same executable and arguments) with the
/// environment variable `name` set to `value`, unless it is set already
/// (then, or when the restart fails, returns and the caller carries on).
/// For settings a library reads only when it loads (OMP_WAIT_POLICY).
void restartWithEnvironment(const std::string &name, const std::string &value);

/// Splits a command given in an environment variable ("ccache g++") into
/// words at blanks. Quotes are not interpreted: such a variable names a
/// program and fixed flags, and is never handed to a shell.
std::vector<std::string> splitWords(const std::string &command);

} // namespace mixc::support

#endif
