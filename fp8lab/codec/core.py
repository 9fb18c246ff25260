"""The codec's algorithm on float32 bit patterns, written once for numpy and torch.

Every input is first made float32 (float64 is rounded to float32 first, exactly as ml_dtypes and
torch do: one documented double rounding). A float32 ``x = sig * 2^(e-23)`` with a 24-bit
significand ``sig`` is rounded to ``m`` mantissa bits by dropping ``s = 23 - m`` low bits, or more
when ``x`` falls below the format's smallest normal (then the result is a subnormal). Rounding adds
a bias before the shift: ``2^(s-1) - 1 + lsb`` for round-to-nearest-even, 0 for toward zero, and a
uniform random ``s``-bit integer for stochastic rounding. The code is then
``((e + bias) << m) + q - 2^m``: a carry out of the mantissa bumps the exponent for free, because
codes of non-negative floats are ordered like their values.

>>> import numpy as np
>>> from fp8lab.registry import get_format
>>> u = np.array([0.8125, 500.0], dtype=np.float32).view(np.int32)
>>> encode_bits(u, get_format("e4m3"), NUMPY, "nearest", False, None).tolist()
[53, 127]
"""

from __future__ import annotations

from ..formats import FloatFormat, IntFormat
from .backend import NUMPY, Backend

__all__ = ["encode_bits", "decode_codes", "int_encode", "int_decode", "ROUNDINGS"]

#: Rounding modes and the names they also answer to.
ROUNDINGS: dict[str, str] = {
    "nearest": "nearest", "rne": "nearest", "nearest_even": "nearest",
    "toward_zero": "toward_zero", "rtz": "toward_zero", "truncate": "toward_zero",
    "stochastic": "stochastic", "sr": "stochastic",
}

_TWO64 = 2.0**64


def _normalise_subnormals(u, be: Backend):
    """Float32 bits with source subnormals rescaled by 2^64 (exact), and the exponent correction."""
    a = u & 0x7FFFFFFF
    tiny = (a < 0x00800000) & (a != 0)
    scaled = be.bits_of_float32(be.float32_of_bits(be.where(tiny, a, 0)) * _TWO64)
    return be.where(tiny, scaled, a), be.astype(tiny, be.int32()) * 64


def _is_e8m0(fmt: FloatFormat) -> bool:
    return (fmt.exponent_bits, fmt.mantissa_bits, fmt.bias, fmt.subnormals) == (8, 0, 127, False)


def _overflow_code(fmt: FloatFormat, rounding: str, saturate: bool, is_inf, be: Backend):
    """Magnitude code for values beyond max (array where finite and infinite inputs differ).

    Finite overflow: +-max when saturating, for FP6/FP4, and under truncation (IEEE 754 7.4);
    otherwise inf (IEEE-style formats) or NaN (fn, fnuz). Infinite input: inf where the format has
    it, +-max when saturating or for FP6/FP4, NaN otherwise. A fnuz NaN is marked by the sign bit
    alone, so it is returned here as the code 0x80 and kept whatever the sign.
    """
    nan = fmt.nan_code if fmt.special == "fn" else fmt.sign_mask
    if saturate or fmt.special == "finite":
        return fmt.max_code
    inf = fmt.inf_code if fmt.special == "ieee" else nan
    finite = fmt.max_code if rounding == "toward_zero" else inf
    return finite if finite == inf else be.where(is_inf, inf, finite)


def encode_bits(u, fmt: FloatFormat, be: Backend, rounding: str, saturate: bool, generator):
    """Encode int32 float32-bit-patterns ``u`` into int32 codes of ``fmt``.

    >>> import numpy as np
    >>> from fp8lab.registry import get_format
    >>> encode_bits(np.array([0x3F800000], np.int32), get_format("bf16"), NUMPY, "nearest", False, None).tolist()
    [16256]
    """
    m, bias = fmt.mantissa_bits, fmt.bias
    sign = (u >> 31) & 1
    a = u & 0x7FFFFFFF
    is_nan = a > 0x7F800000
    is_inf = a == 0x7F800000
    if fmt.min_subnormal < 2.0**-126:  # the format reaches into float32's subnormal range
        a_n, shift_down = _normalise_subnormals(u, be)
        e = ((a_n >> 23) & 0xFF) - 127 - shift_down
        sig = (a_n & 0x7FFFFF) | (be.astype(a != 0, be.int32()) << 23)  # the implicit bit
    else:  # float32 subnormals are far below this format: treat them as the tiny values they are
        big = a >> 23
        e = be.maximum(big, 1) - 127
        sig = (a & 0x7FFFFF) | (be.astype(big > 0, be.int32()) << 23)  # the implicit bit
    emin = fmt.emin
    s = (23 - m) + be.maximum(emin - e, 0)
    if rounding == "stochastic":
        s64 = be.minimum(s, 40)
        sig64 = be.astype(sig, be.int64())
        r = be.random_bits(tuple(u.shape), s64, generator, u)
        q = be.astype((sig64 + r) >> s64, be.int32())
    else:
        s = be.minimum(s, 25)  # sig < 2^24, so any larger shift already gives 0
        if rounding == "nearest":
            r = ((1 << s) >> 1) - 1 + ((sig >> s) & 1)
            if m == 23:  # s can be 0 only when no bit is dropped
                r = be.where(s > 0, r, 0)
        else:
            r = 0
        q = (sig + r) >> s
    code = ((be.maximum(e, emin) + bias) << m) + q - (1 << m)
    if not fmt.subnormals:  # no zero: anything below the smallest value rounds up to it
        code = be.maximum(code, 0)
        if _is_e8m0(fmt) and rounding == "nearest":
            # ml_dtypes rounds a float32 *subnormal* input by its bit pattern as if it were 2^-127 * 1.M,
            # so everything in (2^-127, 2^-126) goes up to 2^-126 (true nearest would keep up to 1.5 * 2^-127).
            # We follow it for bit-identity (README, "Oracles and where they disagree").
            code = be.where((a > 0x00400000) & (a < 0x00800000), 1, code)

    over = code > fmt.max_code  # inf and NaN land here too (NaN is fixed up last)
    code = be.where(over, _overflow_code(fmt, rounding, saturate, is_inf, be), code)

    if fmt.signed:
        sbit = sign << (fmt.bits - 1)
        out = code | sbit
        if fmt.special == "fnuz":
            out = be.where(code == 0, 0, out)  # there is no -0 (and NaN is 0x80 whatever the sign)
            nan_out = fmt.nan_code
        elif fmt.special == "finite":
            nan_out = (sign ^ 1) << (fmt.bits - 1)  # ml_dtypes: NaN becomes a zero of the opposite sign
        else:
            nan_out = fmt.nan_code | sbit
    else:
        negative = (sign == 1) & ((a != 0) | (not fmt.has_zero))
        out = be.where(negative, fmt.nan_code if fmt.has_nan else 0, code)
        nan_out = fmt.nan_code if fmt.has_nan else 0
    if not fmt.has_zero and fmt.has_nan:
        out = be.where(a == 0, fmt.nan_code, out)  # zero has no code: ml_dtypes gives NaN
    return be.where(is_nan, nan_out, out)


