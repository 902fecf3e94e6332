"""Checks saved recurrent states in activations.safetensors (`mixc intervene
--save 'layers[1].mixer.state'`), read with the reader of activations.py.

  states.py FILE NAME PATCH_CELL ZERO_CELL
      NAME:<run> is [documents, T, S]; in each document, the first step at
      which cell PATCH_CELL's state leaves the corrupted run's holds the clean
      run's state there (a patch), and cell ZERO_CELL's holds zeros (zero).
"""
import sys

from activations import load


def rows(flat, shape):
    """Per document, per step: the state's S floats."""
    docs, steps, size = shape
    return [[flat[(d * steps + t) * size:(d * steps + t + 1) * size] for t in range(steps)] for d in range(docs)]


def close(a, b, tol=1e-4):
    scale = max(1.0, max(abs(x) for x in b))
    return max(abs(x - y) for x, y in zip(a, b)) <= tol * scale


path, name, patch_cell, zero_cell = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
meta, t = load(path)
shape = t[name + ":clean"][0]
if len(shape) != 3 or shape[0] != int(meta["documents"]):
    sys.exit(f"{name}: shape {shape}")
clean, corrupted = rows(t[name + ":clean"][1], shape), rows(t[name + ":corrupted"][1], shape)
patched = rows(t[name + ":patched:" + patch_cell][1], shape)
zeroed = rows(t[name + ":patched:" + zero_cell][1], shape)
edited = 0
for d in range(shape[0]):
    for cell, want in ((patched, clean[d]), (zeroed, None)):
        first = next((s for s in range(shape[1]) if not close(cell[d][s], corrupted[d][s], 1e-5)), None)
        if first is None:
            continue  # the edit changed nothing visible (the runs agree there)
        edited += 1
        target = want[first] if want else [0.0] * shape[2]
        if not close(cell[d][first], target):
            sys.exit(f"document {d}: the edited state at step {first} is not the {'clean' if want else 'zero'} one")
if edited < shape[0]:
    sys.exit(f"only {edited} edits seen in {shape[0]} documents")
print("ok")
