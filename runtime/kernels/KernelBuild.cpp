//===- KernelBuild.cpp - compile, cache and dlopen generated kernels --------===//
#include "runtime/kernels/KernelBuild.h"
#include "abi/Graph.h"
#include "support/AtomicWrite.h"
#include "support/Digest.h"
#include "support/Process.h"
#include "support/Stop.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mixc::kernels {
namespace fs = std::filesystem;

namespace {
// -ffast-math is left out on purpose: linked into a shared library it pulls
// in crtfastmath.o, which turns on flush-to-zero for the whole process (and
// so changes LibTorch's results too). These flags give the vectoriser what
// it needs for reductions without that.
const char *kFlags = "-std=c++17 -O3 -march=native -fno-math-errno -fno-trapping-math "
                     "-fassociative-math -fno-signed-zeros -freciprocal-math -fopenmp -fPIC "
                     "-shared -w";
// --expt-relaxed-constexpr: kernel_math.h's constexpr constants in device code.
const char *kCudaFlags = "-std=c++17 -O3 --expt-relaxed-constexpr -Xcompiler -fPIC -shared -w";

std::string env(const char *name) {
  const char *v = std::getenv(name);
  return v && *v ? v : "";
}

/// -march=native code must not be loaded on another CPU from a shared cache.
std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0 || line.rfind("flags", 0) == 0)
      return line;
  return "";
}

std::string tail(const std::string &text, size_t lines) {
  size_t pos = text.size();
  for (size_t n = 0; pos > 0 && n <= lines; ++n)
    pos = text.rfind('\n', pos - 1);
  return pos == std::string::npos || pos == 0 ? text : text.substr(pos + 1);
}

std::string modeText(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

std::string readFile(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
} // namespace

std::string cacheDir() {
  if (std::string d = env("MIXC_KERNEL_CACHE"); !d.empty())
    return d;
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty())
    return (fs::path(d) / "mixc" / "kernels").string();
  if (std::string home = env("HOME"); !home.empty())
    return (fs::path(home) / ".cache" / "mixc" / "kernels").string();
  // No home: a folder of this user's own in /tmp (privateFolder checks that
  // nobody else made it first).
  return "/tmp/mixc-kernels-" + std::to_string(::geteuid());
}

std::string privateFolder(const std::string &dir) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    return "the kernel cache " + dir + " is not a directory (set MIXC_KERNEL_CACHE)";
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec)
      return "cannot create the kernel cache " + dir + ": " + ec.message();
    fs::permissions(dir, fs::perms::owner_all, ec); // only its owner reads the code it keeps
  }
  return ownedOnly(dir, "the kernel cache");
}

std::string ownedOnly(const std::string &path, const std::string &what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return "cannot read " + what + " " + path + ": " + std::strerror(errno);
  if (st.st_uid != ::geteuid())
    return what + " " + path + " belongs to user " + std::to_string(st.st_uid) + ", not to this one (" +
           std::to_string(::geteuid()) + "): mixc runs no code from it (set MIXC_KERNEL_CACHE to a folder of yours)";
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return what + " " + path + " can be written by other users (mode " + modeText(st.st_mode) +
           "): mixc runs no code from it (chmod go-w it, or set MIXC_KERNEL_CACHE to a folder of yours)";
  return "";
}

const char *targetName(Target target) { return target == Target::Cuda ? "CUDA" : "CPU"; }
const char *targetKey(Target target) { return target == Target::Cuda ? graph::kTargetCuda : graph::kTargetCpu; }

std::vector<std::string> compilerArgv(Target target) {
  std::vector<std::string> argv;
  if (target == Target::Cpu) {
    argv = support::splitWords(env("MIXC_CXX"));
    if (argv.empty())
      argv = {"c++"};
    for (const std::string &f : support::splitWords(kFlags))
      argv.push_back(f);
    return argv;
  }
  argv = support::splitWords(env("MIXC_NVCC"));
  if (argv.empty())
    argv = {fs::exists("/usr/local/cuda/bin/nvcc") ? "/usr/local/cuda/bin/nvcc" : "nvcc"};
  for (const std::string &f : support::splitWords(kCudaFlags))
    argv.push_back(f);
  std::string archs = env("MIXC_CUDA_ARCHS");
  std::vector<std::string> list = support::splitWords(archs.empty() ? "80 90" : archs);
  for (const std::string &arch : list) {
    // An architecture is a number: anything else would reach nvcc as a flag.
    if (arch.empty() || arch.find_first_not_of("0123456789") != std::string::npos)
      continue;
    argv.push_back("-gencode");
    argv.push_back("arch=compute_" + arch + ",code=sm_" + arch);
  }
  // nvcc compiles the architectures one after the other unless told.
  if (list.size() > 1) {
    argv.push_back("--threads");
    argv.push_back(std::to_string(list.size()));
  }
  return argv;
}

std::string compilerCommand(Target target) {
  std::string cmd;
  for (const std::string &w : compilerArgv(target))
    cmd += (cmd.empty() ? "" : " ") + w;
  return cmd;
}

