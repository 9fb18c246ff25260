"""Bit-level codecs: our own generic encoder and decoder for every format, numpy and torch.

Which implementation serves a call is decided in one place, :mod:`fp8lab.codec.paths`:
``which_path`` tells, ``force_path`` and ``disable_paths`` choose.

>>> from fp8lab.codec import encode, decode
>>> int(encode(1.0, "bf16")), float(decode(0x3F80, "bf16"))
(16256, 1.0)
"""

from .api import decode, decode_table, encode, quantize
from .core import ROUNDINGS
from .paths import PATHS, disable_paths, force_path, path_table, which_path

__all__ = ["encode", "decode", "quantize", "decode_table", "ROUNDINGS",
           "PATHS", "which_path", "path_table", "force_path", "disable_paths"]
