"""mixc from Python, in the order of a notebook: open a run, call it, take
activations out, patch one, and run an intervention script.

    bash scripts/main.sh                       # trains runs/default (Based on AR)
    /usr/bin/python3 examples/python/quickstart.py [RUN]
"""
import os
import sys

import torch

import mixc

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
run = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "runs", "default")

# 1. A trained run (or mixc.compile("stdlib/mamba.mix", d=64) for fresh weights).
m = mixc.load(run)
print(m)

# 2. Its intervention points: nodes, and the recurrent states inside the mixers.
points = mixc.names(m)
print(len(points), "names, e.g.", [p["name"] for p in points if p["kind"] == "state"])

# 3. Logits for a batch of token ids [B, T] (ids from the run's vocabulary).
vocab = dict(m.named_parameters())["wte"].shape[0]
tokens = torch.randint(3, vocab, (4, 32))
logits = m(tokens)
print("logits", tuple(logits.shape))

# 4. Activations by name (TransformerLens's run_with_cache); a state comes as
#    [B, T, S], every step's state, read without gradients.
with torch.no_grad():
    logits, cache = m.run_with_cache(tokens, names=["layers[*].block_input", "layers[*].mixer.state"])
for name, value in cache.items():
    print(f"{name:28s} {tuple(value.shape)}")

# 5. Gradients reach the parameters through torch autograd.
loss = torch.nn.functional.cross_entropy(m(tokens)[:, :-1].reshape(-1, vocab), tokens[:, 1:].reshape(-1))
loss.backward()
print("loss", round(loss.item(), 3), "grad norm of wte", round(dict(m.named_parameters())["wte"].grad.norm().item(), 3))

# 6. The paper's interchange interventions on the run, as columns.
script = os.path.join(root, "examples", "interventions", "block-inputs.rw")
table = mixc.intervene(run, script, size=64)
for label, attrib in zip(table["label"], table["attrib"]):
    print(f"{label:32s} {attrib if attrib is None else round(attrib, 3)}")
