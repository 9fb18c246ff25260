"""The functions behind the codec paths: each takes flat data and a :class:`~fp8lab.codec.paths.Request`.

Encode and quantize take a contiguous 1-D float array (float32; integer formats keep float64
input as it is) and return flat codes or values; decode takes flat integer codes and returns flat
float32 values. Arrays give arrays and tensors give tensors on their device. The bit-level paths
work in cache-sized chunks so that the temporaries of the bit arithmetic stay in the CPU cache.
The paths that hand work on to ``dispatch`` again (``via_numpy``, ``compose``) live beside it in
:mod:`fp8lab.codec.paths`: this module imports nothing above it.

>>> import numpy as np
>>> from fp8lab.registry import get_format
>>> from fp8lab.codec.paths import Request
>>> bitlevel_encode(np.array([0.8125], np.float32), Request("encode", get_format("e4m3"), "numpy"), None).tolist()
[53]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..formats import IntFormat
from . import native
from .backend import NUMPY, TORCH, torch
from .ckernels import table_decode as _ckernel_table_decode
from .core import decode_codes, encode_bits, int_decode, int_encode
from .lut import encode_table, lut_index, split_bit, value_table
from .shift import shift_decode
from .half import decode_half_torch
from .tables import code_values
from .wide import decode_wide, round_bits, round_bits_torch

CHUNK = 1 << 16  # elements per chunk: ~10 int32 temporaries of 256 KiB stay in L2


# ----------------------------------------------------------------------------------------------
# tables, shared by numpy and torch
_device_tables: dict[tuple, Any] = {}


def on_device(key: tuple, make_table, device):
    """A numpy table (built by ``make_table()`` on first use) as a tensor on ``device``, cached.

    >>> from fp8lab.registry import get_format
    >>> on_device(("decode", get_format("fp4")), lambda: code_values(get_format("fp4")), "cpu")[7].item()
    6.0
    """
    full = (*key, str(device))
    if full not in _device_tables:
        _device_tables[full] = torch.from_numpy(make_table().copy()).to(device)
    return _device_tables[full]


def _lut_apply(flat: np.ndarray, table: np.ndarray, k: int, out: np.ndarray) -> np.ndarray:
    """``out[i] = table[lut_index(flat[i])]`` in cache-sized chunks."""
    u = flat.view(np.int32)
    idx = np.empty(min(flat.shape[0], CHUNK), dtype=np.int32)
    for i in range(0, flat.shape[0], CHUNK):
        part = u[i : i + CHUNK]
        table.take(lut_index(part, k, out=idx[: part.shape[0]]), out=out[i : i + CHUNK])
    return out


def _torch_lut(flat, table, fmt):
    k = split_bit(fmt)
    u = flat.view(torch.int32)
    idx = ((u >> (k - 1)) & ((1 << (33 - k)) - 2)) | ((u & ((1 << k) - 1)) != 0).to(torch.int32)
    return table[idx.to(torch.int64)]


def _chunked(flat, fn, out, be):
    n = flat.shape[0]
    chunk = CHUNK if (be.np or flat.device.type == "cpu") else max(n, 1)
    for i in range(0, n, chunk):
        c = fn(flat[i : i + chunk])
        out[i : i + chunk] = c if be.np else c.to(out.dtype)
    return out


def _torch_codes(n: int, fmt, device):
    """An output tensor for codes: uint8, or int32 to be turned into uint16/uint32 at the end."""
    return torch.empty(n, dtype=torch.int32 if fmt.bits > 8 else torch.uint8, device=device)


def _torch_code_dtype(fmt):
    return TORCH.uint_dtype(fmt.bits)


# ----------------------------------------------------------------------------------------------
# meta tensors: shapes only
def meta_encode(x, req, gen):
    """Codes of a meta tensor: an uninitialised meta tensor of the code dtype (shape only).

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> from fp8lab.codec.paths import Request
    >>> meta_encode(torch.empty(3, device="meta"), Request("encode", get_format("bf16"), "torch", device="meta"), None).dtype
    torch.uint16
    """
    return torch.empty(tuple(x.shape), dtype=_torch_code_dtype(req.fmt), device="meta")


def meta_values(x, req, gen=None, out=None):
    """Values of a meta tensor: an uninitialised float32 meta tensor (shape only).

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> from fp8lab.codec.paths import Request
    >>> meta_values(torch.empty(3, device="meta"), Request("quantize", get_format("e4m3"), "torch", device="meta")).shape
    torch.Size([3])
    """
    return torch.empty(tuple(x.shape), dtype=torch.float32, device="meta")


# ----------------------------------------------------------------------------------------------
# encode
def bitlevel_encode(flat, req, gen):
    """The bit-level algorithm (:func:`fp8lab.codec.core.encode_bits`), chunk by chunk, numpy or torch.

    >>> import numpy as np
    >>> from fp8lab.registry import get_format
    >>> from fp8lab.codec.paths import Request
    >>> bitlevel_encode(np.array([500.0], np.float32), Request("encode", get_format("e4m3"), "numpy", saturate=True), None).tolist()
    [126]
    """
    fmt, be = req.fmt, (NUMPY if req.backend == "numpy" else TORCH)
    return _encode_chunks(flat, fmt, be, lambda x: encode_bits(be.bits_of_float32(x), fmt, be, req.rounding,
                                                               req.saturate, gen))


def integer_encode(flat, req, gen):
    """Round, saturate and take two's complement (integer formats), numpy or torch.

    >>> import numpy as np
    >>> from fp8lab.registry import get_format
    >>> from fp8lab.codec.paths import Request
    >>> integer_encode(np.array([2.5, -200.0]), Request("encode", get_format("int8"), "numpy"), None).tolist()
    [2, 128]
    """
    fmt, be = req.fmt, (NUMPY if req.backend == "numpy" else TORCH)
    return _encode_chunks(flat, fmt, be, lambda x: int_encode(x, fmt, be, req.rounding, gen))


def _encode_chunks(flat, fmt, be, kernel):
    """Run an encode kernel chunk by chunk into an array (numpy) or tensor of codes of ``fmt``."""
    if be.np:
        return _chunked(flat, kernel, np.empty(flat.shape[0], dtype=fmt.code_dtype), be)
    out = _chunked(flat, kernel, _torch_codes(flat.shape[0], fmt, flat.device), be)
    return out.to(_torch_code_dtype(fmt)) if fmt.bits > 8 else out


def table_encode(flat, req, gen):
    """One look-up per element in the encode table (numpy, or the table on the tensor's device).

    >>> import numpy as np
    >>> from fp8lab.registry import get_format
    >>> from fp8lab.codec.paths import Request
    >>> table_encode(np.array([1.0], np.float32), Request("encode", get_format("e4m3"), "numpy"), None).tolist()
    [56]
    """
    fmt = req.fmt
    make = lambda: encode_table(fmt, req.rounding, req.saturate)  # noqa: E731
    if req.backend == "numpy":
        return _lut_apply(flat, make(), split_bit(fmt), np.empty(flat.shape[0], dtype=fmt.code_dtype))
    return _torch_lut(flat, on_device(("encode", fmt, req.rounding, req.saturate), make, flat.device), fmt)


def inplace_encode(flat, req, gen):
    """Round the float32 bit patterns in place and keep their upper bits (formats with float32's exponent).

    >>> import numpy as np
    >>> from fp8lab.registry import get_format
    >>> from fp8lab.codec.paths import Request
    >>> inplace_encode(np.array([1.0], np.float32), Request("encode", get_format("bf16"), "numpy"), None).tolist()
    [16256]
    """
    fmt = req.fmt
    if req.backend == "torch":
        y = round_bits_torch(flat, fmt.mantissa_bits, req.rounding, req.saturate)
        codes = (y.view(torch.int32).to(torch.int64) & 0xFFFFFFFF) >> (23 - fmt.mantissa_bits)
        return codes.to(_torch_code_dtype(fmt)) if fmt.bits != 32 else codes.to(torch.uint32)
    bits = round_bits(flat.view(np.int32), fmt, req.rounding, req.saturate)
    return (bits.view(np.uint32) >> (23 - fmt.mantissa_bits)).astype(fmt.code_dtype)


def cast_encode(flat, req, gen):
    """torch's own cast plus the fix-ups its policy needs (:mod:`fp8lab.codec.native`).

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> from fp8lab.codec.paths import Request
    >>> cast_encode(torch.tensor([500.0]), Request("encode", get_format("e4m3"), "torch"), None).tolist()
    [127]
    """
    return native.encode(flat, req.fmt, req.saturate)


# ----------------------------------------------------------------------------------------------
# decode
def bitlevel_decode(codes, req, out=None):
    """Decode by the format's arithmetic in float64, then float32 (exact for every format).

    >>> import numpy as np
    >>> from fp8lab.registry import get_format
    >>> from fp8lab.codec.paths import Request
    >>> bitlevel_decode(np.array([0x7E]), Request("decode", get_format("e4m3"), "numpy")).tolist()
    [448.0]
    """
    if req.backend == "numpy":
        c = codes.astype(np.int64)
        v = int_decode(c, req.fmt) if isinstance(req.fmt, IntFormat) else decode_codes(c, req.fmt)
        return np.asarray(v, dtype=np.float32)
    c = codes.to(torch.int64)
    v = int_decode(c, req.fmt, TORCH) if isinstance(req.fmt, IntFormat) else decode_codes(c, req.fmt, TORCH)
    return v.to(torch.float32)


def table_decode(codes, req, out=None):
    """One look-up per code in the table of every code's value (formats up to 16 bits).

    >>> import numpy as np
    >>> from fp8lab.registry import get_format
    >>> from fp8lab.codec.paths import Request
    >>> table_decode(np.array([7], np.uint8), Request("decode", get_format("fp4"), "numpy")).tolist()
    [6.0]
    """
    fmt = req.fmt
    if req.backend == "numpy":
        idx = codes if codes.dtype.kind == "u" and codes.itemsize <= 2 else codes.astype(np.int64)
        return code_values(fmt).take(idx, out=out) if out is not None else code_values(fmt).take(idx)
    return on_device(("decode", fmt), lambda: code_values(fmt), codes.device)[codes.to(torch.int64)]


def inplace_decode(codes, req, out=None):
    """Shift codes of a format with float32's exponent into a float32 bit pattern.

    >>> import numpy as np
    >>> from fp8lab.registry import get_format
    >>> from fp8lab.codec.paths import Request
    >>> inplace_decode(np.array([0x3F80], np.uint16), Request("decode", get_format("bf16"), "numpy")).tolist()
    [1.0]
    """
    if req.backend == "torch":
        return (codes.to(torch.int64) << (32 - req.fmt.bits)).to(torch.int32).view(torch.float32)
    return decode_wide(codes, req.fmt)


def half_path_decode(codes, req, out=None):
    """Decode codes whose fields fit FP16's (E5M2, FP16, E4M3, ...) through float16, optionally into an int32 buffer.

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> from fp8lab.codec.paths import Request
    >>> half_path_decode(torch.tensor([0x3C], dtype=torch.uint8), Request("decode", get_format("e5m2"), "torch", code_dtype="uint8")).tolist()
    [1.0]
    """
    return decode_half_torch(codes, req.fmt, out=out)


def ckernel_decode(codes, req, out=None):
    """Decode uint8 CPU codes of an 8-bit format by one C loop over the table of every code's value.

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> from fp8lab.codec import ckernels
    >>> from fp8lab.codec.paths import Request
    >>> if ckernels.available():
    ...     assert ckernel_decode(torch.tensor([56], dtype=torch.uint8), Request("decode", get_format("e4m3"), "torch")).tolist() == [1.0]
    """
    return _ckernel_table_decode(codes, req.fmt, out=out)


def shift_path_decode(codes, req, out=None):
    """Decode 8-bit codes by moving bits (:mod:`fp8lab.codec.shift`), optionally into an int32 buffer.

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> from fp8lab.codec.paths import Request
    >>> shift_path_decode(torch.tensor([56], dtype=torch.uint8), Request("decode", get_format("e4m3"), "torch", code_dtype="uint8")).tolist()
    [1.0]
    """
    return shift_decode(codes, req.fmt, out=out)


# ----------------------------------------------------------------------------------------------
# quantize
def table_quantize(flat, req, gen):
    """One look-up per element in the table of ``decode(encode(.))``.

    >>> import numpy as np
    >>> from fp8lab.registry import get_format
    >>> from fp8lab.codec.paths import Request
    >>> table_quantize(np.array([0.3], np.float32), Request("quantize", get_format("e4m3"), "numpy"), None).tolist()
    [0.3125]
    """
    fmt = req.fmt
    make = lambda: value_table(fmt, req.rounding, req.saturate)  # noqa: E731
    if req.backend == "numpy":
        return _lut_apply(flat, make(), split_bit(fmt), np.empty(flat.shape[0], np.float32))
    return _torch_lut(flat, on_device(("value", fmt, req.rounding, req.saturate), make, flat.device), fmt)


def inplace_quantize(flat, req, gen):
    """Round the float32 bit patterns in place (formats with float32's exponent).

    >>> import numpy as np
    >>> from fp8lab.registry import get_format
    >>> from fp8lab.codec.paths import Request
    >>> inplace_quantize(np.array([1.00390625], np.float32), Request("quantize", get_format("bf16"), "numpy"), None).tolist()
    [1.0]
    """
    if req.backend == "torch":
        return round_bits_torch(flat, req.fmt.mantissa_bits, req.rounding, req.saturate)
    return round_bits(flat.view(np.int32), req.fmt, req.rounding, req.saturate).view(np.float32)


def cast_quantize(flat, req, gen):
    """torch's cast there and back, with the value fix-ups its policy needs.

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> from fp8lab.codec.paths import Request
    >>> cast_quantize(torch.tensor([500.0]), Request("quantize", get_format("e4m3"), "torch"), None).tolist()
    [nan]
    """
    return native.quantize(flat, req.fmt, req.saturate)
