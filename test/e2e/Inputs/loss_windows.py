"""Checks a run's loss.csv against its metrics.csv: rows every log_every steps
(eval_every / 10 by default), and at every evaluation after step 0 the
window's train loss and accuracy equal the mean of the loss.csv rows in it
(the windows nest: eval_every is a multiple of log_every here)."""
import csv
import sys

run = sys.argv[1]
metrics = list(csv.DictReader(open(f"{run}/metrics.csv")))
logged = list(csv.DictReader(open(f"{run}/loss.csv")))
steps = [int(r["step"]) for r in logged]
every = steps[0]
assert every >= 1 and steps == list(range(every, every * len(steps) + 1, every)), steps[:5]
for prev, row in zip(metrics, metrics[1:]):
    lo, hi = int(prev["step"]), int(row["step"])
    inside = [r for r in logged if lo < int(r["step"]) <= hi]
    assert inside, (lo, hi)
    for key in ("train_loss", "train_acc"):
        mean = sum(float(r[key]) for r in inside) / len(inside)
        assert abs(mean - float(row[key])) <= 1e-5, (key, hi, mean, row[key])
print(f"{len(logged)} loss rows, every {every} steps, agree with {len(metrics) - 1} evaluations")
