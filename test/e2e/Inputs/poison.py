"""Writes a copy of a mixc checkpoint with one weight tensor set to NaN, one
of its floats changed in its last bit (a damaged record that still reads as
finite numbers), or truncated: poison.py IN OUT (nan|flip|truncate)."""
import struct
import sys
import zipfile

src, dst, how = sys.argv[1:4]
if how == "truncate":
    data = open(src, "rb").read()
    open(dst, "wb").write(data[: len(data) // 2])
    sys.exit(0)
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
    for info in zin.infolist():
        payload = zin.read(info.filename)
        if info.filename.endswith("/data/0"):  # the first weight (the embedding)
            if how == "nan":
                payload = struct.pack("<f", float("nan")) * (len(payload) // 4)
            else:
                payload = bytes([payload[0] ^ 1]) + payload[1:]
        zout.writestr(info, payload)
