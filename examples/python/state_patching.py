"""Patching from Python on your own pairs, in the order of a notebook: the
run's documents and their corrupted twins, a recurrent state patched from
the clean run into the corrupted one at each position, and an ablation
sweep written as hooks.

    bash scripts/main.sh                       # trains runs/default (Based on AR)
    /usr/bin/python3 examples/python/state_patching.py [RUN]
"""
import os
import sys

import torch

import mixc

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
run = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "runs", "default")
m = mixc.load(run)

# 1. The task as tensors: the first 128 test documents with the key in
#    context replaced, the same pairs `mixc intervene` draws.
t = mixc.task(run, corrupt="key", size=128)
pairs = t["pairs"]
rows = torch.arange(pairs["clean"].shape[0])
print(f"{t['name']}: {pairs['clean'].shape[0]} pairs of {pairs['clean'].shape[1]} tokens, chance {t['chance']:.3f}")


def p_answer(logits):
    """p(answer) at each row's readout position, [B]."""
    at = logits[rows, pairs["readout"]].double()
    return torch.softmax(at, -1)[rows, pairs["answer"]]


with torch.no_grad():
    p_clean, p_corrupt = p_answer(m(pairs["clean"])).mean(), p_answer(m(pairs["corrupted"])).mean()
print(f"p(answer): clean {p_clean:.3f}, corrupted {p_corrupt:.3f}")


def attrib(p):
    """Protocol §6's Attrib: the share of the clean-vs-corrupted gap a patch restores."""
    return ((p.mean() - p_corrupt) / (p_clean - p_corrupt)).item()


# 2. The last layer's recurrent state, from the clean run into the corrupted
#    one, at the key and each step after it (as `patch ... state at key+k`).
states = [p["name"] for p in mixc.names(m) if p["kind"] == "state" and p["actions"]]
if states:
    state = states[-1]
    print(f"\npatch {state} at key+k: Attrib")
    for k in range(int((pairs["query"] - pairs["key"]).min()) + 1):
        with torch.no_grad():
            p = mixc.patch(m, pairs["corrupted"], pairs["clean"], state, pairs["key"] + k,
                           answer=pairs["answer"], readout=pairs["readout"])
        print(f"  key+{k}: {attrib(p):6.3f}")

# 3. An ablation sweep as hooks: each layer's mixer output zeroed on the
#    clean documents, p(answer) against the unablated run.
print("\nzero layers[l].mixer_output: p(answer)")
layers = sorted({p["name"].split(".")[0] for p in mixc.names(m) if p["name"].endswith(".mixer_output")})
for layer in layers:
    with torch.no_grad(), m.hooks([(layer + ".mixer_output", lambda v, name: torch.zeros_like(v))]):
        p = p_answer(m(pairs["clean"])).mean()
    print(f"  {layer}: {p:.3f} (unablated {p_clean:.3f})")
