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
       -fsanitize-ignorelist=test/fuzz/ignorelist.txt -I.)
DSL=(dsl/Diagnostics.cpp dsl/Lexer.cpp dsl/Parser.cpp dsl/ASTPrinter.cpp dsl/Builtins.cpp
     dsl/Elaborator.cpp dsl/Frontend.cpp dsl/Rewrite.cpp support/TextFile.cpp)
build() { # name sources...
  local name=$1; shift
  local bin="$OUT/${name}_fuzzer"
  if [ ! -x "$bin" ] || [ -n "$(find "$@" test/fuzz/${name}_fuzzer.cpp dsl support runtime/graph runtime/train runtime/tasks -newer "$bin" -name '*.[ch]*' 2>/dev/null | head -1)" ]; then
    "$CXX" "${FLAGS[@]}" "test/fuzz/${name}_fuzzer.cpp" "$@" -o "$bin" ${LIBS:-}
  fi
}
build dsl "${DSL[@]}"
build rewrite dsl/Diagnostics.cpp dsl/Rewrite.cpp dsl/Elaborator.cpp dsl/Builtins.cpp dsl/Parser.cpp dsl/Lexer.cpp support/TextFile.cpp
build graph runtime/graph/GraphJson.cpp
LIBS=-ltomlplusplus build config runtime/train/Config.cpp runtime/tasks/Dataset.cpp runtime/tasks/AR.cpp runtime/tasks/ATR.cpp runtime/tasks/Task.cpp support/Stop.cpp
status=0
# Inputs that once crashed a target, replayed first.
for f in test/fuzz/regressions/*; do
  name=$(basename "$f"); name=${name%%-*}
  if ! ASAN_OPTIONS=detect_leaks=0 "$OUT/${name}_fuzzer" "$f" > /dev/null 2>&1; then
    echo "fuzz: regression $f FAILED"; status=1
  fi
done
for name in dsl rewrite graph config; do
  scratch=$(mktemp -d)
  echo "fuzz: $name for ${SECONDS_EACH}s"
  dict=()
  [ ! -f "test/fuzz/$name.dict" ] || dict=(-dict="$PWD/test/fuzz/$name.dict")
  if ! (cd "$scratch" && ASAN_OPTIONS=detect_leaks=0 "$OUT/${name}_fuzzer" "${dict[@]}" -max_total_time="$SECONDS_EACH" \
        -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=0 "$scratch" "$OLDPWD/test/fuzz/corpus/$name" \
        > "$scratch/log" 2>&1); then
    echo "fuzz: $name FAILED; input and log in $scratch"; tail -30 "$scratch/log"; status=1
  else
    grep -E "^#[0-9]+ *DONE" "$scratch/log" | tail -1 || true
    rm -rf "$scratch"
  fi
done
exit $status
