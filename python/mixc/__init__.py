"""mixc from Python: compile a mixer spec or open a trained run, call the
model on torch tensors, take named activations out, and run intervention
scripts.

    import torch, mixc
    m = mixc.load("runs/default")                      # a run folder or checkpoint
    m = mixc.compile("stdlib/mamba.mix", d=64)         # or a fresh model (seed 0)
    logits = m(tokens)                                 # tokens [B, T] int64 -> [B, T, V]
    logits, cache = m.run_with_cache(tokens, names=["layers[1].block_input"])
    logits = m.run_with_hooks(tokens, [("layers[1].block_input", lambda v, name: 0 * v)])
    table = mixc.intervene("runs/default", "examples/interventions/block-inputs.rw")
    mixc.names(m)                                      # the intervention points

The model runs on mixc's LibTorch runtime, the same LibTorch as Debian's
python3-torch: logits are torch tensors, and gradients flow from them into
`m.parameters()`.
"""
import collections
import contextlib
import threading
import warnings

import torch  # loads LibTorch before the extension that links it

from . import _mixc

__all__ = ["Model", "compile", "load", "intervene", "names", "task", "patch"]


class Model(torch.nn.Module):
    """A compiled model, a torch.nn.Module: call it on [B, T] int64 tokens to
    get [B, T, V] logits.

    Its trainable tensors are nn.Parameters under their node names
    (`named_parameters()`, `parameters()`; the model runs on these very
    tensors, so an optimizer over them trains it), its buffers are
    `named_buffers()`, and `state_dict()` / `load_state_dict()` use the
    names and values of `mixc export`. `to(device)` moves it (float32 only;
    the generated back end stays on the device its kernels were built for).
    `train()` / `eval()` set `training` as for any module; no mixc op
    depends on it (there is no dropout). `backend` says what plain calls run
    on: "generated" (the fused kernels, as `mixc train`) or "libtorch";
    hooks and caches always run on the LibTorch interpreter, where every
    node is a tensor, on the same parameters."""

    def __init__(self, impl):
        super().__init__()
        self._impl = impl
        # The hooks() context manager's hooks, per thread: two threads' `with`
        # blocks, ending in any order, never leave one installed for the other.
        self._hook_stack = threading.local()
        # What the model trains, fixed at creation: requires_grad_(False)
        # freezes these, and they stay its parameters (so that
        # requires_grad_(True) finds them again).
        self._trainable = [name for name, t in impl.parameters() if t.requires_grad]
        self._adopt()

    @property
    def _fwd_hooks(self):
        return getattr(self._hook_stack, "hooks", [])

    def _adopt(self):
        # Each trainable tensor becomes an nn.Parameter (sharing its memory)
        # and the C++ model runs on that very object from now on.
        for name, t in self._impl.parameters():
            if t.requires_grad and not isinstance(t, torch.nn.Parameter):
                self._impl.set_tensor(name, torch.nn.Parameter(t.detach(), requires_grad=True))

    def forward(self, tokens, readout=None):
        """tokens [B, T] int64 -> logits [B, T, V]; with `readout` ([B]
        int64, one position per row) only those positions' logits, [B, V],
        and the LM head runs on B rows instead of B x T (as `mixc train`'s
        step: several times faster with a large vocabulary)."""
        if self._fwd_hooks:
            return self._impl.run_with_hooks(tokens, self._fwd_hooks, readout)
        return self._impl.forward(tokens, readout)

    def run_with_hooks(self, tokens, fwd_hooks=(), readout=None):
        """The logits with each node's value passed through hooks, as
        TransformerLens: `fwd_hooks` is a list of (name or pattern, fn), and
        fn(value, name) returns a tensor of the same shape to replace the
        value (every later node reads it) or None to leave it (an in-place
        edit of `value` counts). Every node `names()` marks `intervene` can
        be hooked, and so can recurrent states: a state hook sees [B, T, S],
        every step's state, and the steps where its result differs are
        edited as `patch ... state` at that step in a .rw script (the state
        handed on; the recurrence carries on from it). A DSL scan's states
        take any steps, with gradients; a built-in recurrence's (Mamba's,
        DeltaNet's, Based's) one step a row, under torch.no_grad(). A value
        inside a scan's step (`layers[0].mixer.scan.o`) is hooked as
        [B, T, ...]: an edited step's value is what the rest of that step
        reads. Gradients flow through the hooks' results. `readout` as in
        forward()."""
        return self._impl.run_with_hooks(tokens, _hook_list(fwd_hooks), readout)

    @contextlib.contextmanager
    def hooks(self, fwd_hooks=()):
        """Within `with m.hooks([(name, fn)]):`, every call m(tokens) runs
        with these hooks (as run_with_hooks)."""
        saved = self._fwd_hooks
        self._hook_stack.hooks = saved + _hook_list(fwd_hooks)
        try:
            yield self
        finally:
            self._hook_stack.hooks = saved

    def run_with_cache(self, tokens, names=None):
        """The logits and a dict of node values [B, T, ...] by node name.

        `names` takes node names or patterns (`layers[*].block_input`); None
        keeps every node. A recurrent state (`layers[0].mixer.state`, a
        scan's `layers[0].mixer.S`) comes as [B, T, S], every step's state
        (a built-in recurrence's under torch.no_grad() only); a value inside
        a scan's step (`layers[0].mixer.scan.o`) as [B, T, ...]. A name or
        pattern that matches nothing is a KeyError naming the nearest names.
        """
        if isinstance(names, str):
            names = [names]
        return self._impl.run_with_cache(tokens, list(names or []))

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(node name, nn.Parameter) of each trainable tensor, in graph order
        (frozen ones too: requires_grad_(False) does not make them buffers)."""
        trainable = set(self._trainable)
        for name, t in self._impl.parameters():
            if name in trainable:
                yield prefix + name, t

    def parameters(self, recurse=True):
        for _, t in self.named_parameters():
            yield t

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """(node name, tensor) of each tensor that is not trained (e.g. fixed filters)."""
        trainable = set(self._trainable)
        for name, t in self._impl.parameters():
            if name not in trainable:
                yield prefix + name, t

    def buffers(self, recurse=True):
        for _, t in self.named_buffers():
            yield t

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """Every parameter and buffer by node name, detached and sharing the
        model's memory: the names and values `mixc export` writes."""
        out = collections.OrderedDict() if destination is None else destination
        for name, t in self._impl.parameters():
            out[prefix + name] = t if keep_vars else t.detach()
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copies tensors by node name into the model (e.g. a `mixc export`
        safetensors file read as a dict). Shapes must match; with `strict`,
        the names too, as nn.Module's. Returns (missing_keys, unexpected_keys)."""
        own = dict(self._impl.parameters())
        missing = [n for n in own if n not in state_dict]
        unexpected = [n for n in state_dict if n not in own]
        if strict and (missing or unexpected):
            raise RuntimeError(f"mixc: load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        for name in own:
            if name in state_dict and tuple(state_dict[name].shape) != tuple(own[name].shape):
                raise RuntimeError(f"mixc: load_state_dict: '{name}' is {tuple(state_dict[name].shape)} in the "
                                   f"state dict and {tuple(own[name].shape)} in the model")
        with torch.no_grad():
            for name, t in own.items():
                if name in state_dict:
                    t.copy_(state_dict[name])
        return collections.namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])(missing, unexpected)

    def save_weights(self, path):
        """Writes every parameter and buffer to a safetensors file, as `mixc
        export` does: `mixc train CONFIG --init-from PATH` starts from it."""
        self._impl.save_weights(str(path))

    def to(self, *args, **kwargs):
        """Moves the model to a device (mixc models are float32: another
        dtype is an error). Returns the model, as nn.Module's."""
        device, dtype, _, _ = torch._C._nn._parse_to(*args, **kwargs)
        if dtype is not None and dtype != torch.float32:
            raise TypeError(f"mixc: models are float32; to({dtype}) is not supported")
        if device is None:
            return self
        if device.type not in ("cpu", "cuda"):
            raise ValueError(f"mixc: to('{device}'): a model runs on the CPU or a CUDA device "
                             "('cpu', 'cuda' or 'cuda:N')")
        if device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(f"mixc: to('{device}'): this PyTorch ({torch.__version__}) has no usable CUDA "
                               "(torch.cuda.is_available() is False); the model stays on the CPU")
        self._impl.to(str(device))
        self._adopt()
        return self

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else f"cuda:{device}")

    def float(self):
        """A no-op: mixc models are float32 already."""
        return self

    def _apply(self, fn):
        raise TypeError("mixc: models are float32 tensors moved with .to(device); "
                        "half(), double(), bfloat16() and type() are not supported")

    @property
    def device(self):
        for _, t in self._impl.parameters():
            return t.device
        return torch.device("cpu")

    @property
    def backend(self):
        """What plain calls run on: "generated" or "libtorch"."""
        return self._impl.backend

    def contributions(self, tokens, layer):
        """Exact token-to-token contributions of layer `layer`'s scan (a DSL
        scan linear in its states: GLA, RetNet, Gated DeltaNet, ...): a list
        with one [B, T, T, ...] tensor per value the scan emits, c[:, t, i]
        the part of the scan's output at t that token i's write gives (for the
        delta rule, its effective attention with the key-removal terms);
        summed over i, the scan's output. docs/chunked-form.md."""
        return list(self._impl.contributions(tokens, int(layer)))

    def set_scan_form(self, form, chunk=64):
        """How the model's linear scans run (docs/chunked-form.md): "sequential"
        (their step loop or its generated kernel) or "chunked" (chunkwise from
        the compiler's plan, `chunk` steps a chunk). Returns, per scan, "" when
        it runs in that form, else why it keeps its loop. Hooks, caches and
        interventions that reach inside a scan run its loop either way."""
        return dict(self._impl.set_scan_form(form, int(chunk)))

    def names(self):
        return self._impl.names()

    @property
    def model_name(self):
        return self._impl.model_name

    def extra_repr(self):
        return f"{self._impl.model_name} from {self._impl.source}, backend={self._impl.backend}"


