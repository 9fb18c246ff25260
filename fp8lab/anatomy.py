"""The anatomy of a value: ``explain`` shows its sign, exponent and mantissa with the arithmetic written out.

(The module is not called ``explain`` so that ``fp8lab.explain`` is always the function.)

>>> print(explain(0.8125, "e4m3"))
0.8125 in float8_e4m3fn (1 sign, 4 exponent, 3 mantissa bits, bias 7)
  code    0x35 = 0 0110 101
  kind    normal
  value   (-1)^0 x 2^(6-7) x (1 + 5/8) = 0.8125
  exact   yes
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .codec import encode
from .codec.reference import decode_one
from .formats import FloatFormat, Format, IntFormat
from .registry import get_format
from .validation import check_bool, check_real

__all__ = ["explain", "Explanation", "fields", "bit_string", "code_kind"]


@dataclass(frozen=True)
class Explanation:
    """What one value becomes in one format: fields, kind, the formula and the rounding error."""

    x: float
    format: Format
    code: int
    sign: int
    exponent: int | None
    mantissa: int | None
    kind: str
    value: float
    formula: str
    notes: tuple[str, ...] = ()

    @property
    def bits(self) -> str:
        """The code as a bit string, fields separated by spaces.

        >>> explain(1.0, "e5m2").bits
        '0 01111 00'
        """
        return bit_string(self.code, self.format)

    @property
    def error(self) -> float:
        """Absolute rounding error ``value - x`` (NaN when either is not finite).

        >>> round(explain(0.3, "e4m3").error, 6)
        0.0125
        """
        if not (math.isfinite(self.value) and math.isfinite(self.x)):
            return math.nan
        return self.value - self.x

    @property
    def relative_error(self) -> float:
        """Rounding error relative to ``x`` (NaN for zero, inf or NaN inputs).

        >>> round(explain(0.3, "e4m3").relative_error, 4)
        0.0417
        """
        return self.error / abs(self.x) if self.x and math.isfinite(self.error) else math.nan

    def __str__(self) -> str:
        f = self.format
        if isinstance(f, FloatFormat):
            sign = "1 sign" if f.signed else "unsigned"
            head = f"{self.x!r} in {f.name} ({sign}, {f.exponent_bits} exponent, {f.mantissa_bits} mantissa bits, bias {f.bias})"
        else:
            head = f"{self.x!r} in {f.name} ({f.bits}-bit {'signed' if f.signed else 'unsigned'} integer)"
        width = (f.bits + 3) // 4
        lines = [head, f"  code    0x{self.code:0{width}X} = {self.bits}", f"  kind    {self.kind}",
                 f"  value   {self.formula}"]
        same = (self.value == self.x) or (math.isnan(self.value) and math.isnan(self.x))
        if same:
            lines.append("  exact   yes")
        elif math.isfinite(self.error):
            lines.append(f"  rounded error {self.error:+.6g} (relative {self.relative_error:+.3g})")
        elif not math.isfinite(self.x):  # NaN or inf with no code of its own here
            lines.append(f"  rounded {self.x!r} has no code here: it became {self.value!r}")
        else:
            lines.append(f"  rounded {self.x!r} has no finite code here: it became {self.value!r}")
        lines += [f"  note    {n}" for n in self.notes]
        return "\n".join(lines)

    __repr__ = __str__


def bit_string(code: int, fmt: "str | Format") -> str:
    """A code's bits with the sign, exponent and mantissa fields separated by spaces.

    >>> bit_string(0x35, "e4m3"), bit_string(0x81, "ue8m0"), bit_string(9, "int4")
    ('0 0110 101', '10000001', '1001')
    """
    f = get_format(fmt)
    raw = format(code, f"0{f.bits}b")
    if isinstance(f, IntFormat):
        return raw
    parts = ([raw[0]] if f.signed else []) + [raw[int(f.signed): int(f.signed) + f.exponent_bits]]
    if f.mantissa_bits:
        parts.append(raw[-f.mantissa_bits:])
    return " ".join(parts)


def fields(code: int, fmt: "str | Format") -> tuple[int, int, int]:
    """Split a code into its (sign, exponent field, mantissa field).

    >>> fields(0x35, "e4m3")
    (0, 6, 5)
    """
    f = get_format(fmt)
    if not isinstance(f, FloatFormat):
        raise TypeError(f"{f.name} is an integer format: it has no exponent or mantissa field")
    sign = (code >> (f.bits - 1)) & 1 if f.signed else 0
    mag = code & f.magnitude_mask
    return sign, mag >> f.mantissa_bits, mag & ((1 << f.mantissa_bits) - 1)


def code_kind(code: int, fmt: "str | Format") -> str:
    """What a code of a float format is: ``"zero"``, ``"subnormal"``, ``"normal"``, ``"inf"`` or ``"NaN"``.

    >>> [code_kind(c, "e4m3") for c in (0x00, 0x01, 0x38, 0x7F)]
    ['zero', 'subnormal', 'normal', 'NaN']
    """
    f = get_format(fmt)
    value = decode_one(code, f)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf"
    _, e, m = fields(code, f)
    if e == 0 and f.subnormals:
        return "zero" if m == 0 else "subnormal"
    return "normal"


def _float_kind_and_formula(code: int, f: FloatFormat) -> tuple[str, float, str]:
    s, e, m = fields(code, f)
    value = decode_one(code, f)
    kind = code_kind(code, f)
    if kind == "NaN":
        return "NaN", value, f"NaN ({f.nan_description})"
    if kind == "inf":
        return "inf", value, f"{'-' if s else '+'}inf (top exponent, mantissa 0)"
    mbits = f.mantissa_bits
    sign_part = f"(-1)^{s} x " if f.signed else ""
    if kind in ("zero", "subnormal"):
        formula = f"{sign_part}2^({1}-{f.bias}) x ({m}/{2**mbits}) = {value!r}" if mbits else f"{value!r}"
        return kind, value, formula
    frac = f" x (1 + {m}/{2**mbits})" if mbits else ""
    return "normal", value, f"{sign_part}2^({e}-{f.bias}){frac} = {value!r}"


def explain(x: float, fmt: "str | Format", *, saturate: bool = False) -> Explanation:
    """Encode one value and spell out its fields, its kind and the arithmetic that gives it back.

    NaN and inf inputs to formats without NaN or inf get a note saying what became of them (NaN
    turns into a zero or 0, inf into NaN or, saturating, +-max), and no note about rounding.

    >>> explain(500.0, "e4m3", saturate=True).value
    448.0
    >>> explain(float("nan"), "fp4").notes
    ('float4_e2m1fn has no NaN (every code is a number): a NaN input becomes -0.0, as ml_dtypes casts it',)
    """
    f = get_format(fmt)
    x = check_real("explain", "x", x, finite=False)
    saturate = check_bool("explain", "saturate", saturate)
    if isinstance(f, FloatFormat):
        x32 = _as_float32(x)
        code = int(encode(x32, f, saturate=saturate))
    else:
        code = int(encode(x, f, saturate=saturate))
    if isinstance(f, IntFormat):
        value = float(code - 2**f.bits if f.signed and code >= 2 ** (f.bits - 1) else code)
        return Explanation(x, f, code, int(value < 0), None, None, "integer", value,
                           f"{code} as {'two' + chr(39) + 's-complement' if f.signed else 'unsigned'} = {value!r}",
                           _nonfinite_notes(x, value, f, saturate) if not math.isfinite(x) else ())
    kind, value, formula = _float_kind_and_formula(code, f)
    s, e, m = fields(code, f)
    notes = _notes(float(x32), value, f, saturate)
    if math.isfinite(x) and not math.isfinite(float(x32)):
        notes = (f"{x!r} is beyond float32's range (max {float(np.finfo(np.float32).max)!r}); the codec works "
                 f"through float32, so it entered as {float(x32)!r}",) + notes
    return Explanation(x, f, code, s, e, m, kind, value, formula, notes)


def _as_float32(x: float) -> np.float32:
    """``x`` rounded to float32 (a value beyond its range becomes inf, without numpy's warning)."""
    with np.errstate(over="ignore"):
        return np.float32(x)


def _nonfinite_notes(x: float, value: float, f: Format, saturate: bool) -> tuple[str, ...]:
    """What became of a NaN or infinite ``x`` in a format without its own code for it (nothing where it has one)."""
    if math.isnan(x):
        if f.has_nan:
            return ()
        if isinstance(f, IntFormat):
            return (f"{f.name} has no NaN: a NaN input becomes {value!r}",)
        return (f"{f.name} has no NaN (every code is a number): a NaN input becomes {value!r}, as ml_dtypes casts it",)
    sign = "-" if x < 0 else "+"
    if x < 0 and not f.signed:
        if isinstance(f, IntFormat):
            return (f"{f.name} is unsigned: -inf saturates to its smallest value {value!r}",)
        return (f"{f.name} is unsigned: a negative input has no code, so it became " + ("NaN" if f.has_nan else "0"),)
    if isinstance(f, IntFormat):
        return (f"{f.name} has no inf: {sign}inf saturates to {value!r}",)
    if math.isinf(value):
        return ()  # the format's own infinity
    if math.isnan(value):
        return (f"{f.name} has no inf: {sign}inf becomes NaN, as an overflow does; saturate=True gives {sign}max",)
    if f.has_inf:
        return (f"saturate=True: {sign}inf saturates to {sign}max = {value!r} (without it, {sign}inf stays {sign}inf)",)
    if f.has_nan:
        return (f"{f.name} has no inf: with saturate=True {sign}inf saturates to {sign}max = {value!r} "
                "(without it, it becomes NaN)",)
    return (f"{f.name} has no inf or NaN: {sign}inf saturates to {sign}max = {value!r}",)


def _notes(x: float, value: float, f: FloatFormat, saturate: bool) -> tuple[str, ...]:
    """Plain-language remarks on what happened to ``x`` (overflow, underflow, ties, missing zero)."""
    if not math.isfinite(x):
        return _nonfinite_notes(x, value, f, saturate)
    notes = []
    if math.isfinite(x) and abs(x) > f.max and not math.isinf(value) and not math.isnan(value):
        notes.append(f"|x| is beyond max {f.max!r}: it " + ("saturated" if saturate or not f.has_nan
                                                             else "rounded down to max (within half an ulp)"))
    elif not f.signed and math.copysign(1, x) < 0 and (x != 0 or not f.has_zero):
        notes.append(f"{f.name} is unsigned: a negative input has no code, so it became " + ("NaN" if f.has_nan else "0"))
    elif x != 0 and math.isfinite(x) and (math.isnan(value) or math.isinf(value)):
        what = "inf" if math.isinf(value) else "NaN (this format has no inf)"
        notes.append(f"overflow: |x| rounds beyond max {f.max!r}, so it became {what}; saturate=True gives +-max")
    if x == 0 and not f.has_zero:
        notes.append(f"{f.name} has no zero (its smallest value is {f.min_subnormal!r}): zero becomes NaN")
    elif x != 0 and value == 0:
        notes.append(f"underflow: |x| is at most half the smallest subnormal {f.min_subnormal!r}, so it became 0")
    if x != 0 and math.isfinite(x) and math.isfinite(value) and value != x and f.bits <= 16:
        vals = f.values()
        i = int(np.searchsorted(vals, x))
        if 0 < i < len(vals) and vals[i] - x == x - vals[i - 1]:
            rule = ("round-to-nearest-even picked the even code" if f.mantissa_bits else
                    "with no mantissa bits the significand 1 is odd, so ties round up (as ml_dtypes does)")
            notes.append(f"a tie between {float(vals[i - 1])!r} and {float(vals[i])!r}: {rule}")
    if math.copysign(1, x) < 0 and x == 0 and f.signed and f.has_zero and not f.has_negative_zero:
        notes.append(f"{f.name} has no -0 (that code is its NaN), so -0 becomes +0")
    return tuple(notes)
