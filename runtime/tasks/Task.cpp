#include "runtime/tasks/Task.h"

namespace mixc::tasks {

TaskData makeTask(const TaskConfig &c, const std::string &cacheDir) {
  return c.isATR() ? makeATR(c.atr, cacheDir) : makeAR(c.ar, cacheDir);
}

} // namespace mixc::tasks
