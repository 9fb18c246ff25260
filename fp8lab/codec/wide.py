"""Fast path for formats that share float32's exponent (bfloat16, TF32-like E8Mx): round in place.

With 8 exponent bits and bias 127 every float32 lies in the same binade of the target, subnormals
included, so rounding to ``m`` mantissa bits is one integer add and a mask on the float32 bit
pattern: ``(u + 2^(s-1) - 1 + lsb) & ~(2^s - 1)`` with ``s = 23 - m``. A carry out of the mantissa
moves into the exponent, and past the largest finite value it lands exactly on inf.

>>> import numpy as np
>>> from fp8lab.registry import get_format
>>> round_bits(np.array([1.00390625, 1.01171875], np.float32).view(np.int32), get_format("bf16"), "nearest", False).view(np.float32).tolist()
[1.0, 1.015625]
"""

from __future__ import annotations

import numpy as np

from ..formats import FloatFormat, Format

__all__ = ["wide_ok", "round_bits", "round_bits_torch", "decode_wide"]

CHUNK = 1 << 16


def wide_ok(fmt: FloatFormat, rounding: str) -> bool:
    """Whether ``fmt`` shares float32's exponent layout (so the in-place rounding is exact).

    >>> from fp8lab.registry import get_format
    >>> wide_ok(get_format("bf16"), "nearest"), wide_ok(get_format("fp16"), "nearest")
    (True, False)
    """
    return (
        isinstance(fmt, FloatFormat)
        and (fmt.exponent_bits, fmt.bias, fmt.special, fmt.subnormals, fmt.signed) == (8, 127, "ieee", True, True)
        and rounding in ("nearest", "toward_zero")
    )


def round_bits(u: np.ndarray, fmt: FloatFormat, rounding: str, saturate: bool, out: np.ndarray | None = None) -> np.ndarray:
    """Round int32 float32-bit-patterns to ``fmt`` and return float32 bit patterns of the results.

    >>> from fp8lab.registry import get_format
    >>> round_bits(np.array([0x7F7FFFFF], np.int32), get_format("bf16"), "nearest", False).tolist() == [0x7F800000]
    True
    """
    s = 23 - fmt.mantissa_bits
    if out is None:
        out = np.empty_like(u)
    t = np.empty(min(u.shape[0], CHUNK), dtype=np.int32)
    mag_max = ((fmt.max_code & fmt.magnitude_mask) << s)  # bits of max in float32 layout
    for i in range(0, u.shape[0], CHUNK):
        src = u[i : i + CHUNK]
        dst = out[i : i + CHUNK]
        tt = t[: src.shape[0]]
        if rounding == "nearest" and s > 0:
            np.right_shift(src, s, out=tt)
            tt &= 1
            tt += (1 << (s - 1)) - 1
            tt += src
        else:
            tt[...] = src
        np.bitwise_and(tt, ~((1 << s) - 1), out=dst)
        nan = np.isnan(src.view(np.float32))
        if saturate:  # finite overflow and inf become +-max, keeping the sign
            over = (dst & 0x7FFFFFFF) >= 0x7F800000
            np.copyto(dst, (src & np.int32(-0x80000000)) | mag_max, where=over & ~nan)
        if nan.any():  # a quiet NaN with the input's sign (payloads are not kept)
            np.copyto(dst, (src & np.int32(-0x80000000)) | 0x7FC00000, where=nan)
    return out


def round_bits_torch(x, mantissa_bits: int, rounding: str, saturate: bool = False, *, inplace: bool = False,
                     keep_nan: bool = True):
    """Round a float32 tensor to ``mantissa_bits`` (float32's exponent) by integer ops on its bits, any device.

    The torch twin of :func:`round_bits`: NaN stays a quiet NaN with its sign (a payload that lived
    only in the dropped bits must not turn into inf), and ``saturate`` clamps overflow to +-max.
    ``inplace=True`` rounds ``x`` itself and returns it. ``keep_nan=False`` skips the NaN fix-up
    (two passes over ``x``): for callers that check afterwards that no NaN or inf arose (the GEMM's
    accumulator loop); every other value rounds the same.

    >>> import torch
    >>> round_bits_torch(torch.tensor([1.00390625, float("nan")]), 7, "nearest").tolist()
    [1.0, nan]
    """
    from .backend import torch

    if not inplace:
        x = x.clone()
    drop = 23 - mantissa_bits
    bits = x.view(torch.int32)
    if not keep_nan and not saturate:
        if rounding == "nearest" and drop:
            bits.add_((bits >> drop) & 1).add_((1 << (drop - 1)) - 1)
        if drop:
            bits.bitwise_and_(-(1 << drop))
        return x
    nan = torch.isnan(x)
    sign = bits & -0x80000000
    if rounding == "nearest" and drop:  # add half an ulp minus one, plus the kept last bit: ties go to even
        bits.add_((bits >> drop) & 1).add_((1 << (drop - 1)) - 1)
    bits.bitwise_and_(-(1 << drop))
    if saturate:  # finite overflow and inf become +-max, keeping the sign
        mag_max = 0x7F800000 - (1 << drop)
        over = ((bits & 0x7FFFFFFF) >= 0x7F800000) & ~nan
        bits.copy_(torch.where(over, sign | mag_max, bits))
    bits.copy_(torch.where(nan, sign | 0x7FC00000, bits))
    return x


def decode_wide(codes: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Decode codes of a format with float32's exponent by shifting them into a float32 pattern.

    >>> from fp8lab.registry import get_format
    >>> decode_wide(np.array([0x3F80, 0xFF80], np.uint16), get_format("bf16")).tolist()
    [1.0, -inf]
    """
    return (codes.astype(np.uint32) << (32 - fmt.bits)).view(np.float32)
