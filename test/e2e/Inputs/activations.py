"""Checks activations.safetensors from `mixc intervene --save` with a reader
written from the safetensors description (8-byte little-endian header
length, JSON header, raw little-endian f32 data).

  activations.py FILE   for the script 'patch layers[0].block_input at all' (cell 0),
                        'patch layers[1].block_input at value' (cell 1), saving
                        layers[*].block_input
"""
import json
import struct
import sys


def load(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__")
    body = raw[8 + n:]
    tensors = {}
    for name, t in header.items():
        b, e = t["data_offsets"]
        tensors[name] = (t["shape"], struct.unpack(f"<{(e - b) // 4}f", body[b:e]))
    return meta, tensors


def maxdiff(a, b):
    return max(abs(x - y) for x, y in zip(a, b))


def main():
    meta, t = load(sys.argv[1])
    cells = json.loads(meta["cells"])
    if meta["format"] != "mixc-activations" or len(cells) != 2:
        sys.exit(f"metadata {meta}")
    shape = t["layers[0].block_input:clean"][0]
    if shape[0] != int(meta["documents"]) or len(shape) != 3:
        sys.exit(f"shape {shape}")
    for k, (s, _) in t.items():
        if s != shape:
            sys.exit(f"{k}: shape {s}, want {shape}")
    l0, l1 = "layers[0].block_input", "layers[1].block_input"
    # Cell 0 restores all of layer 0's input: layer 0 and layer 1 read as in the clean run.
    for node in (l0, l1):
        d = maxdiff(t[node + ":patched:0"][1], t[node + ":clean"][1])
        if d > 1e-4:
            sys.exit(f"{node}, cell 0: {d} from the clean run")
    # Cell 1 patches layer 1 only: layer 0 is the corrupted run's.
    d = maxdiff(t[l0 + ":patched:1"][1], t[l0 + ":corrupted"][1])
    if d > 1e-4:
        sys.exit(f"{l0}, cell 1: {d} from the corrupted run")
    # The clean and corrupted runs differ (at the key, and after it).
    if maxdiff(t[l0 + ":clean"][1], t[l0 + ":corrupted"][1]) == 0:
        sys.exit("clean and corrupted layer-0 inputs are identical")
    print("ok")


if __name__ == "__main__":
    main()
