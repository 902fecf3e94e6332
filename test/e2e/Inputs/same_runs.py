"""Compares two runs' metrics.csv row by row: the same steps, and train loss,
eval accuracy and eval p(answer) within the given tolerances (0: equal as
written). Usage: same_runs.py RUN_A RUN_B LOSS_TOL ACC_TOL PROB_TOL"""
import csv
import sys

a_dir, b_dir = sys.argv[1], sys.argv[2]
loss_tol, acc_tol, prob_tol = (float(x) for x in sys.argv[3:6])
a = list(csv.DictReader(open(a_dir + "/metrics.csv")))
b = list(csv.DictReader(open(b_dir + "/metrics.csv")))
assert [r["step"] for r in a] == [r["step"] for r in b], ([r["step"] for r in a], [r["step"] for r in b])
assert len(a) >= 4, a
for ra, rb in zip(a, b):
    for key, tol in (("train_loss", loss_tol), ("eval_acc", acc_tol), ("eval_prob", prob_tol)):
        diff = abs(float(ra[key]) - float(rb[key]))
        assert diff <= tol, f"step {ra['step']}: {key} {ra[key]} vs {rb[key]} (tolerance {tol})"
print(f"same: {len(a)} rows, last step {a[-1]['step']}")
