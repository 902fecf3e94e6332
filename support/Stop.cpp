//===- Stop.cpp - a process-wide stop request ------------------------------===//
#include "support/Stop.h"

#include <csignal>

namespace mixc::support {
namespace {
volatile std::sig_atomic_t gStop = 0;
void onSignal(int) { gStop = 1; }
} // namespace

bool stopRequested() { return gStop != 0; }
void requestStop() { gStop = 1; }

StopOnSignals::StopOnSignals() {
  gStop = 0;
  oldInt_ = std::signal(SIGINT, onSignal);
  oldTerm_ = std::signal(SIGTERM, onSignal);
}

StopOnSignals::~StopOnSignals() {
  std::signal(SIGINT, oldInt_);
  std::signal(SIGTERM, oldTerm_);
}

} // namespace mixc::support
