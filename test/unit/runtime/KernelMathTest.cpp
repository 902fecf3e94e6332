//===- KernelMathTest.cpp - kernel_math.h as the kernels are compiled -----===//
//
// CpuPrimitivesTest checks kernel_math.h compiled with the tests' own flags.
// The generated kernels are compiled with other ones (KernelBuild's
// -fassociative-math -freciprocal-math -march=native -O3), under which GCC
// may rewrite a formula whose accuracy depends on its evaluation order.
// Here the functions are compiled by the kernels' own compiler command, in
// vectorisable loops as the kernels call them, and checked against double
// references over their whole input range.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/KernelBuild.h"
#include "support/Process.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <functional>
#include <vector>

namespace {
namespace fs = std::filesystem;
using EvalFn = void (*)(const float *, float *, int);

/// Each function of kernel_math.h over an array, as a loop the vectoriser sees.
const char *kSource = R"(#include MIXC_KERNEL_MATH
#define EVAL(name, expr) \
  extern "C" void eval_##name(const float *x, float *y, int n) { for (int i = 0; i < n; ++i) y[i] = expr; }
EVAL(fexp, mixk::fexp(x[i]))
EVAL(flog, mixk::flog(x[i]))
EVAL(flog1p, mixk::flog1p(x[i]))
EVAL(softplus, mixk::softplus(x[i]))
EVAL(sigmoid, mixk::sigmoid(x[i]))
EVAL(gelu, mixk::gelu(x[i]))
)";

class KernelMath : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("mixc-kernel-math-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "math.cpp") << kSource;
    std::vector<std::string> argv = mixc::kernels::compilerArgv(mixc::kernels::Target::Cpu);
    argv[0] = mixc::support::findProgram(argv[0]);
    argv.push_back("-DMIXC_KERNEL_MATH=\"" MIXC_KERNEL_MATH_H "\"");
    for (std::string a : {(dir_ / "math.cpp").string(), std::string("-o"), (dir_ / "math.so").string()})
      argv.push_back(a);
    std::string out, err;
    status_ = mixc::support::runCapture(argv, out, err);
    log_ = out + err;
    if (status_ == 0)
      handle_ = ::dlopen((dir_ / "math.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  static void TearDownTestSuite() {
    if (handle_)
      ::dlclose(handle_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  /// The worst error of `name` against `want` over `xs`, relative to
  /// max(|want|, floor) (floor 0: relative; where the reference is finite,
  /// non-zero and a float).
  static double worst(const char *name, const std::vector<float> &xs, const std::function<double(double)> &want,
                      float &at, double floor = 0) {
    EXPECT_EQ(status_, 0) << log_;
    EXPECT_NE(handle_, nullptr) << ::dlerror();
    auto fn = handle_ ? reinterpret_cast<EvalFn>(::dlsym(handle_, (std::string("eval_") + name).c_str())) : nullptr;
    if (!fn)
      return INFINITY;
    std::vector<float> ys(xs.size());
    fn(xs.data(), ys.data(), static_cast<int>(xs.size()));
    double w = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      double ref = want(xs[i]);
      if (!std::isfinite(ref) || ref == 0 || std::fabs(ref) > 3e38)
        continue;
      double e = std::fabs(ys[i] - ref) / std::max(std::fabs(ref), floor);
      if (!(e <= w)) // NaN counts as worst
        w = e, at = xs[i];
    }
    return w;
  }

  static std::vector<float> linear(double lo, double hi, int n = 100003) {
    std::vector<float> xs(n);
    for (int i = 0; i < n; ++i)
      xs[i] = static_cast<float>(lo + (hi - lo) * i / (n - 1));
    return xs;
  }
  static std::vector<float> logarithmic(double lo, double hi, int n = 100003) {
    std::vector<float> xs(n);
    for (int i = 0; i < n; ++i)
      xs[i] = static_cast<float>(lo * std::pow(hi / lo, static_cast<double>(i) / (n - 1)));
    return xs;
  }

  static inline fs::path dir_;
  static inline int status_ = -1;
  static inline std::string log_;
  static inline void *handle_ = nullptr;
};

TEST_F(KernelMath, FexpKeepsItsStatedErrorOverItsRange) {
  float at = 0;
  // The header states 3e-7; -fassociative-math once merged the reduction's
  // two parts (3.7e-6 near x = 72).
  EXPECT_LT(worst("fexp", linear(-87.3, 88.3), [](double x) { return std::exp(x); }, at), 3e-7) << at;
}

TEST_F(KernelMath, FlogKeepsItsStatedError) {
  float at = 0;
  EXPECT_LT(worst("flog", logarithmic(1.0, 1e9), [](double x) { return std::log(x); }, at), 2e-7) << at;
  // Below 1 too (relative to ln u, away from u = 1 where ln u → 0).
  EXPECT_LT(worst("flog", logarithmic(1e-37, 0.9), [](double x) { return std::log(x); }, at), 2e-7) << at;
}

TEST_F(KernelMath, Flog1pIsRelativelyExactFromTinyToHuge) {
  float at = 0;
  // From where 1 + x rounds to 1 (the folded form returned x/x·0 there).
  EXPECT_LT(worst("flog1p", logarithmic(1e-30, 1e9), [](double x) { return std::log1p(x); }, at), 4e-7) << at;
}

TEST_F(KernelMath, SoftplusIsRelativelyExactFarBelowZero) {
  float at = 0;
  // softplus(x) ≈ e^x for x ≪ 0: the folded flog1p gave 100 % error near −16.6.
  EXPECT_LT(worst("softplus", linear(-87, 30), [](double x) { return std::log1p(std::exp(x)); }, at), 8e-7) << at;
}

TEST_F(KernelMath, SigmoidAndGeluFollowTheirDefinitions) {
  float at = 0;
  EXPECT_LT(worst("sigmoid", linear(-80, 80), [](double x) { return 1 / (1 + std::exp(-x)); }, at), 1e-6) << at;
  // gelu absolutely where |gelu| < 1 (ferf's absolute error, 1.5e-7, dominates there).
  EXPECT_LT(worst("gelu", linear(-8, 8), [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, at,
                  1.0),
            1e-6)
      << at;
}
} // namespace
