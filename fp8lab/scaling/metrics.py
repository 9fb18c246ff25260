"""Error metrics for a quantized tensor: SQNR in dB (torchao's yardstick) and relative errors.

>>> import numpy as np
>>> x = np.array([1.0, 2.0, 3.0, 4.0])
>>> round(sqnr_db(x, x + 0.01), 1)
48.8
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..codec import ckernels
from ..codec.backend import is_torch, torch
from ..codec.paths import path_policy
from ..codec.tables import code_values
from ..qtensor import QTensor
from .blocks import to_numpy

__all__ = ["sqnr_db", "error_stats", "flushed_fraction", "flush_counts", "tensor_amax"]


_CHUNK = 1 << 18  # elements per float64 chunk: the temporaries stay in cache


def _pair(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(to_numpy(x))
    b = np.asarray(to_numpy(y))
    if a.shape != b.shape:
        raise ValueError(f"reference and approximation must have the same shape, got {a.shape} and {b.shape}")
    return a.reshape(-1), b.reshape(-1)


def _sums(x: Any, y: Any) -> dict[str, float]:
    """One chunked float64 pass: signal and noise energy, relative and absolute error sums and maxima."""
    a, b = _pair(x, y)
    acc = dict(signal=0.0, noise=0.0, rel_sum=0.0, rel_max=0.0, abs_max=0.0, n=0, n_nz=0)
    for i in range(0, a.shape[0], _CHUNK):
        ac = a[i : i + _CHUNK].astype(np.float64)
        bc = b[i : i + _CHUNK].astype(np.float64)
        keep = np.isfinite(ac)
        if not keep.all():
            ac, bc = ac[keep], bc[keep]
        d = np.abs(ac - bc)
        nz = ac != 0
        rel = d[nz] / np.abs(ac[nz])
        acc["signal"] += float(np.dot(ac, ac))
        acc["noise"] += float(np.dot(d, d))
        acc["rel_sum"] += float(rel.sum())
        acc["rel_max"] = max(acc["rel_max"], float(rel.max(initial=0.0)))
        acc["abs_max"] = max(acc["abs_max"], float(d.max(initial=0.0)))
        acc["n"] += int(ac.shape[0])
        acc["n_nz"] += int(rel.shape[0])
    return acc


def _db(signal: float, noise: float) -> float:
    if math.isnan(noise):
        return math.nan
    if noise == 0.0:
        return math.inf
    if signal == 0.0 or math.isinf(noise):
        return -math.inf
    return 10.0 * math.log10(signal / noise)


def sqnr_db(x: Any, y: Any) -> float:
    """Signal-to-quantization-noise ratio ``10 log10(sum x^2 / sum (x - y)^2)`` in dB (inf if exact).

    Each bit of precision is worth about 6 dB; torchao states its float8 thresholds this way.
    Elements where ``x`` is not finite are left out; a non-finite ``y`` elsewhere gives -inf.

    >>> sqnr_db([1.0, -1.0], [1.0, -1.0]), round(sqnr_db([1.0, -1.0], [0.5, -0.5]), 2)
    (inf, 6.02)
    """
    acc = _sums(x, y)
    return _db(acc["signal"], acc["noise"])


def error_stats(x: Any, y: Any) -> dict[str, float]:
    """Mean and max relative error (over non-zero finite ``x``), max absolute error, RMSE and SQNR (dB).

    A value that flushes to zero has relative error 1, so ``max_rel_err`` of 1 means some small
    values were lost to underflow; ``sqnr_db`` weighs errors by magnitude instead.

    >>> error_stats([1.0, 2.0, 0.0], [1.0, 2.5, 0.0])
    {'mean_rel_err': 0.125, 'max_rel_err': 0.25, 'max_abs_err': 0.5, 'rmse': 0.28867513459481287, 'sqnr_db': 13.010299956639813}
    """
    acc = _sums(x, y)
    return {
        "mean_rel_err": acc["rel_sum"] / acc["n_nz"] if acc["n_nz"] else 0.0,
        "max_rel_err": acc["rel_max"],
        "max_abs_err": acc["abs_max"],
        "rmse": math.sqrt(acc["noise"] / acc["n"]) if acc["n"] else 0.0,
        "sqnr_db": _db(acc["signal"], acc["noise"]),
    }


@functools.lru_cache(maxsize=64)
def _zero_codes(fmt: Any) -> frozenset:
    """The codes of ``fmt`` whose value is zero (+0 and -0 for most formats)."""
    return frozenset(np.flatnonzero(code_values(fmt) == 0).tolist())


def _kernel_ready(t: Any) -> bool:
    """Whether a C kernel may read ``t``: a contiguous float32 CPU tensor, with the kernels available and not switched off."""
    return (t.is_cpu and t.dtype == torch.float32 and t.is_contiguous() and "ckernel" not in path_policy()[1]
            and ckernels.available())


def tensor_amax(x: Any) -> float:
    """``max |x|`` of a tensor or array as a float (0.0 when empty; inf or NaN where ``x`` holds them, as torch's max).

    A contiguous float32 CPU tensor is read in one C pass where the kernels serve it (the same
    number: a maximum of magnitudes is exact).

    >>> import torch
    >>> tensor_amax(torch.tensor([[1.0, -3.0], [2.0, 0.5]])), tensor_amax(torch.zeros(0, 4)), tensor_amax(torch.tensor([1.0, float("nan")]))
    (3.0, 0.0, nan)
    """
    if not is_torch(x):
        a = np.asarray(x)
        return float(np.max(np.abs(a))) if a.size else 0.0
    if x.numel() == 0:
        return 0.0
    if x.ndim == 2 and _kernel_ready(x):
        amax, finite = ckernels.block_amax(x, tuple(x.shape))
        if finite:
            return float(amax.reshape(-1)[0])
    return float(x.abs().max())


def flushed_fraction(x: Any, q: Any) -> float:
    """Fraction of the nonzero elements of ``x`` that quantized to zero: the underflow of a cast.

    ``q`` is ``x``'s QTensor or its rounded values (same shape). A zero stays zero, so the count
    is (zeros after) - (zeros before). A QTensor's zeros are counted on its codes (the codes whose
    value is zero), in one C pass with the nonzeros where the kernels serve it, so nothing is
    decoded again.

    >>> import torch
    >>> from fp8lab.scaling.quantize import quantize_tensor
    >>> x = torch.tensor([[1.0, 1e-6, 0.0, 2.0]])
    >>> flushed_fraction(x, quantize_tensor(x, "e4m3", "tensor")), flushed_fraction(x, torch.tensor([[1.0, 0.0, 0.0, 2.0]]))
    (0.3333333333333333, 0.3333333333333333)
    """
    nonzero, flushed = flush_counts(x, q)
    return flushed / nonzero if nonzero else 0.0


def flush_counts(x: Any, q: Any) -> tuple[int, int]:
    """(nonzero elements of ``x``, how many of them quantized to zero): the counts behind :func:`flushed_fraction`.

    ``q`` is ``x``'s QTensor or its rounded values; C kernels count both in one pass where they serve it.

    >>> import torch
    >>> flush_counts(torch.tensor([[1.0, 1e-6, 0.0, 2.0]]), torch.tensor([[1.0, 0.0, 0.0, 2.0]]))
    (3, 1)
    """
    if not is_torch(x):
        xa = np.asarray(x)
        nonzero = int(np.count_nonzero(xa))
        after = np.asarray(to_numpy(q.values() if isinstance(q, QTensor) else q))
        return nonzero, (xa.size - int(np.count_nonzero(after))) - (xa.size - nonzero)
    n = x.numel()
    if (not isinstance(q, QTensor) and is_torch(q) and _kernel_ready(x) and _kernel_ready(q)
            and tuple(q.shape) == tuple(x.shape)):
        return ckernels.flush_count_values(x, q)  # both counts in one pass
    if (isinstance(q, QTensor) and q.zero_point is None and q.format.bits <= 8 and _kernel_ready(x)
            and q.codes.is_contiguous() and tuple(q.codes.shape) == tuple(x.shape)):
        return ckernels.flush_count(x, q.codes, q.format)  # both counts in one pass
    nonzero = int(torch.count_nonzero(x))
    if not nonzero:
        return 0, 0
    if isinstance(q, QTensor):
        if q.zero_point is None and q.format.bits <= 16:
            zero_codes = _zero_codes(q.format)
            sign = 1 << (q.format.bits - 1)
            if zero_codes == {0, sign}:  # +0 and -0: the codes without their sign bit are zero
                zeros_after = n - int(torch.count_nonzero(q.codes & (sign - 1)))
            elif zero_codes == {0}:
                zeros_after = n - int(torch.count_nonzero(q.codes))
            else:
                zeros_after = sum(int((q.codes == c).sum()) for c in zero_codes)
        else:
            zeros_after = n - int(torch.count_nonzero(q.values()))
    else:
        zeros_after = n - int(torch.count_nonzero(q))
    return nonzero, zeros_after - (n - nonzero)
