"""Trains each stdlib architecture briefly with both back ends on the same
seed and checks the loss curves (metrics.csv) agree within a tolerance.

usage: loss_curves.py MIXC WORKDIR ARCH...
"""
import csv, os, subprocess, sys

mixc, work, archs = sys.argv[1], sys.argv[2], sys.argv[3:]
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CONFIG = """[model]
file = "{root}/stdlib/{arch}.mix"
[model.config]
d = 16
[task]
num_kv = 32
num_pairs = 2
train_size = 640
test_size = 64
[train]
epochs = 1
lr = 3e-3
eval_every = 5
checkpoint_every = 100
eval_size = 64
"""

def curve(arch, backend):
    cfg = os.path.join(work, arch + ".toml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(root=root, arch=arch))
    out = os.path.join(work, arch + "-" + backend)
    run = subprocess.run([mixc, "train", cfg, "--quiet", "--out", out, "--max-steps", "20",
                          "--backend", backend], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("%s %s failed:\n%s%s" % (arch, backend, run.stdout, run.stderr))
    with open(os.path.join(out, "metrics.csv")) as f:
        return [(int(r["step"]), float(r["train_loss"]), float(r["eval_acc"])) for r in csv.DictReader(f)], run.stderr

failed = False
for arch in archs:
    ref, _ = curve(arch, "libtorch")
    gen, log = curve(arch, "generated")
    assert "generated back end" in log, log
    assert [s for s, _, _ in ref] == [s for s, _, _ in gen], (ref, gen)
    worst = max(abs(a - b) / abs(a) for (_, a, _), (_, b, _) in zip(ref, gen))
    first, last = ref[1][1], ref[-1][1]
    ok = worst < 2e-3 and last < first  # same curve, and it does descend
    failed |= not ok
    print("%-10s %s  losses %s  worst relative gap %.2e" %
          (arch, "ok  " if ok else "FAIL", " ".join("%.4f" % l for _, l, _ in gen), worst))
sys.exit(1 if failed else 0)
