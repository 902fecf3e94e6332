#!/usr/bin/env bash
# Runs mixc's writers against a full disk: a small tmpfs mounted in a private
# mount namespace (run under `unshare -rm`, so nothing outside sees it).
# Prints each command's exit status and the temporaries left, for FileCheck.
# Usage: full_disk.sh MIXC WORKDIR CONFIG SCRIPT
set -u
mixc=$1 work=$2 config=$3 script=$4
disk=$work/disk
mkdir -p "$disk"
mount -t tmpfs -o size=500k tmpfs "$disk" || { echo "cannot mount a tmpfs"; exit 1; }
leftovers() { echo "$1 temporaries: $(find "$disk" -name '*.tmp*' | wc -l)"; }

# Room for one checkpoint (about 330 KB) but not for a second beside it.
"$mixc" train "$config" --quiet --out "$disk/run" 2>&1
echo "train exit $?"
leftovers train
"$mixc" eval "$disk/run" 2>&1
echo "eval exit $?"

# Fill what is left: nothing more fits.
head -c 1000000 /dev/zero > "$disk/filler" 2>/dev/null
"$mixc" export "$disk/run" -o "$disk/weights.safetensors" 2>&1
echo "export exit $?"
"$mixc" intervene "$disk/run" "$script" --size 32 --out "$disk/int" 2>&1 | grep -v '^layer\|^cell\|^based_lm'
echo "intervene exit ${PIPESTATUS[0]}"
"$mixc" train "$config" --quiet --out "$disk/run2" 2>&1
echo "second train exit $?"
# The task cache on the full disk: the run (elsewhere) trains, and no cache
# file is left, truncated or not.
"$mixc" train "$config" --quiet --out "$work/cache-run" --set task.cache_dir="$disk/cache" > /dev/null 2>&1
echo "cache train exit $?"
echo "cache files: $(find "$disk/cache" -type f 2>/dev/null | wc -l)"
leftovers all
"$mixc" eval "$disk/run" 2>&1
echo "eval again exit $?"
