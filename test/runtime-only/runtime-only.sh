#!/usr/bin/env bash
# The runtime-only build (-DMIXC_WITH_COMPILER=OFF: LibTorch, no LLVM/MLIR),
# configured and built here, against the full build's mixc:
#   1. it links no LLVM or MLIR;
#   2. a bundle from the full build (with an intervention script compiled in)
#      trains to the same loss curve on it as the .mix does on the full build,
#      on both back ends (same graph, same kernels: identical by construction);
#   3. `mixc eval` and `mixc intervene` (the script from the run's copy of the
#      bundle's rewrites) give the full build's numbers; a sweep over the
#      bundle runs its cells with their interventions;
#   4. what needs the compiler is refused with the way round it, exit 1;
# configured as bench/gpu_check.sh does on a GPU machine (no JSON or TOML
# package: the headers its preparation copies; no pybind11 package: the
# Python module takes the pybind11 headers torch ships), which it also checks.
#   usage: runtime-only.sh FULL_MIXC SOURCE_DIR WORK_DIR
set -euo pipefail
MIXC=$(realpath "$1")
SRC=$(realpath "$2")
WORK=$3
mkdir -p "$WORK"
WORK=$(realpath "$WORK")
fail() { echo "FAIL: $*"; exit 1; }

# bench/gpu_check.sh's preparation (one model here): bundles with their
# rewrites, cuda_check's inputs, the copied JSON/TOML headers, the AR sweep.
G=$WORK/gpu-check
(cd "$SRC" && GPU_CHECK_DIR="$G" GPU_CHECK_MODELS=based MIXC="$MIXC" bash bench/gpu_check.sh prepare > /dev/null) \
  || fail "gpu_check.sh prepare failed"
for f in bundles/based-d64/mixc-bundle bundles/based-d128/mixc-bundle cuda-check/based.graph.json cuda-check/based.cu \
         cuda-check/based.cpp include/nlohmann/json.hpp include/toml++/toml.h ar-d64.toml; do
  [ -s "$G/$f" ] || fail "gpu_check.sh prepare wrote no $f"
done
[ "$(ls "$G/bundles/based-d64/rewrites" | wc -l)" -eq 2 ] || fail "the prepared bundle lacks its 2 compiled scripts"
grep -q '"model.file" = \["bundles/based-d64"\]' "$G/ar-d64.toml" || fail "ar-d64.toml does not name the bundle"

# Configured as on the GPU machine: no JSON or TOML package, the prepared
# headers instead (TOML++ header-only); no pybind11 package. The build folder is kept between
# runs (incremental); the rest is fresh. Built at -O0 -g0, the hot files too
# (MIXC_HOT_FILES_O3=OFF): this build is checked for what it does, and the
# optimiser would take most of its compile time (it is one of the test
# command's longest steps). The numbers still match the full -O2/-O3 build:
# no flag here lets the compiler reorder or fuse float operations.
cmake -G Ninja -S "$SRC" -B "$WORK/build" -DMIXC_WITH_COMPILER=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g0 -DNDEBUG" -DMIXC_HOT_FILES_O3=OFF -DMIXC_VENDOR_INCLUDE="$G/include" \
  -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON -DCMAKE_DISABLE_FIND_PACKAGE_tomlplusplus=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_pybind11=ON > "$WORK/cmake.log" 2>&1 \
  || { cat "$WORK/cmake.log"; fail "the runtime-only configuration does not configure"; }
if grep -q "^MLIR_DIR:PATH=/" "$WORK/build/CMakeCache.txt"; then fail "the runtime-only configuration found MLIR (it must not look)"; fi
ninja -C "$WORK/build" mixc > "$WORK/ninja.log" 2>&1 || { tail -40 "$WORK/ninja.log"; fail "the runtime-only mixc does not build"; }
RT=$WORK/build/bin/mixc
T=$WORK/t
rm -rf "$T" && mkdir -p "$T"

# 1. No LLVM, no MLIR: neither shared libraries nor symbols.
if ldd "$RT" | grep -qi 'llvm\|mlir'; then fail "the runtime-only mixc loads LLVM/MLIR: $(ldd "$RT" | grep -i 'llvm\|mlir')"; fi
if nm -C "$RT" | grep -q ' mlir::\| llvm::'; then fail "the runtime-only mixc holds MLIR/LLVM code"; fi

# 2. Same loss curves.
RW=$SRC/examples/interventions
"$MIXC" compile "$SRC/stdlib/based.mix" -c d=32 -c vocab=36 --emit=bundle -o "$T/based.bundle" --rewrite "$RW/block-inputs.rw"
config() { # config NAME MODEL: tiny AR, 30 steps, into $T/NAME
  sed -e 's|^\[train\]|[train]\nmax_steps = 30|' -e 's|eval_every = 50|eval_every = 10|' \
      -e "s|dir = .*|dir = \"$T/$1\"|" -e "s|stdlib/based.mix|$2|" "$SRC/test/e2e/Inputs/tiny-ar.toml" > "$T/$1.toml"
}
curve() { cut -d, -f1,2,4,5,6,7 "$T/$1/metrics.csv"; } # without the wall-clock columns
for backend in libtorch generated; do
  config "mix-$backend" "$SRC/stdlib/based.mix"
  config "rt-$backend" "$T/based.bundle"
  "$MIXC" train "$T/mix-$backend.toml" --quiet --backend $backend
  "$RT" train "$T/rt-$backend.toml" --quiet --backend $backend
  diff <(curve "mix-$backend") <(curve "rt-$backend") || fail "$backend: the loss curves differ"
  [ "$(wc -l < "$T/rt-$backend/metrics.csv")" -ge 3 ] || fail "$backend: no curve"