def decode_codes(c, fmt: FloatFormat, be: Backend = NUMPY):
    """Decode int64 codes into float64 values by the format's arithmetic (used to build tables).

    >>> import numpy as np
    >>> from fp8lab.registry import get_format
    >>> decode_codes(np.array([0x35, 0x7E, 0x01]), get_format("e4m3")).tolist()
    [0.8125, 448.0, 0.001953125]
    """
    m = fmt.mantissa_bits
    mag = c & fmt.magnitude_mask
    exp_field = mag >> m
    mant = mag & ((1 << m) - 1)
    sub = (exp_field == 0) & fmt.subnormals
    significand = be.where(sub, mant, mant + (1 << m))
    exponent = be.where(sub, fmt.emin - m, exp_field - fmt.bias - m)
    v = be.ldexp(significand, exponent)
    if fmt.signed:
        v = be.where((c & fmt.sign_mask) != 0, -v, v)
    nan = float("nan")
    if fmt.special == "ieee":
        top = exp_field == (2**fmt.exponent_bits - 1)
        v = be.where(top & (mant == 0), be.where(v < 0, -float("inf"), float("inf")), v)
        v = be.where(top & (mant != 0), nan, v)
    elif fmt.special == "fn":
        v = be.where(mag == fmt.magnitude_mask, nan, v)
    elif fmt.special == "fnuz":
        v = be.where(c == fmt.nan_code, nan, v)
    return v


def int_encode(x, fmt: IntFormat, be: Backend, rounding: str, generator):
    """Round float values to ``fmt``'s integers (saturating; NaN becomes 0) and return int codes.

    >>> import numpy as np
    >>> from fp8lab.registry import get_format
    >>> int_encode(np.array([2.5, -200.0, 3.5]), get_format("int8"), NUMPY, "nearest", None).tolist()
    [2, 128, 4]
    """
    if be.np:
        import numpy as np

        with np.errstate(invalid="ignore"):  # NaN is handled below
            if rounding == "nearest":
                q = np.rint(x)
            elif rounding == "toward_zero":
                q = np.trunc(x)
            else:
                q = np.floor(x + generator.random(x.shape).astype(x.dtype))
        np.clip(q, fmt.min, fmt.max, out=q)  # +-inf saturate here
        np.copyto(q, 0, where=np.isnan(q))  # NaN has no integer code: it becomes 0
        q = q.astype(np.int32)
    else:
        import torch

        x = torch.nan_to_num(x.to(torch.float64), nan=0.0, posinf=fmt.max, neginf=fmt.min)
        if rounding == "nearest":
            q = torch.round(x)
        elif rounding == "toward_zero":
            q = torch.trunc(x)
        else:
            q = torch.floor(x + torch.rand(x.shape, generator=generator, dtype=x.dtype, device=x.device))
        q = torch.clamp(q, fmt.min, fmt.max).to(torch.int64)
    return q & ((1 << fmt.bits) - 1)


def int_decode(c, fmt: IntFormat, be: Backend = NUMPY):
    """Turn two's-complement (or unsigned) int codes back into integer values.

    >>> import numpy as np
    >>> from fp8lab.registry import get_format
    >>> int_decode(np.array([2, 128, 255]), get_format("int8")).tolist()
    [2, -128, -1]
    """
    if not fmt.signed:
        return c
    half = 1 << (fmt.bits - 1)
    return be.where(c >= half, c - (1 << fmt.bits), c)
