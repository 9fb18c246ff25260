"""NVFP4: E2M1 elements in blocks of 16, an E4M3 block scale and an FP32 tensor scale (two-level scaling).

The tensor scale ``s_global = amax / (448 * 6)`` puts the largest block scale at E4M3's max, so
the 16-element block scales ``amax_block / 6 / s_global``, cast to E4M3 (round to nearest,
saturating, kept at or above E4M3's smallest normal as torchao does), use E4M3's whole range. An
element is stored as ``x / (e4m3_scale * s_global)`` cast to E2M1 with saturation, so its
effective dequantisation multiplier is ``decode(e4m3_code) * s_global`` (what ``QTensor.scales``
holds). Arithmetic is float32, step by step as in torchao's ``nvfp4_tensor.py``. Storage: 4 bits
per element + 8 bits per 16 elements + 32 bits per tensor = 4.5 bits per element.

The E4M3 block scale rounds to nearest, so it may land just below ``amax_block / 6``: the block's
largest element then saturates at 6 (a small clip, reported in ``info["saturated_blocks"]``).

>>> import numpy as np
>>> q = NVFP4Scaling().quantize(np.linspace(-6, 6, 32, dtype=np.float32), "fp4")
>>> q.tensor_scale, q.scales.ravel().tolist(), q.bits_per_element  # 4 + 8/16 + 32/32 bits
(0.0022321429569274187, [1.0, 1.0], 5.5)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..codec import decode, encode
from ..formats import FloatFormat, Format
from ..registry import get_format
from .base import Recipe, ScaleSet
from .blocks import axis_block
from ..validation import check_int
from .scales import F32_TINY

__all__ = ["NVFP4Scaling"]


@dataclass(frozen=True)
class NVFP4Scaling(Recipe):
    """NVIDIA's NVFP4: blocks of 16 E2M1 values with an E4M3 scale, times one FP32 tensor scale.

    block_size
        Elements per block along ``axis``; 16 in NVFP4 (Transformer Engine also uses 16x16
        weight tiles, which ``BlockScaling``-style 2-D blocks do not cover here).
    axis
        The axis blocks run along (``-1``; ``0`` for a ``(K, N)`` right operand).

    >>> import fp8lab as fl
    >>> q = fl.scaling.quantize_tensor(np.arange(16, dtype=np.float32), None, NVFP4Scaling())
    >>> q.format.name, q.scale_format.name, q.scales.shape
    ('float4_e2m1fn', 'float8_e4m3fn', (1,))
    """

    block_size: int = 16
    axis: int = -1

    default_format_name = "fp4"
    nonfinite_scale_nan = True

    def __post_init__(self) -> None:
        check_int("NVFP4Scaling", "block_size", self.block_size, minimum=1)
        check_int("NVFP4Scaling", "axis", self.axis)

    def check_format(self, fmt: Format) -> None:
        """NVFP4 elements are E2M1 (``fp4``); another signed float format also works, for experiments.

        >>> NVFP4Scaling().check_format(__import__("fp8lab").get_format("int4"))
        Traceback (most recent call last):
        ...
        ValueError: NVFP4Scaling needs a signed floating-point element format (fp4 = E2M1 in NVFP4), got int4
        """
        if not isinstance(fmt, FloatFormat) or not fmt.signed:
            raise ValueError(f"NVFP4Scaling needs a signed floating-point element format (fp4 = E2M1 in NVFP4), got {fmt.name}")

    def block_for(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """``block_size`` along ``axis``, 1 elsewhere.

        >>> NVFP4Scaling().block_for((2, 64))
        (1, 16)
        """
        return axis_block(shape, int(self.axis), int(self.block_size), owner="NVFP4Scaling")

    def compute_scales(self, amax: np.ndarray, fmt: Format) -> ScaleSet:
        """Effective float32 scales ``decode(e4m3_block_scale) * s_global``; E4M3 codes in ``info["scale_codes"]``.

        >>> s = NVFP4Scaling().compute_scales(np.array([2688.0, 6.0]), __import__("fp8lab").get_format("fp4"))
        >>> s.tensor_scale, s.scales.tolist()
        (1.0, [448.0, 1.0])
        """
        e4m3 = get_format("e4m3")
        amax = np.asarray(amax, dtype=np.float64)
        if np.any(np.isfinite(amax) & (amax > np.finfo(np.float32).max)):
            raise ValueError(f"NVFP4 computes its scales in float32 (as torchao does), and amax "
                             f"{float(amax[np.isfinite(amax)].max()):.4g} is beyond float32's range; scale the input down first")
        amax32 = amax.astype(np.float32)
        tensor_amax = np.float32(amax32.max(initial=0.0))
        if tensor_amax > 0:
            s_global = np.float32(max(tensor_amax / np.float32(e4m3.max * fmt.max), np.float32(F32_TINY)))
        else:
            s_global = np.float32(1.0)
        block_scale = (amax32 / np.float32(fmt.max)) / s_global
        block_scale = np.clip(block_scale, np.float32(e4m3.min_normal), np.float32(e4m3.max))
        codes = np.asarray(encode(block_scale, e4m3, saturate=True))
        scales = (np.asarray(decode(codes, e4m3), dtype=np.float32) * s_global).astype(np.float32)
        return ScaleSet(scales, "e4m3", tensor_scale=float(s_global),
                        info={"scale_codes": codes.astype(np.uint8), "tensor_scale": float(s_global)})
