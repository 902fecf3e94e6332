#!/usr/bin/env bash
# Where do Mamba, DeltaNet and Based hold the key → value association?
# Each trained AR model's recurrent state is patched from the clean run at
# the corrupted key and the four steps after it, per layer
# (examples/interventions/state-at-key*.rw), and at the task's roles (key,
# value, divider, query: state-by-role*.rw), protocol §6.1; the tables and
# heatmaps go to examples/paper/results-SCALE/state-at-key/.
#   bash examples/paper/state-at-key.sh medium   # the medium sweep's runs (runs/paper-medium/ar; best lr)
#   bash examples/paper/state-at-key.sh small    # trains the small preset's d = 64, lr 3e-3 runs (minutes each)
# MIXC=path runs another binary; RUNS=dir keeps the small runs elsewhere.
set -euo pipefail
cd "$(dirname "$0")/../.."
SCALE=${1:-small}
MIXC=${MIXC:-build/bin/mixc}
OUT=examples/paper/results-$SCALE/state-at-key
mkdir -p "$OUT"
[ -x "$MIXC" ] || bash scripts/build.sh

# The run of `model` to open: for medium the sweep cell with the higher
# accuracy (medium-run.sh); for small a run trained here with the small preset.
source examples/paper/medium-run.sh
run_of() {
  local model=$1
  if [ "$SCALE" = medium ]; then
    medium_run "$model"
    return
  fi
  local run=${RUNS:-runs/state-at-key-small}/$model
  if [ ! -f "$run/result.toml" ]; then
    mkdir -p "$run"
    cat > "$run.toml" <<TOML
# The small preset of examples/paper/ar.toml at d = 64, lr 3e-3.
[model]
file = "stdlib/$model.mix"
[model.config]
d = 64
[task]
name = "ar"
num_kv = 64
num_pairs = 2
cache_dir = ".cache/mixc"
[train]
epochs = 1
max_steps = 3000
eval_every = 500
checkpoint_every = 1000
lr = 3e-3
threads = 1
[output]
dir = "$run"
TOML
    "$MIXC" train "$run.toml" --quiet --backend auto >&2
  fi
  echo "$run"
}

for model in mamba deltanet based; do
  run=$(run_of "$model") || continue # said why; the others still run
  echo "== $model: $run (test accuracy $(sed -n 's/^eval_acc = //p' "$run/result.toml"))"
  for study in state-at-key state-by-role; do
    script=examples/interventions/$study.rw
    [ "$model" != based ] || script=examples/interventions/$study-based.rw
    "$MIXC" intervene "$run" "$script" --backend auto --out "$OUT/$model-$study" | tee "$OUT/$model-$study.txt"
  done
done
