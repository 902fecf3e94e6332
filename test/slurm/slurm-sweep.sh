#!/usr/bin/env bash
# `mixc sweep --engine=slurm` against a real SLURM: starts munged, slurmctld
# and slurmd for one node on this machine (a configuration written here: no
# cgroups, no accounting database, ports and folders of its own), then
#   1. submits a 3-cell sweep as a job array, waits for it, and checks that
#      its results table equals the same sweep run locally (same cells, same
#      accuracies: same seeds) and that `mixc report` reads it;
#   2. submits a 2-cell sweep whose d = 32 cell runs long, cancels the job
#      (scancel) once that cell has a checkpoint and the other has finished,
#      resubmits, and checks that the finished cell was not run again and
#      the cancelled one resumed from its checkpoint;
# and stops the daemons it started, by their pids.
#   usage: slurm-sweep.sh MIXC WORKDIR
# Exit 77 (ctest: skipped) with the reason when SLURM is not installed or
# cannot start here; scripts/setup.sh installs slurm-wlm and munge.
set -euo pipefail
MIXC=$(realpath "$1")
WORK=$2
HERE=$(cd "$(dirname "$0")" && pwd)
SWEEP=$HERE/Inputs/slurm-sweep.toml
skip() { echo "SKIP: $*"; exit 77; }
for p in munged slurmctld slurmd sbatch squeue scancel sinfo; do
  command -v "$p" > /dev/null || [ -x "/usr/sbin/$p" ] || skip "$p is not installed (scripts/setup.sh installs slurm-wlm and munge)"
done
export PATH=$PATH:/usr/sbin
rm -rf "$WORK" && mkdir -p "$WORK"/{state,spool,log}
WORK=$(realpath "$WORK")
USER_NAME=$(id -un)
NODE=$(hostname -s)
PORT=$((20000 + $$ % 20000))
export SLURM_CONF=$WORK/slurm.conf

