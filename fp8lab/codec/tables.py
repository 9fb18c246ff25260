"""The value of every code of a format, the one table the codec's paths and the C kernels share.

It sits below every path (it needs only the bit-level decode of :mod:`fp8lab.codec.core`), so the
table path (:mod:`fp8lab.codec.lut`), the C kernels (:mod:`fp8lab.codec.ckernels`) and the public
``decode_table`` all read it without importing one another.

>>> from fp8lab.registry import get_format
>>> code_values(get_format("e4m3"))[0x38]
np.float32(1.0)
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..formats import IntFormat
from .core import decode_codes, int_decode

__all__ = ["code_values"]


@lru_cache(maxsize=None)
def code_values(fmt) -> np.ndarray:
    """Float32 value of every code of a format up to 16 bits, by the format's arithmetic (read-only).

    >>> from fp8lab.registry import get_format
    >>> code_values(get_format("fp4"))[:4].tolist()
    [0.0, 0.5, 1.0, 1.5]
    """
    codes = np.arange(2**fmt.bits, dtype=np.int64)
    t = (int_decode(codes, fmt) if isinstance(fmt, IntFormat) else decode_codes(codes, fmt)).astype(np.float32)
    t.flags.writeable = False
    return t
