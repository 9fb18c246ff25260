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

from .validation import check_bool, check_int, check_str

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
_F32_MIN_EXP = -149  #: float32's finest step, 2^-149 (its smallest subnormal)


class derived(property):
    """A property of a format computed once from its fields (formats are frozen), then kept on the instance.

    Still a ``property`` (so its docstring's example runs as a doctest); the value lives in the instance's
    ``__dict__``, never in its fields, so equality, hashing and ``repr`` see the parameters only.

    >>> f = FloatFormat("e4m3", 4, 3, special="fn"); f.max is f.max, "_derived_max" in vars(f)
    (True, True)
    """

    def __init__(self, fget) -> None:
        key = "_derived_" + fget.__name__

        def get(obj):
            d = obj.__dict__
            try:
                return d[key]
            except KeyError:
                value = d[key] = fget(obj)
                return value

        get.__name__, get.__qualname__, get.__doc__ = fget.__name__, fget.__qualname__, fget.__doc__
        get.__module__ = fget.__module__
        super().__init__(get, doc=fget.__doc__)


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format ``(-1)^s * 2^(E-bias) * 1.M`` described by its parameters.

    ``bias=None`` means the IEEE default ``2^(exponent_bits-1) - 1``. ``subnormals=False`` makes the
    all-zero exponent an ordinary binade, so the format has no zero (this is how E8M0 works).
    Parameters whose only finite value is 0 (E1M0 with ``special="fn"``) raise a ValueError.

    >>> FloatFormat("e5m2", 5, 2).max
    57344.0
    >>> FloatFormat("e1m0", 1, 0, signed=False, special="fn")
    Traceback (most recent call last):
    ...
    ValueError: e1m0: with 1 exponent bit, 0 mantissa bits and special='fn' the only finite value is 0 (the other codes are NaN), so nothing can be scaled into it; add an exponent or mantissa bit, or choose special='finite' or 'fnuz'
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
        check_str("FloatFormat", "name", self.name)
        e = check_int(self.name, "exponent_bits", self.exponent_bits)
        m = check_int(self.name, "mantissa_bits", self.mantissa_bits)
        check_bool(self.name, "signed", self.signed)
        check_bool(self.name, "subnormals", self.subnormals)
        if not 1 <= e <= 8:
            raise ValueError(f"{self.name}: exponent_bits must be 1..8 (the codec works through float32), got {e}")
        if not 0 <= m <= 23:
            raise ValueError(f"{self.name}: mantissa_bits must be 0..23 (the codec works through float32), got {m}")
        if not isinstance(self.special, str) or self.special not in SPECIALS:
            kind = ValueError if isinstance(self.special, str) else TypeError
            raise kind(f"{self.name}: special must be one of {sorted(SPECIALS)}, got {self.special!r}")
        if self.bias is None:
            object.__setattr__(self, "bias", 2 ** (e - 1) - 1)
        object.__setattr__(self, "bias", check_int(self.name, "bias", self.bias))
        object.__setattr__(self, "exponent_bits", e)
        object.__setattr__(self, "mantissa_bits", m)
        object.__setattr__(self, "signed", bool(self.signed))
        object.__setattr__(self, "subnormals", bool(self.subnormals))
        if self.special == "ieee" and m == 0:
            raise ValueError(f"{self.name}: an 'ieee' format needs mantissa bits to tell NaN from inf")
        if self.special == "fnuz" and not self.signed:
            raise ValueError(f"{self.name}: 'fnuz' puts NaN at the negative-zero code, so it needs a sign bit")
        if self.special == "fnuz" and not self.subnormals:
            raise ValueError(f"{self.name}: 'fnuz' puts NaN at the negative-zero code, but without subnormals there is "
                             "no zero and the sign bit with all-zero fields is the ordinary value -min_normal; "
                             "use special='fn' or 'finite'")
        if self.special == "ieee" and e == 1:
            raise ValueError(f"{self.name}: an 'ieee' format with one exponent bit has no finite normals")
        if not self.max > 0:
            # 1 exponent bit, no mantissa bits and 'fn': zero and the NaN code, nothing else (signed or not)
            others = "NaN or -0" if self.has_negative_zero else "NaN"
            raise ValueError(
                f"{self.name}: with {e} exponent bit{'s' * (e != 1)}, {m} mantissa bits and special={self.special!r} the only "
                f"finite value is 0 (the other codes are {others}), so nothing can be scaled into it; add an exponent or "
                "mantissa bit, or choose special='finite' or 'fnuz'")
        if self.max > _F32_MAX or self.emin - m < _F32_MIN_EXP:
            raise ValueError(
                f"{self.name}: its values run from {self.min_subnormal!r} to {self.max!r} in steps as fine as "
                f"2^{self.emin - m}; float32, which the codec decodes to, holds them exactly only from 2^{_F32_MIN_EXP} "
                f"steps up to {_F32_MAX!r}; choose a bias closer to 2^(e-1)-1 = {2 ** (e - 1) - 1}"
            )

    # ----- bit layout -------------------------------------------------------------------------
    @derived
    def kind(self) -> str:
        """``"float"`` for floating-point formats.

        >>> FloatFormat("e2m1", 2, 1, special="finite").kind
        'float'
        """
        return "float"

    @derived
    def bits(self) -> int:
        """Total width in bits: sign + exponent + mantissa.

        >>> FloatFormat("e4m3", 4, 3, special="fn").bits
        8
        """
        return int(self.signed) + self.exponent_bits + self.mantissa_bits

    @derived
    def code_dtype(self) -> np.dtype:
        """The unsigned integer dtype that holds one code (uint8, uint16 or uint32).

        >>> FloatFormat("e5m10", 5, 10).code_dtype
        dtype('uint16')
        """
        return np.dtype(np.uint8 if self.bits <= 8 else np.uint16 if self.bits <= 16 else np.uint32)

    @derived
    def emin(self) -> int:
        """Unbiased exponent of the smallest normal binade.

        >>> FloatFormat("e4m3", 4, 3, special="fn").emin
        -6
        """
        return (1 if self.subnormals else 0) - self.bias

    @derived
    def sign_mask(self) -> int:
        """The sign bit of a code (0 for unsigned formats).

        >>> hex(FloatFormat("e4m3", 4, 3, special="fn").sign_mask)
        '0x80'
        """
        return (1 << (self.bits - 1)) if self.signed else 0

    @derived
    def magnitude_mask(self) -> int:
        """All bits of a code except the sign.

        >>> hex(FloatFormat("e4m3", 4, 3, special="fn").magnitude_mask)
        '0x7f'
        """
        return (1 << (self.exponent_bits + self.mantissa_bits)) - 1

    @derived
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

    @derived
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

    @derived
    def inf_code(self) -> int | None:
        """The +inf code, or None when the format has no infinity.

        >>> hex(FloatFormat("e5m2", 5, 2).inf_code)
        '0x7c'
        """
        if self.special != "ieee":
            return None
        return (2**self.exponent_bits - 1) << self.mantissa_bits

    @derived
    def has_inf(self) -> bool:
        """Whether +-inf are encodable.

        >>> FloatFormat("e4m3", 4, 3, special="fn").has_inf
        False
        """
        return self.special == "ieee"

    @derived
    def has_nan(self) -> bool:
        """Whether NaN is encodable.

        >>> FloatFormat("e2m1", 2, 1, special="finite").has_nan
        False
        """
        return self.special != "finite"

    @derived
    def has_zero(self) -> bool:
        """Whether zero is encodable (not in formats without subnormals, such as E8M0).

        >>> FloatFormat("e8m0", 8, 0, bias=127, signed=False, subnormals=False, special="fn").has_zero
        False
        """
        return self.subnormals

    @derived
    def has_negative_zero(self) -> bool:
        """Whether -0 has its own code.

        >>> FloatFormat("e4m3fnuz", 4, 3, bias=8, special="fnuz").has_negative_zero
        False
        """
        return self.signed and self.subnormals and self.special != "fnuz"

    # ----- special values: the only place that reads ``special`` ----------------------------
    def is_nan_code(self, codes):
        """Which codes are NaN (an int, a numpy array or a torch tensor of codes; same kind back).

        >>> f = FloatFormat("e4m3fnuz", 4, 3, bias=8, special="fnuz")
        >>> f.is_nan_code(0x80), FloatFormat("e5m2", 5, 2).is_nan_code(__import__("numpy").array([0x7C, 0x7D])).tolist()
        (True, [False, True])
        """
        mag = codes & self.magnitude_mask
        if self.special == "ieee":
            return ((mag >> self.mantissa_bits) == self._top_field) & ((mag & self._mantissa_mask) != 0)
        if self.special == "fn":
            return mag == self.magnitude_mask
        if self.special == "fnuz":
            return codes == self.sign_mask
        return mag != mag  # no NaN: all False, shaped like the codes

    def is_inf_code(self, codes):
        """Which codes are +-inf (only IEEE-style formats have any).

        >>> FloatFormat("e5m2", 5, 2).is_inf_code(0xFC), FloatFormat("e4m3", 4, 3, special="fn").is_inf_code(0x7F)
        (True, False)
        """
        mag = codes & self.magnitude_mask
        if self.special == "ieee":
            return mag == self.inf_code
        return mag != mag

    def overflow_code(self, *, rounding: str = "nearest", saturate: bool = False, infinite: bool = False) -> int:
        """The code a positive value beyond the range becomes (OR the sign bit in for a negative one).

        Saturating casts and formats without specials give max; otherwise an infinite input gives
        inf where the format has it and NaN elsewhere, and a finite overflow gives the same, except
        that rounding toward zero keeps max (IEEE 754 section 7.4). In a fnuz format the NaN code is
        the sign bit itself, so OR-ing a sign in keeps it NaN.

        >>> e4m3 = FloatFormat("e4m3", 4, 3, special="fn")
        >>> hex(e4m3.overflow_code()), hex(e4m3.overflow_code(saturate=True)), hex(FloatFormat("e5m2", 5, 2).overflow_code())
        ('0x7f', '0x7e', '0x7c')
        """
        if saturate or not self.has_nan:
            return self.max_code
        if rounding == "toward_zero" and not infinite:
            return self.max_code
        return self.inf_code if self.has_inf else self.nan_code

    def nan_input_code(self, negative: bool = False) -> int:
        """The code a NaN input becomes: the quiet NaN (with the input's sign where NaNs are signed).

        Formats without NaN follow ml_dtypes: a zero of the opposite sign (FP6/FP4), or 0 if unsigned.

        >>> hex(FloatFormat("e5m2", 5, 2).nan_input_code(True)), hex(FloatFormat("e2m1", 2, 1, special="finite").nan_input_code())
        ('0xfe', '0x8')
        """
        if not self.has_nan:
            return 0 if (negative or not self.signed) else self.sign_mask
        if self.special == "fnuz" or not self.signed:
            return self.nan_code
        return self.nan_code | (self.sign_mask if negative else 0)

    @derived
    def negative_input_code(self) -> int | None:
        """What a negative number becomes in an unsigned format (NaN, or 0 without NaN); None if signed.

        >>> hex(FloatFormat("e8m0", 8, 0, bias=127, signed=False, subnormals=False, special="fn").negative_input_code)
        '0xff'
        """
        if self.signed:
            return None
        return self.nan_code if self.has_nan else 0

    @derived
    def zero_input_code(self) -> int:
        """The code 0.0 becomes: zero where the format has one, else NaN (E8M0) or the smallest value.

        >>> hex(FloatFormat("e8m0", 8, 0, bias=127, signed=False, subnormals=False, special="fn").zero_input_code)
        '0xff'
        """
        if self.has_zero or not self.has_nan:
            return 0
        return self.nan_code

    @derived
    def negative_zero_code(self) -> int:
        """The code -0.0 becomes: its own code where -0 exists, +0 in fnuz and unsigned formats.

        >>> FloatFormat("e4m3fnuz", 4, 3, bias=8, special="fnuz").negative_zero_code, FloatFormat("e5m2", 5, 2).negative_zero_code
        (0, 128)
        """
        if self.has_zero:
            return self.sign_mask if self.has_negative_zero else 0
        return self.nan_code if self.has_nan else self.sign_mask  # no zero: NaN, or the smallest value, signed

    @derived
    def nan_description(self) -> str:
        """Where this format keeps its NaNs, in words (for teaching output).

        >>> FloatFormat("e4m3", 4, 3, special="fn").nan_description
        'the all-ones code'
        """
        return {"ieee": "top exponent, mantissa != 0", "fn": "the all-ones code",
                "fnuz": "the negative-zero code", "finite": "none: every code is a number"}[self.special]

    @derived
    def _top_field(self) -> int:
        return (1 << self.exponent_bits) - 1

    @derived
    def _mantissa_mask(self) -> int:
        return (1 << self.mantissa_bits) - 1

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

    @derived
    def max(self) -> float:
        """Largest finite value.

        >>> FloatFormat("e4m3fnuz", 4, 3, bias=8, special="fnuz").max
        240.0
        """
        return self.code_value(self.max_code)

    @derived
    def overflow_threshold(self) -> float:
        """Halfway from ``max`` to the value the next code would have: round-to-nearest overflows beyond it.

        At the threshold itself the tie goes to the even significand: back to ``max`` when its last
        mantissa bit is 0 (E4M3FN: 464 -> 448), on to overflow otherwise.

        >>> FloatFormat("e4m3", 4, 3, special="fn").overflow_threshold
        464.0
        """
        return (self.max + self.code_value(self.max_code + 1)) / 2

    @derived
    def min_normal(self) -> float:
        """Smallest positive normal value, ``2^emin``.

        >>> FloatFormat("e5m2", 5, 2).min_normal
        6.103515625e-05
        """
        return math.ldexp(1.0, self.emin)

    @derived
    def min_subnormal(self) -> float:
        """Smallest positive value (the smallest normal when there are no subnormals).

        >>> FloatFormat("e2m1", 2, 1, special="finite").min_subnormal
        0.5
        """
        if not self.subnormals or self.mantissa_bits == 0:
            return self.min_normal
        return math.ldexp(1.0, self.emin - self.mantissa_bits)

    @derived
    def epsilon(self) -> float:
        """Distance from 1.0 to the next larger value, ``2^-mantissa_bits``.

        >>> FloatFormat("bf16", 8, 7).epsilon
        0.0078125
        """
        return math.ldexp(1.0, -self.mantissa_bits)

    @derived
    def num_finite(self) -> int:
        """Number of distinct finite values (+0 and -0 counted once).

        >>> FloatFormat("e2m1", 2, 1, special="finite").num_finite
        15
        """
        positive = self.max_code + 1 - (1 if self.has_zero else 0)
        return positive * (2 if self.signed else 1) + (1 if self.has_zero else 0)

    @derived
    def dynamic_range(self) -> float:
        """Decades from the smallest normal to the largest value, ``log10(max / min_normal)``.

        >>> round(FloatFormat("e4m3", 4, 3, special="fn").dynamic_range, 2)
        4.46
        """
        return math.log10(self.max / self.min_normal)

    @derived
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
        check_str("IntFormat", "name", self.name)
        object.__setattr__(self, "bits", check_int(self.name, "bits", self.bits, minimum=2, maximum=16))
        object.__setattr__(self, "signed", check_bool(self.name, "signed", self.signed))

    @derived
    def kind(self) -> str:
        """``"int"`` for integer formats.

        >>> IntFormat("int8", 8).kind
        'int'
        """
        return "int"

    @derived
    def code_dtype(self) -> np.dtype:
        """The unsigned integer dtype that holds one code.

        >>> IntFormat("int4", 4).code_dtype
        dtype('uint8')
        """
        return np.dtype(np.uint8 if self.bits <= 8 else np.uint16)

    @derived
    def max(self) -> float:
        """Largest value.

        >>> IntFormat("int8", 8).max
        127.0
        """
        return float(2 ** (self.bits - 1) - 1 if self.signed else 2**self.bits - 1)

    @derived
    def min(self) -> float:
        """Smallest (most negative) value.

        >>> IntFormat("int8", 8).min
        -128.0
        """
        return float(-(2 ** (self.bits - 1)) if self.signed else 0)

    @derived
    def min_normal(self) -> float:
        """Smallest positive value (1), so integer and float formats share one table.

        >>> IntFormat("int8", 8).min_normal
        1.0
        """
        return 1.0

    min_subnormal = min_normal
    epsilon = min_normal

    @derived
    def num_finite(self) -> int:
        """Number of values, ``2^bits``.

        >>> IntFormat("int4", 4).num_finite
        16
        """
        return 2**self.bits

    @derived
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
