"""``encode``, ``decode`` and ``quantize``: the codec's public entry points for arrays and tensors.

numpy (or anything array-like) in gives numpy out; a torch tensor in gives a tensor out on the same
device (tensors that require grad are accepted alike: the codec is not differentiable, so results
are never attached to the autograd graph; meta tensors give shape-only results). Each call checks
its input, describes itself as a :class:`~fp8lab.codec.paths.Request` and runs the implementation
:func:`~fp8lab.codec.paths.select` picks from the table in :mod:`fp8lab.codec.paths`.

>>> encode(0.8125, "e4m3"), float(decode(0x35, "e4m3")), quantize(0.3, "e4m3")
(np.uint8(53), 0.8125, 0.3125)
"""

from __future__ import annotations

import functools

from typing import Any

import numpy as np

from ..formats import Format, IntFormat
from ..registry import get_format
from ..validation import check_bool
from .backend import NUMPY, TORCH, is_torch, torch, transposed_layout
from .paths import Request, dispatch, rounding_name as _rounding
from .tables import code_values

__all__ = ["encode", "decode", "quantize", "decode_table", "dispatch", "decode_tensor"]


# ----------------------------------------------------------------------------------------------
# input checking
def _numpy_values(x: Any, fmt: Format) -> np.ndarray:
    """A C-contiguous float array of ``x``: float32, or float64 kept for integer formats (no double rounding)."""
    arr = np.asarray(x)
    kind = arr.dtype.kind
    if kind == "c":
        raise TypeError("complex input cannot be encoded: pass the real and imaginary parts separately")
    if kind not in "fiub" and arr.dtype.type.__module__ != "ml_dtypes":
        raise TypeError(f"expected real numbers (a float, int or bool array), got dtype {arr.dtype}")
    wide = isinstance(fmt, IntFormat) and arr.dtype not in (np.float32, np.float16)
    return np.asarray(arr, dtype=np.float64 if wide else np.float32, order="C")  # (ascontiguousarray makes 0-d 1-d)


def _torch_values(x, fmt: Format):
    """A detached contiguous float32 tensor of ``x`` (float64 kept for integer formats)."""
    if x.is_complex():
        raise TypeError("complex input cannot be encoded: pass the real and imaginary parts separately")
    x = x.detach()
    want = torch.float64 if isinstance(fmt, IntFormat) and x.dtype == torch.float64 else torch.float32
    return x.contiguous().to(want) if x.dtype != want else x.contiguous()


def _make_generator(generator, be):
    if be.np:
        if isinstance(generator, np.random.Generator):
            return generator
        if generator is None or (isinstance(generator, (int, np.integer)) and not isinstance(generator, bool)):
            return np.random.default_rng(generator)
        raise TypeError(f"generator must be a numpy Generator or an int seed for numpy input, got {type(generator).__name__}")
    if isinstance(generator, torch.Generator):
        return generator
    if generator is None or (isinstance(generator, int) and not isinstance(generator, bool)):
        g = torch.Generator()
        g.manual_seed(int(generator) if generator is not None else int(torch.seed()))
        return g
    raise TypeError(f"generator must be a torch.Generator or an int seed for tensor input, got {type(generator).__name__}")


def _check_codes(c, fmt: Format, be) -> None:
    if be.np:
        if c.dtype.kind not in "ui":
            raise TypeError(f"codes must be an integer array (such as {fmt.code_dtype}), got dtype {c.dtype}")
    elif c.is_floating_point() or c.is_complex() or c.dtype == torch.bool:
        raise TypeError(f"codes must be an integer tensor (such as torch.uint8), got {c.dtype}")
    if not be.np and c.device.type == "meta":
        return  # no values to check
    width = c.dtype.itemsize * 8 if be.np else c.element_size() * 8
    unsigned = c.dtype.kind == "u" if be.np else c.dtype in (torch.uint8, torch.uint16, torch.uint32)
    if unsigned and width <= fmt.bits:
        return  # every code this dtype can hold is in range
    if c.numel() if not be.np else c.size:
        limit = 2**fmt.bits
        if not be.np and c.dtype in (torch.uint16, torch.uint32):
            c = c.to(torch.int64)  # torch has no min/max for these
        lo, hi = (int(c.min()), int(c.max()))
        if lo < 0 or hi >= limit:
            bad = lo if lo < 0 else hi
            raise ValueError(f"code {bad} is out of range for {fmt.name}: codes are 0..{limit - 1} ({fmt.bits} bits)")


