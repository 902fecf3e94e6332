"""The identities attribute-states.test checks on its attribution.csv."""
import csv
import sys

rows = {r["label"].replace("patch ", "").replace(" at key", ""): r for r in csv.DictReader(open(sys.argv[1]))}
est = {k: float(r["estimate"]) for k, r in rows.items()}
exact = {k: float(r["exact"]) for k, r in rows.items()}
scale = max(abs(v) for v in est.values())
assert scale > 1e-6, est


def close(a, b, what):  # attribution.csv keeps 6 decimals: a sum of three may be 1.5e-6 off
    assert abs(a - b) <= 2e-6 + 1e-4 * scale, (what, a, b)


for L in (0, 1):
    m = f"layers[{L}].mixer"
    close(est[f"{m}.scan.o"], est[f"{m}.scan"], "scan.o = scan")
    close(est[f"{m}.S"], est[f"{m}.scan._add13 -> {m}.S"], "S = _add13 -> S")
    close(est[f"{m}.scan._add13"], est[f"{m}.scan._add13 -> {m}.S"] + est[f"{m}.scan._add13 -> {m}.scan._mul15"],
          "_add13 = its two edges")
    close(est[f"{m}.scan.decayed"],
          est[f"{m}.scan.decayed -> {m}.scan._mul2"] + est[f"{m}.scan.decayed -> {m}.scan._sub8"],
          "decayed = its two edges")
m = "layers[1].mixer"
assert est[f"{m}.scan.o"] == 0 and exact[f"{m}.scan.o"] == 0, (est[f"{m}.scan.o"], exact[f"{m}.scan.o"])
assert abs(est[f"{m}.S"]) > 1e-6 and abs(est["layers[0].mixer.S"]) > 1e-6, est
# Layer 1's state moves the readout little: first order is close to the
# exact patch there (a gradient from the wrong step or row would not be).
assert abs(est[f"{m}.S"] - exact[f"{m}.S"]) <= 0.25 * abs(exact[f"{m}.S"]), (est[f"{m}.S"], exact[f"{m}.S"])
print("identities hold")
