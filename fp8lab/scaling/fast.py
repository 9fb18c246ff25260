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

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..codec import ckernels
from ..codec.backend import torch
from ..codec.native import cast_for
from ..codec.paths import Request, path_policy, select
from ..formats import FloatFormat, Format
from ..qtensor import QTensor
from ..registry import get_format  # noqa: F401 - the examples use it
from .base import Recipe
from .blocks import num_blocks
from .delayed import DelayedScaling
from .mx import MXScaling
from .recipes import AxisScaling, BlockScaling, TensorScaling

__all__ = ["quantize_fast", "quantize_fast_values", "FAST_RECIPES"]

#: The recipe classes the fast path serves (their ``quantize`` is the general block_stats/finalize one).
FAST_RECIPES = (TensorScaling, AxisScaling, BlockScaling, MXScaling, DelayedScaling)


def _cast_dtype(fmt: Format, device_type: str):
    """torch's dtype for ``fmt`` when the codec's saturating encode of a tensor is torch's cast, else None."""
    return _cast_dtype_under(fmt, device_type, *path_policy())


@functools.lru_cache(maxsize=256)
def _cast_dtype_under(fmt: Format, device_type: str, forced: Any, disabled: Any):
    """:func:`_cast_dtype` for one state of the codec's forced and disabled paths (cached: it depends on nothing else)."""
    if not isinstance(fmt, FloatFormat):
        return None
    cast = cast_for(fmt)
    if cast is None or cast.signless or fmt.bits > 8:
        return None
    if select(Request("encode", fmt, "torch", "nearest", True, device_type, "float32")).name != "torch_cast":
        return None
    return getattr(torch, cast.dtype)


def _kernel_for(fmt: Format, device_type: str) -> bool:
    """Whether the C kernels do the element work for ``fmt`` here (CPU, a format they encode, not disabled)."""
    return _kernel_under(fmt, device_type, *path_policy())


@functools.lru_cache(maxsize=256)
def _kernel_under(fmt: Format, device_type: str, forced: Any, disabled: Any) -> bool:
    return device_type == "cpu" and forced is None and "ckernel" not in disabled and ckernels.available() \
        and ckernels.encode_params(fmt) is not None


@dataclass(frozen=True)
class _Plan:
    """Where the blocks of one recipe lie in a tensor of one shape and memory layout (a pure function of those)."""

    block: tuple[int, ...]   #: the recipe's block for the tensor
    bblock: tuple[int, ...]  #: the block in the memory layout (turned for a transposed matrix)
    view: tuple[int, ...]    #: the blocked view of the memory layout (nb0, b0, nb1, b1, ..., axes of size-1 blocks kept)
    axes: tuple[int, ...]    #: the view's within-block axes (reduced for the amax)
    nb: tuple[int, ...]      #: blocks per axis of the tensor (the shape of ``scales``)
    nbb: tuple[int, ...]     #: blocks per axis of the memory layout
    whole: bool              #: one block holds the whole tensor
    divisor: tuple[int, ...]  #: the shape the layout's scales take to divide the view


