"""Fast decoding of 8-bit float codes to float32 by moving bits, for the GEMM's operands.

A float format with a sign bit in bit 7 and subnormals decodes with three integer operations and
one multiply: sign-extend the code to int32, shift the exponent and mantissa fields into float32's
positions, mask off the copies of the sign, and multiply by ``2**(127 - bias)``. The float32 read
from those bits is ``2**(E - 127) * 1.M`` for a normal code and ``2**-126 * 0.M`` for a subnormal
one, so one power-of-two multiply rebiases both exactly. Specials are patched afterwards, only
when a code that needs it is present (one min/max pass): E4M3FN's all-ones NaN, IEEE-style
inf/NaN, FNUZ's NaN at the negative-zero code. On the CPU this is about 4x faster than torch's
float8 cast (which converts one element at a time) and it is bit-identical to our codec (tests
sweep every code of every eligible format). One caveat: a subnormal code is a float32 denormal
before the multiply, which x86 handles about 15x slower per element; well-scaled data has few
(0.01-0.2% of the codes in bench/gemm.py).

On the CPU the GEMM decodes into per-thread workspace buffers that are reused from call to call:
a fresh 16 MiB tensor per operand costs page faults that make a 2048^3 emulated GEMM about 15%
slower. The buffers grow to the largest operand seen; :func:`release_workspace` frees them.

>>> import torch
>>> from fp8lab.registry import get_format
>>> fast_decode(torch.tensor([0x38, 0x7E, 0xB8, 0x01], dtype=torch.uint8), get_format("e4m3")).tolist()
[1.0, 448.0, -1.0, 0.001953125]
"""

from __future__ import annotations

import math
import threading

from ..codec import decode
from ..codec.backend import torch
from ..formats import FloatFormat, Format

__all__ = ["fast_decode", "shift_decodable", "decode_values", "workspace", "release_workspace"]

_INT32_MIN = -(1 << 31)
_local = threading.local()


def workspace(slot: str, numel: int, device=None):
    """A reusable flat int32 buffer of ``numel`` elements for ``slot`` (per thread; CPU only, else fresh).

    >>> workspace("doc", 4).shape, workspace("doc", 2).data_ptr() == workspace("doc", 4).data_ptr()
    (torch.Size([4]), True)
    """
    if device is not None and torch.device(device).type != "cpu":
        return torch.empty(numel, dtype=torch.int32, device=device)  # the CUDA caching allocator does this job
    buffers = _local.__dict__.setdefault("buffers", {})
    buf = buffers.get(slot)
    if buf is None or buf.numel() < numel:
        buf = buffers[slot] = torch.empty(numel, dtype=torch.int32)
    return buf[:numel]


def release_workspace() -> None:
    """Free this thread's decode buffers (they are kept between GEMMs to avoid page faults).

    >>> release_workspace()
    """
    _local.__dict__.pop("buffers", None)


def shift_decodable(fmt: Format) -> bool:
    """Whether ``fmt`` can be decoded by :func:`fast_decode` (8-bit, signed, with subnormals).

    >>> from fp8lab.registry import get_format
    >>> shift_decodable(get_format("e5m2")), shift_decodable(get_format("e8m0")), shift_decodable(get_format("fp4"))
    (True, False, False)
    """
    return isinstance(fmt, FloatFormat) and fmt.bits == 8 and fmt.signed and fmt.subnormals and fmt.bias >= 0


def fast_decode(codes, fmt: FloatFormat, out=None):
    """Float32 values of uint8 ``codes`` of an 8-bit signed float format, by shifting bits (torch).

    ``out`` is an optional int32 buffer with ``codes.numel()`` elements to decode into (its float32
    view is returned).

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> fast_decode(torch.tensor([0x7C, 0x7D, 0xFF], dtype=torch.uint8), get_format("e5m2")).tolist()
    [inf, nan, nan]
    """
    if not shift_decodable(fmt):
        raise ValueError(f"{fmt.name} cannot be decoded by shifting bits: needs 8 bits, a sign bit and subnormals")
    if codes.dtype != torch.uint8:
        raise TypeError(f"fast_decode takes uint8 codes, got {codes.dtype}")
    shift = 23 - fmt.mantissa_bits
    field = ((1 << (fmt.exponent_bits + fmt.mantissa_bits)) - 1) << shift
    if out is None:
        x = codes.view(torch.int8).to(torch.int32)   # sign-extended: bits 31..7 copy the sign
    else:
        x = out.view(codes.shape)
        x.copy_(codes.view(torch.int8))
    x.bitwise_left_shift_(shift)
    x.bitwise_and_(_INT32_MIN | field)                 # keep the sign in bit 31 and the fields below
    nan_at_negative_zero = fmt.special == "fnuz" and x.numel() and int(x.min()) == _INT32_MIN
    if nan_at_negative_zero:
        fnuz_nan = x == _INT32_MIN
    out = x.view(torch.float32)
    out.mul_(math.ldexp(1.0, 127 - fmt.bias))         # rebias: exact for normal and subnormal codes
    if nan_at_negative_zero:
        out.masked_fill_(fnuz_nan, math.nan)
    if fmt.special in ("fn", "ieee") and out.numel():
        lo, hi = torch.aminmax(out)
        if float(hi) > fmt.max or float(lo) < -fmt.max:   # a special code is present: patch it
            mag = out.abs()
            special = mag > fmt.max
            if fmt.special == "ieee":  # all-ones exponent: mantissa 0 is +-inf, anything else NaN
                is_inf = special & (mag == math.ldexp(1.0, (1 << fmt.exponent_bits) - 1 - fmt.bias))
                out = torch.where(is_inf, out * math.inf, out)
                special &= ~is_inf
            out.masked_fill_(special, math.nan)
    return out


def decode_values(codes, fmt: Format, slot: str | None = None):
    """Float32 values of ``codes`` (torch): bit shifting for 8-bit signed floats, else our codec's table.

    With ``slot``, a CPU decode goes into that reusable :func:`workspace` buffer: the caller must be
    done with the result before the next decode into the same slot.

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> decode_values(torch.tensor([56, 0x7E], dtype=torch.uint8), get_format("e4m3")).tolist()
    [1.0, 448.0]
    """
    if codes.dtype == torch.uint8 and shift_decodable(fmt):
        buf = workspace(slot, codes.numel(), codes.device) if slot is not None else None
        return fast_decode(codes, fmt, out=buf)
    return decode(codes, fmt)
