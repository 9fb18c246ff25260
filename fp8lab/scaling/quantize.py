"""``quantize_tensor``: fit a numpy array or torch tensor into a format with a scaling recipe, as a QTensor.

>>> import numpy as np
>>> x = np.linspace(-3, 3, 256, dtype=np.float32).reshape(2, 128)
>>> q = quantize_tensor(x, "e4m3", "1x128")
>>> q.scales.shape, q.bits_per_element, float(abs(q.dequantize() - x).max()) <= 3 / 16  # half an ulp of E4M3 at the top
((2, 1), 8.25, True)
"""

from __future__ import annotations

import dataclasses

from typing import Any

import numpy as np

from ..codec.backend import is_torch, torch, transposed_layout
from ..formats import Format
from ..qtensor import QTensor
from ..registry import get_format
from ..validation import lookup_key
from .base import Recipe
from .fast import quantize_fast, quantize_fast_values
from .integer import IntScaling
from .metrics import flush_counts
from .mx import MXScaling
from .nvfp4 import NVFP4Scaling
from .recipes import AxisScaling, BlockScaling, PercentileScaling, TensorScaling

__all__ = ["quantize_tensor", "get_recipe", "RECIPE_NAMES"]

#: Recipe names ``quantize_tensor`` and ``get_recipe`` accept, each mapped to a fresh recipe.
#: (``DelayedScaling`` has none: it needs one object kept across calls to hold its history.)
RECIPE_NAMES: dict[str, Any] = {
    "tensor": TensorScaling,
    "per_token": lambda: AxisScaling(axis=-1),
    "per_channel": lambda: AxisScaling(axis=0),
    "1x128": lambda: BlockScaling((1, 128)),
    "128x128": lambda: BlockScaling((128, 128)),
    "1x128_ue8m0": lambda: BlockScaling((1, 128), pow2=True),
    "128x128_ue8m0": lambda: BlockScaling((128, 128), pow2=True),
    "mx": MXScaling,
    "mx_rceil": lambda: MXScaling(scale_rounding="rceil"),
    "nvfp4": NVFP4Scaling,
    "percentile": PercentileScaling,
    "int": IntScaling,
    "int_asym": lambda: IntScaling(symmetric=False),
}


def get_recipe(name: "str | Recipe") -> Recipe:
    """A recipe from its name (see :data:`RECIPE_NAMES`); a recipe object passes through.

    >>> get_recipe("128x128")
    BlockScaling(block=(128, 128), pow2=False, margin=0)
    """
    if isinstance(name, type):
        raise TypeError(f"pass a recipe object such as {name.__name__}(), not the class {name.__name__}")
    if isinstance(name, Recipe) or (hasattr(name, "block_for") and hasattr(name, "quantize")):
        return name
    if not isinstance(name, str):
        raise TypeError(f"a recipe is a Recipe object (TensorScaling(), BlockScaling((1, 128)), MXScaling(), ...) "
                        f"or one of the names {sorted(RECIPE_NAMES)}; got {type(name).__name__}")
    key = lookup_key(name)
    if key not in RECIPE_NAMES:
        raise ValueError(f"unknown recipe {name!r}; known names: {', '.join(sorted(RECIPE_NAMES))}")
    return RECIPE_NAMES[key]()


def _as_float(x: Any) -> Any:
    """A contiguous float array/tensor from ``x``: float64 stays float64, anything else becomes float32.

    Statistics and ``x / scale`` are computed in that precision, so float64 values beyond float32's
    range still get the right scale (the codes are cast from the scaled values, which fit).
    """
    if is_torch(x):
        if x.is_complex() or x.dtype == torch.bool:
            raise TypeError(f"quantize_tensor needs real numbers, got a tensor of {x.dtype}")
        if x.device.type == "meta":
            raise ValueError("quantize_tensor computes scales from the values, and a tensor on the meta device has "
                             "none; fp8lab.encode/decode/quantize give shape-only results for meta tensors")
        x = x.detach()
        want = torch.float64 if x.dtype == torch.float64 else torch.float32
        return x.to(want).contiguous()
    try:
        arr = np.asarray(x)
    except ValueError as e:  # ragged nested lists
        raise ValueError(f"quantize_tensor needs a rectangular array of numbers: {e}") from None
    if arr.dtype.kind == "c":
        raise TypeError("quantize_tensor needs real numbers; pass the real and imaginary parts separately")
    if arr.dtype.kind not in "fiub" and arr.dtype.type.__module__ != "ml_dtypes":
        raise TypeError(f"quantize_tensor needs an array of real numbers (float, int or bool), got dtype {arr.dtype}")
    return np.asarray(arr, dtype=np.float64 if arr.dtype == np.float64 else np.float32, order="C")


_warned_graph_cut = False


def _warn_if_graph_cut(x: Any) -> None:
    """Say once that a tensor requiring grad leaves the autograd graph here."""
    global _warned_graph_cut
    if _warned_graph_cut or not is_torch(x) or not x.requires_grad or not torch.is_grad_enabled():
        return
    import warnings

    _warned_graph_cut = True
    warnings.warn("quantize_tensor is not differentiable: the QTensor's codes are cut from the autograd graph. "
                  "Use fp8lab.nn (Fp8Linear, convert) for FP8 layers that train.", UserWarning, stacklevel=3)


