"""OCP Microscaling (MX v1.0): blocks of 32 elements sharing one power-of-two scale stored as E8M0.

The spec's shared scale is ``X = 2^(floor(log2(amax)) - emax_elem)``, where ``emax_elem`` is the
exponent of the element format's largest normal (8 for E4M3, 15 for E5M2, 2 for E2M3, 4 for
E3M2, 2 for E2M1; computed here as ``floor(log2(fmt.max))``). Elements are then cast with
saturation. Because ``amax / X`` can reach almost ``2^(emax_elem+1)``, above the element's max
(448 for E4M3, 6 for E2M1), the floor rule clips the largest elements of some blocks
(microxcaling issue #4: 957 becomes 896 in MXFP8 E4M3). Rounding the scale up avoids it:

- ``"floor"``: the OCP v1.0 rule above.
- ``"ceil"``: the smallest power of two with ``amax / X <= fmt.max``, i.e.
  ``X = 2^ceil(log2(amax / fmt.max))``, computed exactly.
- ``"rceil"``: the same rounding up as done by torchao's RCEIL, cuBLAS and Transformer Engine's
  MXFP8 recipe: ``descale = amax * (1/fmt.max)`` in float32 arithmetic, rounded up to E8M0 by its
  bits. For the five MX element formats it equals ``"ceil"`` whenever that descale is a normal
  float32 (a test sweeps every float32 amax in one binade); it differs only at the float32
  subnormal edge (``amax / fmt.max < 2^-126``), where the product has lost bits.
- ``"even"``: torchao's EVEN: ``amax`` rounded to the element's mantissa width, then floor.

(torchao's own ``CEIL`` mode is different again: it rounds ``amax`` up to a power of two and then
subtracts ``emax_elem``, so the block max lands at most at ``2^emax_elem``, not at ``fmt.max``.)

A block of zeros gets the smallest E8M0 scale 2^-127 (as in torchao); a block holding inf or NaN
gets the NaN scale (code 0xFF), so it dequantises to NaN, confined to that block.

>>> import numpy as np
>>> q = MXScaling().quantize(np.array([957.0] + [1.0] * 31, np.float32), "e4m3")
>>> q.scales.tolist(), float(q.dequantize()[0]), q.info["overflow"], q.bits_per_element
([2.0], 896.0, True, 8.25)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..codec import encode
from ..formats import FloatFormat, Format
from ..registry import get_format
from .base import Recipe, ScaleSet
from .blocks import axis_block
from ..validation import check_int
from .scales import E8M0_MAX_EXP, E8M0_MIN_EXP

_F32_MAX = float(np.finfo(np.float32).max)
_E8M0_BIAS = get_format("e8m0").bias
#: 2^k as float32 for each E8M0 code k + bias (k from -127 to 127): the biased exponent k + 127 in place,
#: or for 2^-127 its subnormal pattern
_POW2_SCALES = np.array([0x00400000 if k == E8M0_MIN_EXP else (k + 127) << 23
                         for k in range(E8M0_MIN_EXP, E8M0_MAX_EXP + 1)], dtype=np.uint32).view(np.float32)

__all__ = ["MXScaling", "mx_scale_exponents", "emax_elem", "SCALE_ROUNDINGS"]

#: The MX scale rounding rules, with what each one does.
SCALE_ROUNDINGS = {
    "floor": "OCP MX v1.0: X = 2^(floor(log2 amax) - emax_elem); may clip the block max",
    "ceil": "X = 2^ceil(log2(amax / fmt.max)), exact: the tightest scale that never clips",
    "rceil": "torchao RCEIL / cuBLAS / TE MXFP8: float32 amax * (1/fmt.max) rounded up to E8M0",
    "even": "torchao EVEN: amax rounded to the element's mantissa width, then the floor rule",
}


@functools.lru_cache(maxsize=256)
def emax_elem(fmt: Format) -> int:
    """Exponent of the element format's largest normal, ``floor(log2(fmt.max))`` (exact).

    >>> [emax_elem(__import__("fp8lab").get_format(n)) for n in ("e4m3", "e5m2", "e2m3", "e3m2", "e2m1")]
    [8, 15, 2, 4, 2]
    """
    return int(np.frexp(float(fmt.max))[1]) - 1


def mx_scale_exponents(amax: np.ndarray, fmt: Format, scale_rounding: str = "floor") -> np.ndarray:
    """The shared-scale exponents ``k`` (``X = 2^k``, clamped to E8M0's -127..127) for each block's amax.

    >>> import fp8lab as fl
    >>> mx_scale_exponents(np.array([957.0, 448.0, 0.0]), fl.get_format("e4m3"), "floor").tolist()
    [1, 0, -127]
    >>> mx_scale_exponents(np.array([957.0, 448.0, 0.0]), fl.get_format("e4m3"), "ceil").tolist()
    [2, 0, -127]
    """
    if scale_rounding not in SCALE_ROUNDINGS:
        raise ValueError(f"unknown scale_rounding {scale_rounding!r}; use one of {sorted(SCALE_ROUNDINGS)}")
    amax = np.asarray(amax, dtype=np.float64)
    zero = ~(amax > 0)
    any_zero = bool(zero.any())
    a = np.where(zero, 1.0, amax) if any_zero else amax
    emax = emax_elem(fmt)
    if scale_rounding == "floor":
        k = np.frexp(a)[1] - 1 - emax
    elif scale_rounding == "ceil":
        m, e = np.frexp(a / float(fmt.max))
        k = np.where(m == 0.5, e - 1, e)
    elif scale_rounding == "rceil":
        # TWIN RULE: _kernels.c (fp8lab_band_encode, rule 0) states this rceil again in C, for the fused cast;
        # both stay (the C one runs per band of rows in cache). tests/test_scaling_fast.py pins them equal
        # (test_fast_equals_general_on_random_shapes_and_magnitudes, test_the_fused_mx_cast_...).
        descale = a.astype(np.float32)
        descale *= np.float32(1.0 / float(fmt.max))  # float32 product, as on the GPU
        bits = descale.view(np.int32)  # non-negative: at most inf's 0x7F800000
        # round up to a power of two: a nonzero mantissa carries into the exponent field
        k = ((bits + 0x7FFFFF) >> 23) - 127
        sub = bits < 0x00800000
        if sub.any():  # a subnormal descale: above 2^-127 rounds up to 2^-126, else 2^-127
            k = np.where(sub, np.where(bits > 0x00400000, -126, -127), k)
    else:  # even
        m = fmt.mantissa_bits
        bits = a.astype(np.float32).view(np.int32).astype(np.int64)
        if m < 23:
            bits = bits + (1 << (23 - m - 1))
        k = ((bits >> 23) & 0xFF) - 127 - emax
    if any_zero:
        k = np.where(zero, E8M0_MIN_EXP, k)
    k = np.asarray(k, dtype=np.int64)  # computed above, never the caller's array: clamped in place
    np.maximum(k, E8M0_MIN_EXP, out=k)  # (np.clip costs more on short arrays)
    np.minimum(k, E8M0_MAX_EXP, out=k)
    return k


@dataclass(frozen=True)
class MXScaling(Recipe):
    """OCP Microscaling: ``block_size`` elements along ``axis`` share a power-of-two scale stored as E8M0.

    The element format is ``quantize_tensor``'s format argument: MXFP8 (``e4m3``/``e5m2``),
    MXFP6 (``e2m3``/``e3m2``), MXFP4 (``fp4``). Storage is ``fmt.bits + 8 / block_size`` bits per
    element: 8.25 for MXFP8, 6.25 for MXFP6, 4.25 for MXFP4.

    block_size
        Elements per block; 32 in the spec.
    scale_rounding
        ``"floor"`` (the OCP v1.0 rule), ``"ceil"``, ``"rceil"`` or ``"even"``: see
        :data:`SCALE_ROUNDINGS` and the module docstring.
    axis
        The axis blocks run along: ``-1`` (the spec's layout for the left operand of a GEMM);
        use ``axis=0`` for a ``(K, N)`` right operand, whose blocks run along K.

    >>> MXScaling().block_for((4, 64)), MXScaling(axis=0).block_for((64, 4))
    ((1, 32), (32, 1))
    """

    block_size: int = 32
    scale_rounding: str = "floor"
    axis: int = -1

    nonfinite_scale_nan = True

    def __post_init__(self) -> None:
        check_int("MXScaling", "block_size", self.block_size, minimum=1)
        if self.scale_rounding not in SCALE_ROUNDINGS:
            raise ValueError(f"unknown MXScaling.scale_rounding {self.scale_rounding!r}; use one of {sorted(SCALE_ROUNDINGS)}")
        check_int("MXScaling", "axis", self.axis)

    def check_format(self, fmt: Format) -> None:
        """MX elements are signed floating-point formats.

        >>> MXScaling().check_format(__import__("fp8lab").get_format("int8"))
        Traceback (most recent call last):
        ...
        ValueError: MXScaling needs a signed floating-point element format (e4m3, e5m2, e2m3, e3m2, fp4), got int8; use IntScaling for integers
        """
        if not isinstance(fmt, FloatFormat) or not fmt.signed:
            raise ValueError(f"MXScaling needs a signed floating-point element format (e4m3, e5m2, e2m3, e3m2, fp4), "
                             f"got {fmt.name}; use IntScaling for integers")

    def block_for(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """``block_size`` along ``axis``, 1 elsewhere.

        >>> MXScaling(block_size=16).block_for((8,))
        (16,)
        """
        return axis_block(shape, int(self.axis), int(self.block_size), owner="MXScaling")

    def compute_scales(self, amax: np.ndarray, fmt: Format) -> ScaleSet:
        """Power-of-two scales ``2^k`` and their E8M0 codes (``k + bias``, in ``info["scale_codes"]``).

        >>> MXScaling().compute_scales(np.array([6.0]), __import__("fp8lab").get_format("fp4")).info["scale_codes"].tolist()
        [127]
        """
        a = np.asarray(amax, dtype=np.float64)
        big = a > _F32_MAX  # inf too (NaN is not): the rare case is then told apart
        if big.any() and np.isfinite(a[big]).any():  # only float64 input beyond float32 gets here
            raise ValueError(f"amax {float(a[np.isfinite(a)].max()):.4g} is beyond float32's range, from which OCP MX "
                             "takes its elements (and rceil/even compute their scales); scale the input down first")
        k = mx_scale_exponents(amax, fmt, self.scale_rounding)
        # E8M0's code of 2^k is k + bias (k is clipped to the codes of finite scales); tests check it equals encode()
        idx = k + _E8M0_BIAS
        return ScaleSet(_POW2_SCALES.take(idx), "e8m0", info={"scale_codes": idx.astype(np.uint8)})
