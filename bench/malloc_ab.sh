#!/usr/bin/env bash
# Tokens/s of a training step with glibc's own malloc thresholds against the
# ones mixc sets (runtime/core/HostMemory.h: freed blocks stay in the
# process). One fresh process per row: glibc's thresholds adapt to what a
# process has freed so far, and once set they cannot be unset, so the two
# sides cannot share a process; GLIBC_TUNABLES gives the second process the
# same thresholds mixc sets. Rows alternate, REPS times.
# Usage: bench/malloc_ab.sh [BUILD] [REPS] [model:d ...]
set -euo pipefail
BUILD=${1:-build}; REPS=${2:-2}; shift $(( $# >= 2 ? 2 : $# ))
ROWS=("$@"); [ ${#ROWS[@]} -gt 0 ] || ROWS=(attention:64 mamba:64 deltanet:64 h3:128)
KEEP="glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=536870912"
tps() { "$BUILD/bench/train_throughput" --models "$1" --d "$2" --steps 40 --backend generated --malloc glibc 2>&1 |
        tail -1 | awk '{print $8}'; }
echo "# model d  glibc-tokens/s  keep-tokens/s  keep/glibc"
for ((r = 0; r < REPS; r++)); do
  for row in "${ROWS[@]}"; do
    m=${row%:*}; d=${row#*:}
    a=$(tps "$m" "$d"); b=$(GLIBC_TUNABLES=$KEEP tps "$m" "$d")
    awk -v m="$m" -v d="$d" -v a="$a" -v b="$b" 'BEGIN { printf "%-10s %4s %10d %10d %8.2fx\n", m, d, a, b, b / a }'
  done
done
