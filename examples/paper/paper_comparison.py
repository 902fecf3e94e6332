"""Writes results-medium/csv/paper-comparison.csv (issue 55 item 5): one row
per quantity the reference paper reports that mixc measured (or has not run),
with the paper's figure, mixc's, the rates and seeds behind mixc's, a verdict
and its explanation. mixc's figures are read from the committed tables in
results-medium/csv/ (never typed here); the paper's are those of
shared/reference/paper-results.md. `seeds` lists every initialisation run at
the chosen rate with its accuracy ("seed: %").

    python3 examples/paper/paper_comparison.py            # rewrites the CSV

Selection, as the paper's: the best checkpoint over the learning rates run,
for one (architecture, d, setting), initialisation seed 42 (other seeds are
counted in `seeds`, not chosen from). Verdicts, by one rule:
  - not run: mixc has no cell for it;
  - contradicts: one side recalls (>= 50 %) and the other does not;
  - reproduced: otherwise, within 5 points (or inside a range read off the
    paper's figure, widened by 5 points);
  - differs: otherwise.
Mechanism rows (attrib-*) compare the layer-1 block input's Attrib at the
value (induction ≈ 1, direct retrieval ≈ 0): reproduced within 0.1.
"""
import csv
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
CSV = os.path.join(HERE, "results-medium", "csv")
ARCHS = ["attention", "based", "mamba", "hyena", "baseconv", "h3", "deltanet"]

# Each sweep's table, and what a row that lacks an axis column has (the
# sweep's fixed value).
SWEEPS = {
    "ar": {"model.config.d": "64"},
    "widths": {},
    "widths-128": {"model.config.d": "128"},
    "lr-protocol-mamba-narrow": {"model.file": "stdlib/mamba.mix"},
    "lr-protocol-mamba-seeds": {"model.file": "stdlib/mamba.mix"},
    "lr-protocol-attention-128": {"model.file": "stdlib/attention.mix", "model.config.d": "128"},
    "lr-protocol-mamba-dconv2": {"model.file": "stdlib/mamba.mix", "model.config.d": "64", "model.config.d_conv": "2"},
    "lr-protocol-mamba-dconv2-seed": {"model.file": "stdlib/mamba.mix", "model.config.d": "64",
                                      "model.config.d_conv": "2", "train.lr": "0.001"},
    "conv-ablation": {"model.file": "stdlib/mamba.mix", "model.config.d": "64"},
    "seeds": {"model.file": "stdlib/mamba.mix", "model.config.d": "64"},
}
ATR_SWEEPS = {"atr": {"model.config.d": "64"}}

# The paper's AR table (reference §5.1), best over its seven rates.
PAPER_AR = {
    "attention": [6.56, 100, 100, 100, 100],
    "based": [24.38, 93.12, 99.06, 98.75, 99.06],
    "mamba": [10.00, 76.88, 80.62, 89.69, 91.25],
    "hyena": [0.62, 0.94, 2.81, 13.75, 29.69],
    "baseconv": [0.00, 0.94, 3.75, 6.56, 9.69],
    "h3": [0.94, 0.62, 1.88, 2.50, 1.56],
}
WIDTHS = [16, 32, 64, 128, 256]
# Mamba's conv ablation on AR (reference §5.4, read off the figure): d = 64.
PAPER_CONV = {0: (None, 5), 1: (None, 5), 2: (91, 91), 3: (91, 91), 4: (81, 81)}
# ATR, L = 5, |Σ| = 20 (reference §5.2): ranges over d = 16 … 256 read off the figure.
PAPER_ATR = {"mamba": (91, 97), "attention": (68, 96), "based": (82, 93), "h3": (76, 94), "hyena": (76, 94),
             "baseconv": (67, 90)}

# Why a row reads as it does, where the numbers alone do not say (keyed by
# experiment, arch, d, setting).
EXPLAIN = {
    ("AR", "attention", 128, ""): "at 1e-3 and 3e-3 attention fits the training documents (train accuracy 100 % and "
    "94.6 % at most) and does not recall (6.6 %, 3.4 %); at the paper's 3e-4 it recalls by induction "
    "(lr-protocol-attention-128.toml; the README's learning-rate section)",
    ("AR", "mamba", 16, ""): "all seven of the paper's rates run (widths.toml, lr-protocol-mamba-narrow.toml) and a "
    "second seed at 3e-3 (lr-protocol-mamba-seeds.toml); mixc's Mamba equals the reference formulas at d = 16 "
    "(checks/mamba_reference.py); below 1e-3 it does not fit the training set either; see the README's "
    "learning-rate section",
    ("AR", "mamba", 32, ""): "all seven rates and a second seed run; mixc's Mamba equals the reference formulas at "
    "d = 32; at 3e-3 it fits the training set (train accuracy 97.5 %, seed 1: 92.2 %) and recalls on 18.8 % "
    "(24.4 %) of test documents; the data (mixc's generator, not tinylang's files) is what the reference leaves "
    "unchecked; see the README's learning-rate section",
    ("AR", "deltanet", 64, ""): "the paper has no DeltaNet figure, only 'close behind Mamba' (v3's abstract); mixc's "
    "DeltaNet, configured as reference §3.8, is the strongest recurrent model at every width run",
    ("conv-ablation-mamba", "mamba", 64, "d_conv=3"): "two of the paper's seven rates run; above 50 % as the paper's",
    ("conv-ablation-mamba", "mamba", 64, "d_conv=4"): "d_conv 4 is Mamba's default: the AR sweep's run of the same "
    "config gave 76.9 % at 3e-3 (row AR mamba 64), and five runs of it (seed 42 on three sets of kernels, seeds 1 and 2) gave 63.7-76.9 % (README, seeds); two rates run",
    ("conv-ablation-mamba", "mamba", 64, "d_conv=2"): "all seven of the paper's rates run (conv-ablation.toml, "
    "lr-protocol-mamba-dconv2.toml): best 18.4 % at 1e-3, where a second seed gave 31.6 % with train accuracy "
    "100 % (lr-protocol-mamba-dconv2-seed.toml); at 3e-4 it fits part of the training "
    "documents (train accuracy 67.4 %) and recalls on 6.9 %; mixc's Mamba equals the reference formulas at this "
    "width and conv (results-medium/checks/mamba-reference.txt); see the README's learning-rate section",
}

