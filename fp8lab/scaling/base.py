"""The shared quantisation pipeline every recipe runs: pad, amax per block, scales, saturating cast, crop.

A recipe only says which block a tensor is cut into (``block_for``) and how a block's amax
becomes a scale (``compute_scales``); :class:`Recipe.quantize` does the rest. Non-finite input is
handled once, here:

- amax is taken over the *finite* elements, so one inf or NaN never spoils the scale of other
  elements or blocks;
- a NaN element stays NaN where the element format has a NaN (E4M3, E5M2); ±inf saturate to ±max;
- where the element format cannot hold NaN (FP6, FP4, INT), a block holding NaN gets a NaN scale,
  so the whole block dequantises to NaN rather than silently becoming numbers;
- MX and NVFP4 follow the OCP/torchao rule instead: any non-finite value makes its block's scale NaN;
- every case is counted in ``info["nonfinite_blocks"]`` (mask in ``info["nonfinite_mask"]``).

A value within a rounding step of float32's largest number may round up to a code whose
dequantised value ``decode(code) * scale`` is beyond float32's range (inf): the codes and scales
are right, the float32 product cannot hold the result.

``info`` also reports ``amax`` (finite amax of the tensor), ``saturated_blocks`` (blocks whose
amax divided by their scale exceeded the format's max, so the cast clamped them) and
``overflow`` (any such block). ``info`` values live on the host (Python numbers, numpy arrays)
even for tensors on a GPU.

>>> import numpy as np
>>> from fp8lab.scaling.recipes import TensorScaling
>>> q = TensorScaling().quantize(np.array([1.0, np.nan, 2.0], np.float32), get_format("e4m3"))
>>> q.dequantize().tolist(), q.info["nonfinite_blocks"]
([1.0, nan, 2.0], 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..codec import encode
from ..codec.backend import is_torch, torch
from ..formats import FloatFormat, Format, IntFormat
from ..qtensor import QTensor, QuantInfo
from ..registry import get_format
from .blocks import apply_scales, block_reduce, like, num_blocks, to_numpy

__all__ = ["Recipe", "ScaleSet", "BlockStats", "block_stats", "finalize", "finite_values"]


@dataclass
class BlockStats:
    """Per-block statistics of a tensor on the host: finite amax and where non-finite values sit.

    >>> BlockStats(np.array([2.0]), np.array([False]), np.array([False])).any_nonfinite
    False
    """

    amax: np.ndarray  #: float64 amax of the finite elements of each block
    nonfinite: np.ndarray  #: bool, the block holds inf or NaN
    has_nan: np.ndarray  #: bool, the block holds NaN

    @property
    def any_nonfinite(self) -> bool:
        """Whether any block holds a non-finite value.

        >>> BlockStats(np.zeros(1), np.array([True]), np.array([True])).any_nonfinite
        True
        """
        return bool(self.nonfinite.any())


@dataclass
class ScaleSet:
    """What ``compute_scales`` returns: float32 blockwise scales and how they are stored.

    >>> ScaleSet(np.ones((1, 1), np.float32)).scale_format
    'float32'
    """

    scales: np.ndarray
    scale_format: str = "float32"
    tensor_scale: float | None = None
    zero_point: np.ndarray | None = None
    info: dict[str, Any] = field(default_factory=dict)
    saturated: np.ndarray | None = None  #: blocks the cast clamps, when the recipe knows better than amax/scale > max


def finite_values(x: Any) -> Any:
    """``x`` with inf and NaN replaced by 0 (numpy or torch).

    >>> finite_values(np.array([1.0, np.inf, np.nan])).tolist()
    [1.0, 0.0, 0.0]
    """
    if is_torch(x):
        return torch.where(torch.isfinite(x), x, torch.zeros((), dtype=x.dtype, device=x.device))
    return np.where(np.isfinite(x), x, np.float32(0))


def _isnan(x: Any) -> Any:
    if is_torch(x):
        return torch.isnan(x).to(torch.float32)
    return np.isnan(x).astype(np.float32)


def block_stats(x: Any, block: tuple[int, ...]) -> BlockStats:
    """Finite amax per block of a float32 array/tensor, with masks of blocks holding inf/NaN.

    >>> s = block_stats(np.array([1.0, -np.inf, 3.0, 0.5], np.float32), (2,))
    >>> s.amax.tolist(), s.nonfinite.tolist()
    ([1.0, 3.0], [True, False])
    """
    nb = num_blocks(tuple(x.shape), block)
    if int(np.prod(x.shape)) == 0:
        empty = np.zeros(nb, dtype=bool)
        return BlockStats(np.zeros(nb), empty, empty)
    amax = to_numpy(block_reduce(x, block, "amax")).astype(np.float64)
    bad = ~np.isfinite(amax)
    if not bad.any():
        return BlockStats(amax, bad, bad)
    amax = to_numpy(block_reduce(finite_values(x), block, "amax")).astype(np.float64)
    has_nan = to_numpy(block_reduce(_isnan(x), block, "max")) > 0
    return BlockStats(amax, bad, has_nan)


def saturating_blocks(amax: np.ndarray, scales: np.ndarray, fmt_max: float, *, checked: bool = False) -> np.ndarray:
    """Which blocks saturate: ``amax / scale > max`` in float64 (a non-finite or non-positive scale saturates none).

    ``checked=True`` says the caller has checked every scale finite and positive (the fast paths
    do): then the ratio is taken directly.

    The one statement of the rule in Python, for the general and the fast paths (TWIN RULE: the fused C
    cast, ``fp8lab_band_encode`` in ``codec/_kernels.c``, states it again; tests/test_scaling_fast.py pins
    its saturation counts to this one).

    >>> saturating_blocks(np.array([448.0, 449.0, 5.0]), np.array([1.0, 1.0, np.nan], np.float32), 448.0).tolist()
    [False, True, False]
    """
    if checked:
        return (amax / scales) > fmt_max
    finite = np.isfinite(scales) & (scales > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(finite, amax / np.where(finite, scales, 1.0), 0.0)
    return ratio > fmt_max


def finalize(x: Any, fmt: Format, recipe: "Recipe", block: tuple[int, ...], stats: BlockStats, ss: ScaleSet) -> QTensor:
    """Apply the non-finite policy, cast ``x / scales`` with saturation and build the QTensor.

    >>> from fp8lab.scaling.recipes import TensorScaling
    >>> x = np.array([3.0, -6.0], np.float32)
    >>> finalize(x, get_format("e4m3"), TensorScaling(), (2,), block_stats(x, (2,)), ScaleSet(np.array([2.0], np.float32))).dequantize().tolist()
    [3.0, -6.0]
    """
    scales = np.array(ss.scales, dtype=np.float32)
    if stats.any_nonfinite:
        if recipe.nonfinite_scale_nan:  # MX / NVFP4: the scale format's NaN marks the block
            scales[stats.nonfinite] = np.nan
            if "scale_codes" in ss.info:
                ss.info["scale_codes"][stats.nonfinite] = get_format(ss.scale_format).nan_code
        elif not fmt.has_nan:
            scales[stats.has_nan] = np.nan
    saturated = saturating_blocks(stats.amax, scales, fmt.max) if ss.saturated is None else ss.saturated
    s_x = like(scales, x)
    zp_x = like(np.asarray(ss.zero_point, np.float32), x) if ss.zero_point is not None else None
    codes = encode(apply_scales(x, block, s_x, zp_x), fmt, saturate=True)
    info = QuantInfo.of(float(stats.amax.max(initial=0.0)), int(stats.nonfinite.sum()), int(saturated.sum()),
                        nonfinite_mask=stats.nonfinite if stats.any_nonfinite else None, **ss.info)
    dtype = "float64" if str(x.dtype).removeprefix("torch.") == "float64" else "float32"
    return QTensor(codes, s_x, fmt, scaling=recipe, block=block, scale_format=ss.scale_format,
                   tensor_scale=ss.tensor_scale, zero_point=zp_x, info=info, dtype=dtype)


class Recipe:
    """Base class of the scaling recipes: a block shape for each tensor shape, and amax -> scales.

    Subclasses are frozen dataclasses; they implement :meth:`block_for` and
    :meth:`compute_scales` and may override :meth:`check_format`, :meth:`statistic` or
    :meth:`quantize`.

    >>> from fp8lab.scaling.recipes import BlockScaling
    >>> BlockScaling().block_for((4, 256)), BlockScaling().default_format.name
    ((1, 128), 'float8_e4m3fn')
    """

    #: name of the format used when ``quantize_tensor`` is given none (see :attr:`default_format`)
    default_format_name: ClassVar[str] = "e4m3"
    #: a block holding inf or NaN gets a NaN scale (MX, NVFP4) instead of the general policy
    nonfinite_scale_nan: ClassVar[bool] = False
    #: the recipe needs state between calls (an amax history): ``new_state()`` makes it, ``quantize(..., state=)`` takes it
    stateful: ClassVar[bool] = False

    def new_state(self) -> Any:
        """The state one tensor quantized with this recipe keeps between calls (None: current scaling keeps none).

        >>> from fp8lab.scaling.recipes import TensorScaling
        >>> TensorScaling().new_state() is None
        True
        """
        return None

    @property
    def default_format(self) -> Format:
        """The element format ``quantize_tensor`` uses when it is given none.

        >>> from fp8lab.scaling.nvfp4 import NVFP4Scaling
        >>> NVFP4Scaling().default_format.name
        'float4_e2m1fn'
        """
        return get_format(self.default_format_name)

    def block_for(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The block (one entry per dimension) this recipe cuts a tensor of ``shape`` into.

        >>> from fp8lab.scaling.recipes import AxisScaling
        >>> AxisScaling().block_for((2, 8))
        (1, 8)
        """
        raise NotImplementedError

    def compute_scales(self, amax: np.ndarray, fmt: Format) -> ScaleSet:
        """Blockwise float32 scales (shape ``num_blocks``) from the blocks' finite amax (float64).

        >>> from fp8lab.scaling.recipes import TensorScaling
        >>> TensorScaling().compute_scales(np.array([[896.0]]), get_format("e4m3")).scales.tolist()
        [[2.0]]
        """
        raise NotImplementedError

    def check_format(self, fmt: Format) -> None:
        """Raise a clear error if this recipe cannot use the element format ``fmt``.

        >>> from fp8lab.scaling.recipes import TensorScaling
        >>> TensorScaling().check_format(get_format("uint8"))
        Traceback (most recent call last):
        ...
        ValueError: TensorScaling scales symmetrically, so it needs a float or signed integer format, got uint8; use IntScaling(symmetric=False) for unsigned integers
        """
        if isinstance(fmt, IntFormat) and not fmt.signed:
            raise ValueError(f"{type(self).__name__} scales symmetrically, so it needs a float or signed integer format, "
                             f"got {fmt.name}; use IntScaling(symmetric=False) for unsigned integers")
        if isinstance(fmt, FloatFormat) and not fmt.signed:
            raise ValueError(f"{type(self).__name__} needs a signed element format, got {fmt.name}")

    def statistic(self, x: Any, block: tuple[int, ...], stats: BlockStats) -> np.ndarray:
        """The per-block number the scale is fitted to: the finite amax (percentile calibration overrides it).

        >>> from fp8lab.scaling.recipes import TensorScaling
        >>> TensorScaling().statistic(None, (2,), BlockStats(np.array([3.0]), np.array([False]), np.array([False]))).tolist()
        [3.0]
        """
        return stats.amax

    def quantize(self, x: Any, fmt: "Format | str") -> QTensor:
        """Quantize a float32 array/tensor with at least one dimension (``quantize_tensor`` does the checks).

        >>> from fp8lab.scaling.recipes import TensorScaling
        >>> TensorScaling().quantize(np.array([1.0, -448.0], np.float32), "e4m3").scales.tolist()
        [1.0]
        """
        fmt = get_format(fmt)
        block = self.block_for(tuple(x.shape))
        stats = block_stats(x, block)
        ss = self.compute_scales(self.statistic(x, block, stats), fmt)
        return finalize(x, fmt, self, block, stats, ss)
