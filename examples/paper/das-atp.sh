#!/usr/bin/env bash
# Issue "Gradient attribution and trainable interventions" on the medium AR
# runs (d = 64, the paper's AR and recipe; the best lr per model, see
# medium-run.sh), for attention, Based, Mamba and DeltaNet:
#   - attribution patching (AtP) against exact patching on the block-input
#     grid (block-inputs.rw, `mixc attribute --check`), with the readout p
#     and logit_diff: the correlation and the worst-estimated cells;
#   - distributed alignment search at the layer-1 block input, value and
#     query, k ∈ {1, 2, 4, 8} (das-block-input.rw, `mixc align`, 2,000 steps;
#     STEPS=400 gives align's default budget): IIA beside the first k
#     channels and the whole vector.
# Tables (.txt) and folders go to examples/paper/results-medium/das-atp/.
#   bash examples/paper/das-atp.sh          # minutes per model on 2 cores
# MIXC=path runs another binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
MIXC=${MIXC:-build/bin/mixc}
OUT=examples/paper/results-medium/das-atp
mkdir -p "$OUT"
[ -x "$MIXC" ] || bash scripts/build.sh
source examples/paper/medium-run.sh

for model in ${MODELS:-attention based mamba deltanet}; do
  run=$(medium_run "$model") || continue # said why; the others still run
  echo "== $model: $run (test accuracy $(sed -n 's/^eval_acc = //p' "$run/result.toml"))"
  "$MIXC" attribute "$run" examples/interventions/block-inputs.rw --check --backend auto \
    --out "$OUT/$model-atp" | tee "$OUT/$model-atp.txt"
  "$MIXC" attribute "$run" examples/interventions/block-inputs-logit-diff.rw --check --backend auto \
    --out "$OUT/$model-atp-logit-diff" | tee "$OUT/$model-atp-logit-diff.txt"
  steps=${STEPS:-2000}
  "$MIXC" align "$run" examples/interventions/das-block-input.rw --backend auto --quiet --steps "$steps" \
    --out "$OUT/$model-das-${steps}steps" | tee "$OUT/$model-das-${steps}steps.txt"
  if [ "$model" = mamba ]; then # Mamba keeps the key's identity at the key (block-input Attrib 0.87)
    "$MIXC" align "$run" examples/interventions/das-block-input-key.rw --backend auto --quiet --steps "$steps" \
      --out "$OUT/$model-das-key-${steps}steps" | tee "$OUT/$model-das-key-${steps}steps.txt"
  fi
done
