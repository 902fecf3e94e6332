"""Checks on attrib.csv files written by `mixc intervene` (used by lit tests).

  attrib.py FILE min LABEL X          the cell's Attrib is at least X
  attrib.py FILE close COL1 COL2 TOL  the two columns differ by at most TOL in every row
                                      (columns computed at different batch positions
                                      agree up to rounding, never bit for bit)
  attrib.py FILE same-as OTHER LABEL  the cell's p_patched in FILE equals OTHER's only cell
  attrib.py FILE agrees OTHER TOL     every cell's p_patched and attrib in FILE are OTHER's
                                      (same labels) within TOL (another back end's run)
  attrib.py FILE interval             every kept cell has attrib_lo <= attrib <= attrib_hi, and
                                      some cell's interval has a width (documents differ)
  attrib.py FILE per-example          per-example.csv beside FILE gives back the readout's
                                      r_clean, r_corrupt, r_patched and attrib as means over
                                      documents (and p_* too when the readout is p)
"""
import os
import csv
import sys


def rows(path):
    return list(csv.DictReader(open(path)))


def cell(path, label):
    for r in rows(path):
        if r["label"] == label:
            return r
    sys.exit(f"{path}: no cell {label!r}")


def main():
    path, what = sys.argv[1], sys.argv[2]
    if what == "min":
        r = cell(path, sys.argv[3])
        if r["kept"] != "1" or float(r["attrib"]) < float(sys.argv[4]):
            sys.exit(f"Attrib of {sys.argv[3]!r} is {r['attrib']} (kept={r['kept']}), want >= {sys.argv[4]}")
    elif what == "close":
        a, b, tol = sys.argv[3], sys.argv[4], float(sys.argv[5])
        for r in rows(path):
            if abs(float(r[a]) - float(r[b])) > tol:
                sys.exit(f"{r['label']}: {a}={r[a]} but {b}={r[b]} (tolerance {tol})")
    elif what == "same-as":
        a = float(cell(path, sys.argv[4])["p_patched"])
        b = float(rows(sys.argv[3])[0]["p_patched"])
        if abs(a - b) > 1e-5:
            sys.exit(f"batched p_patched {a} but alone {b}")
    elif what == "agrees":
        other, tol = {r["label"]: r for r in rows(sys.argv[3])}, float(sys.argv[4])
        mine = rows(path)
        if sorted(other) != sorted(r["label"] for r in mine):
            sys.exit(f"cells differ: {sorted(other)} vs {[r['label'] for r in mine]}")
        for r in mine:
            for col in ("p_patched", "attrib"):
                a, b = float(r[col]), float(other[r["label"]][col])
                if abs(a - b) > tol:
                    sys.exit(f"{r['label']}: {col} {a} here but {b} in {sys.argv[3]} (tolerance {tol})")
    elif what == "interval":
        widths = []
        for r in rows(path):
            if r["kept"] != "1":
                continue
            lo, a, hi = float(r["attrib_lo"]), float(r["attrib"]), float(r["attrib_hi"])
            if not lo - 1e-6 <= a <= hi + 1e-6:
                sys.exit(f"{r['label']}: Attrib {a} outside its interval [{lo}, {hi}]")
            widths.append(hi - lo)
        if not widths or max(widths) <= 0:
            sys.exit(f"no kept cell has an interval of positive width: {widths}")
    elif what == "per-example":
        docs = rows(os.path.join(os.path.dirname(path), "per-example.csv"))
        n = len(docs)
        mean = lambda col: sum(float(d[col]) for d in docs) / n
        for r in rows(path):
            ro, rc = mean(r["readout"] + "_clean"), mean(r["readout"] + "_corrupt")
            rp = mean("c" + r["cell"])
            want = {"r_clean": ro, "r_corrupt": rc, "r_patched": rp}
            if r["kept"] == "1":
                want["attrib"] = (rp - rc) / (ro - rc)
            if r["readout"] == "p":  # then the readout is p(true answer) itself
                want.update({"p_clean": ro, "p_corrupt": rc, "p_patched": rp})
            for col, v in want.items():
                if abs(float(r[col]) - v) > 1e-5:
                    sys.exit(f"{r['label']}: {col} is {r[col]}, per-example.csv gives {v}")
    else:
        sys.exit(f"unknown check {what}")


main()
