"""Decoding 8-bit float codes to float32 by moving bits: three integer operations and one multiply (torch).

A float format with a sign bit in bit 7 and subnormals decodes by sign-extending the code to
int32, shifting the exponent and mantissa fields into float32's positions, masking off the copies
of the sign and multiplying by ``2**(127 - bias)``. The float32 read from those bits is
``2**(E - 127) * 1.M`` for a normal code and ``2**-126 * 0.M`` for a subnormal one, so one
power-of-two multiply rebiases both exactly. Special codes are patched afterwards, only when one is
present: codes above the largest finite magnitude (inf and NaN where the format has them) decode
beyond ``max``, and a NaN at the negative-zero code (fnuz) decodes to the bit pattern of -0.0; the
format says which is which. On the CPU this is about 4x faster than torch's float8 cast (which
converts one element at a time). One caveat: a subnormal code is a float32 denormal before the
multiply, which x86 handles about 15x slower per element; well-scaled data has few.

>>> import torch
>>> from fp8lab.registry import get_format
>>> shift_decode(torch.tensor([0x38, 0x7E, 0xB8, 0x01], dtype=torch.uint8), get_format("e4m3")).tolist()
[1.0, 448.0, -1.0, 0.001953125]
"""

from __future__ import annotations

import functools
import math

from ..formats import FloatFormat, Format
from .backend import torch

__all__ = ["shift_decodable", "shift_decode", "patch_specials"]

_INT32_MIN = -(1 << 31)


def shift_decodable(fmt: Format) -> bool:
    """Whether ``fmt`` can be decoded by :func:`shift_decode` (8 bits, signed, with subnormals).

    >>> from fp8lab.registry import get_format
    >>> shift_decodable(get_format("e5m2")), shift_decodable(get_format("e8m0")), shift_decodable(get_format("fp4"))
    (True, False, False)
    """
    return isinstance(fmt, FloatFormat) and fmt.bits == 8 and fmt.signed and fmt.subnormals and fmt.bias >= 0


def shift_decode(codes, fmt: FloatFormat, out=None):
    """Float32 values of uint8 ``codes`` of an 8-bit signed float format, by shifting bits (torch).

    ``out`` is an optional int32 buffer with ``codes.numel()`` elements to decode into (its float32
    view is returned).

    >>> from fp8lab.registry import get_format
    >>> shift_decode(torch.tensor([0x7C, 0x7D, 0xFF], dtype=torch.uint8), get_format("e5m2")).tolist()
    [inf, nan, nan]
    """
    if not shift_decodable(fmt):
        raise ValueError(f"{fmt.name} cannot be decoded by shifting bits: needs 8 bits, a sign bit and subnormals")
    if codes.dtype != torch.uint8:
        raise TypeError(f"shift_decode takes uint8 codes, got {codes.dtype}")
    shift = 23 - fmt.mantissa_bits
    field = fmt.magnitude_mask << shift
    if out is None:
        x = codes.view(torch.int8).to(torch.int32)   # sign-extended: bits 31..7 copy the sign
    else:
        x = out.view(codes.shape)
        x.copy_(codes.view(torch.int8))
    x.bitwise_left_shift_(shift)
    x.bitwise_and_(_INT32_MIN | field)                 # keep the sign in bit 31 and the fields below
    values = x.view(torch.float32)
    values.mul_(math.ldexp(1.0, 127 - fmt.bias))      # rebias: exact for normal and subnormal codes
    return patch_specials(values, codes, fmt)


@functools.lru_cache(maxsize=256)
def _specials(fmt: FloatFormat) -> tuple[bool, bool]:
    """Whether ``fmt``'s negative-zero code is NaN, and whether some magnitudes are inf or NaN codes (cached)."""
    return bool(fmt.is_nan_code(fmt.sign_mask)), fmt.max_code < fmt.magnitude_mask


def patch_specials(values, codes, fmt: FloatFormat):
    """``values`` with the inf and NaN codes of ``fmt`` among ``codes`` (same shape) set to inf and NaN (torch).

    A decode that moves bits reads such codes as numbers beyond ``max`` (their magnitudes are the
    largest), so only when one is present does this cost more than one min/max pass; a NaN at the
    negative-zero code (fnuz) reads as -0.0 and is found on the codes. A NaN keeps its code's sign
    bit (as ml_dtypes' casts do): E4M3FN's 0xFF is -NaN, the fnuz NaN 0x80 is -NaN.

    >>> from fp8lab.registry import get_format
    >>> patch_specials(torch.tensor([1.0, 480.0]), torch.tensor([0x38, 0x7F], dtype=torch.uint8), get_format("e4m3")).tolist()
    [1.0, nan]
    >>> patch_specials(torch.tensor([1.0, -0.0]), torch.tensor([0x40, 0x80], dtype=torch.uint8), get_format("e4m3fnuz")).tolist()
    [1.0, nan]
    >>> torch.signbit(patch_specials(torch.tensor([480.0, -480.0]), torch.tensor([0x7F, 0xFF], dtype=torch.uint8), get_format("e4m3"))).tolist()
    [False, True]
    """
    nan_at_negative_zero, special_magnitudes = _specials(fmt)
    if nan_at_negative_zero and values.numel():  # fnuz: the negative-zero code is NaN (its sign bit is set: -NaN)
        negative_zero = codes == fmt.sign_mask
        if bool(negative_zero.any()):
            values.masked_fill_(negative_zero, -math.nan)
    if special_magnitudes and values.numel():  # some magnitudes are inf or NaN codes
        lo, hi = torch.aminmax(values)
        if float(hi) > fmt.max or float(lo) < -fmt.max:      # such a code is present: patch it
            c = codes.to(torch.int32)
            signed_inf = torch.where(values < 0, -math.inf, math.inf)  # the moved bits kept the code's sign
            values = torch.where(fmt.is_inf_code(c), signed_inf, values)
            values = torch.where(fmt.is_nan_code(c), torch.copysign(torch.full_like(values, math.nan), values), values)
    return values