def _hook_list(fwd_hooks):
    out = []
    for h in fwd_hooks:
        if not (isinstance(h, tuple) and len(h) == 2 and isinstance(h[0], str)):
            raise TypeError(f"mixc: a hook is a (name, fn) pair, got {h!r}")
        out.append(h)
    return out


def _config_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _with_notes(impl):
    if impl.notes:
        warnings.warn(impl.notes.strip(), stacklevel=3)
    return Model(impl)


def compile(path, model="", include=(), seed=0, backend="libtorch", scan_form="sequential", scan_chunk=64,
            **config):
    """Compiles a .mix file (model parameters as keywords: d=64) with fresh
    weights drawn from its init rules (`seed`). `backend`: "libtorch" (the
    interpreter), "generated" (the fused kernels `mixc train` runs, built
    into the cache the first time: seconds) or "auto" (generated where they
    build, else LibTorch with a warning). `scan_form`, `scan_chunk`: as
    Model.set_scan_form (a scan that keeps its loop under "chunked" warns)."""
    cfg = {k: _config_value(v) for k, v in config.items()}
    m = _with_notes(_mixc.compile(str(path), cfg, model, [str(i) for i in include], seed, backend))
    for scan, why in m.set_scan_form(scan_form, scan_chunk).items():
        if scan_form == "chunked" and why:
            warnings.warn(f"mixc: scan {scan} keeps its step loop: {why}", stacklevel=2)
    return m