done

# 3. eval and intervene agree.
diff <("$MIXC" eval "$T/mix-libtorch") <("$RT" eval "$T/rt-libtorch") || fail "eval differs"
"$MIXC" intervene "$T/mix-libtorch" "$RW/block-inputs.rw" --size 32 --out "$T/mix-int" > /dev/null
"$RT" intervene "$T/rt-libtorch" "$RW/block-inputs.rw" --size 32 --out "$T/rt-int" > /dev/null
diff "$T/mix-int/attrib.csv" "$T/rt-int/attrib.csv" || fail "intervene: the Attrib tables differ"
"$RT" intervene "$T/rt-generated" "$RW/block-inputs.rw" --size 32 --backend generated --out "$T/rt-int-gen" > /dev/null
[ "$(wc -l < "$T/rt-int-gen/attrib.csv")" -eq 9 ] || fail "intervene --backend generated: not 8 cells (2 layers x 4 positions)"

cat > "$T/sweep.toml" << SWEEP
[sweep]
name = "rt"
base = "rt-libtorch.toml"
out = "$T/sweep"
jobs = 1
[grid]
"train.lr" = [3e-3, 1e-2]
"train.max_steps" = 20
[interventions]
scripts = ["$RW/block-inputs.rw"]
size = 32
SWEEP
"$RT" sweep "$T/sweep.toml" > "$T/sweep.log" 2>&1 || { cat "$T/sweep.log"; fail "the sweep over a bundle failed"; }
[ "$(grep -c ',ok' "$T/sweep/results.csv")" -eq 2 ] || { cat "$T/sweep/results.csv"; fail "the sweep did not finish its 2 cells"; }
[ "$(wc -l < "$T/sweep/attrib.csv")" -eq 17 ] || fail "the sweep's Attrib table does not have 2 x 8 cells"

# The prepared AR sweep resolves its bundle and times it (dry run).
(cd "$SRC" && "$RT" sweep "$G/ar-d64.toml" --dry-run --out "$T/gpu-ar") > "$T/dry.log" 2>&1 \
  || { cat "$T/dry.log"; fail "the prepared AR sweep does not run dry"; }
grep -q "estimate: 1 cells to run" "$T/dry.log" || { cat "$T/dry.log"; fail "the dry run timed no cell"; }

# 3b. The runtime-only Python module (where pybind11 and python3-torch are
# installed): it opens the bundle's run with the full module's logits, runs
# the bundle's script as the CLI does, and refuses compile() saying why.
FULL_PY=$(dirname "$MIXC")/../python
if [ -d "$FULL_PY/mixc" ] && ninja -C "$WORK/build" _mixc > "$WORK/ninja-python.log" 2>&1; then
  check_logits='import sys, torch, mixc
x = torch.randint(0, 36, (4, 9), generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    torch.save(mixc.load(sys.argv[1])(x), sys.argv[2])'
  PYTHONPATH="$FULL_PY" /usr/bin/python3 -c "$check_logits" "$T/rt-libtorch" "$T/full-logits.pt"
  PYTHONPATH="$WORK/build/python" /usr/bin/python3 -c "$check_logits" "$T/rt-libtorch" "$T/rt-logits.pt"
  PYTHONPATH="$WORK/build/python" /usr/bin/python3 - "$T" "$RW" "$SRC" << 'PY' || fail "the runtime-only Python module"
import csv, sys, torch, mixc
T, RW, SRC = sys.argv[1:]
assert "build/python" in mixc.__file__ and "runtime-only" in mixc.__file__, mixc.__file__
assert torch.equal(torch.load(f"{T}/full-logits.pt"), torch.load(f"{T}/rt-logits.pt")), "logits differ from the full module's"
table = mixc.intervene(f"{T}/rt-libtorch", f"{RW}/block-inputs.rw", size=32, out=f"{T}/py-int")
rows = list(csv.DictReader(open(f"{T}/rt-int/attrib.csv")))
assert table["label"] == [r["label"] for r in rows]
assert all(abs(a - float(r["p_patched"])) < 1e-6 for a, r in zip(table["p_patched"], rows))
try:
    mixc.compile(f"{SRC}/stdlib/based.mix", d=16)
    raise AssertionError("compile() ran in the runtime-only module")
except RuntimeError as e:
    assert "needs the compiler" in str(e), e
PY
elif [ -d "$FULL_PY/mixc" ]; then
  tail -20 "$WORK/ninja-python.log"; fail "the runtime-only Python module does not build"
fi

# 4. Refusals, one line each, exit 1.
expect() { # expect PATTERN COMMAND...: fails with exit 1 and PATTERN in stderr
  local pattern=$1; shift
  set +e; "$@" > /dev/null 2> "$T/err"; local rc=$?; set -e
  [ $rc -eq 1 ] || fail "$* exited $rc, expected 1"
  grep -q -- "$pattern" "$T/err" || { cat "$T/err"; fail "$*: no '$pattern'"; }
}
expect "compiling $SRC/stdlib/based.mix needs the compiler, and this mixc is the runtime-only build" \
  "$RT" compile "$SRC/stdlib/based.mix"
expect "needs the compiler" "$RT" train "$T/mix-libtorch.toml" --out "$T/none"
expect "applying $RW/mixer-outputs.rw (it is not among the scripts compiled into $T/rt-libtorch/rewrites" \
  "$RT" intervene "$T/rt-libtorch" "$RW/mixer-outputs.rw"
expect "attribute without a script" "$RT" attribute "$T/rt-libtorch"
expect "error: --device=cuda" "$RT" train "$T/rt-libtorch.toml" --device cuda --out "$T/none"
echo "runtime-only: ok"
