#!/usr/bin/env bash
# Runs the paper's experiments (examples/paper/*.toml) at a scale and writes
# the report with its CSVs and plots to examples/paper/results-<scale>/.
#   bash scripts/paper.sh small    # ~1 hour on a 2-core CPU
#   bash scripts/paper.sh          # the full recipe (GPU-scale: weeks on a CPU)
# Resumable: run it again after an interruption and finished runs are kept.
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${1:-full}
RUNS=${RUNS:-runs/paper-$SCALE}
OUT=examples/paper/results-$SCALE
[ -x build/bin/mixc ] || bash scripts/build.sh
scale_flag=()
[ "$SCALE" = full ] || scale_flag=(--scale "$SCALE")
SWEEPS=(ar atr conv-ablation atr-mamba-noconv mamba-internals)
dirs=()
for s in "${SWEEPS[@]}"; do
  build/bin/mixc sweep "examples/paper/$s.toml" "${scale_flag[@]}" --out "$RUNS/$s"
  dirs+=("$RUNS/$s")
done
build/bin/mixc report "${dirs[@]}" -o "$OUT/report.md" \
  --title "Mechanistic evaluation on AR and ATR — scale: $SCALE"
