#!/usr/bin/env bash
# Install, build, and run every test (lit + GoogleTest + the fuzz smoke run,
# all through ctest), each once: the unit tests and the tests labelled
# `sanitize` on an ASan + UBSan build (scripts/test-sanitized.sh), then the
# others (end-to-end, fuzzing, Python, the runtime-only build) on the normal
# build, which builds what those run (the target e2e-job: the drivers,
# mix-opt, the Python module, the benchmarks) and not the unit-test programs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
TARGETS=e2e-job bash scripts/build.sh
bash scripts/test-sanitized.sh
cd build
ctest --output-on-failure -j "${JOBS:-$(nproc)}" -LE '^(sanitize|unit)$'
