"""C kernels for the CPU hot loops: a scaled FP8 cast, blockwise amax, and a table decode, one pass each.

The training layer quantizes and decodes a few million elements per step. In eager torch a scaled
cast is a handful of passes (|x|, a reduction, a division, torch's scalar FP8 cast) and a decode
another handful, each a separate call; ``_kernels.c`` does each in one loop that gcc vectorizes.
The formulas are the codec's bit-level ones, for 8-bit signed float formats with subnormals (E4M3,
E5M2 and their fnuz variants), their parameters computed from the format (:func:`encode_params`).

The library is compiled on first use with the system's gcc (``-O3 -march=native``, no fast-math,
no FMA contraction: every operation rounds as IEEE 754 says) into a private per-user cache
(:mod:`fp8lab.codec.kcache`: mode 0700, owner checked, named by a hash of what built it, its digest
verified before it is loaded). Without gcc, with an untrusted cache, or with ``FP8LAB_NO_CKERNELS=1``
(``0``, ``false``, ``no``, ``off`` leave it on), :func:`library` is None and everything runs in
torch as before, with the same results: ``tests/test_ckernels.py`` checks the cast against torch's
on every finite float32, and the amax and decode against torch and the codec.

>>> import torch
>>> from fp8lab.registry import get_format
>>> if available():
...     codes = scaled_encode(torch.tensor([[1.0, -3.0]]), torch.tensor([[0.5]]), (1, 2), get_format("e4m3"))
...     assert codes.tolist() == [[64, 204]]   # 2.0 and -6.0
>>> reason() is None or isinstance(reason(), str)
True
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ..formats import FloatFormat, Format
from . import kcache
from .backend import torch
from .tables import code_values

__all__ = ["available", "reason", "library", "encode_params", "scaled_encode", "block_amax", "table_decode",
           "flush_count", "flush_count_values", "scale_epilogue", "transposed", "scaled_encode_measured", "band_encode", "BAND_RULES", "cast_args_layout"]

_SOURCE = Path(__file__).with_name("_kernels.c")
_FLAGS = ["-O3", "-march=native", "-mprefer-vector-width=512", "-ffp-contract=off", "-fno-fast-math", "-fno-trapping-math", "-shared", "-fPIC"]


class _EncParams(ctypes.Structure):
    _fields_ = [("mantissa_bits", ctypes.c_int32), ("bias", ctypes.c_int32), ("max_bits", ctypes.c_uint32),
                ("normal_bits", ctypes.c_uint32),
                ("unsigned_zero", ctypes.c_int32), ("special", ctypes.c_int32)]

#: enc_params.special: where each special-value policy puts NaN and inf (``_kernels.c``, fp8lab_arith_decode).
_SPECIAL = {"ieee": 0, "fn": 1, "fnuz": 2}


class _CastArgs(ctypes.Structure):
    """The arguments of ``fp8lab_scaled_encode`` and ``fp8lab_band_encode``, as ``cast_args`` in ``_kernels.c`` (same order)."""

    _fields_ = [("x", ctypes.c_void_p), ("rows", ctypes.c_int64), ("cols", ctypes.c_int64), ("scales", ctypes.c_void_p),
                ("brows", ctypes.c_int64), ("bcols", ctypes.c_int64),
                ("reciprocal", ctypes.c_int32), ("fmt_max", ctypes.c_float), ("p", ctypes.POINTER(_EncParams)),
                ("codes", ctypes.c_void_p), ("values", ctypes.c_void_p), ("dequant", ctypes.c_int32),
                ("transpose_out", ctypes.c_int32), ("rule", ctypes.c_int32), ("inv_max", ctypes.c_float),
                ("margin_scale", ctypes.c_double), ("amax_out", ctypes.c_void_p), ("scale_out", ctypes.c_void_p),
                ("scode_out", ctypes.c_void_p), ("flush_out", ctypes.c_void_p)]


_why_not: list[str] = []
_LOAD_LOCK = threading.Lock()

#: FP8LAB_NO_CKERNELS values that leave the kernels on (anything else switches them off, saying which value)
_ENABLED_WORDS = ("", "0", "false", "no", "off")


def _disabled_by_env() -> str | None:
    """Why FP8LAB_NO_CKERNELS switches the kernels off, or None: ``0``, ``false``, ``no``, ``off`` or empty mean enabled."""
    value = os.environ.get("FP8LAB_NO_CKERNELS")
    if value is None or value.strip().lower() in _ENABLED_WORDS:
        return None
    return f"FP8LAB_NO_CKERNELS is set ({value!r}; 0, false, no or off would leave the kernels on)"


def library() -> Any:
    """The loaded kernels (a ctypes library), or None where they cannot be built (see :func:`reason`).

    >>> library() is None or hasattr(library(), "fp8lab_scaled_encode")
    True
    """
    if not _loaded:
        with _LOAD_LOCK:  # N threads arriving at once: the first loads (or builds), the others wait for it
            if not _loaded:
                _loaded.append(_library())
    return _loaded[0]


_loaded: list[Any] = []  # [the library or None], once decided


def _library() -> Any:
    why = _disabled_by_env()
    if why:
        _why_not.append(why)
        return None
    if torch is None:
        _why_not.append("torch is not installed")
        return None
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        _why_not.append("no C compiler (gcc) found")
        return None
    try:
        lib, _ = kcache.load_or_build(_SOURCE, cc, _FLAGS)
        return _bind(lib)
    except (OSError, subprocess.SubprocessError) as e:
        _why_not.append(f"the C kernels are not loaded: {e}")
        return None
    except AttributeError as e:  # a library without our symbols: never call into it
        _why_not.append(f"the C kernels are not loaded: the library lacks a kernel ({e})")
        return None


def _bind(lib: Any) -> Any:
    """Declare the kernels' C signatures on the loaded library (AttributeError if one is missing)."""
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    lib.fp8lab_scaled_encode.argtypes = [ctypes.POINTER(_CastArgs)]
    lib.fp8lab_scaled_encode.restype = ctypes.c_int32
    lib.fp8lab_block_amax.argtypes = [ptr, i64, i64, i64, i64, ptr]
    lib.fp8lab_block_amax.restype = i64
    lib.fp8lab_arith_decode.argtypes = [ptr, i64, ctypes.POINTER(_EncParams), ptr]
    lib.fp8lab_arith_decode.restype = None
    lib.fp8lab_table_decode.argtypes = [ptr, i64, ptr, ptr]
    lib.fp8lab_table_decode.restype = None
    lib.fp8lab_flush_count.argtypes = [ptr, ptr, i64, ctypes.c_uint32, ptr]
    lib.fp8lab_flush_count.restype = None
    lib.fp8lab_flush_count_values.argtypes = [ptr, ptr, i64, ptr]
    lib.fp8lab_flush_count_values.restype = None
    lib.fp8lab_scale_epilogue.argtypes = [ptr, i64, i64, ptr, i64, ptr, i64, ptr]
    lib.fp8lab_scale_epilogue.restype = None
    lib.fp8lab_transpose_f32.argtypes = [ptr, i64, i64, ptr]
    lib.fp8lab_transpose_f32.restype = None
    lib.fp8lab_band_encode.argtypes = [ctypes.POINTER(_CastArgs)]
    lib.fp8lab_band_encode.restype = i64
    lib.fp8lab_cast_args_layout.argtypes = [ptr]
    lib.fp8lab_cast_args_layout.restype = i64
    return lib


