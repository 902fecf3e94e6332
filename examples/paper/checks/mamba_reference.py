"""Mamba against the reference formulas (protocol §3.1 and §3.7), written
out plainly here from the model's own parameters, as mamba-minimal writes
them: a check that a width- or rate-specific failure is not a defect of
mixc's Mamba. Used by python/tests (random weights at d = 16, 32, 64) and on
trained runs (issue 55 item 1):

    python3 examples/paper/checks/mamba_reference.py RUN [RUN ...]

prints, per run, the largest difference between mixc's logits and the
reference's on the run's first 64 test documents, and both accuracies.
"""
import sys

import torch
import torch.nn.functional as F


def rmsnorm(x, w, eps=1e-5):  # [B, T, d]
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def mamba_mixer(h, p, d_state=16):
    """h [B, T, d] -> [B, T, d]; p: the mixer's parameters by short name."""
    B, T, _ = h.shape
    d_in = p["D"].shape[0]
    xz = h @ p["in_proj.weight"].T                       # [B, T, 2 d_in]
    x, z = xz[..., :d_in], xz[..., d_in:]
    k = p["conv.weight"].shape[1]                        # depthwise causal conv, with bias
    xp = F.pad(x.transpose(1, 2), (k - 1, 0))            # [B, d_in, T + k - 1]
    x = F.conv1d(xp, p["conv.weight"].unsqueeze(1), p["conv.bias"], groups=d_in).transpose(1, 2)
    x = F.silu(x)                                        # [B, T, d_in]
    dt_rank = p["dt_proj.weight"].shape[1]
    dbc = x @ p["x_proj.weight"].T                       # [B, T, dt_rank + 2N]
    dt, Bm, Cm = dbc.split([dt_rank, d_state, d_state], -1)
    delta = F.softplus(dt @ p["dt_proj.weight"].T + p["dt_proj.bias"])  # [B, T, d_in]
    A = -torch.exp(p["A_log"])                           # [d_in, N]
    s = torch.zeros(B, d_in, d_state, dtype=h.dtype)
    ys = []
    for t in range(T):                                   # s_t = exp(Δ_t A) s_{t-1} + Δ_t B_t x_t
        s = torch.exp(delta[:, t, :, None] * A) * s + (delta[:, t, :, None] * Bm[:, t, None, :]) * x[:, t, :, None]
        ys.append((s * Cm[:, t, None, :]).sum(-1) + p["D"] * x[:, t])   # y_t = C_t s_t + D x_t
    y = torch.stack(ys, 1) * F.silu(z)
    return y @ p["out_proj.weight"].T


def mamba_lm(tokens, params, n_layers=2):
    """The whole model (protocol §3.1: NoPE, Mamba blocks r + Mamba(RMSNorm r),
    final LayerNorm, LM head tied to the embedding), in float64."""
    P = {n: t.detach().double() for n, t in params}
    h = P["wte"][tokens]
    for l in range(n_layers):
        pre = f"layers[{l}].mixer."
        mixer = {n[len(pre):]: t for n, t in P.items() if n.startswith(pre)}
        h = h + mamba_mixer(rmsnorm(h, P[f"layers[{l}].norm.weight"]), mixer)
    h = F.layer_norm(h, h.shape[-1:], P["final_norm.weight"], P["final_norm.bias"], 1e-5)
    return h @ P["wte"].T


def check_run(run, docs=64):
    import mixc
    m = mixc.load(run, backend="generated")
    test = mixc.task(run, size=docs)["test"]
    tokens, readout, answer = test["tokens"][:docs], test["readout"][:docs], test["answer"][:docs]
    rows = torch.arange(len(tokens))
    with torch.no_grad():
        ours = m(tokens)[rows, readout].double()
    ref = mamba_lm(tokens, list(m.named_parameters()) + list(m.named_buffers()))[rows, readout]
    diff = (ours - ref).abs().max().item()
    acc = lambda logits: (logits.argmax(-1) == answer).double().mean().item()  # noqa: E731
    return diff, acc(ours), acc(ref)


if __name__ == "__main__":
    for run in sys.argv[1:]:
        diff, ours, ref = check_run(run)
        print(f"{run}: max |logit difference| {diff:.2e} on 64 test documents; accuracy mixc {ours:.4f}, "
              f"reference {ref:.4f}")
