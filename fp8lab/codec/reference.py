"""A slow, obviously-correct scalar codec: search the sorted value list for the nearest value.

It shares no code with the bit-level algorithm in :mod:`fp8lab.codec.core`, so the two check each
other in the tests (the way gfloat keeps ``round.py`` beside ``round_ndarray.py``).

>>> encode_one(0.3, "e4m3"), decode_one(0x2A, "e4m3")
(42, 0.3125)
"""

from __future__ import annotations

import bisect
import math
from fractions import Fraction
from functools import lru_cache

from ..formats import FloatFormat
from ..registry import get_format

__all__ = ["encode_one", "decode_one"]


def decode_one(code: int, fmt: "str | FloatFormat") -> float:
    """Value of one code, from the definition ``(-1)^s * 2^(E-bias) * (1 + M/2^m)``.

    >>> decode_one(0xFF, "e8m0")
    nan
    """
    fmt = get_format(fmt)
    if not 0 <= code < 2**fmt.bits:
        raise ValueError(f"code {code} is out of range for {fmt.name} (0..{2**fmt.bits - 1})")
    negative = bool(code & fmt.sign_mask)
    mag = code & fmt.magnitude_mask
    exp_field = mag >> fmt.mantissa_bits
    mant = mag & ((1 << fmt.mantissa_bits) - 1)
    if fmt.special == "ieee" and exp_field == 2**fmt.exponent_bits - 1:
        return math.nan if mant else (-math.inf if negative else math.inf)
    if fmt.special == "fn" and mag == fmt.magnitude_mask:
        return math.nan
    if fmt.special == "fnuz" and code == fmt.sign_mask:
        return math.nan
    v = fmt.code_value(mag)
    return -v if negative else v


@lru_cache(maxsize=None)
def _positive_codes(fmt: FloatFormat) -> tuple[list[Fraction], list[int]]:
    codes = list(range(fmt.max_code + 1))
    return [Fraction(fmt.code_value(c)) for c in codes], codes


def encode_one(x: float, fmt: "str | FloatFormat", *, rounding: str = "nearest", saturate: bool = False) -> int:
    """Code of the value of ``fmt`` nearest to ``x`` (ties to the even code), found by search.

    Overflow follows the default policy of :func:`fp8lab.encode` (ml_dtypes'); ``rounding`` may be
    ``"nearest"`` or ``"toward_zero"``. Inputs are taken as float32 first, as the fast codec does.

    >>> encode_one(464.0, "e4m3"), encode_one(465.0, "e4m3"), encode_one(465.0, "e4m3", saturate=True)
    (126, 127, 126)
    """
    import numpy as np

    fmt = get_format(fmt)
    if fmt.bits > 16:
        raise ValueError("the reference codec searches value lists; use it for formats up to 16 bits")
    x = float(np.float32(x))
    negative = math.copysign(1.0, x) < 0
    sbit = fmt.sign_mask if negative else 0
    if math.isnan(x):
        if fmt.special == "finite":
            return fmt.sign_mask if not negative else 0  # ml_dtypes' choice: a zero of the opposite sign
        if fmt.special == "fnuz" or not fmt.signed:
            return fmt.nan_code
        return fmt.nan_code | sbit
    if not fmt.signed and (negative and (x != 0 or not fmt.has_zero)):
        return fmt.nan_code if fmt.has_nan else 0
    if x == 0 and not fmt.has_zero:
        return fmt.nan_code
    values, codes = _positive_codes(fmt)
    overflow = None
    if math.isinf(x):
        overflow = fmt.inf_code if fmt.special == "ieee" and not saturate else None
        mag = None
    else:
        ax = Fraction(abs(x))
        i = bisect.bisect_left(values, ax)
        if i < len(values) and values[i] == ax:
            mag = codes[i]
        elif i == 0:
            mag = codes[0]  # below the smallest value of a format without zero
        elif i == len(values):  # above max: is it within half an ulp?
            threshold = Fraction(fmt.overflow_threshold)
            below = rounding == "toward_zero" or ax < threshold or (ax == threshold and codes[-1] % 2 == 0 and fmt.mantissa_bits > 0)
            mag = codes[-1] if below else None
        else:
            lo, hi = values[i - 1], values[i]
            if rounding == "toward_zero":
                mag = codes[i - 1]
            elif ax - lo < hi - ax:
                mag = codes[i - 1]
            elif ax - lo > hi - ax:
                mag = codes[i]
            else:  # a tie: the even significand wins (with no mantissa bits, the significand 1 is odd)
                even_lo = codes[i - 1] % 2 == 0 and fmt.mantissa_bits > 0
                mag = codes[i - 1] if even_lo else codes[i]
        if mag is None and fmt.special == "ieee" and not saturate:
            overflow = fmt.max_code if rounding == "toward_zero" else fmt.inf_code
    if mag is None:
        if overflow is not None:
            return overflow | sbit
        if saturate or fmt.special == "finite":
            return fmt.max_code | sbit
        return fmt.nan_code | (sbit if fmt.special == "fn" else 0)
    if mag == 0 and fmt.special == "fnuz":
        return 0
    return mag | sbit
