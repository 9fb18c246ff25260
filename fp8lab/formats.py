"""Number formats as data: every derived number is computed from a format's parameters.

A :class:`FloatFormat` is described by its exponent and mantissa widths, its bias, whether it has a
sign bit and subnormals, and its *special-value policy* (how inf and NaN are encoded). An
:class:`IntFormat` is a plain two's-complement or unsigned integer. Nothing here is typed in from a
table: ``max``, ``min_normal``, ``epsilon`` and friends are properties that do the arithmetic.

>>> e4m3 = FloatFormat("float8_e4m3fn", 4, 3, special="fn")
>>> e4m3.max, e4m3.min_normal, e4m3.min_subnormal
(448.0, 0.015625, 0.001953125)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import numpy as np

__all__ = ["FloatFormat", "IntFormat", "Format", "SPECIALS"]

Special = Literal["ieee", "fn", "fnuz", "finite"]

#: The special-value policies a :class:`FloatFormat` can have, with what each one means.
SPECIALS: dict[str, str] = {
    "ieee": "the all-ones exponent is reserved: mantissa 0 is +-inf, any other mantissa is NaN",
    "fn": "finite: no inf; only the all-ones code (per sign) is NaN, as in E4M3FN and E8M0",
    "fnuz": "finite, unsigned zero: no inf, no -0; the negative-zero code is the only NaN",
    "finite": "no inf and no NaN: every code is a number, as in FP6 and FP4",
}

_F32_MAX = float(np.finfo(np.float32).max)
_F32_TINY = 2.0**-149


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format ``(-1)^s * 2^(E-bias) * 1.M`` described by its parameters.

    ``bias=None`` means the IEEE default ``2^(exponent_bits-1) - 1``. ``subnormals=False`` makes the
    all-zero exponent an ordinary binade, so the format has no zero (this is how E8M0 works).

    >>> FloatFormat("e5m2", 5, 2).max
    57344.0
    """

    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int | None = None
    signed: bool = True
    subnormals: bool = True
    special: Special = "ieee"
    aliases: tuple[str, ...] = field(default=(), compare=False, repr=False)
    description: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        e, m = self.exponent_bits, self.mantissa_bits
        if not isinstance(e, int) or not isinstance(m, int) or isinstance(e, bool) or isinstance(m, bool):
            raise TypeError(f"{self.name}: exponent_bits and mantissa_bits must be ints, got {e!r}, {m!r}")
        if not 1 <= e <= 8:
            raise ValueError(f"{self.name}: exponent_bits must be 1..8 (the codec works through float32), got {e}")
        if not 0 <= m <= 23:
            raise ValueError(f"{self.name}: mantissa_bits must be 0..23 (the codec works through float32), got {m}")
        if self.special not in SPECIALS:
            raise ValueError(f"{self.name}: special must be one of {sorted(SPECIALS)}, got {self.special!r}")
        if self.bias is None:
            object.__setattr__(self, "bias", 2 ** (e - 1) - 1)
        if not isinstance(self.bias, int):
            raise TypeError(f"{self.name}: bias must be an int or None, got {self.bias!r}")
        if self.special == "ieee" and m == 0:
            raise ValueError(f"{self.name}: an 'ieee' format needs mantissa bits to tell NaN from inf")
        if self.special == "fnuz" and not self.signed:
            raise ValueError(f"{self.name}: 'fnuz' puts NaN at the negative-zero code, so it needs a sign bit")
        if self.special == "ieee" and e == 1:
            raise ValueError(f"{self.name}: an 'ieee' format with one exponent bit has no finite normals")
        if self.num_finite < 1:
            raise ValueError(f"{self.name}: these parameters leave no finite value")
        if self.max > _F32_MAX or self.min_subnormal < _F32_TINY:
            raise ValueError(
                f"{self.name}: values from {self.min_subnormal!r} to {self.max!r} do not fit in float32, "
                "which the codec decodes to; choose a bias closer to 2^(e-1)-1"
            )

    # ----- bit layout -------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """``"float"`` for floating-point formats.

        >>> FloatFormat("e2m1", 2, 1, special="finite").kind
        'float'
        """
        return "float"

    @property
    def bits(self) -> int:
        """Total width in bits: sign + exponent + mantissa.

        >>> FloatFormat("e4m3", 4, 3, special="fn").bits
        8
        """
        return int(self.signed) + self.exponent_bits + self.mantissa_bits

    @property
    def code_dtype(self) -> np.dtype:
        """The unsigned integer dtype that holds one code (uint8, uint16 or uint32).

        >>> FloatFormat("e5m10", 5, 10).code_dtype
        dtype('uint16')
        """
        return np.dtype(np.uint8 if self.bits <= 8 else np.uint16 if self.bits <= 16 else np.uint32)

    @property
    def emin(self) -> int:
        """Unbiased exponent of the smallest normal binade.

        >>> FloatFormat("e4m3", 4, 3, special="fn").emin
        -6
        """
        return (1 if self.subnormals else 0) - self.bias

    @property
    def sign_mask(self) -> int:
        """The sign bit of a code (0 for unsigned formats).

        >>> hex(FloatFormat("e4m3", 4, 3, special="fn").sign_mask)
        '0x80'
        """
        return (1 << (self.bits - 1)) if self.signed else 0

    @property
    def magnitude_mask(self) -> int:
        """All bits of a code except the sign.

        >>> hex(FloatFormat("e4m3", 4, 3, special="fn").magnitude_mask)
        '0x7f'
        """
        return (1 << (self.exponent_bits + self.mantissa_bits)) - 1

    @property
    def max_code(self) -> int:
        """Magnitude bits of the largest finite value.

        >>> hex(FloatFormat("e4m3", 4, 3, special="fn").max_code)
        '0x7e'
        """
        m = self.mantissa_bits
        if self.special == "ieee":
            return ((2**self.exponent_bits - 1) << m) - 1
        if self.special == "fn":
            return self.magnitude_mask - 1
        return self.magnitude_mask

    @property
    def nan_code(self) -> int | None:
        """The canonical (positive, quiet) NaN code, or None when the format has no NaN.

        >>> hex(FloatFormat("e5m2", 5, 2).nan_code)
        '0x7e'
        """
        m = self.mantissa_bits
        if self.special == "ieee":
            return ((2**self.exponent_bits - 1) << m) | (1 << (m - 1))
        if self.special == "fn":
            return self.magnitude_mask
        if self.special == "fnuz":
            return self.sign_mask
        return None

    @property
    def inf_code(self) -> int | None:
        """The +inf code, or None when the format has no infinity.

        >>> hex(FloatFormat("e5m2", 5, 2).inf_code)
        '0x7c'
        """
        if self.special != "ieee":
            return None
        return (2**self.exponent_bits - 1) << self.mantissa_bits

    @property
    def has_inf(self) -> bool:
        """Whether +-inf are encodable.

        >>> FloatFormat("e4m3", 4, 3, special="fn").has_inf
        False
        """
        return self.special == "ieee"

    @property
    def has_nan(self) -> bool:
        """Whether NaN is encodable.

        >>> FloatFormat("e2m1", 2, 1, special="finite").has_nan
        False
        """
        return self.special != "finite"

    @property
    def has_zero(self) -> bool:
        """Whether zero is encodable (not in formats without subnormals, such as E8M0).

        >>> FloatFormat("e8m0", 8, 0, bias=127, signed=False, subnormals=False, special="fn").has_zero
        False
        """
        return self.subnormals

    @property
    def has_negative_zero(self) -> bool:
        """Whether -0 has its own code.

        >>> FloatFormat("e4m3fnuz", 4, 3, bias=8, special="fnuz").has_negative_zero
        False
        """
        return self.signed and self.subnormals and self.special != "fnuz"

    # ----- derived numbers -----------------------------------------------------------------
    def code_value(self, magnitude: int) -> float:
        """Exact value of a non-negative code's magnitude bits (specials are not checked here).

        >>> FloatFormat("e4m3", 4, 3, special="fn").code_value(0x7E)
        448.0
        """
        m = self.mantissa_bits
        exp_field, mant = magnitude >> m, magnitude & ((1 << m) - 1)
        if exp_field == 0 and self.subnormals:
            return math.ldexp(mant, self.emin - m)
        return math.ldexp((1 << m) + mant, exp_field - self.bias - m)

    @property
    def max(self) -> float:
        """Largest finite value.

        >>> FloatFormat("e4m3fnuz", 4, 3, bias=8, special="fnuz").max
        240.0
        """
        return self.code_value(self.max_code)

    @property
    def overflow_threshold(self) -> float:
        """Halfway from ``max`` to the value the next code would have: round-to-nearest overflows beyond it.

        At the threshold itself the tie goes to the even significand: back to ``max`` when its last
        mantissa bit is 0 (E4M3FN: 464 -> 448), on to overflow otherwise.

        >>> FloatFormat("e4m3", 4, 3, special="fn").overflow_threshold
        464.0
        """
        return (self.max + self.code_value(self.max_code + 1)) / 2

    @property
    def min_normal(self) -> float:
        """Smallest positive normal value, ``2^emin``.

        >>> FloatFormat("e5m2", 5, 2).min_normal
        6.103515625e-05
        """
        return math.ldexp(1.0, self.emin)

    @property
    def min_subnormal(self) -> float:
        """Smallest positive value (the smallest normal when there are no subnormals).

        >>> FloatFormat("e2m1", 2, 1, special="finite").min_subnormal
        0.5
        """
        if not self.subnormals or self.mantissa_bits == 0:
            return self.min_normal
        return math.ldexp(1.0, self.emin - self.mantissa_bits)

    @property
    def epsilon(self) -> float:
        """Distance from 1.0 to the next larger value, ``2^-mantissa_bits``.

        >>> FloatFormat("bf16", 8, 7).epsilon
        0.0078125
        """
        return math.ldexp(1.0, -self.mantissa_bits)

    @property
    def num_finite(self) -> int:
        """Number of distinct finite values (+0 and -0 counted once).

        >>> FloatFormat("e2m1", 2, 1, special="finite").num_finite
        15
        """
        positive = self.max_code + 1 - (1 if self.has_zero else 0)
        return positive * (2 if self.signed else 1) + (1 if self.has_zero else 0)

    @property
    def dynamic_range(self) -> float:
        """Decades from the smallest normal to the largest value, ``log10(max / min_normal)``.

        >>> round(FloatFormat("e4m3", 4, 3, special="fn").dynamic_range, 2)
        4.46
        """
        return math.log10(self.max / self.min_normal)

    @property
    def dynamic_range_subnormal(self) -> float:
        """Decades from the smallest subnormal to the largest value.

        >>> round(FloatFormat("e4m3", 4, 3, special="fn").dynamic_range_subnormal, 2)
        5.36
        """
        return math.log10(self.max / self.min_subnormal)

    @cached_property
    def _values(self) -> np.ndarray:
        mags = [self.code_value(c) for c in range(self.max_code + 1)]
        pos = np.array(sorted(set(mags)), dtype=np.float64)
        if not self.signed:
            return pos
        neg = -pos[::-1]
        if self.has_zero:
            neg = neg[:-1]  # -0 and +0 are one value
        return np.concatenate([neg, pos])

    def values(self) -> np.ndarray:
        """Every finite value, ascending, as float64 (one zero).

        >>> FloatFormat("e2m1", 2, 1, special="finite").values()[-4:].tolist()
        [2.0, 3.0, 4.0, 6.0]
        """
        if self.bits > 16:
            raise ValueError(f"{self.name} has {self.num_finite} finite values; values() lists formats up to 16 bits")
        return self._values.copy()

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class IntFormat:
    """A two's-complement (``signed=True``) or unsigned integer format such as INT8 or INT4.

    >>> IntFormat("int4", 4).min, IntFormat("int4", 4).max
    (-8.0, 7.0)
    """

    name: str
    bits: int
    signed: bool = True
    aliases: tuple[str, ...] = field(default=(), compare=False, repr=False)
    description: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.bits, int) or not 2 <= self.bits <= 16:
            raise ValueError(f"{self.name}: bits must be an int from 2 to 16, got {self.bits!r}")

    @property
    def kind(self) -> str:
        """``"int"`` for integer formats.

        >>> IntFormat("int8", 8).kind
        'int'
        """
        return "int"

    @property
    def code_dtype(self) -> np.dtype:
        """The unsigned integer dtype that holds one code.

        >>> IntFormat("int4", 4).code_dtype
        dtype('uint8')
        """
        return np.dtype(np.uint8 if self.bits <= 8 else np.uint16)

    @property
    def max(self) -> float:
        """Largest value.

        >>> IntFormat("int8", 8).max
        127.0
        """
        return float(2 ** (self.bits - 1) - 1 if self.signed else 2**self.bits - 1)

    @property
    def min(self) -> float:
        """Smallest (most negative) value.

        >>> IntFormat("int8", 8).min
        -128.0
        """
        return float(-(2 ** (self.bits - 1)) if self.signed else 0)

    @property
    def min_normal(self) -> float:
        """Smallest positive value (1), so integer and float formats share one table.

        >>> IntFormat("int8", 8).min_normal
        1.0
        """
        return 1.0

    min_subnormal = min_normal
    epsilon = min_normal

    @property
    def num_finite(self) -> int:
        """Number of values, ``2^bits``.

        >>> IntFormat("int4", 4).num_finite
        16
        """
        return 2**self.bits

    @property
    def dynamic_range(self) -> float:
        """Decades from 1 to the largest value.

        >>> round(IntFormat("int8", 8).dynamic_range, 2)
        2.1
        """
        return math.log10(self.max)

    dynamic_range_subnormal = dynamic_range
    has_inf = False
    has_nan = False
    has_zero = True

    def values(self) -> np.ndarray:
        """Every value, ascending, as float64.

        >>> IntFormat("int4", 4).values()[:3].tolist()
        [-8.0, -7.0, -6.0]
        """
        return np.arange(self.min, self.max + 1, dtype=np.float64)

    def __str__(self) -> str:
        return self.name


Format = FloatFormat | IntFormat
