"""The torch fast path of ``quantize_tensor``: a finite float32 tensor in a handful of torch operations.

The general path (``block_stats`` -> ``compute_scales`` -> ``finalize``) handles everything: padding
to whole blocks, inf and NaN, float64 inputs, zero points, every codec path. Training quantizes
three to six finite float32 matrices per layer and step, where its fixed cost (about a hundred
small operations) outweighs the arithmetic. For the common case this module computes the same
QTensor with the blocks' amax reductions, one division, an optional clamp and torch's cast (a
transposed matrix is worked in its own memory layout, so its codes come back as a transposed view):

- the recipe is one of :class:`TensorScaling`, :class:`AxisScaling`, :class:`BlockScaling`,
  :class:`MXScaling` or :class:`DelayedScaling` (exactly these classes: a subclass may change a rule);
- ``x`` is a float32 torch tensor whose blocks divide its shape, and the element format's
  saturating encode is served by torch's cast (``torch_cast`` in the codec's path table; forcing
  another path with ``fp8lab.codec.force_path`` turns this module off);
- every amax and every scale is finite and every scale positive; otherwise :func:`quantize_fast`
  returns None (before touching any state) and the general path runs.

Why the codes are the same: with finite scales and no block saturated (``amax / scale <= max`` in
float64), every ``x / scale`` rounded to float32 is at most ``max`` (rounding is monotone and
``max`` is a float32), so the saturating encode's clamp changes nothing and no NaN can arise for its
fix-up; where a block saturates the clamp is applied, as the codec does. The scales, the saturation
report and the rest of ``info`` come from the recipe's own ``compute_scales`` and the same formulas
as ``finalize``. ``tests/test_scaling_fast.py`` checks every field of the QTensor against the
general path on a sweep of recipes, formats, shapes and values (zeros, subnormals, saturating and
huge blocks), and that the fallback takes every non-finite or padded case.

>>> import torch
>>> from fp8lab.scaling.recipes import TensorScaling
>>> q = quantize_fast(torch.tensor([[1.0, -2.0], [4.0, 896.0]]), get_format("e4m3"), TensorScaling())
>>> q.scales.tolist(), q.dequantize().tolist(), q.info.saturated_blocks
([[2.0]], [[1.0, -2.0], [4.0, 896.0]], 0)
>>> quantize_fast(torch.tensor([1.0, float("inf")]), get_format("e4m3"), TensorScaling()) is None
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..codec.backend import torch
from ..codec.native import cast_for
from ..codec.paths import Request, select
from ..formats import FloatFormat, Format
from ..qtensor import QTensor
from ..registry import get_format  # noqa: F401 - the examples use it
from .base import Recipe
from .blocks import _view, num_blocks
from .delayed import DelayedScaling
from .mx import MXScaling
from .recipes import AxisScaling, BlockScaling, TensorScaling

__all__ = ["quantize_fast", "FAST_RECIPES"]

#: The recipe classes the fast path serves (their ``quantize`` is the general block_stats/finalize one).
FAST_RECIPES = (TensorScaling, AxisScaling, BlockScaling, MXScaling, DelayedScaling)


def _cast_dtype(fmt: Format, device_type: str):
    """torch's dtype for ``fmt`` when the codec's saturating encode of a tensor is torch's cast, else None."""
    if not isinstance(fmt, FloatFormat):
        return None
    cast = cast_for(fmt)
    if cast is None or cast.signless or fmt.bits > 8:
        return None
    if select(Request("encode", fmt, "torch", "nearest", True, device_type, "float32")).name != "torch_cast":
        return None
    return getattr(torch, cast.dtype)


def _block_amax(v, axes: tuple[int, ...]):
    """Largest magnitude of each block of the blocked view ``v`` (one tensor-wide block: max(max, -min), no temporary)."""
    if not axes:
        return v.abs()
    if all(n == 1 for i, n in enumerate(v.shape) if i not in axes):  # one block: the whole tensor
        return torch.maximum(torch.amax(v, dim=axes), torch.amin(v, dim=axes).neg_())
    return torch.amax(v.abs(), dim=axes)  # short blocks: torch reduces |v| once faster than v twice


