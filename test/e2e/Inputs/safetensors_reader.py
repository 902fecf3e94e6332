"""Reads a safetensors file from the format's description alone (8-byte
little-endian header length, JSON header with __metadata__ and per-tensor
dtype / shape / data_offsets, then the raw little-endian data) and checks
what `mixc export` promises.

  safetensors_reader.py FILE MODEL STEP   prints one line per tensor: name, shape
"""
import json
import math
import struct
import sys


def main():
    path, model, step = sys.argv[1], sys.argv[2], sys.argv[3]
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    if n % 8:
        sys.exit(f"header length {n} is not a multiple of 8")
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    meta = header.pop("__metadata__")
    if meta.get("format") != "mixc-weights" or meta.get("model") != model or meta.get("step") != step:
        sys.exit(f"metadata {dict((k, meta[k]) for k in ('format', 'model', 'step') if k in meta)}")
    json.loads(meta["graph"])  # the graph is JSON
    end = 0
    for name, t in header.items():  # file order: data laid out back to back
        begin, stop = t["data_offsets"]
        if t["dtype"] != "F32" or begin != end:
            sys.exit(f"{name}: dtype {t['dtype']}, offsets {begin}..{stop} after {end}")
        count = math.prod(t["shape"])
        if stop - begin != 4 * count:
            sys.exit(f"{name}: {stop - begin} bytes for shape {t['shape']}")
        values = struct.unpack(f"<{count}f", body[begin:stop])
        if not all(math.isfinite(v) for v in values):
            sys.exit(f"{name}: a value is not finite")
        end = stop
        print(name, t["shape"])
    if end != len(body):
        sys.exit(f"{len(body) - end} bytes after the last tensor")


main()
