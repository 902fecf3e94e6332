//===- Stop.h - a process-wide stop request ---------------------*- C++ -*-===//
//
// SIGINT/SIGTERM set one flag; long work anywhere (data generation, the
// training loop, intervention batches) polls it and returns cleanly, so a
// signal stops the program in every phase, not only in the step loop.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_SUPPORT_STOP_H
#define MIXC_SUPPORT_STOP_H

namespace mixc::support {

/// True once SIGINT or SIGTERM arrived while a StopOnSignals was alive (or
/// requestStop() was called).
bool stopRequested();
void requestStop();

/// While alive, SIGINT and SIGTERM raise the stop flag instead of killing
/// the process; the old handlers come back when it dies.
class StopOnSignals {
public:
  StopOnSignals();
  ~StopOnSignals();
  StopOnSignals(const StopOnSignals &) = delete;
  StopOnSignals &operator=(const StopOnSignals &) = delete;

private:
  void (*oldInt_)(int);
  void (*oldTerm_)(int);
};

} // namespace mixc::support

#endif
