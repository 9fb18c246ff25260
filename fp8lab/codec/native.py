"""torch's own casts as a fast path, described as data and made to follow our codec by fix-ups.

torch can cast float32 to seven of our formats. Each :class:`NativeCast` names the torch dtype,
the format *parameters* it implements (so a user-built format with the same parameters gets the
same fast path), and how torch's cast departs from our (ml_dtypes') policy, as measured on torch
2.13 and pinned by tests:

- ``clamps_overflow``: the cast saturates where the format would give NaN (E4M3FN: 500 -> 448);
- ``canonical_nan``: NaN inputs already come out as our NaN code (False: torch writes another
  payload, e.g. 0x7F for E5M2 where ml_dtypes writes 0x7E);
- ``signless``: the cast drops the sign and maps 0 to the smallest code (E8M0: -1 -> 1, 0 -> 2^-127),
  where the format has no code for them (NaN in ours).

The fix-ups ask the format what the right answer is (``overflow_code``, ``nan_input_code``, ...),
so no name of a format appears here.

>>> import torch
>>> from fp8lab.registry import get_format
>>> cast_for(get_format("e4m3")).dtype, encode(torch.tensor([1.0, 500.0]), get_format("e4m3"), False).tolist()
('float8_e4m3fn', [56, 127])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..formats import FloatFormat, Format
from .backend import torch

__all__ = ["NativeCast", "NATIVE_CASTS", "cast_for", "encode", "quantize"]


@dataclass(frozen=True)
class NativeCast:
    """One torch cast: its dtype, the format parameters it implements, and how it departs from our policy.

    >>> NATIVE_CASTS[0].params
    (4, 3, 7, True, True, 'fn')
    """

    dtype: str
    params: tuple  #: (exponent_bits, mantissa_bits, bias, signed, subnormals, special)
    clamps_overflow: bool = False
    canonical_nan: bool = True
    signless: bool = False


#: The casts torch 2.13 has, with their measured departures (tests/test_codec_paths.py proves each).
NATIVE_CASTS: tuple[NativeCast, ...] = (
    NativeCast("float8_e4m3fn", (4, 3, 7, True, True, "fn"), clamps_overflow=True),
    NativeCast("float8_e5m2", (5, 2, 15, True, True, "ieee"), canonical_nan=False),
    NativeCast("float8_e4m3fnuz", (4, 3, 8, True, True, "fnuz")),
    NativeCast("float8_e5m2fnuz", (5, 2, 16, True, True, "fnuz")),
    NativeCast("float8_e8m0fnu", (8, 0, 127, False, False, "fn"), signless=True),
    NativeCast("bfloat16", (8, 7, 127, True, True, "ieee"), canonical_nan=False),
    NativeCast("float16", (5, 10, 15, True, True, "ieee"), canonical_nan=False),
)


def params_of(fmt: Format) -> tuple | None:
    """The parameters that decide a float format's codes (None for integer formats).

    >>> from fp8lab.registry import get_format
    >>> params_of(get_format("e5m2"))
    (5, 2, 15, True, True, 'ieee')
    """
    if not isinstance(fmt, FloatFormat):
        return None
    return (fmt.exponent_bits, fmt.mantissa_bits, fmt.bias, fmt.signed, fmt.subnormals, fmt.special)


def cast_for(fmt: Format) -> NativeCast | None:
    """The torch cast implementing ``fmt``'s parameters, or None.

    >>> from fp8lab.formats import FloatFormat
    >>> cast_for(FloatFormat("my_e4m3", 4, 3, special="fn")).dtype
    'float8_e4m3fn'
    """
    p = params_of(fmt)
    for c in NATIVE_CASTS:
        if c.params == p:
            return c
    return None


def _overflows(ax, fmt: FloatFormat):
    """Magnitudes that round beyond max (a tie at the threshold goes to the even code)."""
    thr = fmt.overflow_threshold
    if fmt.max_code & 1 and fmt.mantissa_bits:
        return ax >= thr
    return ax > thr


def encode(x, fmt: FloatFormat, saturate: bool):
    """Codes of float32 tensor ``x`` through torch's cast and the fix-ups its cast needs for ``fmt``.

    >>> from fp8lab.registry import get_format
    >>> encode(torch.tensor([3.0, 0.0, -1.0]), get_format("e8m0"), False).tolist()
    [129, 255, 255]
    """
    cast = cast_for(fmt)
    if saturate and not cast.signless:
        return _encode_saturating(x, fmt, cast)
    neg = torch.signbit(x)
    isnan = torch.isnan(x)
    wide = fmt.bits > 8
    raw = x.to(getattr(torch, cast.dtype))
    codes = (raw.view(torch.int16).to(torch.int32) & 0xFFFF) if wide else raw.view(torch.uint8).to(torch.int32)
    sign = neg.to(torch.int32) << (fmt.bits - 1) if fmt.signed else 0
    if cast.clamps_overflow and not saturate:
        over = _overflows(x.abs(), fmt) & ~isnan
        codes = torch.where(over, fmt.overflow_code(saturate=False) | sign, codes)
    if not cast.canonical_nan:
        codes = torch.where(isnan, torch.where(neg, fmt.nan_input_code(True), fmt.nan_input_code(False)), codes)
    valid = ~isnan
    if cast.signless:  # negatives and zero have no code in an unsigned format without zero
        bad = (neg | (x == 0)) & ~isnan
        codes = torch.where(bad & (x == 0), fmt.zero_input_code, codes)
        codes = torch.where(bad & (x != 0), fmt.negative_input_code, codes)
        valid = valid & ~bad
    if saturate:  # whatever came out as inf or NaN for a valid input was an overflow: clamp it to +-max
        special = (fmt.is_inf_code(codes) | fmt.is_nan_code(codes)) & valid
        codes = torch.where(special, fmt.max_code | sign, codes)
    return codes.to(torch.uint16 if wide else torch.uint8)


def _encode_saturating(x, fmt: FloatFormat, cast: NativeCast):
    """Saturating codes: clamp to +-max first (NaN passes a clamp, inf and overflow become +-max), then cast.

    Round-to-nearest of a clamped value equals saturating the rounded value: every magnitude above
    max rounds to max or beyond, and saturation maps both to max. Only a NaN may need its code fixed.
    """
    raw = x.clamp(-fmt.max, fmt.max).to(getattr(torch, cast.dtype))
    codes = raw.view(torch.uint16 if fmt.bits > 8 else torch.uint8)
    if not cast.canonical_nan:
        isnan = torch.isnan(x)
        if bool(isnan.any()):
            fix = torch.where(torch.signbit(x), fmt.nan_input_code(True), fmt.nan_input_code(False)).to(codes.dtype)
            codes = torch.where(isnan, fix, codes)
    return codes


def quantize(x, fmt: FloatFormat, saturate: bool):
    """``decode(encode(x))`` of float32 tensor ``x`` through torch's casts (values fixed up like the codes).

    >>> from fp8lab.registry import get_format
    >>> quantize(torch.tensor([0.3, 500.0]), get_format("e4m3"), True).tolist()
    [0.3125, 448.0]
    """
    cast = cast_for(fmt)
    y = x.to(getattr(torch, cast.dtype)).to(torch.float32)
    if cast.clamps_overflow and not saturate:
        over = _overflows(x.abs(), fmt) & ~torch.isnan(x)
        y = torch.where(over, float("inf") if fmt.has_inf else float("nan"), y)
    if saturate:
        bad = ~torch.isfinite(y) & ~torch.isnan(x)
        y = torch.where(bad, torch.where(torch.signbit(x), -fmt.max, fmt.max), y)
    return _code_signed_nans(y, x, fmt)


def _code_signed_nans(y, x, fmt: FloatFormat):
    """``y`` with each NaN given the sign bit of its code, as :func:`fp8lab.decode` of ``encode(x)`` has it.

    torch's casts do not keep it (bfloat16 writes 0xFFFF for every NaN in its scalar loop, float16's
    scalar loop back to float32 drops it, the fnuz casts give +NaN for the code 0x80). The code's
    sign is the input's in a signed format, set in fnuz (its one NaN is 0x80) and clear without a
    sign bit. On the CPU a tensor without NaN costs one vectorized max (numpy's, which propagates NaN).

    >>> torch.signbit(_code_signed_nans(torch.tensor([float("nan"), 1.0]), torch.tensor([-float("nan"), 1.0]), FloatFormat("e5m2", 5, 2))).tolist()
    [True, False]
    """
    if y.is_cpu and (not y.numel() or not math.isnan(float(y.numpy().max()))):
        return y
    if fmt.special == "fnuz" or not fmt.signed:
        signed = -math.nan if fmt.special == "fnuz" else math.nan
    else:
        signed = torch.copysign(y, x)  # NaN where y is NaN, with the input's sign (the code's)
    return torch.where(torch.isnan(y), signed, y)
