"""Two `mixc train` on one run folder: the second is refused, naming the
first's pid, and nothing of the first is lost.

usage: two_writers.py MIXC CONFIG RUN_DIR
"""
import csv
import os
import subprocess
import sys
import time

mixc, config, run = sys.argv[1:4]
first = subprocess.Popen([mixc, "train", config, "--quiet", "--out", run],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
# Wait until the first holds the folder: its lock file names its pid and it
# has written its first metrics row.
deadline = time.time() + 120
while time.time() < deadline:
    try:
        with open(os.path.join(run, ".lock")) as f:
            holder = f.read().strip()
        if holder == str(first.pid) and os.path.exists(os.path.join(run, "metrics.csv")):
            break
    except FileNotFoundError:
        pass
    if first.poll() is not None:
        sys.exit("the first writer ended before the second could start: %s" % first.stderr.read())
    time.sleep(0.05)
else:
    sys.exit("the first writer never took the folder")

# The second writer: a different learning rate, so its config would show.
second = subprocess.run([mixc, "train", config, "--quiet", "--out", run, "--max-steps", "7"],
                        capture_output=True, text=True)
print("second exit %d: %s" % (second.returncode, second.stderr.strip()))
assert second.returncode == 1, second
assert ("is in use by another mixc process (pid %d)" % first.pid) in second.stderr, second.stderr
# --resume is a writer too.
resumed = subprocess.run([mixc, "train", config, "--quiet", "--out", run, "--resume"],
                         capture_output=True, text=True)
assert resumed.returncode == 1, resumed
assert "is in use by another mixc process" in resumed.stderr or "checkpoint.pt is missing" in resumed.stderr, resumed.stderr

out, err = first.communicate(timeout=600)
assert first.returncode == 0, err
# The first run is whole: its own config, every evaluation row, a result.
with open(os.path.join(run, "config.toml")) as f:
    assert f.read() == open(config).read()
rows = list(csv.DictReader(open(os.path.join(run, "metrics.csv"))))
steps = [int(r["step"]) for r in rows]
assert steps == sorted(steps) and steps[0] == 0, steps
with open(os.path.join(run, "result.toml")) as f:
    result = f.read()
assert "step = %d" % steps[-1] in result, (result, steps)
print("first finished: %d metrics rows up to step %d" % (len(rows), steps[-1]))
