#!/usr/bin/env bash
# One prepared check for a GPU machine that has PyTorch (its LibTorch) and
# nvcc but no MLIR, in at most 9 minutes, its results in a folder. Two halves:
#
#   bash bench/gpu_check.sh prepare        # here, with the full build: writes .gpu-check/
#   bash bench/gpu_check.sh run [OUT]      # there (device tool: carry [".gpu-check"]);
#                                          # OUT defaults to $OUT
#
# prepare: a bundle (graph + CPU and CUDA kernels, with block-inputs.rw and
#   mixer-outputs.rw compiled in) for every stdlib model at d = 64 and 128;
#   cuda_check's inputs (the d = 64 bundles' graphs and sources); the JSON and
#   TOML headers (the GPU machine has no Debian packages); the sweep file of
#   the AR d = 64 row. GPU_CHECK_DIR and GPU_CHECK_MODELS change where and
#   which (the CI test prepares one model).
# run, each step within what is left of GPU_CHECK_SECONDS (default 540):
#   1. builds the runtime-only mixc and cuda_check against python's LibTorch
#      (-DMIXC_WITH_COMPILER=OFF, build-gpu/): build.log
#   2. training-step time per model at d = 64 and 128 on the GPU, generated
#      kernels and LibTorch-CUDA, beside the generated kernels on one CPU
#      core: throughput.csv (kernels built first, in parallel); and a pack of
#      five learning rates per paper model at d = 64 against one run alone
#      (mixc train with five configs): packed.csv
#   3. cuda_check: each model's logits and gradients, generated vs LibTorch,
#      and the recurrences against chunked PyTorch peers: cuda_check.txt
#   4. the AR d = 64 row of the paper's seven models at the paper's recipe
#      (lr 1e-3, early stopping at 0.99), all seven at once on the GPU, until
#      the time is up (each stops with a checkpoint): ar-d64.csv
#   5. the Python module (runtime-only, built in step 1 against python's
#      torch) opens a run of step 4 and moves it to the GPU: python.txt
#   and summary.txt (the device, versions, what ran and how long).
# A rehearsal on a CPU machine (the script's own logic, before a device
# session is spent on it): GPU_CHECK_DEVICE=cpu GPU_CHECK_BUILD=build (an
# existing build folder: not built again) GPU_CHECK_SECONDS=300.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${GPU_CHECK_DIR:-.gpu-check}
MODELS=${GPU_CHECK_MODELS:-attention baseconv based h3 hyena mamba deltanet gla gated_deltanet retnet}
PAPER="attention baseconv based h3 hyena mamba deltanet"
SCRIPTS="examples/interventions/block-inputs.rw examples/interventions/mixer-outputs.rw"

case "${1:-}" in
prepare)
  MIXC=${MIXC:-build/bin/mixc}
  [ -x "$MIXC" ] || { echo "gpu_check.sh: build mixc first (scripts/build.sh)" >&2; exit 1; }
  rm -rf "$DIR" && mkdir -p "$DIR/bundles" "$DIR/cuda-check" "$DIR/include"
  rewrites=()
  for s in $SCRIPTS; do rewrites+=(--rewrite "$s"); done
  for m in $MODELS; do
    for d in 64 128; do
      "$MIXC" compile "stdlib/$m.mix" -c d=$d --emit=bundle -o "$DIR/bundles/$m-d$d" "${rewrites[@]}"
    done
    # cuda_check compiles each model at its defaults (d = 64, vocab 8196):
    # the d = 64 bundle's sources, so the two share the kernel cache.
    cp "$DIR/bundles/$m-d64/graph.json" "$DIR/cuda-check/$m.graph.json"
    cp "$DIR/bundles/$m-d64/kernels.cu" "$DIR/cuda-check/$m.cu"
    cp "$DIR/bundles/$m-d64/kernels.cpp" "$DIR/cuda-check/$m.cpp"
  done
  cp -r /usr/include/nlohmann /usr/include/toml++ "$DIR/include/"
  # The AR row: the paper's recipe (examples/paper/base/ar.toml), d = 64.
  files=""
  for m in $PAPER; do
    [ -d "$DIR/bundles/$m-d64" ] && files="$files${files:+, }\"bundles/$m-d64\""
  done
  # Paths relative to the sweep file, wherever the folder is.
  base=$(realpath --relative-to="$DIR" examples/paper/base/ar.toml)
  script=$(realpath --relative-to="$DIR" examples/interventions/block-inputs.rw)
  cat > "$DIR/ar-d64.toml" << EOF
