"""Integer quantization (INT8, INT4): symmetric ``amax / qmax`` scales, or asymmetric with a zero point.

Symmetric: ``scale = amax / qmax`` (127 for INT8, 7 for INT4), ``code = round(x / scale)``.
Asymmetric (min/max, as PyTorch's affine observers): the range ``[min(x, 0), max(x, 0)]`` is
mapped onto all ``2^bits`` integers, ``scale = (hi - lo) / (qmax - qmin)``, an integer zero point
``zp = qmin - round(lo / scale)`` puts 0.0 exactly on an integer, and
``x ≈ (code - zp) * scale``. Zero points are blockwise like scales, in code units
(``QTensor.zero_point``, float32 holding integers).

``axis`` is, as in :class:`AxisScaling`, the axis the scale is *shared along*: per output
channel of a PyTorch ``Linear`` weight ``(out, in)`` (PyTorch's ``ch_axis=0``) is ``axis=-1``
here. ``group_size`` splits that axis into groups, as GPTQ/AWQ do along the input dimension.

>>> import numpy as np
>>> q = IntScaling(bits=8, symmetric=False).quantize(np.array([0.0, 1.0, 2.55], np.float32), "uint8")
>>> q.scales.tolist(), q.zero_point.tolist(), q.dequantize().tolist()
([0.010000000707805157], [0.0], [0.0, 1.0000001192092896, 2.5500001907348633])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..formats import Format, IntFormat
from ..qtensor import QTensor
from ..registry import get_format
from .base import Recipe, ScaleSet, finite_values, block_stats, finalize
from .blocks import axis_block, block_reduce, to_numpy, whole_block
from ..validation import check_bool, check_int
from .scales import F32_TINY, check_scale_range, float_scales, pow2_ceil, round_up_float32

__all__ = ["IntScaling"]


@dataclass(frozen=True)
class IntScaling(Recipe):
    """INT8/INT4 quantization, symmetric or asymmetric (zero point), per tensor, per channel or per group.

    bits
        Integer width; the format argument must be an integer format of this width (``int8``,
        ``int4``, or ``uint8``/``uint4`` for asymmetric). With no format, ``int{bits}`` is used
        (``uint{bits}`` when asymmetric).
    symmetric
        ``True``: scale ``amax / qmax``, no zero point (needs a signed format).
        ``False``: min/max scale with an integer zero point.
    axis
        ``None``: one scale for the tensor. An int: the axis the scale is shared along (amax
        reduced over it), as in :class:`AxisScaling`.
    group_size
        Split the scaled axis (``axis``, or the last one when ``axis`` is None) into groups of this
        many elements, each with its own scale (GPTQ/AWQ groups of 128 along K).
    pow2
        Round each scale up to a power of two.

    >>> IntScaling(group_size=128).block_for((4, 512)), IntScaling(axis=-1).block_for((4, 512))
    ((1, 128), (1, 512))
    """

    bits: int = 8
    symmetric: bool = True
    axis: int | None = None
    group_size: int | None = None
    pow2: bool = False

    def __post_init__(self) -> None:
        check_int("IntScaling", "bits", self.bits, minimum=2, maximum=16)
        check_bool("IntScaling", "symmetric", self.symmetric)
        check_bool("IntScaling", "pow2", self.pow2)
        check_int("IntScaling", "axis", self.axis, optional=True)
        check_int("IntScaling", "group_size", self.group_size, minimum=1, optional=True)

    @property
    def default_format(self) -> Format:
        """``int{bits}`` (symmetric) or ``uint{bits}`` (asymmetric).

        >>> IntScaling(bits=4, symmetric=False).default_format.name
        'uint4'
        """
        name = f"{'' if self.symmetric else 'u'}int{self.bits}"
        try:
            return get_format(name)
        except ValueError:
            return IntFormat(name, int(self.bits), signed=self.symmetric)

    def check_format(self, fmt: Format) -> None:
        """The format must be an integer format with ``bits`` bits (signed when symmetric).

        >>> IntScaling().check_format(__import__("fp8lab").get_format("e4m3"))
        Traceback (most recent call last):
        ...
        ValueError: IntScaling needs an integer format such as int8 or int4, got float8_e4m3fn; use TensorScaling, BlockScaling or MXScaling for float formats
        """
        if not isinstance(fmt, IntFormat):
            raise ValueError(f"IntScaling needs an integer format such as int8 or int4, got {fmt.name}; "
                             "use TensorScaling, BlockScaling or MXScaling for float formats")
        if fmt.bits != self.bits:
            raise ValueError(f"IntScaling(bits={self.bits}) does not match the {fmt.bits}-bit format {fmt.name}")
        if self.symmetric and not fmt.signed:
            raise ValueError(f"symmetric IntScaling needs a signed format (int{self.bits}), got {fmt.name}; "
                             "use symmetric=False for unsigned integers")

    def block_for(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """Whole tensor, whole ``axis``, or ``group_size`` along it; 1 on every other axis.

        >>> IntScaling(axis=0, group_size=2).block_for((6, 3))
        (2, 1)
        """
        if self.axis is None and self.group_size is None:
            return whole_block(shape)
        axis = -1 if self.axis is None else int(self.axis)
        return axis_block(shape, axis, self.group_size, owner="IntScaling")

    def compute_scales(self, amax: np.ndarray, fmt: Format) -> ScaleSet:
        """Symmetric scales ``amax / qmax`` (float32, rounded up).

        >>> IntScaling().compute_scales(np.array([127.0]), __import__("fp8lab").get_format("int8")).scales.tolist()
        [1.0]
        """
        return ScaleSet(float_scales(amax, fmt.max, pow2=self.pow2))

    def quantize(self, x: Any, fmt: "Format | str") -> QTensor:
        """Quantize a float32 array/tensor; asymmetric recipes fit min/max and a zero point.

        >>> IntScaling(bits=4).quantize(np.array([-7.0, 3.0], np.float32), "int4").dequantize().tolist()
        [-7.0, 3.0]
        """
        fmt = get_format(fmt)
        if self.symmetric:
            return super().quantize(x, fmt)
        block = self.block_for(tuple(x.shape))
        stats = block_stats(x, block)
        if int(np.prod(x.shape)) == 0:
            lo = hi = stats.amax
        else:
            xf = finite_values(x) if stats.any_nonfinite else x
            lo = np.minimum(to_numpy(block_reduce(xf, block, "min")).astype(np.float64), 0.0)
            hi = np.maximum(to_numpy(block_reduce(xf, block, "max")).astype(np.float64), 0.0)
        qmin, qmax = fmt.min, fmt.max
        span = hi - lo
        empty = ~(span > 0)
        s = np.where(empty, 1.0, span) / (qmax - qmin)
        check_scale_range(s, f"the range [{float(lo.min(initial=0.0)):.4g}, {float(hi.max(initial=0.0)):.4g}] over {fmt.name}")
        s = pow2_ceil(s) if self.pow2 else np.maximum(s, F32_TINY)
        scales = round_up_float32(s)
        scales[empty] = 1.0
        s64 = scales.astype(np.float64)
        zp = np.clip(qmin - np.rint(lo / s64), qmin, qmax)
        saturated = (lo / s64 + zp < qmin - 0.5) | (hi / s64 + zp > qmax + 0.5)
        ss = ScaleSet(scales, zero_point=zp.astype(np.float32), saturated=saturated)
        return finalize(x, fmt, self, block, stats, ss)
