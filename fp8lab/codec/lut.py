"""Fast paths that memoise the bit-level algorithm in a table indexed by the upper bits of a float32.

For a format with ``m <= 6`` mantissa bits, rounding a float32 drops at least 17 bits, so its
round bit lies in the upper 16 bits. The result then depends only on those 16 bits and on whether
any of the lower 16 bits is set (the sticky bit). Encoding one float32 becomes one table look-up at
``(u >> 16) * 2 + (lower bits != 0)`` in a table built *by* :func:`fp8lab.codec.core.encode_bits`
from one representative input per entry, so it is exact by construction (and tested). For ``m = 7``
(bfloat16) the split moves to bit 15 and the table has 2^18 entries.

>>> from fp8lab.registry import get_format
>>> encode_table(get_format("e4m3"), "nearest", False).shape
(131072,)
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..formats import FloatFormat
from .backend import NUMPY
from .core import encode_bits
from .tables import code_values

__all__ = ["lut_ok", "split_bit", "encode_table", "value_table", "lut_index"]


def lut_ok(fmt: FloatFormat, rounding: str) -> bool:
    """Whether the table path is exact for this format and rounding mode.

    The index keeps a float32's bits down to :func:`split_bit` and one sticky bit for the rest, so it
    decides the rounding exactly if the rounding bit of every input lies at or above the split. For
    normal float32 inputs ``23 - m`` bits are dropped, enough for ``m <= 7``. For float32 *subnormal*
    inputs (raw steps of 2^-149) the format's finest step ``2^(emin - m)`` puts the rounding bit at
    ``emin - m + 148``, which must be at least the split: formats reaching deeper (a large custom
    bias) take the bit-level path.

    >>> from fp8lab.registry import get_format
    >>> lut_ok(get_format("fp4"), "nearest"), lut_ok(get_format("fp16"), "nearest")
    (True, False)
    >>> lut_ok(FloatFormat("e5m2_b140", 5, 2, bias=140), "nearest")
    False
    """
    if not isinstance(fmt, FloatFormat) or fmt.mantissa_bits > 7 or rounding not in ("nearest", "toward_zero"):
        return False
    return fmt.emin - fmt.mantissa_bits + 148 >= split_bit(fmt)


def split_bit(fmt: FloatFormat) -> int:
    """Bit position below which only the sticky bit matters (16, or 15 for 7 mantissa bits).

    >>> from fp8lab.registry import get_format
    >>> split_bit(get_format("e4m3")), split_bit(get_format("bf16"))
    (16, 15)
    """
    return min(16, 22 - fmt.mantissa_bits)


@lru_cache(maxsize=64)
def encode_table(fmt: FloatFormat, rounding: str, saturate: bool) -> np.ndarray:
    """Codes for every (upper 16 bits, sticky) pair, computed by the bit-level algorithm.

    >>> from fp8lab.registry import get_format
    >>> int(encode_table(get_format("e4m3"), "nearest", False)[0x3F80 * 2])  # 1.0
    56
    """
    k = split_bit(fmt)
    hi = np.arange(1 << (32 - k), dtype=np.int64)
    u = np.empty(1 << (33 - k), dtype=np.int64)
    u[0::2] = hi << k  # lower bits all zero
    u[1::2] = (hi << k) | 1  # some lower bit set
    u32 = u.astype(np.uint32).view(np.int32)
    table = encode_bits(u32, fmt, NUMPY, rounding, saturate, None).astype(fmt.code_dtype)
    table.flags.writeable = False
    return table


@lru_cache(maxsize=64)
def value_table(fmt: FloatFormat, rounding: str, saturate: bool) -> np.ndarray:
    """``decode(encode(x))`` for every table index: quantizing becomes a single look-up.

    >>> from fp8lab.registry import get_format
    >>> float(value_table(get_format("e4m3"), "nearest", False)[0x3F80 * 2])
    1.0
    """
    table = code_values(fmt).take(encode_table(fmt, rounding, saturate))
    table.flags.writeable = False
    return table


def lut_index(u, k: int = 16, out=None):
    """Table index ``(u >> k) * 2 + (u & (2^k - 1) != 0)`` of int32 float32-bit-patterns (numpy).

    >>> lut_index(np.array([0x3F800000], dtype=np.int32)).tolist()
    [32512]
    """
    idx = np.right_shift(u, k - 1, out=out)
    np.bitwise_and(idx, (1 << (33 - k)) - 2, out=idx)
    idx |= (u & ((1 << k) - 1)) != 0
    return idx