def _zero_d(out: np.ndarray, given: Any) -> Any:
    """A 0-d result as the input came: a 0-d array for a 0-d array, a numpy scalar for a scalar.

    >>> type(_zero_d(np.array(3, np.uint8), np.array(1.0))).__name__, type(_zero_d(np.array(3, np.uint8), 1.0)).__name__
    ('ndarray', 'uint8')
    """
    if out.ndim or isinstance(given, np.ndarray):
        return out
    return out[()]


# ----------------------------------------------------------------------------------------------
# requests (``dispatch`` lives in paths.py, beside the table it reads; it is re-exported here)
def _torch_request(op: str, t, fmt: Format, rounding: str = "nearest", saturate: bool = False) -> Request:
    return _cached_request(op, fmt, rounding, saturate, "cpu" if t.is_cpu else t.device.type, t.dtype)


@functools.lru_cache(maxsize=1024)
def _cached_request(op: str, fmt: Format, rounding: str, saturate: bool, device_type: str, dtype) -> Request:
    return Request(op, fmt, "torch", rounding, saturate, device_type, str(dtype).removeprefix("torch."))


# ----------------------------------------------------------------------------------------------
# encode
def encode(x: Any, fmt: "str | Format", *, rounding: str = "nearest", saturate: bool = False, generator: Any = None):
    """Encode real numbers as the unsigned integer codes of ``fmt`` (bit-identical to ml_dtypes).

    ``rounding`` is ``"nearest"`` (ties to even), ``"toward_zero"`` or ``"stochastic"`` (with
    ``generator``: a numpy Generator, torch Generator or int seed; ``E[decode(encode(x))] = x`` at
    every magnitude). ``saturate=True`` clamps overflow and infinities to +-max, as FP8 training
    recipes do; by default overflow follows ml_dtypes (NaN for E4M3FN/FNUZ/E8M0, inf for E5M2 and
    IEEE-style formats, +-max for FP6/FP4). Tensors give tensors on their device (detached). A
    scalar gives a numpy scalar and a 0-d array a 0-d array (a 0-d tensor a 0-d tensor).

    >>> encode([1.0, -2.0, 500.0], "e4m3").tolist(), encode(500.0, "e4m3", saturate=True), encode(np.array(1.0), "e4m3").shape
    ([56, 192, 127], np.uint8(126), ())
    """
    fmt = get_format(fmt)
    rounding = _rounding(rounding)
    saturate = check_bool("encode", "saturate", saturate)
    if is_torch(x):
        xt = _torch_values(x, fmt)
        gen = _make_generator(generator, TORCH) if rounding == "stochastic" else None
        return dispatch(xt.reshape(-1), _torch_request("encode", xt, fmt, rounding, saturate), gen).reshape(x.shape)
    arr = _numpy_values(x, fmt)
    gen = _make_generator(generator, NUMPY) if rounding == "stochastic" else None
    codes = dispatch(arr.reshape(-1), Request("encode", fmt, "numpy", rounding, saturate), gen).reshape(arr.shape)
    return _zero_d(codes, x)


# ----------------------------------------------------------------------------------------------
# decode
def decode_table(fmt: "str | Format") -> np.ndarray:
    """The float32 value of every code of a format up to 16 bits, indexed by code (read-only).

    >>> decode_table("fp4")[:8].tolist()
    [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    """
    fmt = get_format(fmt)
    if fmt.bits > 16:
        raise ValueError(f"{fmt.name} has 2^{fmt.bits} codes; decode tables exist for formats up to 16 bits")
    return code_values(fmt)


