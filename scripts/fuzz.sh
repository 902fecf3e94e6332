#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-16, ASan + UBSan) in build-fuzz/ and runs
# each for SECONDS (default 10) on its corpus in test/fuzz/corpus/<target>.
# New inputs go to a scratch folder; a crash leaves crash-* there and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-10}
OUT=${FUZZ_BUILD_DIR:-build-fuzz}
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac
CXX=${FUZZ_CXX:-clang++-16}
mkdir -p "$OUT"
# -DNDEBUG as in release builds: toml++ asserts on inputs its release build rejects cleanly.
FLAGS=(-std=c++17 -O1 -g -DNDEBUG -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -fsanitize-ignorelist="$PWD/test/fuzz/ignorelist.txt" -I"$PWD")
# The source lists come from CMake (mixc_record_sources): build first.
SOURCES=${FUZZ_SOURCES:-build/fuzz-sources.sh}
[ -f "$SOURCES" ] || { echo "fuzz: $SOURCES is missing; run scripts/build.sh first" >&2; exit 1; }
# shellcheck source=/dev/null
source "$SOURCES"
# Each source is compiled once (the support sources serve four targets) and
# in parallel: a ninja file written here, with the compiler's header
# dependencies (-MD), so a rerun rebuilds only what changed.
NINJA_FILE="$OUT/build.ninja"
{
  echo "# Written by scripts/fuzz.sh: the libFuzzer targets."
  echo "rule cxx"
  echo "  command = $CXX ${FLAGS[*]} -MD -MF \$out.d -c \$in -o \$out"
  echo "  depfile = \$out.d"
  echo "  deps = gcc"
  echo "rule link"
  echo "  command = $CXX ${FLAGS[*]} \$in -o \$out \$libs"
} > "$NINJA_FILE.new"
declare -A COMPILED=()
object() { # source: sets OBJ to its object's path, its build line written once
  OBJ="obj/${1#"$PWD"/}.o"
  if [ -z "${COMPILED[$OBJ]:-}" ]; then
    COMPILED[$OBJ]=1
    echo "build $OBJ: cxx $1" >> "$NINJA_FILE.new"
  fi
}
target() { # name sources...
  local name=$1 objs=() src; shift
  for src in "$PWD/test/fuzz/${name}_fuzzer.cpp" "$@"; do
    case "$src" in /*) ;; *) src="$PWD/$src" ;; esac
    object "$src"
    objs+=("$OBJ")
  done
  { echo "build ${name}_fuzzer: link ${objs[*]}"; echo "  libs = ${LIBS:-}"; } >> "$NINJA_FILE.new"
}
target dsl "${DSL_SOURCES[@]}" "${SUPPORT_SOURCES[@]}"
target rewrite "${DSL_SOURCES[@]}" "${SUPPORT_SOURCES[@]}"
target graph "${GRAPH_SOURCES[@]}"
LIBS=-ltomlplusplus target config "${CONFIG_SOURCES[@]}" "${SUPPORT_SOURCES[@]}"
target safetensors "${SUPPORT_SOURCES[@]}"
target bundle "${BUNDLE_SOURCES[@]}" "${GRAPH_SOURCES[@]}" "${SUPPORT_SOURCES[@]}"
cmp -s "$NINJA_FILE.new" "$NINJA_FILE" && rm "$NINJA_FILE.new" || mv "$NINJA_FILE.new" "$NINJA_FILE"
ninja -C "$OUT" -j "${FUZZ_JOBS:-$(nproc)}" > "$OUT/ninja.log" 2>&1 || { tail -40 "$OUT/ninja.log"; echo "fuzz: the targets do not build" >&2; exit 1; }
status=0
# Inputs that once crashed a target, replayed first.
for f in test/fuzz/regressions/*; do
  name=$(basename "$f"); name=${name%%-*}
  if ! ASAN_OPTIONS=detect_leaks=0 "$OUT/${name}_fuzzer" "$f" > /dev/null 2>&1; then
    echo "fuzz: regression $f FAILED"; status=1
  fi
done
# Seed inputs: each target's own corpus (inputs found by fuzzing) plus the
# project's real files of that kind, read in place rather than copied.
declare -A SEEDS=(
  [dsl]="stdlib test/DSL examples"
  [rewrite]="examples/interventions test/Rewrite/Inputs"
  [graph]=""
  [config]="examples/ar examples/paper/base test/e2e/Inputs"
  [safetensors]=""
  [bundle]=""
)
for name in dsl rewrite graph config safetensors bundle; do
  scratch=$(mktemp -d)
  seeds=()
  [ ! -d "test/fuzz/corpus/$name" ] || seeds+=("$PWD/test/fuzz/corpus/$name")
  for d in ${SEEDS[$name]}; do seeds+=("$PWD/$d"); done
  echo "fuzz: $name for ${SECONDS_EACH}s"
  dict=()
  [ ! -f "test/fuzz/$name.dict" ] || dict=(-dict="$PWD/test/fuzz/$name.dict")
  # -timeout (per input) 60 s: a seed such as test/DSL/errors/too-many-iterations.mix
  # elaborates 10^6 loop iterations before its error, 8-21 s under ASan on a
  # loaded 2-core machine; a real hang still ends the run as a timeout.
  if ! (cd "$scratch" && ASAN_OPTIONS=detect_leaks=0 "$OUT/${name}_fuzzer" "${dict[@]}" -max_total_time="$SECONDS_EACH" \
        -max_len=4096 -timeout=60 -rss_limit_mb=2048 -print_final_stats=0 "$scratch" "${seeds[@]}" \
        > "$scratch/log" 2>&1); then
    echo "fuzz: $name FAILED; input and log in $scratch"; tail -30 "$scratch/log"; status=1
  else
    grep -E "^#[0-9]+ *DONE" "$scratch/log" | tail -1 || true
    rm -rf "$scratch"
  fi
done
exit $status
