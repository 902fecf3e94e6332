#!/usr/bin/env bash
# Builds the project with ASan + UBSan in build-asan/ and runs the whole test
# suite there. LibTorch and LLVM/MLIR themselves are not instrumented; leaks
# are not checked (LibTorch keeps global allocations alive at exit).
set -euo pipefail
cd "$(dirname "$0")/.."
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1
# -O1 -g1: a third less compile time than -O2 -g; ASan still reports
# file:line (the instrumented code is ours; LibTorch's kernels are not).
BUILD_DIR=${BUILD_DIR:-build-asan} BUILD_TYPE=RelWithDebInfo OPT_FLAGS="-O1 -g1 -DNDEBUG" bash scripts/build.sh -DMIXC_SANITIZE=ON
cd "${BUILD_DIR:-build-asan}"
# The fuzz smoke run is sanitized already, nvcc's compile of the CUDA
# kernels (CudaKernels) is the same in both builds, and the runtime-only test
# configures and builds a folder of its own (unsanitized either way): skip
# their second copies.
ctest --output-on-failure -j "${JOBS:-$(nproc)}" -E '^fuzz-smoke$|CudaKernels|^runtime-only$'
