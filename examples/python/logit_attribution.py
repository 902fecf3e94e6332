"""Direct logit attribution from Python: how much each layer's mixer and MLP
write, straight into the answer's logit, on clean documents and on their
corrupted twins. In the order of a notebook.

The residual stream at the readout is a sum: the embedding (layer 0's block
input) plus every layer's mixer output and MLP output. The final LayerNorm
is linear once its scale is frozen at the value the full stream gives, so
the logit of the answer minus the mean logit splits exactly into one term
per component plus the norm's bias (checked below against the model's own
logits).

    bash scripts/main.sh                       # trains runs/default (Based on AR)
    /usr/bin/python3 examples/python/logit_attribution.py [RUN]
"""
import os
import re
import sys

import torch

import mixc

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
run = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "runs", "default")
m = mixc.load(run)
pairs = mixc.task(run, corrupt="key", size=256)["pairs"]
rows = torch.arange(pairs["clean"].shape[0])

# 1. The components: the embedding, then each layer's mixer and MLP output.
layers = sorted({int(g) for p in mixc.names(m) for g in re.findall(r"^layers\[(\d+)\]\.mixer_output$", p["name"])})
components = ["layers[0].block_input"] + [f"layers[{l}].{part}_output" for l in layers for part in ("mixer", "mlp")]
last = f"layers[{layers[-1]}].block_output"  # the stream the final norm reads
params = m.state_dict()
w_norm, b_norm, w_u = params["final_norm.weight"], params["final_norm.bias"], params["wte"]  # W_U = wte (tied)


def attribution(tokens):
    """Each component's direct effect on logit(answer) - mean logit, [n] per
    component, and that logit difference as the model computes it [n]."""
    with torch.no_grad():
        logits, cache = m.run_with_cache(tokens, names=components + [last, "final_norm"])
    at = lambda name: cache[name][rows, pairs["readout"]].double()  # [n, D] at each row's readout
    x, y = at(last), at("final_norm")
    centred = x - x.mean(-1, keepdim=True)
    # The frozen scale sigma [n, 1] from the norm's own output: y = centred / sigma * w + b.
    normalised = (y - b_norm.double()) / w_norm.double()
    sigma = (centred * centred).sum(-1, keepdim=True) / (centred * normalised).sum(-1, keepdim=True)
    direction = w_u.double()[pairs["answer"]] - w_u.double().mean(0)  # [n, D]: answer minus the mean token
    terms = {}
    for name in components:
        c = at(name)
        terms[name] = (((c - c.mean(-1, keepdim=True)) / sigma * w_norm.double()) * direction).sum(-1)
    terms["final_norm.bias"] = (b_norm.double() * direction).sum(-1)
    at_logits = logits[rows, pairs["readout"]].double()
    actual = at_logits[rows, pairs["answer"]] - at_logits.mean(-1)
    return terms, actual


clean, clean_actual = attribution(pairs["clean"])
corrupt, corrupt_actual = attribution(pairs["corrupted"])

# 2. The split is exact: the terms add up to the model's own logit difference.
for terms, actual in ((clean, clean_actual), (corrupt, corrupt_actual)):
    total = sum(terms.values())
    gap = (total - actual).abs().max().item()
    assert gap < 1e-3 * max(1.0, actual.abs().max().item()), f"the terms miss the logits by {gap}"

# 3. The table: mean direct effect per component; the last column is what
#    corrupting the key in context takes away.
print(f"{'component':28} {'clean':>9} {'corrupted':>10} {'clean - corrupted':>18}")
for name in clean:
    a, b = clean[name].mean().item(), corrupt[name].mean().item()
    print(f"{name:28} {a:9.3f} {b:10.3f} {a - b:18.3f}")
print(f"{'sum (= the model logit diff)':28} {clean_actual.mean().item():9.3f} {corrupt_actual.mean().item():10.3f} "
      f"{(clean_actual - corrupt_actual).mean().item():18.3f}")