std::shared_ptr<Library> buildLibrary(const std::string &source, std::string &error, Target target) {
  const std::vector<std::string> argv = compilerArgv(target);
  const std::string command = compilerCommand(target);
  using support::fnv1a;
  const std::string hash = support::hexDigest(fnv1a(cpuModel(), fnv1a(command, fnv1a(source))));
  fs::path dir = cacheDir();
  fs::path lib = dir / (hash + ".so");
  if (error = privateFolder(dir.string()); !error.empty())
    return nullptr;
  // Sources and libraries of builds killed mid-way; an hour old at least,
  // as a cache in a network home is shared by machines whose pids differ.
  support::removeStaleTemporaries(dir.string(), 3600);
  // A cache entry is used only if it loads, passes the ABI check, was built
  // from this very source and holds kernels for `target`: an empty,
  // truncated or foreign file at a cache name is rebuilt instead of
  // reported as success.
  std::error_code ec;
  if (fs::is_regular_file(lib, ec)) {
    std::string stale;
    std::shared_ptr<Library> cached = Library::open(lib.string(), stale);
    if (cached && cached->target() == target && cached->sourceDigest() == hash)
      return cached;
  }
  // Unique temporaries per process: sweeps build the same library at once.
  std::string stem = hash + ".tmp" + std::to_string(::getpid());
  fs::path src = dir / (stem + (target == Target::Cuda ? ".cu" : ".cpp")), tmp = dir / (stem + ".so"), log = dir / (stem + ".log");
  {
    std::ofstream out(src, std::ios::binary);
    out << source << "extern \"C\" const char *mixk_source_digest() { return \"" << hash << "\"; }\n";
    if (!out.flush()) {
      error = "cannot write " + src.string();
      return nullptr;
    }
  }
  std::vector<std::string> full = argv;
  full.insert(full.end(), {src.string(), "-o", tmp.string()});
  std::string spawnError;
  int rc = support::runToFile(full, log.string(), spawnError);
  std::string output = readFile(log);
  fs::remove(log, ec);
  if (support::stopRequested()) { // the compiler got SIGTERM: nothing of this build is kept
    fs::remove(src, ec);
    fs::remove(tmp, ec);
    error = "interrupted while compiling the generated " + std::string(targetName(target)) + " kernels";
    return nullptr;
  }
  if (rc != 0) {
    error = std::string("compiling the generated ") + targetName(target) +
            " kernels failed (" + command + "); the source is kept at " +
            src.string() + "\n" + (spawnError.empty() ? "" : spawnError + "\n") + tail(output, 20);
    fs::remove(tmp, ec);
    return nullptr;
  }
  fs::remove(src, ec);
  // Under a umask of 002 the compiler leaves it group-writable: Library::open would refuse it.
  fs::permissions(tmp, fs::perms::group_write | fs::perms::others_write, fs::perm_options::remove, ec);
  // rename() replaces a bad entry atomically: a concurrent reader sees the
  // old file or the new one, never a half-written one.
  fs::rename(tmp, lib, ec);
  if (ec) {
    error = "cannot move the kernel library into " + lib.string() + ": " + ec.message();
    return nullptr;
  }
  std::shared_ptr<Library> built = Library::open(lib.string(), error);
  if (built && built->sourceDigest() != hash) { // another process replaced it: not ours to run
    error = lib.string() + " changed while it was being built; build again";
    return nullptr;
  }
  if (built && built->target() != target) {
    error = lib.string() + " holds " + targetName(built->target()) + " kernels, not " + targetName(target);
    return nullptr;
  }
  return built;
}

std::shared_ptr<Library> Library::open(const std::string &path, std::string &error) {
  // dlopen runs the library's constructors: only code nobody else could have put there.
  if (error = ownedOnly(path, "the kernel library"); !error.empty())
    return nullptr;
  void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    error = std::string("cannot load the kernel library: ") + ::dlerror();
    return nullptr;
  }
  using Version = int (*)();
  auto version = reinterpret_cast<Version>(::dlsym(handle, "mixk_abi_version"));
  if (!version || version() != MIXK_ABI_VERSION) {
    error = path + " was built for another kernel ABI (want version " +
            std::to_string(MIXK_ABI_VERSION) + "); delete it from the cache";
    ::dlclose(handle);
    return nullptr;
  }
  auto target = reinterpret_cast<Version>(::dlsym(handle, "mixk_target"));
  int t = target ? target() : -1;
  if (t != MIXK_TARGET_CPU && t != MIXK_TARGET_CUDA) {
    error = path + " does not say which device its kernels run on (mixk_target)";
    ::dlclose(handle);
    return nullptr;
  }
  auto library = std::shared_ptr<Library>(new Library(handle, path, static_cast<Target>(t)));
  using Text = const char *(*)();
  if (auto graph = reinterpret_cast<Text>(::dlsym(handle, "mixk_graph_digest")))
    library->graphDigest_ = graph();
  if (auto source = reinterpret_cast<Text>(::dlsym(handle, "mixk_source_digest")))
    library->sourceDigest_ = source();
  return library;
}

Library::~Library() { ::dlclose(handle_); }

bool Library::lookup(const std::string &symbol, RegionFns &fns) const {
  auto get = [&](const char *suffix) { return ::dlsym(handle_, (symbol + suffix).c_str()); };
  fns.saved = reinterpret_cast<int64_t (*)(const int64_t *)>(get("_saved"));
  fns.forward = reinterpret_cast<void (*)(const mixk_args *)>(get("_forward"));
  fns.backward = reinterpret_cast<void (*)(const mixk_args *)>(get("_backward"));
  return fns.saved && fns.forward && fns.backward;
}

} // namespace mixc::kernels
