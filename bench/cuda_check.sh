#!/usr/bin/env bash
# The CUDA back end on a GPU: each stdlib model's generated kernels vs the
# LibTorch path (max abs error of logits and gradients), timed against it
# and against the chunked PyTorch peers of the recurrences
# (bench/cuda_check/cuda_check.cpp). Two halves, because the device machine
# has no MLIR (so no mixc) and this one has no GPU:
#
#   bash bench/cuda_check.sh prepare   # here: mixc writes .cuda-check/ (graphs,
#                                      # CUDA sources, the JSON headers)
#   bash bench/cuda_check.sh run       # there (device tool, carry [".cuda-check"]):
#                                      # builds the runtime + cuda_check against
#                                      # python's CUDA LibTorch and runs it
#
# bench/gpu_check.sh runs this check too, with the whole GPU path. `run`
# writes the report to $OUT/cuda_check.txt when $OUT is set. Extra
# arguments go to cuda_check (e.g. --arch mamba --seq 256).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=.cuda-check
MODELS="attention baseconv based mamba deltanet h3 hyena gla gated_deltanet retnet"

case "${1:-}" in
prepare)
  MIXC=${MIXC:-build/bin/mixc}
  [ -x "$MIXC" ] || { echo "cuda_check.sh: build mixc first (scripts/build.sh)" >&2; exit 1; }
  rm -rf "$DIR" && mkdir -p "$DIR/include"
  for m in $MODELS; do
    "$MIXC" compile "stdlib/$m.mix" --emit=graph -o "$DIR/$m.graph.json"
    "$MIXC" compile "stdlib/$m.mix" --emit=cu -o "$DIR/$m.cu"
    "$MIXC" compile "stdlib/$m.mix" --emit=cpp -o "$DIR/$m.cpp"
  done
  cp -r /usr/include/nlohmann /usr/include/toml++ "$DIR/include/"
  du -sh "$DIR"
  ;;
run)
  shift
  [ -d "$DIR" ] || { echo "cuda_check.sh: no $DIR (run 'prepare' where mixc is built)" >&2; exit 1; }
  TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
  NVCC=${MIXC_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  BUILD=${CUDA_CHECK_BUILD:-/tmp/cuda-check-build}
  nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader || true
  # The project's runtime-only configuration (no MLIR; JSON and TOML from
  # the copied headers), its cuda_check target only.
  cmake -S . -B "$BUILD" -G Ninja -DMIXC_WITH_COMPILER=OFF -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" -DMIXC_VENDOR_INCLUDE="$PWD/$DIR/include" > "$BUILD.cmake.log" 2>&1 \
    || { tail -40 "$BUILD.cmake.log"; exit 1; }
  ninja -C "$BUILD" cuda_check > "$BUILD.ninja.log" 2>&1 || { tail -40 "$BUILD.ninja.log"; exit 1; }
  # Torch's own libraries (libtorch_cuda, libc10_cuda) sit beside the prefix.
  export LD_LIBRARY_PATH="$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))'):${LD_LIBRARY_PATH:-}"
  # The device's own architecture only: half the nvcc time.
  ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.' || true)
  export MIXC_NVCC="$NVCC" MIXC_CUDA_ARCHS="${MIXC_CUDA_ARCHS:-${ARCH:-90}}"
  export MIXC_KERNEL_CACHE=${MIXC_KERNEL_CACHE:-/tmp/mixc-kernels}
  REPORT=${OUT:-/tmp}/cuda_check.txt
  "$BUILD/bench/cuda_check" "$DIR" --device cuda "$@" 2>&1 | tee "$REPORT"
  ;;
*)
  sed -n 2,16p "$0"
  exit 2
  ;;
esac
