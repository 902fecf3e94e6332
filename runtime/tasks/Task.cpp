//===- Task.cpp - the task a run trains on ----------------------------------===//
#include "runtime/tasks/Task.h"

namespace mixc::tasks {

TaskData makeTask(const TaskConfig &c, const std::string &cacheDir) {
  return c.isATR() ? makeATR(c.atr, cacheDir) : makeAR(c.ar, cacheDir);
}

support::Status loadTask(const TaskConfig &c, const std::string &cacheDir, TaskData &out) {
  try {
    out = makeTask(c, cacheDir);
    return support::Status::ok();
  } catch (const TaskError &e) {
    return e.interrupted ? support::Status::interrupted(e.what()) : support::Status::failed(e.what());
  }
}

} // namespace mixc::tasks
