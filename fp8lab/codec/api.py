"""``encode``, ``decode`` and ``quantize``: the codec's public entry points for arrays and tensors.

numpy (or anything array-like) in gives numpy out; a torch tensor in gives a tensor out on the same
device. The work is done in cache-sized chunks so that the temporaries of the bit arithmetic stay
in the CPU cache.

>>> encode(0.8125, "e4m3"), float(decode(0x35, "e4m3")), quantize(0.3, "e4m3")
(np.uint8(53), 0.8125, 0.3125)
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ..formats import FloatFormat, Format, IntFormat
from ..registry import get_format
from . import native
from .backend import NUMPY, TORCH, is_torch, torch
from .core import ROUNDINGS, decode_codes, encode_bits, int_decode, int_encode
from .lut import encode_table, lut_index, lut_ok, split_bit, value_table
from .wide import decode_wide, round_bits, wide_ok

__all__ = ["encode", "decode", "quantize", "decode_table"]

CHUNK = 1 << 16  # elements per chunk: ~10 int32 temporaries of 256 KiB stay in L2


# ----------------------------------------------------------------------------------------------
# input checking
def _rounding(rounding: str) -> str:
    try:
        return ROUNDINGS[rounding.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"unknown rounding {rounding!r}; use one of {sorted(set(ROUNDINGS.values()))}") from None


def _numpy_float32(x: Any) -> np.ndarray:
    arr = np.asarray(x)
    kind = arr.dtype.kind
    if kind == "c":
        raise TypeError("complex input cannot be encoded: pass the real and imaginary parts separately")
    if kind not in "fiub" and arr.dtype.type.__module__ != "ml_dtypes":
        raise TypeError(f"expected real numbers (a float, int or bool array), got dtype {arr.dtype}")
    return np.asarray(arr, dtype=np.float32, order="C")  # ascontiguousarray would turn 0-d into 1-d


def _torch_float32(x):
    if x.is_complex():
        raise TypeError("complex input cannot be encoded: pass the real and imaginary parts separately")
    return x.contiguous().to(torch.float32) if x.dtype != torch.float32 else x.contiguous()


def _via_numpy(xt, rounding: str) -> bool:
    return native.cpu_via_numpy and xt.device.type == "cpu" and rounding != "stochastic"


def _make_generator(generator, be):
    if be.np:
        if isinstance(generator, np.random.Generator):
            return generator
        if generator is None or isinstance(generator, (int, np.integer)):
            return np.random.default_rng(generator)
        raise TypeError(f"generator must be a numpy Generator or an int seed for numpy input, got {type(generator).__name__}")
    if isinstance(generator, torch.Generator):
        return generator
    if generator is None or isinstance(generator, int):
        g = torch.Generator()
        g.manual_seed(int(generator) if generator is not None else int(torch.seed()))
        return g
    raise TypeError(f"generator must be a torch.Generator or an int seed for tensor input, got {type(generator).__name__}")


# ----------------------------------------------------------------------------------------------
# encode
def _encode_flat(flat, fmt: Format, be, rounding: str, saturate: bool, gen):
    """Encode a contiguous 1-D float32 array/tensor chunk by chunk into unsigned codes."""
    n = flat.shape[0]
    if be.np:
        out = np.empty(n, dtype=fmt.code_dtype)
        if wide_ok(fmt, rounding):
            bits = round_bits(flat.view(np.int32), fmt, rounding, saturate)
            return (bits.view(np.uint32) >> (23 - fmt.mantissa_bits)).astype(fmt.code_dtype)
        if lut_ok(fmt, rounding):
            return _lut_apply(flat, encode_table(fmt, rounding, saturate), split_bit(fmt), out)
    else:
        if lut_ok(fmt, rounding):
            table = _on_device(("encode", fmt, rounding, saturate), lambda: encode_table(fmt, rounding, saturate), flat.device)
            k = split_bit(fmt)
            u = flat.view(torch.int32)
            idx = ((u >> (k - 1)) & ((1 << (33 - k)) - 2)) | ((u & ((1 << k) - 1)) != 0).to(torch.int32)
            return table[idx.to(torch.int64)]
        out = torch.empty(n, dtype=torch.int32 if fmt.bits > 8 else torch.uint8, device=flat.device)
    chunk = CHUNK if (be.np or flat.device.type == "cpu") else max(n, 1)
    for i in range(0, n, chunk):
        x = flat[i : i + chunk]
        if isinstance(fmt, IntFormat):
            c = int_encode(x, fmt, be, rounding, gen)
        else:
            c = encode_bits(be.bits_of_float32(x), fmt, be, rounding, saturate, gen)
        out[i : i + chunk] = c if be.np else c.to(out.dtype)
    if not be.np and fmt.bits > 8:
        out = out.to(be.uint_dtype(fmt.bits))
    return out


def _lut_apply(flat: np.ndarray, table: np.ndarray, k: int, out: np.ndarray) -> np.ndarray:
    """``out[i] = table[lut_index(flat[i])]`` in cache-sized chunks."""
    u = flat.view(np.int32)
    idx = np.empty(min(flat.shape[0], CHUNK), dtype=np.int32)
    for i in range(0, flat.shape[0], CHUNK):
        part = u[i : i + CHUNK]
        table.take(lut_index(part, k, out=idx[: part.shape[0]]), out=out[i : i + CHUNK])
    return out


_device_tables: dict[tuple, Any] = {}


def _on_device(key: tuple, make_table, device):
    """A numpy table (built by ``make_table()`` on first use) as a tensor on ``device``, cached."""
    full = (*key, str(device))
    if full not in _device_tables:
        _device_tables[full] = torch.from_numpy(make_table().copy()).to(device)
    return _device_tables[full]


def encode(x: Any, fmt: "str | Format", *, rounding: str = "nearest", saturate: bool = False, generator: Any = None):
    """Encode real numbers as the unsigned integer codes of ``fmt`` (bit-identical to ml_dtypes).

    ``rounding`` is ``"nearest"`` (ties to even), ``"toward_zero"`` or ``"stochastic"`` (with
    ``generator``: a numpy Generator, torch Generator or int seed). ``saturate=True`` clamps overflow
    and infinities to +-max, as FP8 training recipes do; by default overflow follows ml_dtypes
    (NaN for E4M3FN/FNUZ/E8M0, inf for E5M2 and IEEE-style formats, +-max for FP6/FP4).

    >>> encode([1.0, -2.0, 500.0], "e4m3").tolist(), encode(500.0, "e4m3", saturate=True)
    ([56, 192, 127], np.uint8(126))
    """
    fmt = get_format(fmt)
    rounding = _rounding(rounding)
    if is_torch(x):
        xt = _torch_float32(x)
        if rounding == "nearest":
            fast = native.encode(xt, fmt, saturate)
            if fast is not None:
                return fast
        if _via_numpy(xt, rounding):
            return torch.from_numpy(np.asarray(encode(xt.numpy(), fmt, rounding=rounding, saturate=saturate))).reshape(x.shape)
        gen = _make_generator(generator, TORCH) if rounding == "stochastic" else None
        return _encode_flat(xt.reshape(-1), fmt, TORCH, rounding, saturate, gen).reshape(x.shape)
    gen = _make_generator(generator, NUMPY) if rounding == "stochastic" else None
    if isinstance(fmt, IntFormat):  # integers round from the input's own precision: no double rounding
        given = np.asarray(x)
        _numpy_float32(given.reshape(-1)[:0])  # the same dtype checks as for float formats (no copy)
        arr = np.asarray(given, dtype=np.float32 if given.dtype in (np.float32, np.float16) else np.float64, order="C")
    else:
        arr = _numpy_float32(x)
    codes = _encode_flat(arr.reshape(-1), fmt, NUMPY, rounding, saturate, gen).reshape(arr.shape)
    return codes[()] if codes.ndim == 0 else codes


# ----------------------------------------------------------------------------------------------
# decode
@lru_cache(maxsize=None)
def _table(fmt: Format) -> np.ndarray:
    codes = np.arange(2**fmt.bits, dtype=np.int64)
    if isinstance(fmt, IntFormat):
        return int_decode(codes, fmt).astype(np.float32)
    return decode_codes(codes, fmt).astype(np.float32)


def decode_table(fmt: "str | Format") -> np.ndarray:
    """The float32 value of every code of a format up to 16 bits, indexed by code (read-only).

    >>> decode_table("fp4")[:8].tolist()
    [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    """
    fmt = get_format(fmt)
    if fmt.bits > 16:
        raise ValueError(f"{fmt.name} has 2^{fmt.bits} codes; decode tables exist for formats up to 16 bits")
    t = _table(fmt)
    t.flags.writeable = False
    return t


def _check_codes(c, fmt: Format, be) -> None:
    if be.np:
        if c.dtype.kind not in "ui":
            raise TypeError(f"codes must be an integer array (such as {fmt.code_dtype}), got dtype {c.dtype}")
    elif c.is_floating_point() or c.is_complex() or c.dtype == torch.bool:
        raise TypeError(f"codes must be an integer tensor (such as torch.uint8), got {c.dtype}")
    if c.numel() if not be.np else c.size:
        limit = 2**fmt.bits
        if not be.np and c.dtype in (torch.uint16, torch.uint32):
            c = c.to(torch.int64)  # torch has no min/max for these
        lo, hi = (int(c.min()), int(c.max()))
        if lo < 0 or hi >= limit:
            bad = lo if lo < 0 else hi
            raise ValueError(f"code {bad} is out of range for {fmt.name}: codes are 0..{limit - 1} ({fmt.bits} bits)")


def decode(codes: Any, fmt: "str | Format"):
    """Decode unsigned integer codes of ``fmt`` to float32 values (exact for every format).

    >>> decode([0x35, 0x7E, 0x7F], "e4m3").tolist()
    [0.8125, 448.0, nan]
    """
    fmt = get_format(fmt)
    if is_torch(codes):
        _check_codes(codes, fmt, TORCH)
        if native.cpu_via_numpy and codes.device.type == "cpu" and codes.dtype in (torch.uint8, torch.int64, torch.int32, torch.uint16):
            return torch.from_numpy(np.asarray(decode(codes.numpy(), fmt)))
        if fmt.bits <= 16:
            return _on_device(("decode", fmt), lambda: _table(fmt), codes.device)[codes.to(torch.int64)]
        c = codes.to(torch.int64)
        return decode_codes(c, fmt, TORCH).to(torch.float32)
    c = np.asarray(codes)
    _check_codes(c, fmt, NUMPY)
    if wide_ok(fmt, "nearest"):
        out = decode_wide(c, fmt)
    elif fmt.bits <= 16:
        out = _table(fmt).take(c if c.dtype.kind == "u" and c.itemsize <= 2 else c.astype(np.int64))
    elif isinstance(fmt, FloatFormat):
        out = decode_codes(c.astype(np.int64), fmt).astype(np.float32)
    return out[()] if out.ndim == 0 else out


# ----------------------------------------------------------------------------------------------
# quantize
def quantize(x: Any, fmt: "str | Format", *, rounding: str = "nearest", saturate: bool = False, generator: Any = None):
    """Round ``x`` to the nearest value of ``fmt`` (``decode(encode(x))``), keeping its type and dtype.

    >>> quantize([0.1, 0.3, 1000.0], "e4m3", saturate=True).tolist()
    [0.1015625, 0.3125, 448.0]
    """
    fmt = get_format(fmt)
    rnd = _rounding(rounding)
    if is_torch(x):
        xt = _torch_float32(x)
        out = native.quantize(xt, fmt, saturate) if rnd == "nearest" else None
        if out is None and _via_numpy(xt, rnd):
            out = torch.from_numpy(np.asarray(quantize(xt.numpy(), fmt, rounding=rounding, saturate=saturate), np.float32))
        if out is None:
            out = decode(encode(xt, fmt, rounding=rounding, saturate=saturate, generator=generator), fmt)
        out = out.reshape(x.shape)
        return out.to(x.dtype) if x.is_floating_point() else out
    arr = np.asarray(x)
    if wide_ok(fmt, rnd):  # float32's exponent: round the bit pattern in place
        flat = _numpy_float32(arr).reshape(-1)
        out = round_bits(flat.view(np.int32), fmt, rnd, saturate).view(np.float32).reshape(arr.shape)
    elif lut_ok(fmt, rnd):  # one look-up per element in a table of decode(encode(.))
        flat = _numpy_float32(arr).reshape(-1)
        out = _lut_apply(flat, value_table(fmt, rnd, saturate), split_bit(fmt), np.empty(flat.shape[0], np.float32))
        out = out.reshape(arr.shape)
    else:
        out = decode(encode(arr, fmt, rounding=rounding, saturate=saturate, generator=generator), fmt)
    if arr.dtype.kind == "f" and arr.dtype != np.float32:
        out = np.asarray(out).astype(arr.dtype)
        out = out[()] if out.ndim == 0 else out
    if np.ndim(out) == 0 and not isinstance(x, np.ndarray) and not isinstance(x, np.generic):
        return float(out)
    return out
