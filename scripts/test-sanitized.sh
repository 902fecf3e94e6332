#!/usr/bin/env bash
# Builds the project with ASan + UBSan in build-asan/ and runs there the tests
# a sanitizer can find something in (labels unit and sanitize). LibTorch and LLVM/MLIR themselves are not instrumented; leaks
# are not checked (LibTorch keeps global allocations alive at exit).
set -euo pipefail
cd "$(dirname "$0")/.."
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1
# -O1 -g1: a third less compile time than -O2 -g; ASan still reports
# file:line (the instrumented code is ours; LibTorch's kernels are not).
# Only what the tests below run (the drivers and the unit-test programs), not
# the benchmarks: they run by hand, in the normal build.
# The generated kernels go to the normal build's cache (the same compiler and
# flags build them in both; test/CMakeLists.txt): the normal pass after this
# one finds them compiled.
BUILD_DIR=${BUILD_DIR:-build-asan} BUILD_TYPE=RelWithDebInfo OPT_FLAGS="-O1 -g1 -DNDEBUG" \
  TARGETS="mixc mix-opt mixc_unit_tests mixc_registry_tests mixc_runtime_tests" bash scripts/build.sh -DMIXC_SANITIZE=ON \
  -DMIXC_TEST_KERNEL_CACHE="$PWD/build/kernel-cache"
cd "${BUILD_DIR:-build-asan}"
# What sanitizers can find: the tests labelled `unit` or `sanitize` (test/CMakeLists.txt:
# unit and compiler tests, fuzz regressions and one e2e path through each
# component that reads outside input), not the whole e2e suite. These run
# here only: scripts/test.sh's normal pass runs the rest (ctest -LE).
ctest --output-on-failure -j "${JOBS:-$(nproc)}" -L '^(sanitize|unit)$'
