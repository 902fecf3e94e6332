//===- TaskError.h - why a data set could not be made -----------*- C++ -*-===//
//
// Task generators throw this (the runtime side uses exceptions) when a
// configuration admits no document of the side asked for, or when a signal
// asked the program to stop while generating; the driver turns it into a
// message and an exit code.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_TASKS_TASKERROR_H
#define MIXC_RUNTIME_TASKS_TASKERROR_H

#include "support/Stop.h"

#include <stdexcept>
#include <string>

namespace mixc::tasks {

struct TaskError : std::runtime_error {
  TaskError(const std::string &what, bool interrupted = false)
      : std::runtime_error(what), interrupted(interrupted) {}
  bool interrupted; // stopped by SIGINT/SIGTERM, not infeasible
};

/// Generators call this every few documents: a signal stops generation.
inline void pollStop(const char *task) {
  if (support::stopRequested())
    throw TaskError(std::string("interrupted while generating the ") + task +
                        " data; nothing was written",
                    true);
}

} // namespace mixc::tasks

#endif
