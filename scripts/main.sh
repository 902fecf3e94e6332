#!/usr/bin/env bash
# The main job: install, build, then train the built-in default model (Based,
# d = 64) on Associative Recall and print its test accuracy (a few minutes
# on 2 cores). The run folder is runs/default (metrics.csv, curves.svg,
# checkpoint.pt); a previous one is moved aside.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Only what the main job runs (the driver and the Python module: target
# main-job), with ninja's progress; the test command builds the rest.
echo "building mixc: the driver and the Python module (the tests are built by scripts/test.sh)"
TARGETS=main-job bash scripts/build.sh
if [ -e runs/default ]; then
  mv runs/default "runs/default.$(date +%Y%m%d-%H%M%S)"
fi
build/bin/mixc train
