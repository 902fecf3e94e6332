#!/usr/bin/env bash
# Configures and builds mixc in ./build (or $BUILD_DIR; Ninja, ccache when
# present). Extra arguments go to cmake, e.g. -DMIXC_SANITIZE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
mkdir -p "$BUILD_DIR"
LOG="$BUILD_DIR/cmake.log" # inside the build folder: never committed
cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "$@" > "$LOG" 2>&1 \
  || { cat "$LOG"; exit 1; }
ninja -C "$BUILD_DIR" -j "${JOBS:-$(nproc)}"
