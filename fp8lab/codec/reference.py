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
    """Value of one code, from the definition ``(-1)^s * 2^(E-bias) * (1 + M/2^m)``; a NaN has the code's sign bit.

    >>> decode_one(0xFF, "e8m0"), math.copysign(1, decode_one(0xFF, "e4m3")), math.copysign(1, decode_one(0x80, "e4m3fnuz"))
    (nan, -1.0, -1.0)
    """
    fmt = get_format(fmt)
    if not 0 <= code < 2**fmt.bits:
        raise ValueError(f"code {code} is out of range for {fmt.name} (0..{2**fmt.bits - 1})")
    negative = bool(code & fmt.sign_mask)
    if fmt.is_nan_code(code):
        return -math.nan if negative else math.nan
    if fmt.is_inf_code(code):
        return -math.inf if negative else math.inf
    v = fmt.code_value(code & fmt.magnitude_mask)
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
    with np.errstate(over="ignore"):
        x = float(np.float32(x))
    negative = math.copysign(1.0, x) < 0
    sbit = fmt.sign_mask if negative else 0
    if math.isnan(x):
        return fmt.nan_input_code(negative)
    if not fmt.signed and negative and (x != 0 or not fmt.has_zero):
        return fmt.negative_input_code
    if x == 0:
        return fmt.negative_zero_code if negative else fmt.zero_input_code
    values, codes = _positive_codes(fmt)
    ax = Fraction(abs(x)) if math.isfinite(x) else None
    if ax is None or ax > values[-1]:  # beyond max: within half an ulp it still rounds to max
        threshold = Fraction(fmt.overflow_threshold)
        tie_down = ax == threshold and codes[-1] % 2 == 0 and fmt.mantissa_bits > 0
        if ax is not None and (rounding == "toward_zero" or ax < threshold or tie_down):
            return codes[-1] | sbit
        return fmt.overflow_code(rounding=rounding, saturate=saturate, infinite=ax is None) | sbit
    i = bisect.bisect_left(values, ax)
    if values[i] == ax:
        mag = codes[i]
    elif i == 0:
        mag = codes[0]  # below the smallest value of a format without zero
    else:
        lo, hi = values[i - 1], values[i]
        if rounding == "toward_zero" or ax - lo < hi - ax:
            mag = codes[i - 1]
        elif ax - lo > hi - ax:
            mag = codes[i]
        else:  # a tie: the even significand wins (with no mantissa bits, the significand 1 is odd)
            even_lo = codes[i - 1] % 2 == 0 and fmt.mantissa_bits > 0
            mag = codes[i - 1] if even_lo else codes[i]
    if mag == 0 and fmt.has_zero and not fmt.has_negative_zero:
        return 0  # no -0 (fnuz): a negative underflow is +0
    return mag | sbit
