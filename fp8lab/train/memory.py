"""Training memory per recipe: master weights, the GEMMs' weight copies, gradients, optimizer states, saved linear inputs.

``fp8lab.sizing`` counts memory per *parameter* by memory plan; a training recipe
(:class:`fp8lab.nn.LinearRecipe`) also decides what the linear layers keep in low precision. For a
model's linear layers (:func:`model_linears`: the tiny GPT from its modules, a published
transformer from its :class:`fp8lab.sizing.ModelConfig`) and a number of tokens per step,
:func:`recipe_memory` computes, from the recipe's formats and scaling blocks:

- **master weights**: every parameter in FP32 (``Fp8Linear`` keeps FP32 parameters);
- **weight copies for the GEMMs**: each linear weight cast to the weight role's format, with its
  scales; a second copy along the other axis when dgrad needs other blocks (per-row and MX scales
  run along the reduction axis, which dgrad turns; per-tensor scales and 128x128 blocks are reused);
  none for an FP32 role;
- **gradients**: FP32, as ``fp8lab.train`` accumulates them (DeepSeek-V3 also accumulates in FP32);
- **optimizer states**: AdamW's two FP32 moments;
- **saved linear inputs**: what wgrad reads, each distinct linear input once per layer, in the input
  role's format and blocks along the token axis (DeepSeek-V3's 128x1 tiles; an FP8 implementation
  keeps only this copy, as ``Fp8Linear`` does by default, ``save_fp8=True``; with ``save_fp8=False``
  it keeps the FP32 input instead). :func:`saved_input_bytes` is one layer's share.

Activations saved by the rest of the network (norms, attention, GELU) do not depend on the recipe
and are left out, as are temporary buffers.

>>> m = recipe_memory("fp8-blockwise", "tiny-gpt")
>>> [r["component"] for r in m.rows()][:3], m.component("weight copies for the GEMMs") > 0
(['master weights', 'weight copies for the GEMMs', 'gradients'], True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..sizing.units import format_bytes
from ..validation import check_int

__all__ = ["LinearSite", "ModelLinears", "RecipeMemory", "model_linears", "recipe_memory", "memory_table",
           "saved_input_bytes"]


@dataclass(frozen=True)
class LinearSite:
    """One linear layer of a transformer block: its weight's shape and the input it reads.

    Layers with the same ``input`` read one tensor (q, k and v read the normed hidden state), which
    wgrad needs saved once.

    >>> LinearSite("c_fc", 512, 128, "ln_2").weight_elements
    65536
    """

    name: str
    out_features: int
    in_features: int
    input: str

    @property
    def weight_elements(self) -> int:
        """Elements of the weight matrix (out x in)."""
        return self.out_features * self.in_features


@dataclass(frozen=True)
class ModelLinears:
    """A model's parameter count and the linear layers of one block, repeated ``layers`` times.

    >>> t = model_linears("tiny-gpt"); t.layers, [s.name for s in t.sites]
    (4, ['attn.c_attn', 'attn.c_proj', 'mlp.c_fc', 'mlp.c_proj'])
    """

    name: str
    params: int
    layers: int
    sites: tuple[LinearSite, ...]
    tokens: int  #: the default tokens per step (batch x sequence)


def _tiny_gpt(config: Any = None) -> ModelLinears:
    """The GPT of ``fp8lab.nn.gpt`` (default: nanoGPT's CPU example), counted from its modules."""
    import torch

    from ..nn.gpt import GPT, GPTConfig
    from .config import TrainConfig

    cfg = config or GPTConfig()
    with torch.device("meta"):
        model = GPT(cfg)
    block = model.h[0]
    sites = []
    inputs = {"attn.c_attn": "ln_1", "attn.c_proj": "attention output", "mlp.c_fc": "ln_2", "mlp.c_proj": "gelu"}
    for name, mod in block.named_modules():
        if isinstance(mod, torch.nn.Linear):
            sites.append(LinearSite(name, mod.out_features, mod.in_features, inputs.get(name, name)))
    tc = TrainConfig()
    return ModelLinears("tiny GPT", model.num_params(), cfg.n_layer, tuple(sites), tc.batch_size * cfg.block_size)


def _transformer(model: Any, tokens: int) -> ModelLinears:
    """A dense decoder from a sizing ModelConfig: q, k, v, o, and the (gated) MLP."""
    from ..sizing import get_model, param_count

    c = get_model(model)
    if c.is_moe or c.attention == "mla":
        raise ValueError(f"model {c.name!r}: recipe memory counts dense attention and MLP layers; "
                         f"{'a mixture of experts' if c.is_moe else 'MLA'} is not modelled")
    if c.intermediate_size is None:
        raise ValueError(f"model {c.name!r} has no intermediate_size")
    q, kv, h, i = c.heads * c.head_dim, c.kv_heads * c.head_dim, c.hidden, c.intermediate_size
    sites = [LinearSite("q_proj", q, h, "input norm"), LinearSite("k_proj", kv, h, "input norm"),
             LinearSite("v_proj", kv, h, "input norm"), LinearSite("o_proj", h, q, "attention output")]
    if c.mlp == "gated":
        sites += [LinearSite("gate_proj", i, h, "post-attention norm"), LinearSite("up_proj", i, h, "post-attention norm"),
                  LinearSite("down_proj", h, i, "gate * up")]
    else:
        sites += [LinearSite("fc1", i, h, "post-attention norm"), LinearSite("fc2", h, i, "activation")]
    return ModelLinears(c.name, param_count(c).total, c.layers, tuple(sites), tokens)


def model_linears(model: Any = "tiny-gpt", *, tokens: int | None = None) -> ModelLinears:
    """The linear layers of ``"tiny-gpt"`` (or a ``GPTConfig``) or of a published dense model (a sizing name).

    ``tokens`` per step defaults to the tiny GPT's batch (12 x 64) and to one 4096-token sequence
    for a published model.

    >>> model_linears("llama-2-7b").sites[-1]
    LinearSite(name='down_proj', out_features=4096, in_features=11008, input='gate * up')
    """
    from ..nn.gpt import GPTConfig

    if tokens is not None:
        tokens = check_int("model_linears", "tokens", tokens, minimum=1)
    if isinstance(model, GPTConfig) or (isinstance(model, str) and model.lower().replace("_", "-") == "tiny-gpt"):
        m = _tiny_gpt(model if isinstance(model, GPTConfig) else None)
        return m if tokens is None else ModelLinears(m.name, m.params, m.layers, m.sites, tokens)
    return _transformer(model, 4096 if tokens is None else tokens)


def _scale_bits(tq) -> int:
    """Bits of one scale of this role's rule (FP32, or E8M0 for MX), asked of the library itself."""
    from ..scaling import quantize_tensor

    state = tq.scaling.new_state() if tq.stateful else None
    return quantize_tensor(np.ones((1, 32), np.float32), tq.format, tq.scaling, state=state).scale_format.bits


def _matrix_bytes(tq, rows: int, cols: int) -> int:
    """Bytes of a (rows, cols) matrix cast for role ``tq`` along its last axis (None: FP32), scales included."""
    if tq is None:
        return rows * cols * 4
    codes = math.ceil(rows * cols * tq.format.bits / 8)
    if tq.scaling is None:
        return codes
    block = tq.scaling.block_for((rows, cols))
    n_scales = math.ceil(rows / block[0]) * math.ceil(cols / block[1])
    return codes + math.ceil(n_scales * _scale_bits(tq) / 8)


def saved_input_bytes(recipe: Any, tokens: int, in_features: int) -> int:
    """Bytes one linear layer keeps of its input for wgrad: (tokens, in_features) cast along the tokens, scales included.

    What ``Fp8Linear`` saves for backward (``save_fp8=True``, the default) (``tests/test_nn_layer.py`` measures it
    with ``torch.autograd.graph.saved_tensors_hooks``); the "saved linear inputs" component sums it.

    >>> saved_input_bytes("fp8-blockwise", 256, 128), saved_input_bytes("fp32", 256, 128)
    (33792, 131072)
    """
    from ..nn import LinearRecipe

    tokens = check_int("saved_input_bytes", "tokens", tokens, minimum=0)
    in_features = check_int("saved_input_bytes", "in_features", in_features, minimum=1)
    if tokens == 0:
        return 0
    return _matrix_bytes(LinearRecipe.from_name(recipe).input, in_features, tokens)


def _turns(tq, shape: tuple[int, int]) -> bool:
    """Whether the rule's blocks along axis 0 differ from its blocks along axis 1 (a second copy is needed)."""
    if tq is None or tq.scaling is None or tq.stateful:
        return False
    return tuple(tq.scaling.block_for(shape[::-1]))[::-1] != tuple(tq.scaling.block_for(shape))


@dataclass(frozen=True)
class RecipeMemory:
    """Bytes a training recipe keeps for a model, by component (see the module docstring).

    >>> m = recipe_memory("fp32", "tiny-gpt"); m.component("weight copies for the GEMMs")
    0
    """

    recipe: Any
    model: ModelLinears
    components: tuple[tuple[str, int, str], ...]  #: (component, bytes, what it is)

    def component(self, name: str) -> int:
        """Bytes of one component by name.

        >>> recipe_memory("bf16", "tiny-gpt").component("master weights") == 4 * model_linears().params
        True
        """
        for n, b, _ in self.components:
            if n == name:
                return b
        raise KeyError(f"no component {name!r}; components: {', '.join(n for n, _, _ in self.components)}")

    @property
    def total_bytes(self) -> int:
        """All components together.

        >>> m = recipe_memory("fp32", "tiny-gpt")
        >>> m.total_bytes == 16 * m.model.params + m.component("saved linear inputs")
        True
        """
        return sum(b for _, b, _ in self.components)

    def rows(self) -> list[dict]:
        """One dict per component (component, bytes, bytes per parameter, what) and a total row.

        >>> recipe_memory("fp32", "tiny-gpt").rows()[-1]["component"]
        'total'
        """
        p = self.model.params
        out = [{"component": n, "bytes": b, "bytes_per_param": b / p, "what": w} for n, b, w in self.components]
        out.append({"component": "total", "bytes": self.total_bytes, "bytes_per_param": self.total_bytes / p, "what": ""})
        return out

    def __str__(self) -> str:
        return f"{self.recipe.name} on {self.model.name} ({self.model.tokens} tokens/step): {format_bytes(self.total_bytes)}"


def recipe_memory(recipe: Any, model: Any = "tiny-gpt", *, tokens: int | None = None) -> RecipeMemory:
    """Memory a training recipe keeps for ``model`` (``"tiny-gpt"``, a GPTConfig, or a published model's name).

    >>> print(recipe_memory("fp8-blockwise", "llama-2-7b"))
    fp8-blockwise on llama-2-7b (4096 tokens/step): 117.44 GB (109.38 GiB)
    """
    from ..nn import LinearRecipe

    r = LinearRecipe.from_name(recipe)
    m = model if isinstance(model, ModelLinears) else model_linears(model, tokens=tokens)
    if isinstance(model, ModelLinears) and tokens is not None:
        m = ModelLinears(m.name, m.params, m.layers, m.sites, check_int("recipe_memory", "tokens", tokens, minimum=1))
    p, L = m.params, m.layers
    copies = 0
    if r.weight is not None:
        for s in m.sites:
            shape = (s.out_features, s.in_features)
            copies += _matrix_bytes(r.weight, *shape)
            if _turns(r.weight, shape):
                copies += _matrix_bytes(r.weight, s.in_features, s.out_features)
    saved = 0
    seen: dict[str, int] = {}
    for s in m.sites:
        seen.setdefault(s.input, s.in_features)
    for width in seen.values():  # wgrad reads x along the tokens: quantized as x^T, (K, tokens)
        saved += _matrix_bytes(r.input, width, m.tokens)
    w_fmt = "FP32, read directly" if r.weight is None else r.weight.describe()
    x_fmt = "FP32" if r.input is None else r.input.describe()
    comps = (
        ("master weights", 4 * p, "FP32 parameters"),
        ("weight copies for the GEMMs", copies * L, w_fmt),
        ("gradients", 4 * p, "FP32"),
        ("optimizer states", 8 * p, "AdamW m and v, FP32"),
        ("saved linear inputs", saved * L, f"{x_fmt}, {m.tokens} tokens"),
    )
    return RecipeMemory(r, m, comps)


def memory_table(model: Any = "tiny-gpt", recipes: Any = None, *, tokens: int | None = None) -> tuple[list[str], list[list[Any]]]:
    """Headers and rows: one row per recipe, bytes per component and the total (for ``format_table``).

    >>> h, rows = memory_table("tiny-gpt", ["fp32", "fp8-blockwise"]); h[0], [r[0] for r in rows]
    ('recipe', ['fp32', 'fp8-blockwise'])
    """
    from ..nn import LinearRecipe

    names = list(LinearRecipe.names()) if recipes is None else list(recipes)
    m = model_linears(model, tokens=tokens) if not isinstance(model, ModelLinears) else model
    mems = [recipe_memory(n, m) for n in names]
    headers = ["recipe", *[n for n, _, _ in mems[0].components], "total"]
    rows = [[mem.recipe.name, *[b for _, b, _ in mem.components], mem.total_bytes] for mem in mems]
    return headers, rows
