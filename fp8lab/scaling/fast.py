"""The torch fast path of ``quantize_tensor``: a finite float32 tensor in a handful of torch operations.

The general path (``block_stats`` -> ``compute_scales`` -> ``finalize``) handles everything: padding
to whole blocks, inf and NaN, float64 inputs, zero points, every codec path. Training quantizes
three to six finite float32 matrices per layer and step, where its fixed cost (about a hundred
small operations) outweighs the arithmetic. For the common case this module computes the same
QTensor with the blocks' amax reductions, one division, an optional clamp and torch's cast (a
transposed matrix is worked in its own memory layout, so its codes come back as a transposed view):

When it serves a call is declared in one table, :data:`fp8lab.scaling.paths.SCALING_PATHS`
(``fused_band``, ``ckernel``, ``torch``, then ``general``), with the codec's switches one floor up:
``which_path``, ``force_path``, ``disable_paths``. In short:

- the recipe is one of :class:`TensorScaling`, :class:`AxisScaling`, :class:`BlockScaling`,
  :class:`MXScaling` or :class:`DelayedScaling` (exactly these classes: a subclass may change a rule);
- ``x`` is a float32 torch tensor whose blocks divide its shape, and the element format's
  saturating encode is served by torch's cast (``torch_cast`` in the codec's path table);
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
from ..codec.backend import torch, transposed_layout
from ..formats import Format
from ..qtensor import QTensor, QuantInfo
from ..registry import get_format  # noqa: F401 - the examples use it
from .base import Recipe, saturating_blocks
from .delayed import DelayedScaling
from .paths import FAST_RECIPES, ScalingRequest, _Plan, _plan, band_rule, cast_dtype, select  # noqa: F401
from .recipes import TensorScaling  # noqa: F401 - the examples use it

__all__ = ["quantize_fast", "quantize_fast_values", "FAST_RECIPES"]



def _block_amax(v, axes: tuple[int, ...], whole: bool):
    """Largest magnitude of each block of the blocked view ``v`` (one tensor-wide block: max(max, -min), no temporary)."""
    if not axes:
        return v.abs()
    if whole:  # one block: the whole tensor
        return torch.maximum(torch.amax(v, dim=axes), torch.amin(v, dim=axes).neg_())
    return torch.amax(v.abs(), dim=axes)  # short blocks: torch reduces |v| once faster than v twice


def quantize_fast(x: Any, fmt: Format, recipe: Recipe, state: Any = None, *, count_flushed: bool = False) -> QTensor | None:
    """The QTensor ``quantize_tensor(x, fmt, recipe, state=state)`` gives, or None where only the general path can.

    ``fmt`` is a Format (not a name); ``state`` as for ``quantize_tensor``. A DelayedScaling
    history advances exactly as the general path advances it, and only when a QTensor is returned.

    >>> import torch
    >>> from fp8lab.scaling.mx import MXScaling
    >>> q = quantize_fast(torch.ones(2, 64), get_format("e4m3"), MXScaling())
    >>> tuple(q.scales.shape), q.scale_format.name, q.info.scale_codes.tolist()
    ((2, 2), 'float8_e8m0fnu', [[119, 119], [119, 119]])
    """
    got = _quantize_fast(x, fmt, recipe, state, False, count_flushed=count_flushed)
    return None if got is None else got[0]


def quantize_fast_values(x: Any, fmt: Format, recipe: Recipe, state: Any = None, *, dequantize: bool = False,
                         contiguous: bool = False, count_flushed: bool = False) -> tuple[QTensor, Any] | None:
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
    return _quantize_fast(x, fmt, recipe, state, True, dequantize, contiguous, count_flushed)


def _quantize_fast(x: Any, fmt: Format, recipe: Recipe, state: Any, want_values: bool,
                   dequantize: bool = False, contiguous: bool = False,
                   count_flushed: bool = False) -> tuple[QTensor, Any] | None:
    """The work of :func:`quantize_fast` (and the values, with ``want_values`` and the C kernels).

    ``count_flushed``: the fused C paths count the cast's flushes in the same walk (``info.nonzero`` and
    ``info.flushed``); the others leave them to ``quantize_tensor``.
    """
    if not torch.is_tensor(x):
        return None
    on_cpu = x.is_cpu
    device_type = "cpu" if on_cpu else x.device.type
    shape = tuple(x.shape)
    # the element work runs in x's memory layout: a transposed matrix (the backward GEMMs quantize
    # x.T and dy.T) is worked on as its contiguous base with the block turned, never copied
    flip = transposed_layout(x)
    dtype = "float32" if x.dtype == torch.float32 else str(x.dtype).removeprefix("torch.")
    req = ScalingRequest(recipe, fmt, "torch", device_type, dtype, shape, flip)
    path = select(req).name  # the table in scaling/paths.py says which path serves this call
    if path == "general":
        return None
    x = x.detach()
    pl = _plan(recipe, shape, flip)
    base = x.t() if flip else x.contiguous()
    if path == "fused_band":
        return _band(base, fmt, recipe, band_rule(recipe), pl, flip, want_values, dequantize, contiguous,
                     count_flushed)
    kernel = path == "ckernel"
    delayed = type(recipe) is DelayedScaling
    if kernel and delayed:  # the scale comes from the history: amax measured in the cast's own walk over x
        return _delayed_one_pass(base, fmt, recipe, state, pl, flip, want_values, dequantize, contiguous,
                                 count_flushed)
    if kernel:  # one C pass: each block's max |x| (exact), and whether everything is finite
        amax_b, finite = ckernels.block_amax(base, pl.bblock)
        if not finite:
            return None
    else:
        v = base.view(pl.view)
        amax_t = _block_amax(v, pl.axes, pl.whole)
        amax_b = (amax_t if on_cpu else amax_t.cpu()).numpy().reshape(pl.nbb) + np.float32(0.0)  # -0.0 -> 0.0
    amax32 = amax_b.T if flip else amax_b
    if not kernel and not np.isfinite(amax32).all():
        return None
    amax = amax32.astype(np.float64)
    st = recipe._resolve(state) if delayed else None
    ss = recipe.compute_scales(np.zeros(pl.nb), fmt, st) if delayed else recipe.compute_scales(amax, fmt)
    scales = _checked_scales(ss, pl.nb)
    if scales is None:
        return None
    saturated = saturating_blocks(amax, scales, fmt.max, checked=True)  # scales checked finite and positive above
    s_x = torch.from_numpy(scales)
    if not on_cpu:
        s_x = s_x.to(x.device)
    n_sat = int(saturated.sum())
    if kernel:  # one C pass: x / scale, saturating cast; as torch's division, clamp_ (where a block saturates) and cast
        s_base = torch.from_numpy(np.ascontiguousarray(scales.T)) if flip else s_x
        got = ckernels.scaled_encode(base, s_base, pl.bblock, fmt, reciprocal=_pow2(ss), values=want_values,
                                     dequantize=dequantize, transpose=flip and contiguous)  # saturating: no clamp
        codes, vals = got if want_values else (got, None)
        flip = flip and not contiguous  # written in the tensor's own layout
    else:
        vals = None
        t = v / (s_x.t() if flip else s_x).reshape(pl.divisor)
        if n_sat:
            t.clamp_(-fmt.max, fmt.max)
        codes = t.view(base.shape).to(cast_dtype(fmt, device_type)).view(torch.uint8)
    return _finish(codes, vals, flip, s_x, amax, n_sat, ss, fmt, recipe, pl, st, None)


def _checked_scales(ss: Any, nb: tuple[int, ...]) -> np.ndarray | None:
    """The ScaleSet's scales as float32 (``nb``), or None where only the general path can (a zero point, a report of
    saturation, a scale that is not finite and positive)."""
    if ss.zero_point is not None or ss.saturated is not None:
        return None
    scales = np.array(ss.scales, dtype=np.float32).reshape(nb)
    lo, hi = np.minimum.reduce(scales, axis=None), np.maximum.reduce(scales, axis=None)
    return scales if lo > 0 and hi < np.inf else None  # NaN fails both


def _pow2(ss: Any) -> bool:
    """Whether the scales are stored as E8M0, so powers of two: then x * (1 / scale) is x / scale exactly."""
    return getattr(ss.scale_format, "name", ss.scale_format) in ("e8m0", "float8_e8m0fnu")


def _finish(codes: Any, vals: Any, turned: bool, s_x: Any, amax: np.ndarray, n_sat: int, ss: Any, fmt: Format,
            recipe: Recipe, pl: _Plan, st: Any, counts: tuple[int, int] | None) -> tuple[QTensor, Any]:
    """The QTensor of a fast cast (codes and values seen transposed where they were written in the base's layout),
    its report as ``finalize`` writes it, and a delayed-scaling history ``st`` advanced (once, on success)."""
    if turned:
        codes = codes.t()
        vals = vals.t() if vals is not None else None
    flush = {} if counts is None else {"nonzero": counts[0], "flushed": counts[1]}
    info = QuantInfo.of(float(np.maximum.reduce(amax, axis=None)), 0, n_sat, **ss.info, **flush)
    q = QTensor._trusted(codes, s_x, fmt, scaling=recipe, block=pl.block, scale_format=ss.scale_format,
                         tensor_scale=ss.tensor_scale, info=info)  # shapes and types checked by the caller
    if st is not None:
        st.scale = float(s_x.reshape(-1)[0])
        st.push(q.info.amax)
    return q, vals


def _delayed_one_pass(base: Any, fmt: Format, recipe: DelayedScaling, state: Any, pl: _Plan, flip: bool,
                      want_values: bool, dequantize: bool, contiguous: bool,
                      count_flushed: bool = False) -> tuple[QTensor, Any] | None:
    """:func:`_quantize_fast` for delayed scaling in one C walk over ``x``: the history's scale is known before the
    cast, so the cast measures the amax (for the report and the history) as it goes.

    The same QTensor as the two-pass path (saturating blocks need no clamp: the cast saturates), and the
    history advances only when the tensor was finite (else the general path reports it, nothing moved).
    """
    st = recipe._resolve(state)
    ss = recipe.compute_scales(np.zeros(pl.nb), fmt, st)
    scales = _checked_scales(ss, pl.nb)
    if scales is None:
        return None
    s_x = torch.from_numpy(scales)
    s_base = torch.from_numpy(np.ascontiguousarray(scales.T)) if flip else s_x
    codes, vals, amax_b, finite, counts = ckernels.scaled_encode_measured(
        base, s_base, pl.bblock, fmt, reciprocal=_pow2(ss), values=want_values, dequantize=dequantize,
        transpose=flip and contiguous, flush=count_flushed)
    if not finite:
        return None
    amax = (amax_b.T if flip else amax_b).astype(np.float64)
    n_sat = int(saturating_blocks(amax, scales, fmt.max, checked=True).sum())
    return _finish(codes, vals, flip and not contiguous, s_x, amax, n_sat, ss, fmt, recipe, pl, st, counts)


def _band(base: Any, fmt: Format, recipe: Recipe, rule: str, plan: _Plan, flip: bool, want_values: bool,
          dequantize: bool, contiguous: bool, count_flushed: bool = False) -> tuple[QTensor, Any] | None:
    """:func:`_quantize_fast` with amax, scales and cast fused in one C call, a band of rows at a time.

    The C kernel applies the recipe's scale rule (``mx_scale_exponents``' rceil and the E8M0 table,
    or ``float_scales`` with or without ``pow2``) to each band of rows while it is in cache; the
    QTensor is the one the two-pass path builds.
    """
    got = ckernels.band_encode(base, plan.bblock, fmt, rule, margin=getattr(recipe, "margin", 0), values=want_values,
                               dequantize=dequantize, transpose=flip and contiguous, flush=count_flushed)
    if got is None:
        return None  # an inf or NaN, or a scale out of range: the general path reports it
    codes, vals, amax_b, scales_b, codes_b, n_sat, counts = got
    amax = amax_b.T if flip else amax_b
    scales = np.ascontiguousarray(scales_b.T) if flip else scales_b
    if flip and not contiguous:
        codes = codes.t()
        vals = vals.t() if vals is not None else None
    extra = {} if codes_b is None else {"scale_codes": np.ascontiguousarray(codes_b.T) if flip else codes_b}
    if counts is not None:
        extra.update(nonzero=counts[0], flushed=counts[1])
    info = QuantInfo.of(float(np.maximum.reduce(amax, axis=None)), 0, n_sat, **extra)
    q = QTensor._trusted(codes, torch.from_numpy(scales), fmt, scaling=recipe, block=plan.block,
                         scale_format="float32" if rule == "float" else "e8m0", tensor_scale=None, info=info)
    return q, vals