# AR with one layer (reference §5.1, [P D.2]) at d = 64: (low, high, as the paper
# states it). Only the architectures with a d = 64 figure or bound get a row:
# Based and BaseConv "fail" and Hyena's 31.56 % has no width, so they are not
# compared.
PAPER_AR1 = {
    "attention": (None, 9, "fails (≤ ~9 % at every d)"),
    "mamba": (83, 83, "≈83 (read off ar_32_layers.pdf; better than 2 layers)"),
}
AR1_SWEEPS = {"ar-1layer": {"model.config.d": "64"}}

# The sweep file of each experiment not yet run, where one exists.
SWEEP_FILES = {"AR-1layer": "ar-1layer.toml", "AR-3layer": "ar-3layer.toml", "AR-NoPE": "ar-nope.toml",
               "AR-reverse": "ar-reverse.toml", "ATR-vocab8192": "atr-vocab8192.toml"}

MECHANISMS = [
    # (arch, the paper's statement, its Attrib@Value at layer 1, a note)
    ("attention", "induction: Attrib@Value (layer 1) 100 %", 1.0, ""),
    ("based", "induction: Attrib@Value (layer 1) 99.9-100.3 %", 1.0, ""),
    ("mamba", "direct retrieval at the query in layer 0: Attrib@Value (layer 1) ≈ 0", 0.0,
     "one seed; the seeds study moved how the effect splits over the layers between runs"),
    ("hyena", "direct retrieval in layer 0: Attrib@Value (layer 1) ≈ 0", 0.0,
     "Hyena barely recalls in mixc (3.75 %, as the paper's 2.81 %): its Attrib rests on p(answer) 0.026 clean"),
    ("h3", "Attrib@Value (layer 1) 0-9 %", 0.045, ""),
]


def rows_of(sweeps, prefix):
    out = []
    for name, fixed in sweeps.items():
        path = os.path.join(CSV, f"{name}-{prefix}.csv")
        if not os.path.exists(path):
            continue
        for r in csv.DictReader(open(path)):
            row = dict(fixed)
            row.update({k: v for k, v in r.items() if v != ""})
            row["sweep"] = name
            out.append(row)
    return out


def arch(row):
    return os.path.splitext(os.path.basename(row.get("model.file", "")))[0]


def seed(row):
    return row.get("train.seed", "42")


def rate(lr):
    return f"{float(lr):g}"


def best(rows):
    """The best seed-42 cell over the rates, the rates run, the seeds run at that rate."""
    ok = [r for r in rows if r.get("status", "ok") == "ok"]
    main = [r for r in ok if seed(r) == "42"]
    if not main:
        return None
    top = max(main, key=lambda r: float(r["eval_acc"]))
    rates = sorted({float(r["train.lr"]) for r in main})
    # Every run of the chosen config (other seeds; reruns of seed 42 are
    # listed once, the selected one): "seed: accuracy", the spread at a glance.
    same = {}
    for r in ok:
        if float(r["train.lr"]) == float(top["train.lr"]) and seed(r) not in same:
            same[seed(r)] = top if seed(r) == "42" else r
    seeds = [f"{k}: {fmt(100 * float(same[k]['eval_acc']))}" for k in sorted(same, key=int)]
    return top, rates, seeds


def verdict(paper_lo, paper_hi, mixc):
    if mixc is None:
        return "not run"
    lo = paper_lo if paper_lo is not None else 0.0
    if (lo >= 50) != (mixc >= 50) and (paper_hi >= 50) == (lo >= 50):
        return "contradicts"
    if lo - 5 <= mixc <= paper_hi + 5:
        return "reproduced"
    return "differs"


def fmt(x):
    return "" if x is None else f"{x:.2f}".rstrip("0").rstrip(".")


