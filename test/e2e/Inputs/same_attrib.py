"""Compares two sweeps' attrib.csv: the same (cell, script, intervention,
readout) rows, and in each the probabilities (clean, corrupt, patched) and
the Attrib within the tolerance.
Usage: same_attrib.py SWEEP_A SWEEP_B TOL"""
import csv
import sys

a_dir, b_dir, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])


def rows(folder):
    table = list(csv.DictReader(open(folder + "/attrib.csv")))
    keyed = {}
    for r in table:
        key = (r["cell"], r["script"], r["intervention"], r["readout"])
        keyed[key] = [float(r[k] or 0) for k in ("p_clean", "p_corrupt", "p_patched", "attrib")]
    return keyed


a, b = rows(a_dir), rows(b_dir)
assert a.keys() == b.keys(), sorted(set(a) ^ set(b))[:4]
assert a, "no rows"
worst = max(abs(x - y) for k in a for x, y in zip(a[k], b[k]))
assert worst <= tol, f"largest difference {worst} (tolerance {tol})"
print(f"same: {len(a)} Attrib rows, largest difference {worst:.2g}")
