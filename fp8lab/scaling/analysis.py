"""The numbers the scaling figures draw: where a tensor's magnitudes fall in a format, SQNR against the scale's margin.

(Analysis lives here and the drawing in :mod:`fp8lab.scaling.plots`, so the numbers need no matplotlib.)

>>> import numpy as np
>>> window_fractions(np.array([1e-6, 1.0], np.float32), "e4m3")["underflow"]
0.5
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..codec import quantize
from ..formats import FloatFormat, Format
from ..registry import get_format
from .blocks import to_numpy
from .metrics import sqnr_db
from .quantize import quantize_tensor
from .recipes import TensorScaling

__all__ = ["window_fractions", "scale_sweep"]


def _nonzero(x: Any, scale: Any = 1.0) -> np.ndarray:
    """The finite non-zero elements of ``x / scale`` as float32 (scale broadcast against x)."""
    v = (np.asarray(to_numpy(x), dtype=np.float64) / np.asarray(to_numpy(scale), dtype=np.float64)).ravel()
    return v[np.isfinite(v) & (v != 0)].astype(np.float32)


def window_fractions(x: Any, fmt: "str | Format", scale: Any = 1.0) -> dict[str, float]:
    """Fractions of the non-zero elements of ``x / scale`` above ``fmt.max``, normal, subnormal, or rounded to 0.

    ``overflow`` counts ``|x / scale| > fmt.max`` (a saturating cast clips them, a plain cast may
    give NaN or inf); ``underflow`` counts the elements a round-to-nearest cast flushes to zero;
    ``subnormal`` those that land on a subnormal (always 0 for integer formats); ``normal`` the rest.

    >>> window_fractions(np.array([0.4, 1.0, 300.0], np.float32), "int8")
    {'overflow': 0.3333333333333333, 'normal': 0.3333333333333333, 'subnormal': 0.0, 'underflow': 0.3333333333333333}
    """
    f = get_format(fmt)
    v = _nonzero(x, scale)
    if v.size == 0:
        return {"overflow": 0.0, "normal": 0.0, "subnormal": 0.0, "underflow": 0.0}
    a = np.abs(v)
    over = a > f.max
    q = np.abs(quantize(np.where(over, np.float32(0), v), f, saturate=True))
    under = ~over & (q == 0)
    sub = ~over & ~under & (q < f.min_normal) if isinstance(f, FloatFormat) else np.zeros_like(over)
    n = float(v.size)
    return {"overflow": float(over.sum() / n), "normal": float((~over & ~under & ~sub).sum() / n),
            "subnormal": float(sub.sum() / n), "underflow": float(under.sum() / n)}


def scale_sweep(x: Any, fmt: "str | Format", margins: Sequence[int]) -> np.ndarray:
    """SQNR in dB of per-tensor scaling ``TensorScaling(margin=m)`` for each margin ``m`` (scale x 2^m).

    >>> scale_sweep(np.array([1.0, 3.0], np.float32), "int8", [-1, 0]).round(1).tolist()
    [6.5, 52.1]
    """
    return np.array([sqnr_db(x, quantize_tensor(x, fmt, TensorScaling(margin=int(m))).dequantize()) for m in margins])
