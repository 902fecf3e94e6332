#!/usr/bin/env bash
# The main job: install, build, then compile every stdlib architecture and
# print its trainable parameter count.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh > /dev/null
echo "model parameter counts (AR vocabulary 8196, d=64, 2 layers):"
build/bin/mixc params stdlib/{attention,baseconv,based,mamba,deltanet,h3,hyena}.mix