def decode_tensor(codes, fmt: "str | Format", out=None):
    """:func:`decode` for a torch tensor of codes, into the int32 buffer ``out`` where the path allows it.

    The values keep the codes' layout where it is a transposed matrix (a view of a contiguous one,
    as ``QTensor.transpose`` gives): decoded from the contiguous base and seen transposed, with no
    copy of the codes. A GEMM's operand then has one layout whichever path made its values.

    >>> import torch
    >>> decode_tensor(torch.tensor([[56]], dtype=torch.uint8), "e4m3").tolist()
    [[1.0]]
    >>> v = decode_tensor(torch.tensor([[56, 64], [72, 80]], dtype=torch.uint8).t(), "e4m3")
    >>> v.tolist(), v.stride()
    ([[1.0, 4.0], [2.0, 8.0]], (1, 2))
    """
    fmt = get_format(fmt)
    _check_codes(codes, fmt, TORCH)
    if transposed_layout(codes):
        return decode_tensor(codes.t(), fmt, out=out).t()
    flat = codes.reshape(-1)
    return dispatch(flat, _torch_request("decode", flat, fmt), out=out).reshape(codes.shape)


def decode(codes: Any, fmt: "str | Format"):
    """Decode unsigned integer codes of ``fmt`` to float32 values (exact for every format).

    A NaN code gives a NaN with the code's sign bit (as ml_dtypes): E4M3FN's 0x7F is +NaN, 0xFF -NaN,
    the fnuz NaN 0x80 -NaN, and +NaN without a sign bit, whichever path decodes it. A scalar code
    gives a numpy scalar, a 0-d array a 0-d array.

    >>> decode([0x35, 0x7E, 0x7F], "e4m3").tolist(), np.signbit(decode([0x7F, 0xFF], "e4m3")).tolist()
    ([0.8125, 448.0, nan], [False, True])
    """
    fmt = get_format(fmt)
    if is_torch(codes):
        return decode_tensor(codes, fmt)
    c = np.asarray(codes)
    _check_codes(c, fmt, NUMPY)
    out = dispatch(c.reshape(-1), Request("decode", fmt, "numpy", code_dtype=c.dtype.name)).reshape(c.shape)
    return _zero_d(out, codes)


# ----------------------------------------------------------------------------------------------
# quantize
def _back_to(out: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Float32 results as the input's float dtype (float16, float64, ml_dtypes' bfloat16/float8...)."""
    if dtype == np.float32 or not (dtype.kind == "f" or dtype.type.__module__ == "ml_dtypes"):
        return out
    return np.asarray(out).astype(dtype)


def quantize(x: Any, fmt: "str | Format", *, rounding: str = "nearest", saturate: bool = False, generator: Any = None):
    """Round ``x`` to the nearest value of ``fmt`` (``decode(encode(x))``), keeping its type and dtype.

    A Python number gives a float, a numpy scalar a numpy scalar; an array (numpy, or ml_dtypes'
    bfloat16 and float8 types; 0-d ones too) gives an array of its dtype and shape; a tensor gives a tensor of its dtype on its device, detached (so it is
    not differentiable: the training layer ``fp8lab.nn`` adds a straight-through estimator).

    >>> quantize([0.1, 0.3, 1000.0], "e4m3", saturate=True).tolist()
    [0.1015625, 0.3125, 448.0]
    """
    fmt = get_format(fmt)
    rnd = _rounding(rounding)
    saturate = check_bool("quantize", "saturate", saturate)
    if is_torch(x):
        xt = _torch_values(x, fmt)
        gen = _make_generator(generator, TORCH) if rnd == "stochastic" else None
        out = dispatch(xt.reshape(-1), _torch_request("quantize", xt, fmt, rnd, saturate), gen).reshape(x.shape)
        return out.to(x.dtype) if x.is_floating_point() else out
    given = np.asarray(x)
    arr = _numpy_values(given, fmt)
    gen = _make_generator(generator, NUMPY) if rnd == "stochastic" else None
    out = dispatch(arr.reshape(-1), Request("quantize", fmt, "numpy", rnd, saturate), gen).reshape(arr.shape)
    out = _back_to(out, given.dtype)
    if out.ndim == 0 and not isinstance(x, (np.ndarray, np.generic)):
        return float(out[()])  # a Python number gives a float
    return _zero_d(out, x)