def quantize_fast(x: Any, fmt: Format, recipe: Recipe, state: Any = None) -> QTensor | None:
    """The QTensor ``quantize_tensor(x, fmt, recipe, state=state)`` gives, or None where only the general path can.

    ``fmt`` is a Format (not a name); ``state`` as for ``quantize_tensor``. A DelayedScaling
    history advances exactly as the general path advances it, and only when a QTensor is returned.

    >>> import torch
    >>> from fp8lab.scaling.mx import MXScaling
    >>> q = quantize_fast(torch.ones(2, 64), get_format("e4m3"), MXScaling())
    >>> tuple(q.scales.shape), q.scale_format.name, q.info.scale_codes.tolist()
    ((2, 2), 'float8_e8m0fnu', [[119, 119], [119, 119]])
    """
    if type(recipe) not in FAST_RECIPES or not torch.is_tensor(x) or x.dtype != torch.float32 or x.ndim == 0 \
            or x.device.type == "meta":
        return None
    shape = tuple(x.shape)
    if not all(shape):
        return None
    dtype = _cast_dtype(fmt, x.device.type)
    if dtype is None:
        return None
    block = recipe.block_for(shape)
    if any(n % b for n, b in zip(shape, block)):
        return None  # partial blocks are padded by the general path
    x = x.detach()
    # the element work runs in x's memory layout: a transposed matrix (the backward GEMMs quantize
    # x.T and dy.T) is worked on as its contiguous base with the block turned, never copied
    flip = x.ndim == 2 and not x.is_contiguous() and x.t().is_contiguous()
    base = x.t() if flip else x.contiguous()
    bblock = block[::-1] if flip else block
    v, axes = _view(base, bblock)
    nb, nbb = num_blocks(shape, block), num_blocks(tuple(base.shape), bblock)
    amax_b = _block_amax(v, axes).reshape(nbb).cpu().numpy() + np.float32(0.0)  # + 0: -0.0 becomes 0.0
    amax32 = amax_b.T if flip else amax_b
    if not np.isfinite(amax32).all():
        return None
    amax = amax32.astype(np.float64)
    delayed = type(recipe) is DelayedScaling
    if delayed:
        st = recipe._resolve(state)
        ss = recipe.compute_scales(np.zeros(nb), fmt, st)
    else:
        ss = recipe.compute_scales(amax, fmt)
    if ss.zero_point is not None or ss.saturated is not None:
        return None
    scales = np.array(ss.scales, dtype=np.float32).reshape(nb)
    if not (np.isfinite(scales).all() and (scales > 0).all()):
        return None
    saturated = (amax / scales) > fmt.max
    s_x = torch.from_numpy(scales)
    if x.device.type != "cpu":
        s_x = s_x.to(x.device)
    bshape: list[int] = []
    for n, b in zip(nbb, bblock):
        bshape += [n] if b == 1 else [n, 1]
    t = v / (s_x.t() if flip else s_x).reshape(bshape)
    n_sat = int(saturated.sum())
    if n_sat:
        t.clamp_(-fmt.max, fmt.max)
    codes = t.reshape(base.shape).to(dtype).view(torch.uint8)
    if flip:
        codes = codes.t()
    info = {"amax": float(amax.max()), "nonfinite_blocks": 0, "saturated_blocks": n_sat, "overflow": bool(n_sat)}
    info.update(ss.info)
    q = QTensor(codes, s_x, fmt, scaling=recipe, block=block, scale_format=ss.scale_format,
                tensor_scale=ss.tensor_scale, info=info, dtype="float32")
    if delayed:
        st.scale = float(scales.reshape(-1)[0])
        st.push(q.info["amax"])
    return q