def load(run, backend="libtorch"):
    """Opens a run folder (its checkpoint.pt) or a checkpoint file, on
    `backend` as compile()."""
    return _with_notes(_mixc.load(str(run), backend))


def intervene(run, script, size=320, out="", save=(), pairs=None):
    """Runs a .rw script on a trained run; returns its Attrib table as a
    dict of lists (label, p_clean, p_corrupt, p_patched, attrib, attrib_lo,
    attrib_hi, kept), plus `readout` and the printed `report`. Also writes
    attrib.csv, per-example.csv and heatmap.svg to `out` (default:
    <run>/interventions/<script>), and activations.safetensors for `save`.

    `pairs` runs the script on your own documents instead of the first
    `size` test documents: a dict as mixc.task(run)["pairs"] — clean and
    corrupted int64 [n, T] (pad after each document; the models are
    causal), answer and readout [n], and the positions [n] of the roles the
    script names (key, value, query, divider, answer_position). The
    script's `corrupt` line is then not used (your corrupted documents are
    the corruption); `swap` still exchanges clean and corrupted. With
    `pairs`, files are written only to `out`."""
    return _mixc.intervene(str(run), str(script), int(size), str(out), list(save), pairs)


def task(run, corrupt="key", size=320, seed=42):
    """The run's task as tensors: `name`, `chance`, `vocab`; `train` and
    `test`, each a dict of tokens [N, L] (PAD after each document's length),
    length, readout (the position whose logits predict the answer), answer,
    and the positions of its roles (key, value, query, divider) [N]; and
    `pairs`, the first `size` test documents as `mixc intervene` pairs them:
    clean and corrupted [n, L'] (the key or the value in context replaced,
    drawn with `seed` as the CLI draws them), answer (the token), readout,
    the roles' positions and answer_position (the query's + 1)."""
    return _mixc.task(str(run), str(corrupt), int(size), int(seed))


