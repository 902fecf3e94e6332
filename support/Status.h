//===- Status.h - what a library entry point returns to the driver -*- C++ -*-===//
//
// Library code (runtime, experiments) does not print errors or choose exit
// codes: it returns a Status, and writes results and progress to the
// streams the driver hands it (Console). Only tools/mixc turns a Status
// into a message on stderr and an exit code.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_SUPPORT_STATUS_H
#define MIXC_SUPPORT_STATUS_H

#include <ostream>
#include <string>
#include <utility>

namespace mixc::support {

class Status {
public:
  enum class Kind { Ok, Failed, Interrupted };

  static Status ok() { return Status(Kind::Ok, ""); }
  /// `message` says what went wrong, without an "error: " prefix.
  static Status failed(std::string message) { return Status(Kind::Failed, std::move(message)); }
  /// A signal stopped the work; `message` says what was kept and how to go on.
  static Status interrupted(std::string message) { return Status(Kind::Interrupted, std::move(message)); }

  bool isOk() const { return kind_ == Kind::Ok; }
  bool wasInterrupted() const { return kind_ == Kind::Interrupted; }
  Kind kind() const { return kind_; }
  const std::string &message() const { return message_; }
  /// The process exit status: 0, 1, or 130 (as after SIGINT).
  int exitCode() const { return kind_ == Kind::Ok ? 0 : kind_ == Kind::Failed ? 1 : 130; }

private:
  Status(Kind kind, std::string message) : kind_(kind), message_(std::move(message)) {}
  Kind kind_;
  std::string message_;
};

/// Where an entry point writes: `out` for its results (the driver's stdout),
/// `log` for progress, notes and warnings (stderr).
struct Console {
  std::ostream &out;
  std::ostream &log;
};

} // namespace mixc::support

#endif