def _laid_out_as(q: QTensor, x: Any) -> QTensor:
    """``q`` with its torch codes in ``x``'s layout (a transposed matrix gives transposed codes), as the fast paths give them.

    The GEMM reads an operand's values in its codes' layout (``fp8lab.gemm.decode.values_like_codes``),
    so every path must lay the codes out alike for the products to agree bit for bit.
    """
    if not (is_torch(x) and is_torch(q.codes) and x.ndim == 2):
        return q
    want_t = transposed_layout(x)
    c = q.codes
    if want_t and not transposed_layout(c):
        return dataclasses.replace(q, codes=c.t().contiguous().t())
    if not want_t and not c.is_contiguous():
        return dataclasses.replace(q, codes=c.contiguous())
    return q


def _counted(q: QTensor, x: Any) -> QTensor:
    """``q`` with ``info.nonzero`` and ``info.flushed`` (counted here unless its cast counted them)."""
    if q.info.flushed is not None:
        return q
    nonzero, flushed = flush_counts(x, q)
    return dataclasses.replace(q, info=q.info.replace(nonzero=nonzero, flushed=flushed))


def quantize_tensor(x: Any, fmt: "str | Format | None" = None, recipe: "Recipe | str | None" = None, *,
                    state: Any = None, keep_values: str | None = None, count_flushed: bool = False) -> QTensor:
    """Quantize ``x`` (numpy or torch, any shape) to ``fmt`` with a scaling ``recipe``, returning a QTensor.

    ``fmt`` defaults to the recipe's usual format (``e4m3``; ``fp4`` for NVFP4; ``int8`` for
    IntScaling) and ``recipe`` to current per-tensor scaling. The recipe cuts the tensor into
    blocks, computes one scale per block (``q.scales``, float32 dequantisation multipliers with
    ``scales.shape[i] == ceil(x.shape[i] / block[i])``) and the codes are the saturating cast of
    ``x / scale``, so ``x ≈ q.dequantize() == decode(q.codes) * scale``. numpy in gives numpy
    codes and scales; a tensor gives tensors on its device. See ``fp8lab.scaling.base`` for how
    inf, NaN and all-zero blocks are handled, and ``q.info`` for what was reported.

    ``state`` is the state of a stateful recipe (``DelayedScaling``: an ``AmaxHistory`` from
    ``recipe.new_state()``), owned by the caller; without it the recipe object's own is used.
    Quantizing is not differentiable: the QTensor holds codes, cut from the autograd graph, and a
    tensor that requires grad (under grad mode) gets a one-time warning saying so; ``fp8lab.nn``
    gives FP8 layers with gradients.

    ``keep_values`` (``"values"`` or ``"dequantized"``) asks a float32 tensor's QTensor to keep
    the float32 values its cast computes in the same pass (the decoded codes, or value times
    scale), where the C kernels cast it (:meth:`QTensor.held_values`; ``scaled_matmul`` reads
    them instead of decoding the codes again, the same bits). Elsewhere nothing is kept.

    ``count_flushed=True`` adds ``q.info.nonzero`` (the input's nonzero elements) and
    ``q.info.flushed`` (how many of them the cast made zero: the underflow is their ratio, as
    :func:`~fp8lab.scaling.metrics.flushed_fraction` gives it), counted in the cast's own walk over
    ``x`` where the C kernels fuse it, else afterwards.

    >>> import numpy as np
    >>> q = quantize_tensor(np.array([[1.0, 2.0], [-4.0, 8.0]], np.float32), "e4m3", TensorScaling(pow2=True))
    >>> q.scales.tolist(), q.dequantize().tolist()
    ([[0.03125]], [[1.0, 2.0], [-4.0, 8.0]])
    """
    recipe = TensorScaling() if recipe is None else get_recipe(recipe)
    fmt = get_format(recipe.default_format if fmt is None else fmt)
    recipe.check_format(fmt)
    if state is not None and not recipe.stateful:
        raise ValueError(f"{type(recipe).__name__} keeps no state between calls; state= is for DelayedScaling")
    if keep_values not in (None, "values", "dequantized"):
        raise ValueError(f"keep_values is None, 'values' or 'dequantized', got {keep_values!r}")
    _warn_if_graph_cut(x)
    count = bool(count_flushed)
    if is_torch(x) and x.dtype == torch.float32:
        # the same QTensor by a fast path of the table in scaling/paths.py, where one serves the call
        if keep_values is None:
            q = quantize_fast(x, fmt, recipe, state, count_flushed=count)
            if q is not None:
                return _counted(q, x) if count else q
        else:
            deq = keep_values == "dequantized"
            got = quantize_fast_values(x, fmt, recipe, state, dequantize=deq, count_flushed=count)
            if got is not None:
                q, v = got
                q = _counted(q, x) if count else q
                return q if v is None else q.hold_values(v, dequantized=deq)
    q = _quantize_general(x, fmt, recipe, state)
    return _counted(q, x) if count else q


def _quantize_general(x: Any, fmt: Format, recipe: Recipe, state: Any) -> QTensor:
    """The general path of :func:`quantize_tensor` (the recipe's own quantize), for any input the fast paths left."""
    xf = _as_float(x)
    kw = {"state": state} if recipe.stateful else {}
    if xf.ndim > 0:
        return _laid_out_as(recipe.quantize(xf, fmt, **kw), x)
    q = recipe.quantize(xf.reshape(1), fmt, **kw)  # a 0-d input is quantized as one element
    zp = q.zero_point.reshape(()) if q.zero_point is not None else None
    return QTensor(q.codes.reshape(()), q.scales.reshape(()), q.format, scaling=q.scaling, block=(),
                   scale_format=q.scale_format, tensor_scale=q.tensor_scale, zero_point=zp, info=q.info, dtype=q.dtype)