# Written by bench/gpu_check.sh prepare: the AR d = 64 row on a GPU.
[sweep]
name = "gpu-ar-d64"
base = "$base"
out = "runs/gpu-ar-d64"
[grid]
"model.file" = [$files]
"model.config.d" = 64
"train.lr" = 1e-3
"train.early_stop_acc" = 0.99
[interventions]
scripts = ["$script"]
size = 320
EOF
  du -sh "$DIR"
  ;;
run)
  OUTDIR=${2:-${OUT:?gpu_check.sh run: give the results folder (or set OUT)}}
  mkdir -p "$OUTDIR"
  START=$(date +%s)
  BUDGET=${GPU_CHECK_SECONDS:-540}
  left() { echo $((BUDGET - ($(date +%s) - START))); }
  SUMMARY=$OUTDIR/summary.txt
  say() { echo "$*" | tee -a "$SUMMARY"; }
  [ -d "$DIR/bundles" ] || { echo "gpu_check.sh: no $DIR (run 'prepare' where mixc is built)" >&2; exit 1; }
  say "gpu_check $(date -u +%Y-%m-%dT%H:%MZ): $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2> /dev/null || echo 'no nvidia-smi')"
  NVCC=${MIXC_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  say "torch $(python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)' 2> /dev/null || echo '(python3 has none)'), nvcc $("$NVCC" --version 2> /dev/null | tail -1)"
  BUILD=${GPU_CHECK_BUILD:-build-gpu}
  DEVICE=${GPU_CHECK_DEVICE:-cuda}

  # 1. The runtime-only build against this LibTorch.
  t0=$(date +%s)
  if [ -n "${GPU_CHECK_BUILD:-}" ] && [ -x "$BUILD/bin/mixc" ]; then
    say "1. build: using $BUILD"
  elif ! { TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') && cmake -G Ninja -S . -B "$BUILD" -DMIXC_WITH_COMPILER=OFF -DCMAKE_BUILD_TYPE=Release \
           -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" -DMIXC_VENDOR_INCLUDE="$PWD/$DIR/include" \
         && ninja -C "$BUILD" mixc cuda_check; } > "$OUTDIR/build.log" 2>&1; then
    say "1. build: FAILED (build.log)"; tail -30 "$OUTDIR/build.log"; exit 1
  else
    say "1. build: runtime-only mixc and cuda_check in $(( $(date +%s) - t0 )) s"
  fi
  # The runtime-only Python module against this torch (step 5 uses it);
  # its failure is reported, not fatal.
  # A rehearsal's existing build keeps its own configuration (its python).
  t0=$(date +%s)
  if [ -n "${GPU_CHECK_BUILD:-}" ]; then
    say "1. build: the Python module as $BUILD has it"
  elif { cmake -S . -B "$BUILD" -DPython3_EXECUTABLE="$(command -v python3)" && ninja -C "$BUILD" _mixc; } \
       > "$OUTDIR/build-python.log" 2>&1; then
    say "1. build: the Python module in $(( $(date +%s) - t0 )) s"
  else
    say "1. build: the Python module FAILED (build-python.log)"; tail -15 "$OUTDIR/build-python.log"
  fi
  MIXC=$BUILD/bin/mixc
  TORCH_LIB=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2> /dev/null || true)
  export LD_LIBRARY_PATH="$TORCH_LIB:${LD_LIBRARY_PATH:-}"
  ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2> /dev/null | head -1 | tr -d '.' || true)
  export MIXC_NVCC="$NVCC" MIXC_CUDA_ARCHS="${MIXC_CUDA_ARCHS:-${ARCH:-90}}"
  export MIXC_KERNEL_CACHE=${MIXC_KERNEL_CACHE:-/tmp/mixc-kernels}

  # 2. Step times. One config per bundle: the AR recipe with the bundle as
  # its model; the kernels first, every model at once (nvcc, c++).
  WORK=${GPU_CHECK_WORK:-/tmp/gpu-check}
  rm -rf "$WORK" && mkdir -p "$WORK"
  t0=$(date +%s)
  for b in "$DIR"/bundles/*; do
    n=$(basename "$b")
    sed -e "s|^file = .*|file = \"$(realpath "$b")\"|" -e "s|^cache_dir = .*|cache_dir = \"$WORK/data\"|" \
        examples/paper/base/ar.toml > "$WORK/$n.toml"
    printf '[model.config]\nd = %s\n' "${n##*-d}" >> "$WORK/$n.toml"
  done
  # (the data set is generated once, by the first run, then read from cache)
  "$MIXC" train "$WORK/$(basename "$(ls -d "$DIR"/bundles/* | head -1)").toml" --time-steps 1 > /dev/null 2>&1 || true
  ls "$WORK"/*.toml | xargs -P 8 -I{} sh -c \
    '"$0" train {} --time-steps 1 --backend generated --device $1 > /dev/null 2>&1; "$0" train {} --time-steps 1 --backend generated > /dev/null 2>&1' "$MIXC" "$DEVICE" || true
  say "2. kernels built for $(ls "$DIR"/bundles | wc -l) bundles in $(( $(date +%s) - t0 )) s"
  echo "model,d,gpu_generated_ms,gpu_libtorch_ms,cpu_generated_ms,gpu_generated_over_libtorch,gpu_over_cpu" > "$OUTDIR/throughput.csv"
  step_ms() { # step_ms CONFIG ARGS...: ms per training step (its step-timing.json), or "" when it fails
    rm -rf "$WORK/timed"
    "$MIXC" train "$@" --out "$WORK/timed" > /dev/null 2>&1 &&
      python3 -c 'import json, sys; print("%.3f" % (1000 * json.load(open(sys.argv[1]))["step_s"]), end="")' \
        "$WORK/timed/step-timing.json"
  }
  for b in "$DIR"/bundles/*-d64 "$DIR"/bundles/*-d128; do # d = 64 first
    [ "$(left)" -gt 200 ] || { say "2. step times: stopped for time"; break; }
    n=$(basename "$b")
    g=$(step_ms "$WORK/$n.toml" --time-steps 20 --backend generated --device "$DEVICE" || true)
    l=$(step_ms "$WORK/$n.toml" --time-steps 20 --backend libtorch --device "$DEVICE" || true)
    c=$(step_ms "$WORK/$n.toml" --time-steps 5 --backend generated || true)
    r1=$(awk -v g="$g" -v l="$l" 'BEGIN { if (g > 0 && l > 0) printf "%.2f", l / g }')
    r2=$(awk -v g="$g" -v c="$c" 'BEGIN { if (g > 0 && c > 0) printf "%.2f", c / g }')
    echo "${n%-d*},${n##*-d},$g,$l,$c,$r1,$r2" >> "$OUTDIR/throughput.csv"
  done
  say "2. step times (ms, batch 32 x 37 tokens): throughput.csv"
  column -s, -t "$OUTDIR/throughput.csv" | tee -a "$SUMMARY"
  # 2b. A pack of the d = 64 row's five learning rates (mixc train with five
  # configs: one program, LibTorch) per paper model, against one run alone.
  echo "model,d,replicas,gpu_pack_ms,gpu_alone_libtorch_ms,gpu_alone_generated_ms,cells_per_s_vs_libtorch,cells_per_s_vs_generated" > "$OUTDIR/packed.csv"
  for m in $PAPER; do
    [ -f "$WORK/$m-d64.toml" ] || continue
    [ "$(left)" -gt 220 ] || { say "2b. packed step times: stopped for time"; break; }
    files=()
    for lr in 1e-4 3e-4 1e-3 3e-3 1e-2; do
      sed -e "s|^lr = .*|lr = $lr|" -e "s|^dir = .*|dir = \"$WORK/pack-$m-$lr\"|" "$WORK/$m-d64.toml" > "$WORK/pack-$m-$lr.toml"
      files+=("$WORK/pack-$m-$lr.toml")
    done
    p=$(step_ms "${files[@]}" --time-steps 20 --device "$DEVICE" || true)
    row=$(grep "^$m,64," "$OUTDIR/throughput.csv" || true)
    l=$(echo "$row" | cut -d, -f4); g=$(echo "$row" | cut -d, -f3)
    rl=$(awk -v p="$p" -v a="$l" 'BEGIN { if (p > 0 && a > 0) printf "%.2f", 5 * a / p }')
    rg=$(awk -v p="$p" -v a="$g" 'BEGIN { if (p > 0 && a > 0) printf "%.2f", 5 * a / p }')
    echo "$m,64,5,$p,$l,$g,$rl,$rg" >> "$OUTDIR/packed.csv"
  done
  say "2b. packed step times (5 learning rates as one pack, ms a step of the pack): packed.csv"
  column -s, -t "$OUTDIR/packed.csv" | tee -a "$SUMMARY"

  # 3. cuda_check on the d = 64 models.
  if [ "$(left)" -gt 150 ]; then
    archs=()
    for g in "$DIR"/cuda-check/*.graph.json; do archs+=(--arch "$(basename "$g" .graph.json)"); done
    timeout $(( $(left) - 110 )) "$BUILD/bench/cuda_check" "$DIR/cuda-check" --device "$DEVICE" "${archs[@]}" > "$OUTDIR/cuda_check.txt" 2>&1 \
      && say "3. cuda_check: cuda_check.txt" || say "3. cuda_check: exit $? (cuda_check.txt)"
  fi

  # 4. The AR d = 64 row, all at once, until 50 s before the end.
  t0=$(date +%s)
  cells=$(grep -o 'bundles/[a-z_]*-d64' "$DIR/ar-d64.toml" | wc -l)
  timeout -s INT -k 20 $(( $(left) - 50 )) "$MIXC" sweep "$DIR/ar-d64.toml" --device "$DEVICE" $([ "$DEVICE" = cpu ] && echo "--jobs 2" || echo "--jobs-per-gpu $cells") \
    --backend generated --out "$WORK/ar" > "$OUTDIR/ar-sweep.log" 2>&1 || true
  echo "model,step,total_steps,eval_acc,eval_prob,tokens_per_s,finished" > "$OUTDIR/ar-d64.csv"
  for run in "$WORK"/ar/*/; do
    [ -f "$run/metrics.csv" ] || continue
    last=$(tail -1 "$run/metrics.csv")
    total=$(sed -n 's/.*total_steps = \([0-9]*\).*/\1/p' "$run/result.toml" 2> /dev/null || true)
    echo "$(basename "$run"),$(echo "$last" | cut -d, -f1),${total:-50016},$(echo "$last" | cut -d, -f6,7,8),$([ -f "$run/result.toml" ] && echo yes || echo no)" >> "$OUTDIR/ar-d64.csv"
  done
  say "4. AR d=64 row, $cells models at once on the GPU for $(( $(date +%s) - t0 )) s: ar-d64.csv"
  column -s, -t "$OUTDIR/ar-d64.csv" | tee -a "$SUMMARY"

  # 5. Python with this torch: a run of step 4 opened by the runtime-only
  # module, moved to the device with .to(); its logits against the CPU's,
  # and a backward there.
  run=$(ls -d "$WORK"/ar/*based*/ 2> /dev/null | head -1)
  if [ -f "$BUILD/python/mixc/__init__.py" ] && [ -n "$run" ] && [ -f "$run/checkpoint.pt" ]; then
    PYTHONPATH="$BUILD/python" timeout 40 python3 - "$run" "$DEVICE" > "$OUTDIR/python.txt" 2>&1 << 'PY' \
      && say "5. python: $(tail -1 "$OUTDIR/python.txt")" || say "5. python: FAILED (python.txt)"
import sys, torch, mixc
run, device = sys.argv[1], sys.argv[2]
cpu = mixc.load(run)
x = torch.randint(3, 100, (8, 37), generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    want = cpu(x)
dev = mixc.load(run).to(device)
got = dev(x.to(device))
got.sum().backward()
grads = sum(p.grad is not None for p in dev.parameters())
print(f"torch {torch.__version__}: {mixc.__file__}; {device} logits vs cpu max |diff| "
      f"{(got.detach().cpu() - want).abs().max().item():.2e}; {grads} parameter grads on {device}")
PY
  else
    say "5. python: skipped (no module or no run with a checkpoint)"
  fi
  say "total $(( $(date +%s) - START )) s"
  ;;
*)
  sed -n 2,33p "$0"
  exit 2
  ;;
esac
