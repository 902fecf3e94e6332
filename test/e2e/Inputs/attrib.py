"""Checks on attrib.csv files written by `mixc intervene` (used by lit tests).

  attrib.py FILE min LABEL X          the cell's Attrib is at least X
  attrib.py FILE close COL1 COL2 TOL  the two columns differ by at most TOL in every row
                                      (columns computed at different batch positions
                                      agree up to rounding, never bit for bit)
  attrib.py FILE same-as OTHER LABEL  the cell's p_patched in FILE equals OTHER's only cell
"""
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
    else:
        sys.exit(f"unknown check {what}")


main()