def cast_args_layout() -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(C's size and field offsets of ``cast_args``, the ctypes mirror's), to check they agree; None without the kernels.

    >>> got = cast_args_layout(); got is None or got[0] == got[1]
    True
    """
    lib = library()
    if lib is None:
        return None
    out = np.zeros(1 + len(_CastArgs._fields_), dtype=np.int64)
    n = lib.fp8lab_cast_args_layout(out.ctypes.data)
    mirror = (ctypes.sizeof(_CastArgs), *(getattr(_CastArgs, f).offset for f, _ in _CastArgs._fields_))
    return tuple(int(v) for v in out[: 1 + n]), tuple(mirror)


def available() -> bool:
    """Whether the C kernels are built and loaded here.

    >>> isinstance(available(), bool)
    True
    """
    return library() is not None


def reason() -> str | None:
    """Why the kernels are not available (None when they are).

    >>> reason() is None or "kernels" in reason() or "compiler" in reason() or "FP8LAB" in reason()
    True
    """
    return None if available() else (_why_not[-1] if _why_not else "unknown")


@functools.lru_cache(maxsize=64)
def encode_params(fmt: Format) -> _EncParams | None:
    """The kernel's parameters for ``fmt``, computed from its fields, or None if the kernel cannot encode it.

    Served: 8-bit signed float formats with subnormals, 1 to 7 mantissa bits and a normal range
    inside float32's (E4M3FN, E5M2, E4M3FNUZ, E5M2FNUZ and custom ones with their layouts).

    >>> from fp8lab.registry import get_format
    >>> p = encode_params(get_format("e4m3")); (p.mantissa_bits, p.bias, hex(p.max_bits), hex(p.normal_bits))
    (3, 7, '0x43e00000', '0x3c800000')
    >>> encode_params(get_format("fp4")) is None
    True
    """
    if not (isinstance(fmt, FloatFormat) and fmt.bits == 8 and fmt.signed and fmt.subnormals
            and 1 <= fmt.mantissa_bits <= 7 and fmt.special in ("ieee", "fn", "fnuz")):
        return None
    m, bias = fmt.mantissa_bits, fmt.bias
    if not -126 <= 1 - bias <= 127:
        return None
    bits = lambda v: int(np.array(v, dtype=np.float32).view(np.uint32))  # noqa: E731
    return _EncParams(m, bias, bits(fmt.max), bits(2.0 ** (1 - bias)),
                      int(fmt.special == "fnuz"), _SPECIAL[fmt.special])


@functools.lru_cache(maxsize=64)
def _fmt_args(fmt: Format) -> tuple[Any, float, float] | None:
    """(a pointer to ``fmt``'s encode parameters, float(max), float32(1 / max)): what every cast call passes, made once."""
    p = encode_params(fmt)
    if p is None:
        return None
    return ctypes.pointer(p), float(fmt.max), float(np.float32(1.0 / float(fmt.max)))


def _host(shape: tuple[int, ...], dtype: Any) -> tuple[np.ndarray, int]:
    """A fresh numpy array and its address (a torch allocation seen as numpy: cheaper than ``ndarray.ctypes.data``)."""
    t = torch.empty(shape, dtype=dtype)
    return t.numpy(), t.data_ptr()


def _ok(t: Any, dtype: Any) -> bool:
    return t.is_cpu and t.dtype == dtype and t.is_contiguous()


def scaled_encode(x: Any, scales: Any, block: tuple[int, int], fmt: Format, *, reciprocal: bool = False,
                  values: bool = False, dequantize: bool = False, transpose: bool = False) -> Any:
    """uint8 codes of ``x / scale`` for a contiguous float32 CPU matrix, each ``block`` sharing a scale (rounded once, as torch divides).

    ``scales`` is float32 (rows / block[0], cols / block[1]); ``reciprocal`` multiplies by ``1 / scale``
    instead, which is the same operation when every scale is a power of two. ``x`` must be finite
    (the caller checks); beyond ``max`` the cast saturates (the codes of torch's ``clamp_`` to
    ``±max`` before its cast, so a saturating block needs no separate clamp). ``values=True`` returns ``(codes,
    values)``, the codes' float32 values computed in the same pass (the rounded ``x / scale``: what
    :func:`table_decode` of the codes gives); with ``dequantize=True`` each value times its scale (one
    float32 multiply, as ``QTensor.dequantize`` and the K-blocked GEMM's scaling do). ``transpose=True``
    gives the outputs transposed, contiguous (cols, rows).

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> if available():
    ...     assert scaled_encode(torch.full((2, 4), 900.0), torch.ones(1, 1), (2, 4), get_format("e4m3")).unique().tolist() == [126]
    """
    codes, vals, _, _, _ = _scaled_encode(x, scales, block, fmt, reciprocal, values, dequantize, transpose, False, False)
    return (codes, vals) if values else codes


def scaled_encode_measured(x: Any, scales: Any, block: tuple[int, int], fmt: Format, *, reciprocal: bool = False,
                           values: bool = False, dequantize: bool = False, transpose: bool = False,
                           flush: bool = False) -> tuple:
    """:func:`scaled_encode` that also measures, in the same walk over ``x``: each block's amax, whether ``x`` is finite,
    and with ``flush=True`` the cast's flush counts (as :func:`flush_count` gives them).

    For scales that do not depend on this tensor's amax (delayed scaling: the history's). Returns
    ``(codes, values or None, amax, finite, (nonzero, flushed) or None)``, amax float32 per block as
    :func:`block_amax` gives it; where ``finite`` is False nothing else is meaningful.

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> if available():
    ...     got = scaled_encode_measured(torch.tensor([[1.0, -900.0, 1e-9]]), torch.ones(1, 1), (1, 3), get_format("e4m3"), flush=True)
    ...     assert got[2].tolist() == [[900.0]] and got[3] and got[4] == (3, 1)
    """
    return _scaled_encode(x, scales, block, fmt, reciprocal, values, dequantize, transpose, True, flush)


def _scaled_encode(x: Any, scales: Any, block: tuple[int, int], fmt: Format, reciprocal: bool, values: bool,
                   dequantize: bool, transpose: bool, measure: bool, flush: bool) -> tuple:
    lib, fa = library(), _fmt_args(fmt)
    if lib is None or fa is None:
        raise RuntimeError(f"the C kernels cannot encode {fmt.name}: {reason() or 'not an 8-bit signed format with subnormals'}")
    rows, cols = x.shape
    br, bc = block
    if not (_ok(x, torch.float32) and _ok(scales, torch.float32)) or rows % br or cols % bc or \
            tuple(scales.shape) != (rows // br, cols // bc):
        raise ValueError(f"scaled_encode takes a contiguous float32 CPU matrix of whole blocks and its scales, got "
                         f"{tuple(x.shape)} in blocks {block} with scales {tuple(scales.shape)}")
    shape = (cols, rows) if transpose else (rows, cols)
    codes = torch.empty(shape, dtype=torch.uint8)
    vals = torch.empty(shape, dtype=torch.float32) if values else None
    amax, amax_at = _host((rows // br, cols // bc), torch.float32) if measure else (None, None)
    counts, counts_at = _host((2,), torch.int64) if flush else (None, None)
    ptr, fmt_max, _ = fa
    args = _CastArgs(x=x.data_ptr(), rows=rows, cols=cols, scales=scales.data_ptr(), brows=br, bcols=bc,
                     reciprocal=int(reciprocal), fmt_max=fmt_max, p=ptr, codes=codes.data_ptr(),
                     values=vals.data_ptr() if values else None, dequant=int(dequantize), transpose_out=int(transpose),
                     amax_out=amax_at, flush_out=counts_at)
    rc = lib.fp8lab_scaled_encode(ctypes.byref(args))
    if rc < 0:
        raise MemoryError(f"scaled_encode could not allocate its scratch rows of {cols} elements")
    return codes, vals, amax, rc == 0, (int(counts[0]), int(counts[1])) if flush else None


def block_amax(x: Any, block: tuple[int, int]) -> tuple[np.ndarray, bool]:
    """(the largest magnitude of each block as float32 (rows / block[0], cols / block[1]), whether all of ``x`` is finite).

    >>> import torch
    >>> if available():
    ...     amax, finite = block_amax(torch.tensor([[1.0, -5.0], [2.0, 0.5]]), (1, 2))
    ...     assert amax.tolist() == [[5.0], [2.0]] and finite
    """
    lib = library()
    rows, cols = x.shape
    br, bc = block
    if lib is None or not _ok(x, torch.float32) or rows % br or cols % bc:
        raise ValueError(f"block_amax takes a contiguous float32 CPU matrix of whole blocks, got {tuple(x.shape)} "
                         f"in blocks {block} ({reason() or 'kernels available'})")
    out, out_at = _host((rows // br, cols // bc), torch.float32)
    bad = lib.fp8lab_block_amax(x.data_ptr(), rows, cols, br, bc, out_at)
    return out, bad == 0


@functools.lru_cache(maxsize=64)
def _table(fmt: Format) -> Any:
    table = np.full(256, np.nan, dtype=np.float32)  # 256 entries whatever the width: no code reads outside it
    values = code_values(fmt)
    table[: len(values)] = values
    return torch.from_numpy(table)


def table_decode(codes: Any, fmt: Format, out: Any = None) -> Any:
    """float32 values of uint8 CPU ``codes`` of an 8-bit format, in one C pass: computed from each code's bits for the
    formats :func:`scaled_encode` serves (``fp8lab_arith_decode``), else one look-up each in the codec's table of all
    256 values; the same values either way (the tests compare them on every code).

    ``out`` is an optional float32 (or int32, reinterpreted) buffer with ``codes.numel()`` elements.

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> if available():
    ...     assert table_decode(torch.tensor([56, 0x7E], dtype=torch.uint8), get_format("e4m3")).tolist() == [1.0, 448.0]
    """
    lib = library()
    if lib is None or fmt.bits > 8 or not codes.is_cpu or codes.dtype != torch.uint8:
        raise ValueError(f"table_decode takes uint8 CPU codes of an 8-bit format ({reason() or 'kernels available'})")
    c = codes.contiguous()
    res = torch.empty(c.shape, dtype=torch.float32) if out is None else out.view(torch.float32).view(c.shape)
    p = encode_params(fmt)
    if p is not None:  # the formats the cast serves: decoded from the bits (faster than a table gather)
        lib.fp8lab_arith_decode(c.data_ptr(), c.numel(), ctypes.byref(p), res.data_ptr())
    else:
        lib.fp8lab_table_decode(c.data_ptr(), c.numel(), _table(fmt).data_ptr(), res.data_ptr())
    return res


@functools.lru_cache(maxsize=64)
def _zero_mask(fmt: Format) -> int | None:
    """The mask whose zero test finds exactly ``fmt``'s zero codes (all but the sign bit: +0 and -0; all bits: 0 alone), else None.

    >>> from fp8lab.registry import get_format
    >>> [_zero_mask(get_format(f)) for f in ("e4m3", "e5m2fnuz", "fp6_e3m2", "int8")]
    [127, 255, 31, 255]
    """
    values = code_values(fmt)
    zeros = {int(c) for c in np.flatnonzero(values == 0)}
    for mask in ((1 << (fmt.bits - 1)) - 1, (1 << fmt.bits) - 1):
        if zeros == {c for c in range(len(values)) if c & mask == 0}:
            return mask
    return None


def flush_count(x: Any, codes: Any, fmt: Format) -> tuple[int, int]:
    """(nonzero elements of ``x``, how many of them have a code whose value is zero): what a cast flushed, in one pass.

    ``x`` is a contiguous float32 CPU tensor and ``codes`` its contiguous uint8 codes of an 8-bit format.

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> if available():
    ...     assert flush_count(torch.tensor([0.0, 1e-9, 2.0]), torch.tensor([0, 128, 64], dtype=torch.uint8), get_format("e4m3")) == (2, 1)
    """
    lib = library()
    if lib is None or fmt.bits > 8 or not (_ok(x, torch.float32) and _ok(codes, torch.uint8)) or x.shape != codes.shape:
        raise ValueError(f"flush_count takes a contiguous float32 CPU tensor and its contiguous uint8 codes of one shape "
                         f"({reason() or 'kernels available'})")
    mask = _zero_mask(fmt)
    if mask is None:  # zero codes no mask picks out (no 8-bit format of the registry has such): count them in torch
        nz = x != 0
        zero = torch.from_numpy(code_values(fmt) == 0)[codes.long()]
        return int(nz.sum()), int((nz & zero).sum())
    counts, counts_at = _host((2,), torch.int64)
    lib.fp8lab_flush_count(x.data_ptr(), codes.data_ptr(), x.numel(), mask, counts_at)
    return int(counts[0]), int(counts[1])


def flush_count_values(x: Any, v: Any) -> tuple[int, int]:
    """(nonzero elements of ``x``, how many of them round to a zero in ``v``): what a cast to float values flushed, in one pass.

    ``x`` and ``v`` (its rounded values, e.g. to BF16 or FP16, as float32) are contiguous float32 CPU
    tensors of one shape; +0 and -0 in ``v`` both count as zero.

    >>> import torch
    >>> if available():
    ...     assert flush_count_values(torch.tensor([0.0, 1e-9, 2.0]), torch.tensor([0.0, -0.0, 2.0])) == (2, 1)
    """
    lib = library()
    if lib is None or not (_ok(x, torch.float32) and _ok(v, torch.float32)) or x.shape != v.shape:
        raise ValueError(f"flush_count_values takes two contiguous float32 CPU tensors of one shape "
                         f"({reason() or 'kernels available'})")
    counts, counts_at = _host((2,), torch.int64)
    lib.fp8lab_flush_count_values(x.data_ptr(), v.data_ptr(), x.numel(), counts_at)
    return int(counts[0]), int(counts[1])


def scale_epilogue(out: Any, sa: Any, sb: Any, bias: Any = None, *, check: bool = True) -> Any:
    """``out.mul_(sa).mul_(sb)`` (then ``.add_(bias)``) in one pass, the same float32 operations per element, for a
    contiguous float32 CPU matrix ``out`` (M, N), float32 CPU scales ``sa`` (M, 1) and ``sb`` (1, N) (broadcast views
    allowed) and an optional contiguous float32 ``bias`` (N,); returns ``out``. ``check=False`` skips checking
    them, for a caller that built them so (the exact GEMM, for its own result and scales).

    >>> import torch
    >>> if available():
    ...     o = torch.ones(2, 3); s = scale_epilogue(o, torch.tensor([[2.0], [3.0]]), torch.full((1, 1), 0.5).expand(1, 3))
    ...     assert s.tolist() == [[1.0, 1.0, 1.0], [1.5, 1.5, 1.5]]
    """
    lib = library()
    rows, cols = out.shape
    if check and (lib is None or not _ok(out, torch.float32) or tuple(sa.shape) != (rows, 1)
                  or tuple(sb.shape) != (1, cols) or sa.dtype != torch.float32 or sb.dtype != torch.float32
                  or not (sa.is_cpu and sb.is_cpu)
                  or (bias is not None and (not _ok(bias, torch.float32) or tuple(bias.shape) != (cols,)))):
        raise ValueError(f"scale_epilogue takes a contiguous float32 CPU matrix (M, N), float32 CPU scales (M, 1) "
                         f"and (1, N) and a contiguous float32 bias (N,) or None ({reason() or 'kernels available'})")
    if rows and cols:
        lib.fp8lab_scale_epilogue(out.data_ptr(), rows, cols, sa.data_ptr(), sa.stride(0) if rows > 1 else 0,
                                  sb.data_ptr(), sb.stride(1) if cols > 1 else 0,
                                  None if bias is None else bias.data_ptr())
    return out


def transposed(x: Any) -> Any:
    """A contiguous copy of ``x.t()`` for a contiguous float32 CPU matrix ``x`` (a tiled copy: faster than torch's here).

    >>> import torch
    >>> if available():
    ...     assert transposed(torch.tensor([[1.0, 2.0, 3.0]])).tolist() == [[1.0], [2.0], [3.0]]
    """
    lib = library()
    if lib is None or x.ndim != 2 or not _ok(x, torch.float32):
        raise ValueError(f"transposed takes a contiguous float32 CPU matrix ({reason() or 'kernels available'})")
    rows, cols = x.shape
    out = torch.empty((cols, rows), dtype=torch.float32)
    lib.fp8lab_transpose_f32(x.data_ptr(), rows, cols, out.data_ptr())
    return out


#: The scale rules :func:`band_encode` computes in C, each the Python one it reproduces.
BAND_RULES = {"mx_rceil": 0, "pow2": 1, "float": 2}


def band_encode(x: Any, block: tuple[int, int], fmt: Format, rule: str, *, margin: int = 0, values: bool = False,
                dequantize: bool = False, transpose: bool = False, flush: bool = False) -> tuple | None:
    """A scaled cast fused in one C call, band of rows by band of rows: codes, values, and per block amax, scale, E8M0 code.

    ``block`` divides the contiguous float32 CPU matrix (rows, columns, 1xN tiles, NxN blocks or
    the whole matrix; a band is ``block[0]`` rows); ``rule`` is ``"mx_rceil"``
    (:func:`fp8lab.scaling.mx.mx_scale_exponents`'s ``rceil`` and MXScaling's E8M0 table),
    ``"pow2"`` (:func:`fp8lab.scaling.scales.float_scales` with ``pow2=True`` and ``margin``) or
    ``"float"`` (``float_scales`` with ``pow2=False``: float32 scales, x divided by them). Returns
    ``(codes, values or None, amax, scales, scale_codes or None, saturated_blocks, flush)`` (numpy
    per block; ``flush`` the cast's ``(nonzero, flushed)`` counts with ``flush=True``, as
    :func:`flush_count` gives them, else None), or None where only the general path can (an inf or NaN, or a scale beyond 2^127 or
    float32's range). The cast is :func:`scaled_encode`'s; ``tests/test_scaling_fast.py`` compares
    the QTensor with the general path's.

    >>> import torch
    >>> from fp8lab.registry import get_format
    >>> if available():
    ...     codes, _, amax, scales, sc, n_sat, _ = band_encode(torch.full((1, 32), 3.0), (1, 32), get_format("e4m3"), "mx_rceil")
    ...     assert scales.tolist() == [[2.0 ** -7]] and sc.tolist() == [[120]] and n_sat == 0
    """
    lib, fa = library(), _fmt_args(fmt)
    rows, cols = x.shape
    br, bc = block
    if lib is None or fa is None or rule not in BAND_RULES or not _ok(x, torch.float32) or rows % br or cols % bc:
        raise ValueError(f"band_encode takes a contiguous float32 CPU matrix of whole blocks, an 8-bit "
                         f"format and a rule of {sorted(BAND_RULES)}, got {tuple(x.shape)} in blocks {block}, {fmt.name}, "
                         f"{rule!r} ({reason() or 'kernels available'})")
    shape = (cols, rows) if transpose else (rows, cols)
    codes = torch.empty(shape, dtype=torch.uint8)
    vals = torch.empty(shape, dtype=torch.float32) if values else None
    nb = (rows // br, cols // bc)
    amax, amax_at = _host(nb, torch.float32)
    scales, scales_at = _host(nb, torch.float32)
    scale_codes, codes_at = _host(nb, torch.uint8) if rule == "mx_rceil" else (None, None)
    counts, counts_at = _host((2,), torch.int64) if flush else (None, None)
    ptr, fmt_max, inv_max = fa
    args = _CastArgs(x=x.data_ptr(), rows=rows, cols=cols, brows=br, bcols=bc, rule=BAND_RULES[rule],
                     inv_max=inv_max, margin_scale=2.0 ** margin, fmt_max=fmt_max, p=ptr,
                     codes=codes.data_ptr(), values=vals.data_ptr() if values else None, dequant=int(dequantize),
                     transpose_out=int(transpose), amax_out=amax_at, scale_out=scales_at, scode_out=codes_at,
                     flush_out=counts_at)
    n_sat = lib.fp8lab_band_encode(ctypes.byref(args))
    if n_sat == -2:
        raise MemoryError(f"band_encode could not allocate its scratch rows of {cols} elements")
    if n_sat < 0:
        return None
    return codes, vals, amax, scales, scale_codes, int(n_sat), (int(counts[0]), int(counts[1])) if flush else None
