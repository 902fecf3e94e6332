"""Writes report-plots.test's attrib.csv: per run, Attrib at layers 0 and 1
× {key, value, query} with intervals (attrib ± 0.1 for kept runs)."""
import sys

runs = {  # cell: (kept, layer-1 key, value, query)
    "a1": (1, 0.7, 0.1, 0.2),
    "a3": (1, 0.3, 0.5, 0.1),
    "b1": (0, 0.0, 0.0, 0.0),
    "b3": (1, 0.1, 0.9, 0.05),
}
# A script swept over the offset from the key (as mamba-internals.rw):
# node=x at key+0..2 in layer 0, per run.
offsets = {"a1": (0.2, 0.8, 0.1), "a3": (0.0, 0.0, 0.0), "b1": (0.0, 0.0, 0.0), "b3": (0.9, 0.0, 0.3)}
rows = ["attrib,attrib_hi,attrib_lo,cell,intervention,kept,layer,node,offset,p_clean,p_corrupt,p_patched,position,script"]
for cell, (kept, *values) in runs.items():
    for layer in (0, 1):
        for pos, v in zip(("key", "value", "query"), values if layer == 1 else (0.5, 0.5, 0.5)):
            lo, hi = (f"{v - 0.1:.2f}", f"{v + 0.1:.2f}") if kept else ("", "")
            rows.append(f"{v},{hi},{lo},{cell},layer={layer} position={pos},{kept},{layer},,,0.9,0.1,0.5,{pos},block-inputs")
    for k, v in enumerate(offsets[cell]):
        rows.append(f"{v},,,{cell},layer=0 node=x offset={k},{kept},0,x,{k},0.9,0.1,0.5,,inside")
open(sys.argv[1], "w").write("\n".join(rows) + "\n")
