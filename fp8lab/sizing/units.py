"""Byte units, always labelled: decimal GB (10^9) beside binary GiB (2^30), and bytes per element.

People mix the two up all the time: a GPU sold as "80 GB" holds 80 GiB, 7.4% more than 80e9 bytes.
Every function here says which unit it means, and :func:`format_bytes` prints both.

>>> format_bytes(2**31)
'2.15 GB (2.00 GiB)'
"""

from __future__ import annotations

import math
from numbers import Integral, Real

from ..formats import Format
from ..registry import get_format

__all__ = ["KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB", "format_bytes", "to_gb", "to_gib",
           "dtype_bits", "bytes_per_element", "packed_bytes", "check_count"]

KB, MB, GB, TB = 10**3, 10**6, 10**9, 10**12
KiB, MiB, GiB, TiB = 2**10, 2**20, 2**30, 2**40


def to_gb(n: float) -> float:
    """Bytes to decimal gigabytes (10^9 bytes).

    >>> to_gb(80 * 2**30)
    85.89934592
    """
    return n / GB


def to_gib(n: float) -> float:
    """Bytes to binary gibibytes (2^30 bytes).

    >>> to_gib(80e9)
    74.50580596923828
    """
    return n / GiB


def format_bytes(n: float, digits: int = 2) -> str:
    """A byte count as decimal GB and binary GiB side by side (MB/MiB or KB/KiB below 1 GB).

    >>> format_bytes(524288)
    '0.52 MB (0.50 MiB)'
    """
    if n != n or n < 0:  # NaN or negative
        raise ValueError(f"a byte count must be a non-negative number, got {n!r}")
    if math.isinf(n):
        return "inf"
    if n >= GB:
        return f"{n / GB:.{digits}f} GB ({n / GiB:.{digits}f} GiB)"
    if n >= MB / 10:
        return f"{n / MB:.{digits}f} MB ({n / MiB:.{digits}f} MiB)"
    if n >= KB:
        return f"{n / KB:.{digits}f} KB ({n / KiB:.{digits}f} KiB)"
    return f"{n:g} bytes"


def dtype_bits(dtype: "str | Format") -> int:
    """Bits per element of a registered format (any name :func:`fp8lab.get_format` accepts).

    >>> dtype_bits("bf16"), dtype_bits("fp8"), dtype_bits("fp4")
    (16, 8, 4)
    """
    return int(get_format(dtype).bits)


def bytes_per_element(dtype: "str | Format") -> float:
    """Bytes per element of a format: its bits / 8 (FP4 is 0.5 byte, FP6 0.75).

    >>> bytes_per_element("float32"), bytes_per_element("e2m3")
    (4.0, 0.75)
    """
    return dtype_bits(dtype) / 8


def packed_bytes(count: int, bits: int) -> int:
    """Bytes to store ``count`` elements of ``bits`` bits packed together, rounded up to a whole byte.

    >>> packed_bytes(3, 4), packed_bytes(4, 6)
    (2, 3)
    """
    count, bits = check_count("count", count), check_count("bits", bits)
    return -(-count * bits // 8)


def check_count(name: str, value: object, *, minimum: int = 0) -> int:
    """Return ``value`` as an int if it is a whole number >= ``minimum``, else raise a ValueError naming it.

    Integral floats such as ``7e9`` are accepted; booleans are not.

    >>> check_count("batch", 4.0, minimum=1)
    4
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if not isinstance(value, Integral):
        if not math.isfinite(value) or value != int(value):
            raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value
