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
from .stochastic import bernoulli_pow2, stochastic_fraction_up

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


#: Random shifts up to this many bits are drawn in one go (int64 arithmetic); deeper ones take the exact
#: Bernoulli path of :func:`fp8lab.codec.stochastic.bernoulli_pow2`.
SR_FAST_BITS = 62


def _stochastic_quotient(sig, s, be: Backend, generator, like):
    """``floor((sig + r) / 2^s)`` for a uniform random ``s``-bit ``r``, exact for every shift ``s``.

    ``sig < 2^24``, so for ``s > 24`` the result is 0 or 1 with ``P(1) = sig / 2^s``: shifts up to
    :data:`SR_FAST_BITS` are one int64 add, deeper ones a Bernoulli draw with that exact probability
    (a capped shift would round tiny values up far too often).
    """
    s_fast = be.minimum(s, SR_FAST_BITS)
    sig64 = be.astype(sig, be.int64())
    r = be.random_bits(tuple(sig.shape), s_fast, generator, like)
    q = be.astype((sig64 + r) >> be.astype(s_fast, be.int64()), be.int32())
    deep = s > SR_FAST_BITS
    if bool(deep.any()):
        up = bernoulli_pow2(sig64, be.astype(s, be.int64()), be, generator, where=deep)
        q = be.where(deep, be.astype(up, be.int32()), q)
    return q


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
    is_zero = a == 0
    if fmt.min_subnormal < 2.0**-126:  # the format reaches into float32's subnormal range
        a_n, shift_down = _normalise_subnormals(u, be)
        e = ((a_n >> 23) & 0xFF) - 127 - shift_down
        sig = (a_n & 0x7FFFFF) | (be.astype(~is_zero, be.int32()) << 23)  # the implicit bit
    else:  # float32 subnormals are far below this format: treat them as the tiny values they are
        big = a >> 23
        e = be.maximum(big, 1) - 127
        sig = (a & 0x7FFFFF) | (be.astype(big > 0, be.int32()) << 23)  # the implicit bit
    emin = fmt.emin
    e = be.where(is_zero, emin, e)  # zero has no exponent of its own: at the bottom it encodes to the zero code
    s = (23 - m) + be.maximum(emin - e, 0)
    if rounding == "stochastic":
        q = _stochastic_quotient(sig, s, be, generator, u)
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
    # TWIN RULE: _kernels.c (encode_one) states the saturating round-to-nearest-even encode of 8-bit signed
    # formats again in C; both stay (the C loop vectorizes). tests/test_ckernels.py pins them equal on every
    # finite float32 (against torch's cast, which tests/test_codec_* pin to this algorithm and ml_dtypes).
    finite_over = fmt.overflow_code(rounding=rounding, saturate=saturate, infinite=False)
    inf_over = fmt.overflow_code(rounding=rounding, saturate=saturate, infinite=True)
    code = be.where(over, be.where(is_inf, inf_over, finite_over) if finite_over != inf_over else finite_over, code)

    negative = sign == 1
    if fmt.signed:
        out = code | (sign << (fmt.bits - 1))
        if fmt.has_zero and not fmt.has_negative_zero:
            out = be.where(code == 0, 0, out)  # no -0 (fnuz): a negative underflow is +0
        nan_out = be.where(negative, fmt.nan_input_code(True), fmt.nan_input_code(False))
    else:
        out = be.where(negative & ~is_zero, fmt.negative_input_code, code)
        nan_out = fmt.nan_input_code()
    out = be.where(is_zero, be.where(negative, fmt.negative_zero_code, fmt.zero_input_code), out)
    return be.where(is_nan, nan_out, out)


def decode_codes(c, fmt: FloatFormat, be: Backend = NUMPY):
    """Decode int64 codes into float64 values by the format's arithmetic (used to build tables).

    A NaN code decodes to a NaN whose sign bit is the code's (+NaN in formats without a sign bit),
    as ml_dtypes does: E4M3FN's 0xFF is -NaN and 0x7F +NaN, the fnuz NaN 0x80 is -NaN.

    >>> import numpy as np
    >>> from fp8lab.registry import get_format
    >>> decode_codes(np.array([0x35, 0x7E, 0x01]), get_format("e4m3")).tolist()
    [0.8125, 448.0, 0.001953125]
    >>> np.signbit(decode_codes(np.array([0x7F, 0xFF]), get_format("e4m3"))).tolist()
    [False, True]
    """
    m = fmt.mantissa_bits
    mag = c & fmt.magnitude_mask
    exp_field = mag >> m
    mant = mag & ((1 << m) - 1)
    sub = (exp_field == 0) & fmt.subnormals
    significand = be.where(sub, mant, mant + (1 << m))
    exponent = be.where(sub, fmt.emin - m, exp_field - fmt.bias - m)
    v = be.ldexp(significand, exponent)
    nan = float("nan")
    if fmt.signed:
        negative = (c & fmt.sign_mask) != 0
        v = be.where(negative, -v, v)
        nan = be.where(negative, -nan, nan)  # a NaN keeps its code's sign bit, as ml_dtypes' casts do
    v = be.where(fmt.is_inf_code(c), be.where(v < 0, -float("inf"), float("inf")), v)
    return be.where(fmt.is_nan_code(c), nan, v)


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
                q = np.floor(x)
                q += stochastic_fraction_up(x - q, be, generator)
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
            q = torch.floor(x)
            q = q + stochastic_fraction_up(x - q, be, generator).to(q.dtype)
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
