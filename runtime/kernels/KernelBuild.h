//===- KernelBuild.h - compile and load generated kernels -------*- C++ -*-===//
//
// The generated CPU or CUDA source (compiler/lib/CodeGen) is compiled once
// into a shared library kept in a cache named by the content hash of the
// source, the flags and the host CPU, then dlopen'ed. Plain C++: no torch,
// no MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_KERNELS_KERNELBUILD_H
#define MIXC_RUNTIME_KERNELS_KERNELBUILD_H

#include "abi/KernelAbi.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mixc::kernels {

/// $MIXC_KERNEL_CACHE, else $XDG_CACHE_HOME/mixc/kernels, else
/// ~/.cache/mixc/kernels, else (no HOME) /tmp/mixc-kernels-<uid>.
std::string cacheDir();

/// "" when `dir` is a folder this user owns and nobody else can write
/// (created with mode 0700 when missing); otherwise why mixc will not load
/// code from it. A library in a folder another user can write into could
/// be theirs.
std::string privateFolder(const std::string &dir);

/// "" when `path` (`what`, for the message) belongs to this user and is not
/// writable by others; otherwise why not.
std::string ownedOnly(const std::string &path, const std::string &what);

/// What a generated library runs on (its source says: mixk_target()).
enum class Target { Cpu = MIXK_TARGET_CPU, Cuda = MIXK_TARGET_CUDA };
const char *targetName(Target target);
/// The target's key in a graph region's `targets` (graph::kTargetCpu, kTargetCuda).
const char *targetKey(Target target);

/// The compiler command and its flags: for the CPU, $MIXC_CXX or c++; for
/// CUDA, $MIXC_NVCC, else /usr/local/cuda/bin/nvcc when present, else nvcc,
/// building for the architectures in $MIXC_CUDA_ARCHS (default "80 90":
/// A100, H100/H200).
/// The command as an argument vector (run without a shell; the variables
/// are split at blanks, quotes are not interpreted) and as one line for
/// messages and the cache hash.
std::vector<std::string> compilerArgv(Target target = Target::Cpu);
std::string compilerCommand(Target target = Target::Cpu);

/// One region's entry points (KernelAbi.h).
struct RegionFns {
  int64_t (*saved)(const int64_t *dims) = nullptr;
  void (*forward)(const mixk_args *) = nullptr;
  void (*backward)(const mixk_args *) = nullptr;
};

/// A loaded kernel library; closed when the last owner lets go.
class Library {
public:
  /// dlopens `path` (owned by this user, writable by nobody else) and
  /// checks its ABI version; nullptr and `error` otherwise.
  static std::shared_ptr<Library> open(const std::string &path, std::string &error);
  /// Host memory (CPU) or device memory (CUDA).
  Target target() const { return target_; }
  ~Library();
  Library(const Library &) = delete;
  Library &operator=(const Library &) = delete;

  /// The three functions of `symbol`; false when any is missing.
  bool lookup(const std::string &symbol, RegionFns &fns) const;
  const std::string &path() const { return path_; }
  /// graphDigest of the graph the kernels were generated for (KernelAbi.h);
  /// empty for a library that does not say.
  const std::string &graphDigest() const { return graphDigest_; }
  /// The cache key of the source it was built from (buildLibrary).
  const std::string &sourceDigest() const { return sourceDigest_; }

private:
  Library(void *handle, std::string path, Target target)
      : handle_(handle), path_(std::move(path)), target_(target) {}
  void *handle_;
  std::string path_;
  Target target_;
  std::string graphDigest_, sourceDigest_;
};

/// Compiles `source` into <cacheDir>/<hash>.so unless a usable library is
/// there (it loads, has this ABI, was built from `source` and names
/// `target`; anything else is rebuilt; the cache must be privateFolder) and
/// returns it opened, once; nullptr with `error` (the compiler's output
/// tail, or the ABI or target problem) otherwise. The
/// library is written under a temporary name and renamed into place, so
/// concurrent runs (sweeps) never load a half-written file.
std::shared_ptr<Library> buildLibrary(const std::string &source, std::string &error,
                                      Target target = Target::Cpu);

} // namespace mixc::kernels

#endif
