#!/usr/bin/env bash
# Installs every Debian package mixc needs (Debian 12). Safe to re-run:
# does nothing when all are present.
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build ccache python3
  llvm-16-dev llvm-16-tools libmlir-16-dev mlir-16-tools
  libtorch-dev libopenblas0-pthread
  libgtest-dev nlohmann-json3-dev libtomlplusplus-dev
  clang-16 libclang-rt-16-dev
  python3-dev python3-torch pybind11-dev python3-pytest
  slurm-wlm munge
  procps  # pgrep: the signal tests look for orphaned processes
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
