"""Writes one small model per builtin shape rule into FOLDER, each breaking
exactly that rule (builtin-shapes.test checks the DSL's located message).
A model's other arguments are right, so the rule named is the one that
fires. Usage: builtin_shapes.py FOLDER"""
import os
import sys

folder = sys.argv[1]
BASE = """model m(vocab: int = 10, d: int = 4) {
  input tokens: [B, T] int
  let wte = param([vocab, d])
  let h = embedding(tokens, wte)
%s
}
"""
# selective_scan(x [B, T, 4], delta, A [4, N], B, C, D [4]) with N = 3: each argument wrong alone.
SCAN_OK = {"delta": "linear(h, 4)", "A": "param([4, 3])", "Bm": "linear(h, 3)", "Cm": "linear(h, 3)",
           "D": "param([4])"}
SCAN_BAD = {"delta": "linear(h, 5)", "A": "param([5, 3])", "Bm": "linear(h, 2)", "Cm": "linear(h, 2)",
            "D": "param([5])"}
for name in SCAN_OK:
    args = dict(SCAN_OK, **{name: SCAN_BAD[name]})
    body = "\n".join(f"  let {n} = {e}" for n, e in args.items())
    body += "\n  let y = selective_scan(h, delta, A, Bm, Cm, D)\n  return unembed(y, wte)"
    open(os.path.join(folder, f"selective_scan_{name}.mix"), "w").write(BASE % body)
OTHERS = {
    "unembed": "  let w2 = param([vocab, 3])\n  return unembed(h, w2)",
    "long_conv": "  let f = param([7, 3])\n  return unembed(long_conv(h, f), wte)",
    "delta_rule": "  let b = linear(h, 2)\n  return unembed(delta_rule(h, h, h, b), wte)",
    "matvec": "  let m = param([4, 3])\n  return unembed(matvec(m, h), wte)",
    "causal_conv": "  return unembed(causal_conv(tokens, 3), wte)",
}
for name, body in OTHERS.items():
    open(os.path.join(folder, f"{name}.mix"), "w").write(BASE % body)
