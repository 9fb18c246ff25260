"""Current-scaling recipes with float scales: per tensor, per row/column, 2-D blocks, percentile calibration.

Each recipe is a frozen dataclass whose fields are its knobs. The scale of a block is
``amax * 2^margin / fmt.max`` (rounded up to float32, or to a power of two with ``pow2=True``),
stored as the dequantisation multiplier: ``x ≈ decode(codes) * scale``.

>>> import numpy as np
>>> import fp8lab as fl
>>> x = np.array([[1.0, 2.0], [30.0, 40.0]], np.float32)
>>> AxisScaling(axis=-1).quantize(x, "e4m3").scales.ravel().tolist()
[0.004464285913854837, 0.0892857164144516]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..codec.backend import is_torch, torch
from ..formats import Format
from .base import BlockStats, Recipe, ScaleSet
from .blocks import axis_block, check_block, normalize_block, whole_block
from ..validation import check_bool, check_int, check_real
from .scales import MARGIN_LIMIT, float_scales

__all__ = ["TensorScaling", "AxisScaling", "BlockScaling", "PercentileScaling", "percentile_abs"]


class _FloatScaled(Recipe):
    """Shared checks and ``compute_scales`` of the recipes whose scale is ``amax * 2^margin / fmt.max``."""

    margin: int = 0
    pow2: bool = False

    def _check_scale_fields(self) -> None:
        owner = type(self).__name__
        check_int(owner, "margin", self.margin, minimum=-MARGIN_LIMIT, maximum=MARGIN_LIMIT)
        check_bool(owner, "pow2", self.pow2)

    def compute_scales(self, amax: np.ndarray, fmt: Format) -> ScaleSet:
        """Float32 (or power-of-two, stored as UE8M0) scales from the per-block amax.

        >>> TensorScaling(pow2=True).compute_scales(np.array([[300.0]]), __import__("fp8lab").get_format("e4m3")).scale_format
        'e8m0'
        """
        scales = float_scales(amax, fmt.max, margin=self.margin, pow2=self.pow2)
        return ScaleSet(scales, "e8m0" if self.pow2 else "float32")


@dataclass(frozen=True)
class TensorScaling(_FloatScaled):
    """Current per-tensor scaling: one scale ``amax / fmt.max * 2^margin`` for the whole tensor.

    margin
        Headroom in powers of two (Transformer Engine's ``margin``): the scale is multiplied by
        ``2^margin``, so values up to ``2^margin`` times this tensor's amax would still fit.
    pow2
        Round the scale up to a power of two (stored as UE8M0), as older Transformer Engine
        releases and DeepSeek-V3.1 do; scaling by it is then exact.

    >>> import numpy as np
    >>> q = __import__("fp8lab").scaling.quantize_tensor(np.array([0.5, -896.0], np.float32), "e4m3", TensorScaling())
    >>> q.scales.tolist(), q.dequantize().tolist()
    ([2.0], [0.5, -896.0])
    """

    margin: int = 0
    pow2: bool = False

    def __post_init__(self) -> None:
        self._check_scale_fields()

    def block_for(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The whole tensor is one block.

        >>> TensorScaling().block_for((4, 8))
        (4, 8)
        """
        return whole_block(shape)


@dataclass(frozen=True)
class AxisScaling(_FloatScaled):
    """One scale per row or per column: the scale is shared along ``axis`` (amax reduced over it).

    axis
        The axis the scale is shared along. For activations ``(tokens, hidden)`` the default
        ``axis=-1`` gives one scale per token (scales ``(M, 1)``); for a weight ``(K, N)``,
        ``axis=0`` gives one scale per output column (scales ``(1, N)``). This is the layout
        ``torch._scaled_mm``'s row-wise mode takes.
    pow2
        Round each scale up to a power of two (UE8M0).
    margin
        Headroom in powers of two, as in :class:`TensorScaling`.

    >>> AxisScaling(axis=0).block_for((4, 8)), AxisScaling().block_for((2, 3, 8))
    ((4, 1), (1, 1, 8))
    """

    axis: int = -1
    pow2: bool = False
    margin: int = 0

    def __post_init__(self) -> None:
        check_int("AxisScaling", "axis", self.axis)
        self._check_scale_fields()

    def block_for(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """Block 1 everywhere except the whole extent along ``axis``.

        >>> AxisScaling(axis=1).block_for((3, 5))
        (1, 5)
        """
        return axis_block(shape, int(self.axis), owner="AxisScaling")


@dataclass(frozen=True)
class BlockScaling(_FloatScaled):
    """Fine-grained tiles as in DeepSeek-V3: one scale per ``block`` (1x128 activations, 128x128 weights).

    block
        Block shape for the trailing dimensions; leading dimensions get block 1. ``(1, 128)``
        gives DeepSeek-V3's activation tiles (scales ``(M, ceil(K/128))``), ``(128, 128)`` its
        weight blocks (scales ``(ceil(M/128), ceil(K/128))``). Shapes that do not divide are
        padded internally and cropped back.
    pow2
        Round each scale up to a power of two, the UE8M0 scale format of DeepSeek-V3.1 and of
        DeepGEMM on newer GPUs (Transformer Engine's ``Float8BlockScaling`` default too).
    margin
        Headroom in powers of two, as in :class:`TensorScaling`.

    >>> BlockScaling((128, 128)).block_for((256, 300)), BlockScaling().block_for((4, 2, 256))
    ((128, 128), (1, 1, 128))
    """

    block: tuple[int, ...] = (1, 128)
    pow2: bool = False
    margin: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "block", check_block(self.block, "BlockScaling.block"))
        self._check_scale_fields()

    def block_for(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """``block`` fitted to the tensor's number of dimensions.

        >>> BlockScaling((1, 32)).block_for((64,))
        (32,)
        """
        return normalize_block(self.block, shape)


def percentile_abs(x: Any, p: float) -> float:
    """The ``p``-th percentile of ``|x|`` over finite elements, linear interpolation as ``numpy.percentile``.

    Uses a partial sort (``np.partition`` / ``torch.kthvalue``), O(n), so it is fast on big tensors.

    >>> percentile_abs(np.array([1.0, -2.0, 3.0, -4.0, np.inf], np.float32), 50.0)
    2.5
    """
    if is_torch(x):
        a = x.detach().abs().reshape(-1)
        a = a[torch.isfinite(a)]
    else:
        a = np.abs(np.asarray(x, dtype=np.float64 if np.asarray(x).dtype == np.float64 else np.float32)).reshape(-1)
        a = a[np.isfinite(a)]
    n = int(a.shape[0])
    if n == 0:
        return 0.0
    pos = p / 100.0 * (n - 1)
    lo = int(np.floor(pos))
    hi = min(lo + 1, n - 1)
    if is_torch(a):
        vlo = float(torch.kthvalue(a, lo + 1).values)
        vhi = float(torch.kthvalue(a, hi + 1).values) if hi != lo else vlo
    else:
        part = np.partition(a, [lo, hi])
        vlo, vhi = float(part[lo]), float(part[hi])
    return vlo + (pos - lo) * (vhi - vlo)


@dataclass(frozen=True)
class PercentileScaling(_FloatScaled):
    """Per-tensor calibration that clips outliers: the scale fits the ``p``-th percentile of ``|x|``, not its max.

    Elements beyond the percentile saturate at ``±fmt.max * scale``; in exchange every other
    element gets more resolution. This is how post-training calibration (TensorRT's percentile
    calibrator, ``torch.ao`` histogram observers) trades clipping error against rounding error.

    p
        Percentile in (0, 100]; ``p=100`` is plain amax scaling. If the percentile is 0 while the
        tensor is not all zero, the amax is used instead (so not everything flushes to zero).
    pow2
        Round the scale up to a power of two (UE8M0).
    margin
        Headroom in powers of two, as in :class:`TensorScaling`.

    >>> import numpy as np
    >>> x = np.array([0.1] * 99 + [100.0], np.float32)
    >>> q = PercentileScaling(p=90).quantize(x, "e4m3")
    >>> q.info["overflow"], float(q.dequantize()[-1]) < 1
    (True, True)
    """

    p: float = 99.99
    pow2: bool = False
    margin: int = 0

    def __post_init__(self) -> None:
        check_real("PercentileScaling", "p", self.p, minimum=0, maximum=100)
        if not self.p > 0:
            raise ValueError(f"PercentileScaling.p is a percentile in (0, 100], got {self.p!r}")
        self._check_scale_fields()

    def block_for(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The whole tensor is one block.

        >>> PercentileScaling().block_for((3, 4))
        (3, 4)
        """
        return whole_block(shape)

    def statistic(self, x: Any, block: tuple[int, ...], stats: BlockStats) -> np.ndarray:
        """The ``p``-th percentile of ``|x|`` (falling back to amax if it is 0), shaped like the scales.

        >>> PercentileScaling(p=50).statistic(np.array([1.0, 2.0, 3.0], np.float32), (3,), None).tolist()
        [2.0]
        """
        q = percentile_abs(x, float(self.p))
        amax = float(stats.amax.max(initial=0.0)) if stats is not None else 0.0
        if q == 0.0:
            q = amax
        shape = np.shape(stats.amax) if stats is not None else (1,) * len(block)
        return np.full(shape, q, dtype=np.float64)