def _make_plan(recipe: Recipe, shape: tuple[int, ...], flip: bool) -> _Plan | None:
    block = recipe.block_for(shape)
    if any(n % b for n, b in zip(shape, block)):
        return None  # partial blocks are padded by the general path
    base_shape = shape[::-1] if flip else shape
    bblock = block[::-1] if flip else block
    view: list[int] = []
    axes: list[int] = []
    divisor: list[int] = []
    for n, b in zip(base_shape, bblock):  # as blocks._view lays them out
        if b == 1:
            view.append(n)
            divisor.append(n)
        else:
            view += [n // b, b]
            axes.append(len(view) - 1)
            divisor += [n // b, 1]
    whole = all(n == 1 for i, n in enumerate(view) if i not in axes)
    return _Plan(tuple(block), tuple(bblock), tuple(view), tuple(axes), num_blocks(shape, block), num_blocks(base_shape, bblock),
                 whole, tuple(divisor))


@functools.lru_cache(maxsize=4096)
def _cached_plan(recipe: Recipe, shape: tuple[int, ...], flip: bool) -> _Plan | None:
    return _make_plan(recipe, shape, flip)


def _plan(recipe: Recipe, shape: tuple[int, ...], flip: bool) -> _Plan | None:
    """The :class:`_Plan` of ``recipe`` for ``shape`` (cached per recipe value; a recipe that cannot be hashed is planned afresh)."""
    try:
        return _cached_plan(recipe, shape, flip)
    except TypeError:  # an unhashable field value
        return _make_plan(recipe, shape, flip)


def _block_amax(v, axes: tuple[int, ...], whole: bool):
    """Largest magnitude of each block of the blocked view ``v`` (one tensor-wide block: max(max, -min), no temporary)."""
    if not axes:
        return v.abs()
    if whole:  # one block: the whole tensor
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
    got = _quantize_fast(x, fmt, recipe, state, False)
    return None if got is None else got[0]


def quantize_fast_values(x: Any, fmt: Format, recipe: Recipe, state: Any = None, *,
                         dequantize: bool = False, contiguous: bool = False) -> tuple[QTensor, Any] | None:
    """:func:`quantize_fast` and the codes' float32 values, decoded in the same pass where the C kernels ran (else None).

    The values are laid out as the QTensor's codes (a transposed view for a transposed input) and
    equal ``q.values()`` bit for bit, or with ``dequantize=True`` ``q.dequantize()``; the training
    layer hands them to the GEMM instead of decoding (and scaling) the codes again. ``contiguous=True``
    lays codes and values out contiguously even for a transposed input (the kernels write them
    transposed), as the GEMM reads them.

    >>> import torch
    >>> q, v = quantize_fast_values(torch.tensor([[1.0, -2.0], [4.0, 896.0]]), get_format("e4m3"), TensorScaling())
    >>> v is None or torch.equal(v, q.values())
    True
    """
    return _quantize_fast(x, fmt, recipe, state, True, dequantize, contiguous)


def _quantize_fast(x: Any, fmt: Format, recipe: Recipe, state: Any, want_values: bool,
                   dequantize: bool = False, contiguous: bool = False) -> tuple[QTensor, Any] | None:
    """The work of :func:`quantize_fast` (and the values, with ``want_values`` and the C kernels)."""
    if type(recipe) not in FAST_RECIPES or not torch.is_tensor(x) or x.dtype != torch.float32 or x.ndim == 0:
        return None
    on_cpu = x.is_cpu
    device_type = "cpu" if on_cpu else x.device.type
    if device_type == "meta":
        return None
    shape = tuple(x.shape)
    if not all(shape):
        return None
    dtype = _cast_dtype(fmt, device_type)
    if dtype is None:
        return None
    x = x.detach()
    # the element work runs in x's memory layout: a transposed matrix (the backward GEMMs quantize
    # x.T and dy.T) is worked on as its contiguous base with the block turned, never copied
    flip = x.ndim == 2 and not x.is_contiguous() and x.t().is_contiguous()
    plan = _plan(recipe, shape, flip)
    if plan is None:
        return None
    base = x.t() if flip else x.contiguous()
    kernel = x.ndim == 2 and _kernel_for(fmt, device_type)
    rule = _band_rule(recipe) if kernel and 1 in plan.bblock else None
    if rule is not None:
        return _band(base, fmt, recipe, rule, plan, flip, want_values, dequantize, contiguous)
    if kernel:  # one C pass: each block's max |x| (exact), and whether everything is finite
        amax_b, finite = ckernels.block_amax(base, plan.bblock)
        if not finite:
            return None
    else:
        v = base.view(plan.view)
        amax_t = _block_amax(v, plan.axes, plan.whole)
        amax_b = (amax_t if on_cpu else amax_t.cpu()).numpy().reshape(plan.nbb) + np.float32(0.0)  # -0.0 -> 0.0
    amax32 = amax_b.T if flip else amax_b
    if not kernel and not np.isfinite(amax32).all():
        return None
    amax = amax32.astype(np.float64)
    nb = plan.nb
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
    if not on_cpu:
        s_x = s_x.to(x.device)
    n_sat = int(saturated.sum())
    if kernel:  # one C pass: x / scale (clamped where a block saturates), cast; as torch's division and cast
        s_base = torch.from_numpy(np.ascontiguousarray(scales.T)) if flip else s_x
        # scales stored as E8M0 are powers of two: then x * (1 / scale) is x / scale exactly
        pow2 = getattr(ss.scale_format, "name", ss.scale_format) in ("e8m0", "float8_e8m0fnu")
        got = ckernels.scaled_encode(base, s_base, plan.bblock, fmt, clamp=bool(n_sat), reciprocal=pow2,
                                     values=want_values, dequantize=dequantize, transpose=flip and contiguous)
        codes, vals = got if want_values else (got, None)
        flip = flip and not contiguous  # written in the tensor's own layout
    else:
        vals = None
        t = v / (s_x.t() if flip else s_x).reshape(plan.divisor)
        if n_sat:
            t.clamp_(-fmt.max, fmt.max)
        codes = t.view(base.shape).to(dtype).view(torch.uint8)
    if flip:
        codes = codes.t()
        vals = vals.t() if vals is not None else None
    info = {"amax": float(amax.max()), "nonfinite_blocks": 0, "saturated_blocks": n_sat, "overflow": bool(n_sat)}
    info.update(ss.info)
    q = QTensor._trusted(codes, s_x, fmt, scaling=recipe, block=plan.block, scale_format=ss.scale_format,
                         tensor_scale=ss.tensor_scale, info=info)  # shapes and types checked above
    if delayed:
        st.scale = float(scales.reshape(-1)[0])
        st.push(q.info["amax"])
    return q, vals


def _band_rule(recipe: Recipe) -> str | None:
    """The C kernels' fused rule for ``recipe`` (its scales computed as its own ``compute_scales`` does), or None."""
    if type(recipe) is MXScaling and recipe.scale_rounding == "rceil":
        return "mx_rceil"  # Transformer Engine's MXFP8
    if type(recipe) in (AxisScaling, BlockScaling) and recipe.pow2:
        return "pow2"  # torchao's rowwise, DeepSeek-V3.1's UE8M0 tiles
    return None


def _band(base: Any, fmt: Format, recipe: Recipe, rule: str, plan: _Plan, flip: bool, want_values: bool,
          dequantize: bool, contiguous: bool) -> tuple[QTensor, Any] | None:
    """:func:`_quantize_fast` with amax, scales and cast fused in C for blocks that lie along rows or columns.

    The C kernel applies the recipe's scale rule (``mx_scale_exponents``' rceil and the E8M0 table,
    or ``float_scales(pow2=True)``) to each band of rows while it is in cache; the QTensor is the one
    the two-pass path builds.
    """
    got = ckernels.band_encode(base, plan.bblock, fmt, rule, margin=getattr(recipe, "margin", 0), values=want_values,
                               dequantize=dequantize, transpose=flip and contiguous)
    if got is None:
        return None  # an inf or NaN, or a scale out of range: the general path reports it
    codes, vals, amax_b, scales_b, codes_b, n_sat = got
    amax = amax_b.T if flip else amax_b
    scales = np.ascontiguousarray(scales_b.T) if flip else scales_b
    if flip and not contiguous:
        codes = codes.t()
        vals = vals.t() if vals is not None else None
    info = {"amax": float(amax.max()), "nonfinite_blocks": 0, "saturated_blocks": n_sat, "overflow": bool(n_sat)}
    if codes_b is not None:
        info["scale_codes"] = np.ascontiguousarray(codes_b.T) if flip else codes_b
    q = QTensor._trusted(codes, torch.from_numpy(scales), fmt, scaling=recipe, block=plan.block, scale_format="e8m0",
                         tensor_scale=None, info=info)
    return q, vals