def patch(model, base, source, node, positions, answer=None, readout=None):
    """Runs `base` with `node`'s values (a name or pattern: every node or
    recurrent state it matches) at `positions` ([B] int64, one per row)
    taken from the run on `source`, as `patch NODE at P` in a .rw script
    (for a state: the source's state at P is the one handed on). Returns
    p(answer) at `readout` ([B] each) when `answer` is given, else the
    logits [B, T, V]. A built-in recurrence's state is patched under
    torch.no_grad()."""
    if base.shape != source.shape:
        raise ValueError(f"mixc.patch: base {tuple(base.shape)} and source {tuple(source.shape)} differ in shape")
    positions = _rows_of("positions", positions, base.shape[0], base.shape[1])
    _, cache = model.run_with_cache(source, names=[node] if isinstance(node, str) else list(node))
    rows = torch.arange(base.shape[0])

    def take_source(value, name):
        out = value.clone()
        out[rows, positions] = cache[name][rows, positions]
        return out

    logits = model.run_with_hooks(base, [(name, take_source) for name in cache])
    if answer is None:
        return logits
    if readout is None:
        raise ValueError("mixc.patch: give `readout` (the position read in each row) with `answer`")
    at = logits[rows, _rows_of("readout", readout, base.shape[0], base.shape[1])]  # [B, V]
    answer = _rows_of("answer", answer, base.shape[0], at.shape[-1], "the vocabulary")
    return torch.softmax(at.double(), -1)[rows, answer]


def _rows_of(what, values, rows, bound, of="the document"):
    """`values` as int64 [rows], each in [0, bound), as intervene(pairs=)
    checks them: a float (1.9 would truncate) or a negative index (-1 would
    wrap to the last position) is refused, naming the row."""
    t = torch.as_tensor(values)
    if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
        raise ValueError(f"mixc.patch: {what} must be integers (int64 [B]), got {t.dtype}")
    t = t.to(torch.int64)
    if t.shape != (rows,):
        raise ValueError(f"mixc.patch: {what} must be [B] = [{rows}], got {tuple(t.shape)}")
    bad = ((t < 0) | (t >= bound)).nonzero()
    if len(bad):
        row = int(bad[0, 0])
        raise ValueError(f"mixc.patch: {what}[{row}] = {int(t[row])} is outside {of} (0 to {bound - 1})")
    return t


def names(model, **config):
    """The intervention points of a Model or of a .mix file (compiled with
    `config`): a list of dicts with kind, name, op, actions and note."""
    if not isinstance(model, Model):
        model = compile(model, **config)
    return model.names()
