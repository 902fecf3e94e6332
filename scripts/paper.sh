#!/usr/bin/env bash
# Runs the paper's experiments (examples/paper/*.toml) at a scale and writes
# the report with its CSVs and plots to examples/paper/results-<scale>/.
#   bash scripts/paper.sh medium   # the paper's tasks and recipe at d = 64 (hours on 2 cores)
#   bash scripts/paper.sh small    # ~1 hour on a 2-core CPU
#   bash scripts/paper.sh          # the full recipe (GPU-scale: weeks on a CPU)
# JOBS=N sets the runs at once (default: one per core); SWEEPS="ar atr" a subset;
# MIXC=path runs another mixc binary (e.g. a copy, so rebuilding does not
# change the binary under a running sweep).
# Resumable: run it again after an interruption and finished runs are kept.
# On a fresh checkout the committed results-<scale>/csv/ tables seed the
# sweep folders, so finished cells are not run again.
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${1:-full}
RUNS=${RUNS:-runs/paper-$SCALE}
OUT=examples/paper/results-$SCALE
MIXC=${MIXC:-build/bin/mixc}
[ -x "$MIXC" ] || bash scripts/build.sh
scale_flag=()
[ "$SCALE" = full ] || scale_flag=(--scale "$SCALE")
jobs_flag=()
[ -z "${JOBS:-}" ] || jobs_flag=(--jobs "$JOBS")
# The learning-rate protocol's sweeps (issue 55) come last: the contradicting
# cells at the paper's other rates, then a second seed.
PAPER_SWEEPS="ar conv-ablation atr atr-mamba-noconv mamba-internals seeds full-length widths widths-128 hybrids \
hybrids-attention-first lr-protocol-mamba-narrow lr-protocol-mamba-seeds lr-protocol-mamba-dconv2 lr-protocol-mamba-dconv2-seed lr-protocol-attention-128 \
ar-1layer ar-nope ar-reverse ar-3layer atr-vocab8192"
read -r -a SWEEPS <<< "${SWEEPS:-$PAPER_SWEEPS}"
for s in "${SWEEPS[@]}"; do
  file="examples/paper/$s.toml"
  if [ "$SCALE" != full ] && ! grep -q "^\[scale\.$SCALE\]" "$file"; then
    echo "paper.sh: $s has no [scale.$SCALE] preset: skipped"
    continue
  fi
  mkdir -p "$RUNS/$s"
  for t in results attrib; do
    if [ ! -f "$RUNS/$s/$t.csv" ] && [ -f "$OUT/csv/$s-$t.csv" ]; then
      cp "$OUT/csv/$s-$t.csv" "$RUNS/$s/$t.csv"
    fi
  done
  "$MIXC" sweep "$file" "${scale_flag[@]}" "${jobs_flag[@]}" --out "$RUNS/$s" || status=$?
  [ "${status:-0}" -ne 130 ] || exit 130 # interrupted: run again to continue
done
# The report covers every sweep of this scale that has a folder, not only
# the ones run now (SWEEPS="atr" must not drop AR from the report), then the
# sweeps kept from an earlier preset (a committed csv/NAME-meta.toml, e.g.
# ATR at 8 epochs), each a folder of its own rebuilt from its tables.
dirs=()
read -r -a ALL <<< "$PAPER_SWEEPS"
for s in "${ALL[@]}"; do [ -f "$RUNS/$s/sweep-meta.toml" ] && dirs+=("$RUNS/$s"); done
for meta in "$OUT"/csv/*-meta.toml; do
  [ -f "$meta" ] || continue
  name=$(basename "$meta" -meta.toml)
  mkdir -p "$RUNS/$name"
  cp "$meta" "$RUNS/$name/sweep-meta.toml"
  for t in results attrib; do
    [ -f "$OUT/csv/$name-$t.csv" ] && cp "$OUT/csv/$name-$t.csv" "$RUNS/$name/$t.csv"
  done
  dirs+=("$RUNS/$name")
done
title="Mechanistic evaluation on AR and ATR — scale: $SCALE"
"$MIXC" report "${dirs[@]}" -o "$OUT/report.md" --title "$title"
# The comparison with the paper (results-medium/csv/paper-comparison.csv),
# rebuilt from the tables the report just copied, then opens the report.
if [ "$SCALE" = medium ]; then
  python3 examples/paper/paper_comparison.py
  "$MIXC" report "${dirs[@]}" -o "$OUT/report.md" --compare "$OUT/csv/paper-comparison.csv" --title "$title"
fi
