//===- Handoff.cpp - the compiler's mixc hands runtime commands over --------===//
//
// The compiler's mixc links no LibTorch (Commands.h): a command that needs
// it replaces this process with mixc-runtime, from the same folder, with
// the same command line. exec keeps the process id, so a sweep's stop
// signal, a shell's Ctrl-C and the exit status reach and come from the
// command itself.
//
//===----------------------------------------------------------------------===//
#include "tools/mixc/Commands.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <unistd.h>

int mixc::cli::runRuntimeCommand(const Options &o, char **argv) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string runtime = (self.parent_path() / kRuntimeProgram).string();
  if (ec) {
    std::cerr << "error: " << o.command << " needs " << kRuntimeProgram << ", and this mixc cannot find its own folder ("
              << ec.message() << ")\n";
    return 1;
  }
  std::cout << std::flush;
  execv(runtime.c_str(), argv);
  const int err = errno; // execv returns only on failure
  std::cerr << "error: " << o.command << " needs " << kRuntimeProgram
            << " (LibTorch's half of mixc), and it cannot run from " << runtime << ": " << std::strerror(err)
            << "; build it beside mixc (ninja " << kRuntimeProgram << ")\n";
  return 1;
}
