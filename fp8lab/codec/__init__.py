"""Bit-level codecs: our own generic encoder and decoder for every format, numpy and torch.

>>> from fp8lab.codec import encode, decode
>>> int(encode(1.0, "bf16")), float(decode(0x3F80, "bf16"))
(16256, 1.0)
"""

from .api import decode, decode_table, encode, quantize
from .core import ROUNDINGS

__all__ = ["encode", "decode", "quantize", "decode_table", "ROUNDINGS"]
