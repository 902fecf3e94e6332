"""A training step from Python against the library's own (`mixc train`'s), in
one process, on the paper's AR batch (32 documents of 37 tokens, vocabulary
8,196; examples/paper/base/ar.toml) at d = 64, one thread.

The library's step: forward with the LM head at the readout only, cross-
entropy, backward, fused AdamW (`mixc train --time-steps`). Python's: the
loop a user writes — m(tokens) (or m(tokens, readout=r)), cross-entropy at
the readout, backward, torch.optim.AdamW — on random tokens of the same
shape (the cost does not depend on which tokens). Each row is the median
of 5 rounds of `--steps` steps after 3 warm-up steps; ratios are to the
library's step on the generated back end.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_step.py [--steps 20] [--models based,mamba]
"""
import argparse
import os
import statistics
import time

import torch

import mixc

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CONFIG = os.path.join(ROOT, "examples", "paper", "base", "ar.toml")
BATCH, LENGTH, VOCAB = 32, 37, 8196


def python_step_seconds(model, steps, readout_only):
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, VOCAB, (BATCH, LENGTH), generator=g)
    readout = torch.randint(0, LENGTH, (BATCH,), generator=g)
    target = torch.randint(0, VOCAB, (BATCH,), generator=g)
    rows = torch.arange(BATCH)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        logits = model(tokens, readout=readout) if readout_only else model(tokens)[rows, readout]
        loss = torch.nn.functional.cross_entropy(logits, target)
        opt.zero_grad()
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        rounds.append((time.perf_counter() - start) / steps)
    return statistics.median(rounds)


def library_step_seconds(model_file, steps, backend):
    rounds = [mixc._mixc.time_training_steps(CONFIG, [f'model.file="{model_file}"', "model.config.d=64"], steps,
                                             backend)["step_s"] for _ in range(5)]
    return statistics.median(rounds)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--models", default="attention,based,mamba,deltanet")
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.chdir(ROOT)  # the config's paths (stdlib/, .cache/mixc) are the repository's
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread; AR batch {BATCH} x {LENGTH}, "
          f"vocabulary {VOCAB}, d = 64; ms per training step (median of 5 x {args.steps})")
    head = f"{'model':10} {'library gen':>12} {'library lt':>11} {'py lt full':>11} {'py gen full':>12} " \
           f"{'py gen readout':>15}   ratios to library gen: lt, py lt full, py gen full, py gen readout"
    print(head)
    for name in args.models.split(","):
        model_file = f"stdlib/{name}.mix"
        lib_gen = library_step_seconds(model_file, args.steps, "generated")
        lib_lt = library_step_seconds(model_file, args.steps, "libtorch")
        py = {}
        for backend in ("libtorch", "generated"):
            m = mixc.compile(os.path.join(ROOT, model_file), d=64, vocab=VOCAB, seed=0, backend=backend)
            py[backend, False] = python_step_seconds(m, args.steps, False)
            if backend == "generated":
                py[backend, True] = python_step_seconds(m, args.steps, True)
        cols = [lib_gen, lib_lt, py["libtorch", False], py["generated", False], py["generated", True]]
        ratios = ", ".join(f"{c / lib_gen:.2f}x" for c in cols[1:])
        print(f"{name:10} " + " ".join(f"{1e3 * c:{w}.2f}" for c, w in zip(cols, (12, 11, 11, 12, 15))) + f"   {ratios}")


if __name__ == "__main__":
    main()
