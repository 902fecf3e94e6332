#!/usr/bin/env bash
# usage: stop_while_recording.sh MIXC SWEEP.toml OUT
# Runs the sweep with one job, holds OUT/.tables.lock from the moment the
# first cell trains until well after it has finished, sends SIGTERM to the
# sweep while it waits for that lock in its record step, then lets go.
# Prints "exit N" and the sweep's output.
set -u
mixc=$1 toml=$2 out=$3
"$mixc" sweep "$toml" --out "$out" --jobs 1 > "$out.log" 2>&1 &
sweep=$!
first=""
for _ in $(seq 600); do # the first cell's folder, once it trains
  first=$(grep -ls "^training" "$out"/*/log.txt 2>/dev/null | head -1)
  [ -n "$first" ] && break
  sleep 0.1
done
[ -n "$first" ] || { echo "no cell started"; kill "$sweep"; exit 1; }
cell=$(dirname "$first")
exec 9> "$out/.tables.lock"
flock 9 # held: the sweep's record of the first cell waits here
for _ in $(seq 600); do # the cell's runner is at its end (train, then its one script)
  [ -f "$cell/interventions/block-inputs/heatmap.svg" ] && break
  sleep 0.1
done
sleep 2 # the runner exits and the sweep's record waits on the lock
kill -TERM "$sweep"
sleep 0.5
flock -u 9
wait "$sweep"
echo "exit $?"
cat "$out.log"
