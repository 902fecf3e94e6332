//===- Commands.h - the driver's two halves --------------------*- C++ -*-===//
//
// The compiler's mixc does not load LibTorch: compile, params, names, sweep
// and report (and every usage error) start in milliseconds instead of the
// 0.75 s LibTorch's initialisers take (2 s under ASan). The commands that
// need the runtime (train, eval, intervene, attribute, align, export,
// compile --backend=generated, sweep on GPUs, --version) run in
// mixc-runtime, beside it in the same folder, to which mixc hands the
// command line unchanged (exec: same process, same exit status and
// signals). The runtime-only build is one program with both halves.
//
//   mixc.cpp             main, the compiler-side commands, report/usage
//   RuntimeCommands.cpp  the runtime-side commands (mixc-runtime; runtime-only mixc)
//   Handoff.cpp          runRuntimeCommand for the compiler's mixc: exec mixc-runtime
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_TOOLS_COMMANDS_H
#define MIXC_TOOLS_COMMANDS_H

#include "mix/Compiler.h"
#include "support/Status.h"
#include "tools/mixc/Options.h"

#include <string>
#include <vector>

namespace mixc::cli {

/// The runtime half's program, in the compiler's mixc's folder.
inline constexpr const char kRuntimeProgram[] = "mixc-runtime";

/// A library Status as a message on stderr and an exit code.
int report(const support::Status &status);

/// A usage error: the problem and where the help is; exit status 2.
int usage(const std::string &problem);

/// Runs a command; an exception (e.g. a LibTorch check on bad data) becomes
/// a one-line error and exit status 1, never a crash.
int guarded(int (*command)(const Options &), const Options &o);

/// Whether the command needs the runtime (LibTorch): see the file comment.
bool needsRuntime(const Options &o);

/// Runs a command needsRuntime() accepts: in this process, or handed to
/// mixc-runtime with the command line `argv` as it was given.
int runRuntimeCommand(const Options &o, char **argv);

/// `mixc compile`; with --backend=generated, `checkKernels` (the runtime's)
/// builds the kernels and says why they cannot be built.
using KernelCheck = support::Status (*)(const Options &o, const mix::CompileResult &compiled);
int compileCommand(const Options &o, KernelCheck checkKernels);

/// `mixc sweep` over `devices` (empty: the CPU).
int sweepCommand(const Options &o, const std::vector<std::string> &devices);

} // namespace mixc::cli

#endif
