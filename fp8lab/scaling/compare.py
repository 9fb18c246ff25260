"""``compare_recipes``: every scaling recipe on one tensor, with its cost in time and bytes and its error.

The rows are plain dicts, ready for a table (``comparison_table``) or ``pandas.DataFrame(rows)``;
``bench/scaling.py`` and the scaling notebook both print them.

>>> import numpy as np
>>> rows = compare_recipes(llm_activations((64, 256)), [("1x128", "e4m3", lambda: BlockScaling((1, 128)))])
>>> rows[0]["recipe"], rows[0]["bits_per_element"], rows[0]["sqnr_db"] > 25
('1x128', 8.25, True)
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from ..codec import quantize
from ..registry import get_format
from ..tables import format_table
from .data import llm_activations
from .delayed import DelayedScaling
from .integer import IntScaling
from .metrics import error_stats
from .mx import MXScaling
from .nvfp4 import NVFP4Scaling
from .quantize import quantize_tensor
from .recipes import AxisScaling, BlockScaling, PercentileScaling, TensorScaling

__all__ = ["compare_recipes", "comparison_table", "DEFAULT_RECIPES", "COLUMNS"]

RecipeSpec = tuple[str, str, Callable[[], Any]]

#: (label, element format, recipe factory) for every recipe the course compares; a factory
#: (not an object) so that each run gets a fresh DelayedScaling history. ``None`` = plain cast.
DEFAULT_RECIPES: list[RecipeSpec] = [
    ("cast, no scale", "e4m3", lambda: None),
    ("tensor", "e4m3", TensorScaling),
    ("tensor pow2", "e4m3", lambda: TensorScaling(pow2=True)),
    ("delayed (1 step old)", "e4m3", DelayedScaling),
    ("percentile 99.99", "e4m3", PercentileScaling),
    ("per-token", "e4m3", lambda: AxisScaling(axis=-1)),
    ("per-channel", "e4m3", lambda: AxisScaling(axis=0)),
    ("1x128", "e4m3", lambda: BlockScaling((1, 128))),
    ("128x128", "e4m3", lambda: BlockScaling((128, 128))),
    ("1x128 UE8M0", "e4m3", lambda: BlockScaling((1, 128), pow2=True)),
    ("tensor", "e5m2", TensorScaling),
    ("MXFP8 floor", "e4m3", MXScaling),
    ("MXFP8 rceil", "e4m3", lambda: MXScaling(scale_rounding="rceil")),
    ("MXFP8 floor", "e5m2", MXScaling),
    ("MXFP6 floor", "e2m3", MXScaling),
    ("MXFP6 floor", "e3m2", MXScaling),
    ("MXFP4 floor", "fp4", MXScaling),
    ("MXFP4 rceil", "fp4", lambda: MXScaling(scale_rounding="rceil")),
    ("NVFP4", "fp4", NVFP4Scaling),
    ("INT8 tensor", "int8", IntScaling),
    ("INT8 per-token", "int8", lambda: IntScaling(axis=-1)),
    ("INT8 per-channel", "int8", lambda: IntScaling(axis=0)),
    ("INT8 asym per-token", "uint8", lambda: IntScaling(symmetric=False, axis=-1)),
    ("INT4 g128", "int4", lambda: IntScaling(bits=4, group_size=128)),
]

#: Columns of a row in table order: key, header, number format ("" for text, left-aligned).
COLUMNS: list[tuple[str, str, str]] = [
    ("recipe", "recipe", ""), ("format", "format", ""), ("bits_per_element", "bits/el", ".3f"),
    ("melem_per_s", "Melem/s", ".1f"), ("ratio_to_cast", "x cast", ".2f"), ("mean_rel_err", "mean rel", ".2e"),
    ("max_rel_err", "max rel", ".2e"), ("sqnr_db", "SQNR dB", ".2f"), ("saturated_blocks", "clipped", "d"),
]


def _label(fmt: Any) -> str:
    return fmt if isinstance(fmt, str) else get_format(fmt).name


def _timed(fn: Callable[[], Any], repeats: int) -> tuple[Any, float]:
    best, out = float("inf"), None
    for _ in range(max(int(repeats), 1)):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def compare_recipes(x: Any = None, recipes: "Sequence[RecipeSpec] | None" = None, *, repeats: int = 3,
                    progress: "Callable[[str], None] | None" = None) -> list[dict[str, Any]]:
    """Quantize ``x`` with each recipe and return one row per recipe: bytes, speed, errors.

    ``x`` defaults to ``llm_activations((1024, 1024))``. Each row has the label, format, bits per
    element (codes + scales), the best time of ``repeats`` calls of ``quantize_tensor``,
    throughput in million elements per second, the ratio of that time to a plain saturating
    cast ``fl.quantize(x, fmt, saturate=True)`` of the same data (measured in the same run),
    ``error_stats`` of the dequantized tensor and how many blocks clipped. A DelayedScaling
    recipe is first run once on ``x`` (the history of "the previous step"), then timed.

    >>> rows = compare_recipes(llm_activations((32, 128)), [("t", "e4m3", TensorScaling)])
    >>> sorted(rows[0])[:4]
    ['bits_per_element', 'format', 'max_abs_err', 'max_rel_err']
    """
    x = llm_activations((1024, 1024)) if x is None else x
    specs = DEFAULT_RECIPES if recipes is None else list(recipes)
    n = int(x.numel()) if hasattr(x, "numel") and callable(x.numel) else int(x.size)
    cast_time: dict[str, float] = {}
    rows = []
    for i, (label, fmt, factory) in enumerate(specs):
        key = _label(fmt)
        if key not in cast_time:
            _, cast_time[key] = _timed(lambda: quantize(x, fmt, saturate=True), repeats)
        recipe = factory()
        if recipe is None:
            y, t = _timed(lambda: quantize(x, fmt, saturate=True), repeats)
            bits, saturated = float(get_format(fmt).bits), 0
        else:
            if isinstance(recipe, DelayedScaling):
                quantize_tensor(x, fmt, recipe)
            q, t = _timed(lambda: quantize_tensor(x, fmt, recipe), repeats)
            y, bits, saturated = q.dequantize(), q.bits_per_element, q.info["saturated_blocks"]
        row = {"recipe": label, "format": key, "scaling": repr(recipe) if recipe is not None else "plain cast",
               "bits_per_element": bits, "seconds": t, "melem_per_s": n / t / 1e6 if t > 0 else float("inf"),
               "ratio_to_cast": t / cast_time[key] if cast_time[key] > 0 else float("nan"),
               "saturated_blocks": int(saturated)}
        row.update(error_stats(x, y))
        rows.append(row)
        if progress is not None:
            progress(f"[{i + 1}/{len(specs)}] {label} {key}: {t * 1e3:.0f} ms, SQNR {row['sqnr_db']:.1f} dB")
    return rows


def comparison_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a fixed-width text table (the bench's output).

    >>> print(comparison_table([{"recipe": "r", "format": "e4m3", "bits_per_element": 8.0, "melem_per_s": 1.0,
    ...     "ratio_to_cast": 1.0, "mean_rel_err": 0.01, "max_rel_err": 1.0, "sqnr_db": 30.0, "saturated_blocks": 0}]).splitlines()[2])
    r       e4m3      8.000      1.0    1.00  1.00e-02  1.00e+00    30.00        0
    """
    align = "".join("r" if spec else "l" for _, _, spec in COLUMNS)
    return format_table([h for _, h, _ in COLUMNS], [[r[k] for k, _, _ in COLUMNS] for r in rows],
                        align=align, specs=[spec for _, _, spec in COLUMNS])
