#!/usr/bin/env bash
# Install, build, and run every test (lit + GoogleTest, all through ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cd build
ctest --output-on-failure -j "${JOBS:-$(nproc)}"
