"""Error metrics for a quantized tensor: SQNR in dB (torchao's yardstick) and relative errors.

>>> import numpy as np
>>> x = np.array([1.0, 2.0, 3.0, 4.0])
>>> round(sqnr_db(x, x + 0.01), 1)
48.8
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .blocks import to_numpy

__all__ = ["sqnr_db", "error_stats"]


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
