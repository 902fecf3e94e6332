#!/usr/bin/env bash
# Install, build, and run every test (lit + GoogleTest + the fuzz smoke run,
# all through ctest): first on an ASan + UBSan build, then on the normal one.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
bash scripts/test-sanitized.sh
cd build
ctest --output-on-failure -j "${JOBS:-$(nproc)}"