def main():
    out = []
    ar_rows = [r for r in rows_of(SWEEPS, "results") if r["sweep"] != "conv-ablation"
               and r.get("model.config.d_conv", "4") == "4"]
    for a in ARCHS:
        for i, d in enumerate(WIDTHS):
            cells = [r for r in ar_rows if arch(r) == a and r.get("model.config.d") == str(d)]
            b = best(cells)
            paper = PAPER_AR.get(a, [None] * 5)[i]
            mixc = 100 * float(b[0]["eval_acc"]) if b else None
            v = verdict(paper, paper, mixc) if paper is not None else ("not run" if b is None else "differs")
            out.append(["AR", a, d, "", fmt(paper) if paper is not None else ("close behind Mamba (no figure)" if a == "deltanet" else ""),
                        fmt(mixc), " ".join(rate(x) for x in b[1]) if b else "", "; ".join(b[2]) if b else "", v,
                        EXPLAIN.get(("AR", a, d, ""), "")])
    conv = [r for r in rows_of(SWEEPS, "results")
            if arch(r) == "mamba" and r.get("model.config.d") == "64" and "model.config.d_conv" in r]
    for k, (lo, hi) in PAPER_CONV.items():
        b = best([r for r in conv if r["model.config.d_conv"] == str(k)])
        mixc = 100 * float(b[0]["eval_acc"]) if b else None
        paper = f"≤ {hi}" if lo is None else f"≈{hi}"
        out.append(["conv-ablation-mamba", "mamba", 64, f"d_conv={k}", paper, fmt(mixc),
                    " ".join(rate(x) for x in b[1]) if b else "", "; ".join(b[2]) if b else "",
                    verdict(lo, hi, mixc), EXPLAIN.get(("conv-ablation-mamba", "mamba", 64, f"d_conv={k}"), "")])
    atr = rows_of(ATR_SWEEPS, "results")
    for a in ARCHS:
        b = best([r for r in atr if arch(r) == a])
        mixc = 100 * float(b[0]["eval_acc"]) if b else None
        lo, hi = PAPER_ATR.get(a, (None, None))
        paper = f"≈{lo}-{hi} (d = 16-256)" if lo is not None else ""
        v = verdict(lo, hi, mixc) if lo is not None else "differs"
        out.append(["ATR", a, 64, "L=5 |Σ|=20", paper, fmt(mixc), " ".join(rate(x) for x in b[1]) if b else "",
                    "; ".join(b[2]) if b else "", v,
                    "" if lo is not None else "the paper gives no DeltaNet ATR figure"])
    attrib = [r for r in rows_of(SWEEPS, "attrib") if r["sweep"] == "ar" and r.get("script") == "block-inputs"]
    results = {r["cell"]: r for r in rows_of({"ar": SWEEPS["ar"]}, "results")}
    for a, paper, expected, note in MECHANISMS:
        cells = [results[c] for c in results if arch(results[c]) == a]
        b = best(cells)
        cell = b[0]["cell"]
        at = {r["position"]: float(r["attrib"]) for r in attrib
              if r["cell"] == cell and r["layer"] == "1" and r.get("kept") == "1"}
        if "value" in at:
            mixc = "Attrib layer 1: " + ", ".join(f"{p} {at[p]:.2f}" for p in ("key", "value", "query") if p in at)
            v = "reproduced" if abs(at["value"] - expected) <= 0.1 else "differs"
        else:
            mixc, v = "no Attrib (p(answer) moves < 0.01)", "not run"
        out.append(["attrib-AR", a, 64, f"block inputs, lr {rate(b[0]['train.lr'])}", paper, mixc,
                    rate(b[0]["train.lr"]), "; ".join(b[2]), v, note])
    ar1 = rows_of(AR1_SWEEPS, "results")
    ar1_done = False
    for a, (lo, hi, said) in PAPER_AR1.items():
        b = best([r for r in ar1 if arch(r) == a])
        if not b:
            continue
        ar1_done = True
        mixc = 100 * float(b[0]["eval_acc"])
        out.append(["AR-1layer", a, 64, "1 layer", said, fmt(mixc), " ".join(rate(x) for x in b[1]),
                    "; ".join(b[2]), verdict(lo, hi, mixc), "ar-1layer.toml; one seed"])
    for exp in (["AR-3layer"] if ar1_done else ["AR-1layer", "AR-3layer"]) + ["AR-NoPE", "AR-reverse", "ATR-vocab8192", "ATR-L10",
                "ATR-generalisation", "conv-ablation-based", "next-key"]:
        out.append([exp, "", "", "", "see reference §5", "", "", "", "not run",
                    "not run yet (issue 55 item 3; examples/paper/" + SWEEP_FILES.get(exp, "") + ")"
                    if exp in SWEEP_FILES else "not run yet (issue 55 item 3)"])
    path = os.path.join(CSV, "paper-comparison.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["experiment", "arch", "d", "setting", "paper", "mixc", "rates_run", "seeds", "verdict",
                    "explanation"])
        w.writerows(out)
    print(f"wrote {path}: {len(out)} rows")


if __name__ == "__main__":
    main()