stop_daemons() { # TERM, then KILL whatever has not exited within 10 s
  local pids=()
  for f in slurmd slurmctld munged; do
    [ -s "$WORK/$f.pid" ] && pids+=("$(cat "$WORK/$f.pid")")
  done
  [ ${#pids[@]} -gt 0 ] || return 0
  kill "${pids[@]}" 2> /dev/null || true
  for i in $(seq 100); do
    kill -0 "${pids[@]}" 2> /dev/null || return 0
    sleep 0.1
  done
  kill -9 "${pids[@]}" 2> /dev/null || true
}
trap stop_daemons EXIT
fail() {
  echo "FAIL: $*"
  for f in "$WORK"/log/*.log; do echo "--- $f"; tail -20 "$f"; done
  exit 1
}

# munge: a key of our own, a socket of our own.
mungekey --create --keyfile="$WORK/munge.key" 2> /dev/null || dd if=/dev/urandom of="$WORK/munge.key" bs=1 count=1024 2> /dev/null
chmod 600 "$WORK/munge.key"
munged --force --key-file="$WORK/munge.key" --socket="$WORK/munge.socket" --pid-file="$WORK/munged.pid" \
  --log-file="$WORK/log/munged.log" --seed-file="$WORK/munge.seed" \
  || skip "munged does not start here: $(tail -1 "$WORK/log/munged.log" 2> /dev/null)"

cat > "$SLURM_CONF" << CONF
ClusterName=mixctest
SlurmctldHost=$NODE
SlurmUser=$USER_NAME
SlurmdUser=$USER_NAME
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
AuthType=auth/munge
AuthInfo=socket=$WORK/munge.socket
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/log/slurmctld.log
SlurmdLogFile=$WORK/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
KillWait=60
NodeName=$NODE CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -f "$SLURM_CONF" || skip "slurmctld does not start here: $(tail -3 "$WORK/log/slurmctld.log" 2> /dev/null)"
slurmd -f "$SLURM_CONF" || skip "slurmd does not start here: $(tail -3 "$WORK/log/slurmd.log" 2> /dev/null)"
for i in $(seq 60); do
  sinfo -h -o %t 2> /dev/null | grep -q idle && break
  [ "$i" = 60 ] && skip "the node never became idle: $(sinfo 2>&1 | tail -1); $(tail -3 "$WORK/log/slurmd.log")"
  sleep 0.5
done
echo "SLURM up: node $NODE, ports $PORT-$((PORT + 1))"

# Waits until `mixc sweep ... --status` reports $2 finished cells (at most $3 s).
wait_finished() {
  local args=$1 want=$2 limit=$3
  for i in $(seq "$limit"); do
    "$MIXC" sweep $args --status | grep -q "^sweep .*: .*$want finished" && return 0
    sleep 1
  done
  "$MIXC" sweep $args --status
  fail "not $want finished cells after $limit s"
}

# 1. Three cells as a job array, against the same sweep run locally.
"$MIXC" sweep "$SWEEP" --out "$WORK/sw" --engine=slurm | tee "$WORK/submit1.out"
grep -q "^submitted job [0-9]*: 3 cells" "$WORK/submit1.out" || fail "no submission"
wait_finished "$SWEEP --out $WORK/sw" 3 300
"$MIXC" sweep "$SWEEP" --out "$WORK/sw" --engine=slurm | grep -q "nothing to submit" || fail "a finished sweep was submitted again"
"$MIXC" sweep "$SWEEP" --out "$WORK/local" --jobs 2 > /dev/null
python3 - "$WORK/sw" "$WORK/local" << 'PY'
import csv, sys
slurm, local = ({r["cell"]: r for r in csv.DictReader(open(d + "/results.csv"))} for d in sys.argv[1:])
assert sorted(slurm) == sorted(local) and len(slurm) == 3, (sorted(slurm), sorted(local))
for c in slurm:
    for k in ("status", "step", "eval_acc", "eval_prob"):
        assert slurm[c][k] == local[c][k], (c, k, slurm[c][k], local[c][k])
a = [r for r in csv.DictReader(open(sys.argv[1] + "/attrib.csv"))]
assert len(a) == 3 * 8, len(a)
print("the SLURM sweep's results equal the local run's:", {c: slurm[c]["eval_acc"] for c in sorted(slurm)})
PY
"$MIXC" report "$WORK/sw" -o "$WORK/report/report.md" --title "SLURM" > /dev/null
grep -q "3 runs finished" "$WORK/report/report.md" || fail "the report does not read the SLURM sweep"

# 2. Cancel midway, resubmit: nothing finished is run again, the cancelled cell resumes.
LONG="$SWEEP --scale cancel --out $WORK/cancel"
SHORT=d16__lr0.003__max_steps60
"$MIXC" sweep $LONG --engine=slurm --slurm time=00:20:00 --dry-run | grep -q '^#SBATCH --time="00:20:00"' \
  || fail "--slurm time did not reach the script"
JOB=$("$MIXC" sweep $LONG --engine=slurm | sed -n 's/^submitted job \([0-9]*\):.*/\1/p')
[ -n "$JOB" ] || fail "no job id for the second submission"
echo "second submission: job $JOB"
LONGCELL=$WORK/cancel/d16__lr0.003__max_steps6000
# Cancel once the long cell has a checkpoint and the short one has finished
# (its row is in the table), polling the files: cheaper than --status.
for i in $(seq 3000); do
  [ -f "$LONGCELL/checkpoint.pt" ] && grep -qs "^[^,]*,$SHORT," "$WORK/cancel/results.csv" && break
  [ "$i" = 3000 ] && { "$MIXC" sweep $LONG --status; fail "no checkpoint of the long cell"; }
  sleep 0.1
done
scancel "$JOB"
for i in $(seq 120); do
  [ -z "$(squeue -h -j "$JOB" 2> /dev/null)" ] && break
  sleep 0.5
done
"$MIXC" sweep $LONG --status | tee "$WORK/status-cancelled.out"
grep -q "^finished .*$SHORT" "$WORK/status-cancelled.out" || fail "the short cell did not finish before the cancel"
grep -q "^interrupted .*max_steps6000" "$WORK/status-cancelled.out" || fail "the cancelled cell is not shown as interrupted"
before=$(md5sum < "$WORK/cancel/$SHORT/metrics.csv")
"$MIXC" sweep $LONG --engine=slurm | tee "$WORK/submit3.out"
grep -q "^submitted job [0-9]*: 1 cells" "$WORK/submit3.out" || fail "the resubmission is not the one unfinished cell"
wait_finished "$LONG" 2 300
[ "$(md5sum < "$WORK/cancel/$SHORT/metrics.csv")" = "$before" ] || fail "the finished cell ran again"
grep -q "resuming" "$LONGCELL/log.txt" || fail "the cancelled cell did not resume from its checkpoint"
python3 - "$WORK/cancel" << 'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/results.csv")))
assert sorted(r["cell"] for r in rows) == ["d16__lr0.003__max_steps60", "d16__lr0.003__max_steps6000"], rows
assert all(r["status"] == "ok" for r in rows), rows
assert [r["step"] for r in rows if r["cell"].endswith("6000")] == ["6000"], rows
PY
echo "PASS: a SLURM sweep equals the local one; cancel + resubmit lost and reran nothing"
