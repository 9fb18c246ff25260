"""Decoding through IEEE half: codes whose fields fit FP16's are shifted into a float16 bit pattern.

torch converts float16 to float32 in vectorized code (F16C on x86), subnormals included, so this
is the fastest decode of a torch tensor on the CPU in torch alone (the C kernels' table decode,
``codec/ckernels.py``, comes first where gcc built them). Two kinds of format qualify:

- **FP16's own exponent layout** (5 bits, bias 15, IEEE inf and NaN, signed, subnormals; at most
  16 bits: E5M2, FP16): the codes are the top bits of a half, so a left shift is the whole decode.
- **8-bit signed formats with at most 4 exponent bits** (E4M3FN, E4M3FNUZ, E3M4, ...): the
  sign-extended code is shifted so its mantissa is half's top mantissa bits and its exponent
  half's low exponent bits, masked, converted, and multiplied by ``2**(15 - bias)``. A normal code
  is then ``2**(E - 15) * 1.M * 2**(15 - bias)`` and a subnormal one ``2**-14 * 0.M * 2**(15 - bias)``:
  both exact (a power-of-two multiply of a value float32 holds). The exponent never reaches
  half's inf/NaN field (at most 15 of 31), so the format's own special codes read as numbers beyond
  ``max`` (or, fnuz's NaN, as -0.0) and are patched by :func:`fp8lab.codec.shift.patch_specials`.

On the CPU this beats numpy's table look-up and the int32 shift of :mod:`fp8lab.codec.shift` (which
meets float32 denormals for subnormal codes); ``bench/codec.py`` measures it (its ``dec torch`` column).

>>> import torch
>>> from fp8lab.registry import get_format
>>> decode_half_torch(torch.tensor([0x38, 0x7E, 0xB8, 0x01, 0x7F], dtype=torch.uint8), get_format("e4m3")).tolist()
[1.0, 448.0, -1.0, 0.001953125, nan]
"""

from __future__ import annotations

import functools
import math

from .backend import torch
from ..formats import FloatFormat, Format
from .shift import patch_specials

__all__ = ["half_ok", "decode_half_torch"]

_INT16_MIN = -(1 << 15)


def _fp16_layout(fmt: FloatFormat) -> bool:
    return (fmt.exponent_bits, fmt.bias, fmt.special, fmt.subnormals, fmt.signed) == (5, 15, "ieee", True, True) \
        and fmt.bits <= 16


def _narrow8(fmt: FloatFormat) -> bool:
    # 2**(15 - bias) must be a normal float32 for the rebiasing multiply
    return fmt.bits == 8 and fmt.signed and fmt.subnormals and fmt.exponent_bits <= 4 and -126 <= 15 - fmt.bias <= 127


def half_ok(fmt: Format, code_dtype: str = "uint8") -> bool:
    """Whether codes of ``fmt`` held as ``code_dtype`` decode through float16 (see the module docstring).

    >>> from fp8lab.registry import get_format
    >>> half_ok(get_format("e5m2")), half_ok(get_format("e4m3")), half_ok(get_format("e4m3"), "int16"), half_ok(get_format("fp4"))
    (True, True, False, False)
    """
    if not isinstance(fmt, FloatFormat):
        return False
    if _fp16_layout(fmt):
        return code_dtype in ("uint8", "int16", "uint16")
    return _narrow8(fmt) and code_dtype == "uint8"


def decode_half_torch(codes, fmt: FloatFormat, out=None):
    """Float32 values of the codes of a :func:`half_ok` format, through float16 (torch).

    ``codes``: uint8 (and for FP16's layout also int16 or uint16). ``out`` is an optional int32
    buffer with ``codes.numel()`` elements to decode into (its float32 view is returned unless a
    special code needed patching).

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> decode_half_torch(torch.tensor([0x3C, 0x7C, 0x01], dtype=torch.uint8), get_format("e5m2")).tolist()
    [1.0, inf, 1.52587890625e-05]
    """
    narrow, shift, mask, rebias = _layout(fmt)
    if narrow:
        h = codes.view(torch.int8).to(torch.int16)  # sign-extended: bits 15..7 copy the sign
        h.bitwise_left_shift_(shift)
        h.bitwise_and_(mask)  # the sign in bit 15, the fields below it
    elif codes.dtype == torch.uint8:
        h = codes.to(torch.int16) << shift
    elif shift == 0:
        h = codes.view(torch.int16)
    else:
        h = codes.view(torch.int16) << shift
    half = h.view(torch.float16)
    if out is None:
        res = half.to(torch.float32)
    else:
        res = out.view(torch.float32)
        res.copy_(half.reshape(res.shape))
    if not narrow:
        return _signed_nans(res, half, codes, fmt)
    if rebias != 1.0:
        res.mul_(rebias)
    return patch_specials(res, codes.reshape(res.shape), fmt)


def _signed_nans(res, half, codes, fmt: FloatFormat):
    """``res`` with each NaN given the sign bit of its float16 pattern ``half`` (its code's sign bit).

    torch converts float16 to float32 in vector lanes and a scalar loop for the rest, and the scalar
    loop drops a NaN's sign (0xFE00 becomes +NaN), so which NaNs kept their sign would depend on the
    tensor's length and its split between threads. The codec's rule is the code's sign bit (as
    ml_dtypes). Without a negative NaN this costs one reduction: the largest uint8 code (a negative
    NaN's code is above -inf's, the largest), else the largest half (torch's max propagates NaN).
    """
    if not res.numel():
        return res
    if codes.dtype == torch.uint8:
        top = codes.numpy().max() if codes.is_cpu else codes.max()  # numpy's uint8 max is vectorized, torch's not
        if int(top) <= (fmt.sign_mask | fmt.inf_code):
            return res
    elif not math.isnan(float(half.max())):
        return res
    negative = half.view(torch.int16).reshape(res.shape) < 0  # the sign in bit 15
    res.copy_(torch.where(torch.isnan(res), torch.where(negative, -math.nan, math.nan), res))
    return res


@functools.lru_cache(maxsize=256)
def _layout(fmt: FloatFormat) -> tuple[bool, int, int, float]:
    """(narrow, left shift, mask, rebiasing factor) of a :func:`half_ok` format (a pure function of it, cached)."""
    if not _fp16_layout(fmt):
        shift = 10 - fmt.mantissa_bits
        return True, shift, _INT16_MIN | (fmt.magnitude_mask << shift), math.ldexp(1.0, 15 - fmt.bias)
    return False, 16 - fmt.bits, 0, 1.0
