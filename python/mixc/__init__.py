"""mixc from Python: compile a mixer spec or open a trained run, call the
model on torch tensors, take named activations out, and run intervention
scripts.

    import torch, mixc
    m = mixc.load("runs/default")                      # a run folder or checkpoint
    m = mixc.compile("stdlib/mamba.mix", d=64)         # or a fresh model (seed 0)
    logits = m(tokens)                                 # tokens [B, T] int64 -> [B, T, V]
    logits, cache = m.run_with_cache(tokens, names=["layers[1].block_input"])
    table = mixc.intervene("runs/default", "examples/interventions/block-inputs.rw")
    mixc.names(m)                                      # the intervention points

The model runs on mixc's LibTorch runtime, the same LibTorch as Debian's
python3-torch: logits are torch tensors, and gradients flow from them into
`m.parameters()`.
"""
import torch  # loads LibTorch before the extension that links it

from . import _mixc

__all__ = ["Model", "compile", "load", "intervene", "names"]


class Model:
    """A compiled model: call it on [B, T] int64 tokens to get [B, T, V] logits."""

    def __init__(self, impl):
        self._impl = impl

    def __call__(self, tokens):
        return self._impl.forward(tokens)

    def run_with_cache(self, tokens, names=None):
        """The logits and a dict of node values [B, T, ...] by node name.

        `names` takes node names or patterns (`layers[*].block_input`); None
        keeps every node. A recurrent state (`layers[0].mixer.state`) comes
        as [B, T, S], every step's state (read under torch.no_grad()).
        """
        if isinstance(names, str):
            names = [names]
        return self._impl.run_with_cache(tokens, list(names or []))

    def parameters(self):
        """Parameters and buffers by node name, in graph order (shared with the model)."""
        return dict(self._impl.parameters())

    def names(self):
        return self._impl.names()

    @property
    def model_name(self):
        return self._impl.model_name

    def __repr__(self):
        return f"<mixc.Model {self._impl.model_name} from {self._impl.source}>"


def _config_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def compile(path, model="", include=(), seed=0, **config):
    """Compiles a .mix file (model parameters as keywords: d=64) with fresh
    weights drawn from its init rules (`seed`)."""
    cfg = {k: _config_value(v) for k, v in config.items()}
    return Model(_mixc.compile(str(path), cfg, model, [str(i) for i in include], seed))


def load(run):
    """Opens a run folder (its checkpoint.pt) or a checkpoint file."""
    return Model(_mixc.load(str(run)))


def intervene(run, script, size=320, out="", save=()):
    """Runs a .rw script on a trained run; returns its Attrib table as a
    dict of lists (label, p_clean, p_corrupt, p_patched, attrib, attrib_lo,
    attrib_hi, kept), plus `readout` and the printed `report`. Also writes
    attrib.csv, per-example.csv and heatmap.svg to `out` (default:
    <run>/interventions/<script>), and activations.safetensors for `save`."""
    return _mixc.intervene(str(run), str(script), int(size), str(out), list(save))


def names(model, **config):
    """The intervention points of a Model or of a .mix file (compiled with
    `config`): a list of dicts with kind, name, op, actions and note."""
    if not isinstance(model, Model):
        model = compile(model, **config)
    return model.names()
