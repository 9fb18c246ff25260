"""The numbers the microscaling figures draw: MX block-max error, where amax lands on the grid, floor against rceil.

(Analysis lives here and the drawing in :mod:`fp8lab.scaling.mx_plots`, so the numbers need no matplotlib.)

>>> mx_name("fp4")
'MXFP4 E2M1'
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..formats import Format
from ..registry import get_format
from .blocks import block_reduce
from .metrics import sqnr_db
from .mx import MXScaling
from .quantize import quantize_tensor

__all__ = ["MX_ELEMENT_FORMATS", "BLOCK_PROFILE", "mx_name", "block_max_error", "amax_over_scale", "mx_rounding_comparison"]

#: The five OCP MX element formats: MXFP8 (E4M3, E5M2), MXFP6 (E2M3, E3M2), MXFP4 (E2M1).
MX_ELEMENT_FORMATS = ("e4m3", "e5m2", "e2m3", "e3m2", "fp4")

#: A fixed 32-element block shape for the explorer: the largest magnitude 1.0 sits first, the rest is
#: heavy-tailed (Student-t, df 4, seed 3) and scaled below it. ``describe_mx_block`` multiplies it by amax.
BLOCK_PROFILE = (lambda t: np.concatenate([[1.0], t / np.abs(t).max() * 0.9]).astype(np.float32))(
    np.random.default_rng(3).standard_t(4, 31))


def mx_name(fmt: "str | Format") -> str:
    """The MX name of an element format: ``MXFP8 E4M3``, ``MXFP6 E2M3``, ``MXFP4 E2M1``.

    >>> [mx_name(n) for n in MX_ELEMENT_FORMATS]
    ['MXFP8 E4M3', 'MXFP8 E5M2', 'MXFP6 E2M3', 'MXFP6 E3M2', 'MXFP4 E2M1']
    """
    fmt = get_format(fmt)
    layout = f"E{fmt.exponent_bits}M{fmt.mantissa_bits}" if hasattr(fmt, "exponent_bits") else fmt.name
    return f"MXFP{fmt.bits} {layout}"


def block_max_error(amax: "np.ndarray | Sequence[float]", fmt: "str | Format", scale_rounding: str = "floor",
                    block_size: int = 32) -> np.ndarray:
    """Relative error ``(dequantised max - amax) / amax`` of a block's largest element after MX quantisation.

    >>> block_max_error([957.0, 448.0], "e4m3", "floor").round(4).tolist()  # 957 -> 896; 448 is exact
    [-0.0637, 0.0]
    """
    f = get_format(fmt)
    a = np.asarray(amax, dtype=np.float32).reshape(-1)
    x = np.zeros((a.size, block_size), np.float32)
    x[:, 0] = a
    y = quantize_tensor(x, f, MXScaling(block_size=block_size, scale_rounding=scale_rounding)).dequantize()[:, 0]
    return (y.astype(np.float64) - a) / a


def amax_over_scale(x: np.ndarray, q: Any) -> np.ndarray:
    """Where each block's amax lands on the element grid: ``amax_block / scale`` (one value per block).

    >>> q = quantize_tensor(np.array([957.0] + [1.0] * 31, np.float32), "e4m3", MXScaling())
    >>> amax_over_scale(np.array([957.0] + [1.0] * 31, np.float32), q).tolist()  # above E4M3's max: clipped
    [478.5]
    """
    amax = np.asarray(block_reduce(np.asarray(x, np.float32), q.block, "amax"), np.float64)
    return (amax / np.asarray(q.scales, np.float64)).ravel()


def mx_rounding_comparison(x: np.ndarray, formats: Sequence["str | Format"] = MX_ELEMENT_FORMATS,
                           roundings: Sequence[str] = ("floor", "rceil"), block_size: int = 32) -> list[dict]:
    """One row per (format, rounding): the fraction of blocks whose max was clipped, the SQNR and the bits per element.

    A block is clipped when ``amax / X`` exceeds the element format's max, so its max saturates.

    >>> r = mx_rounding_comparison(np.linspace(1, 7, 64, dtype=np.float32).reshape(2, 32), ["fp4"])
    >>> [(d["rounding"], d["clipped_fraction"], d["bits_per_element"]) for d in r]
    [('floor', 1.0, 4.25), ('rceil', 0.0, 4.25)]
    """
    x = np.asarray(x, np.float32)
    rows = []
    for fmt in formats:
        f = get_format(fmt)
        for rounding in roundings:
            q = quantize_tensor(x, f, MXScaling(block_size=block_size, scale_rounding=rounding))
            rows.append({"format": f.name, "label": mx_name(f), "rounding": rounding,
                         "clipped_fraction": q.info["saturated_blocks"] / q.scales.size,
                         "sqnr_db": sqnr_db(x, q.dequantize()), "bits_per_element": q.bits_per_element})
    return rows
