"""Scale arithmetic: turn a per-block amax into a float32 dequantisation multiplier, exactly.

A scale here is always the *dequantisation* multiplier ``s`` with ``x ≈ decode(code) * s``
(DeepSeek-V3's ``weight_scale_inv``, Transformer Engine's ``scale_inv``). The arithmetic is done
in float64 on the host (a few numbers per block) and rounded *up* to float32, so ``amax / s``
never exceeds the format's max and a current-scaling recipe never clips.

>>> float_scales(np.array([448.0, 0.0, 300.0]), 448.0).tolist()
[1.0, 1.0, 0.6696428656578064]
>>> float_scales(np.array([448.0, 300.0]), 448.0, pow2=True).tolist()
[1.0, 1.0]
"""

from __future__ import annotations

import math

import numpy as np

from ..registry import get_format

__all__ = ["round_up_float32", "pow2_ceil", "float_scales", "check_scale_range", "E8M0_MIN_EXP", "E8M0_MAX_EXP",
           "F32_TINY", "MARGIN_LIMIT"]

_E8M0 = get_format("e8m0")
E8M0_MIN_EXP = int(math.log2(_E8M0.min_normal))  #: smallest power of two a UE8M0 scale holds (-127, code 0x00)
E8M0_MAX_EXP = int(math.log2(_E8M0.max))  #: largest (127, code 0xFE; 0xFF is NaN)
F32_TINY = float(np.finfo(np.float32).tiny)  #: smallest normal float32, the floor of a float scale
_F32_MAX = float(np.finfo(np.float32).max)
#: A margin beyond float32's whole exponent span (smallest subnormal to largest value) cannot give a float32 scale.
MARGIN_LIMIT = int(np.log2(_F32_MAX)) + 1 - int(np.log2(float(np.finfo(np.float32).smallest_subnormal)))


def check_scale_range(s: np.ndarray, what: str = "the scale") -> None:
    """Raise a clear ValueError if a finite scale is beyond float32's range (it would be clipped silently).

    Only float64 inputs beyond float32's range (or extreme margins) get here.

    >>> check_scale_range(np.array([1e39]), "amax 4.5e41 / 448")
    Traceback (most recent call last):
    ...
    ValueError: amax 4.5e41 / 448 needs a scale of 1e+39, beyond float32's range (max 3.4028234663852886e+38), which scales are stored in; scale the input down first
    """
    s = np.asarray(s, dtype=np.float64)
    big = np.isfinite(s) & (s > _F32_MAX)
    if big.any():
        raise ValueError(f"{what} needs a scale of {float(s[big].max()):.4g}, beyond float32's range "
                         f"(max {_F32_MAX!r}), which scales are stored in; scale the input down first")


def round_up_float32(s: np.ndarray) -> np.ndarray:
    """Float64 values rounded *up* to float32 (never below the input, so ``amax / s <= max`` survives).

    >>> float(round_up_float32(np.array([1 / 3]))[0]) >= 1 / 3
    True
    """
    s = np.asarray(s, dtype=np.float64)
    s32 = s.astype(np.float32)
    low = s32.astype(np.float64) < s
    if low.any():
        s32[low] = np.nextafter(s32[low], np.float32(np.inf))
    return s32


def pow2_ceil(s: np.ndarray, min_exp: int = E8M0_MIN_EXP, max_exp: int = E8M0_MAX_EXP) -> np.ndarray:
    """The smallest power of two ``>= s`` (exact bit arithmetic with frexp), exponent clamped to E8M0's range.

    >>> pow2_ceil(np.array([0.75, 1.0, 1.0000001, 3e-60])).tolist()
    [1.0, 1.0, 2.0, 5.877471754111438e-39]
    """
    s = np.asarray(s, dtype=np.float64)
    m, e = np.frexp(s)  # s = m * 2^e with 0.5 <= m < 1, so 2^(e-1) <= s < 2^e
    k = np.where(m == 0.5, e - 1, e)
    return np.ldexp(1.0, np.minimum(np.maximum(k, min_exp), max_exp))  # (np.clip costs more on short arrays)


def float_scales(amax: np.ndarray, fmt_max: float, *, margin: float = 0, pow2: bool = False) -> np.ndarray:
    """Float32 dequantisation multipliers ``amax * 2^margin / fmt_max`` for each block (1.0 for all-zero blocks).

    ``pow2=True`` rounds each scale up to a power of two (the UE8M0 scale format of DeepSeek-V3.1
    and DeepGEMM on SM100); otherwise the scale is rounded up to the next float32 and kept at or
    above the smallest normal float32, so that its reciprocal stays finite. A block with amax 0
    (all zeros, or nothing finite) gets the scale 1.0: its codes are zeros whatever the scale,
    and Transformer Engine also starts from 1.

    >>> float_scales(np.array([6.0, 7.0]), 6.0, pow2=True).tolist(), float_scales(np.array([2.0]), 448.0, margin=1).tolist()
    ([1.0, 2.0], [0.008928571827709675])
    """
    amax = np.asarray(amax, dtype=np.float64)
    zero = ~(amax > 0)  # zero, or NaN (a block with no finite values)
    any_zero = bool(zero.any())
    s = np.where(zero, 1.0, amax) if any_zero else amax
    s = (s * (2.0**margin) if margin else s) / float(fmt_max)  # times 2^margin: exact, skipped when it is 1
    limit = 2.0**E8M0_MAX_EXP if pow2 else _F32_MAX  # 2^127 < float32's max
    # s holds no NaN (those blocks took 1.0), so its max tells cheaply whether any finite scale may pass the limit
    if s.size and float(s.max()) > limit and np.any(np.isfinite(s) & (s > limit)):  # rare: messages built only here
        check_scale_range(s, f"amax {float(amax.max(initial=0.0)):.4g} with margin {margin} and format max {fmt_max:g}")
        raise ValueError(  # within float32's range, so it is the power-of-two limit that was passed
            f"amax {float(amax.max(initial=0.0)):.4g} needs a power-of-two scale above "
                         f"2^{E8M0_MAX_EXP}, the largest UE8M0 holds; scale the input down first")
    if pow2:
        # TWIN RULE: _kernels.c (fp8lab_band_encode, rule 1) states this power-of-two rule again in C, for the
        # fused cast; both stay. tests/test_scaling_fast.py pins them equal (fast vs general sweeps, margins too).
        out = pow2_ceil(s).astype(np.float32)  # powers of two from 2^-127 to 2^127: exact in float32
    else:
        out = round_up_float32(np.minimum(np.maximum(s, F32_TINY), _F32_MAX))  # np.clip's wrapper costs more here
    if any_zero:
        out[zero] = 1.0
    return out
