"""Reading a learner's number: one linear pass over at most 200 characters, exact arithmetic, units converted.

What is read (everything else is refused with a reason, never guessed):

- numbers: ``448``, ``4.48e2``, ``.5``, full-width or other decimal digits (``４４８``), thousands grouped in
  threes by a comma, an underscore, a space, a thin space or a narrow no-break space (``1,024``,
  ``524 288``, ``1_000``; after the point by spaces or underscores: ``0.001 953 125``); a comma
  followed by other than three digits (``1,5``) is refused, as are ``0x``/``0b``/``0o`` literals;
- arithmetic: ``+ - * / ^ **``, ``×`` ``·`` ``⋅`` for times, ``÷``, ``x`` between two operands
  (``1.75 x 2^8``), parentheses, superscript powers (``2⁸`` is 256, ``2⁻⁹``, ``1.75×2⁸``, ``10⁻³``),
  ``−`` as minus (``–`` too, but not between two numbers: ``4–5`` may be a range); powers bind tightest and to the right (``-2^2`` is -4, ``2^-9``);
- ``inf``, ``infinity``, ``∞``, ``无穷大`` (alone, with a sign) and ``nan``;
- a leading ``~``, ``≈``, ``about`` or ``约`` and one trailing ``.`` or ``。`` are ignored;
- a unit after the number (:func:`read_unit`): bytes and bits with SI and IEC prefixes, seconds,
  FLOP/s, FLOP per byte, decades, ``%``, ``×``/``x``/``倍`` as a factor, counting nouns.

Values are exact fractions along the way (no overflow, no underflow, no rounding until the end); a
result beyond float64 (``1e999``, ``10**400``) or a non-zero one closer to zero than any float64
(``1e-999``) is refused with a reason. Every refusal is an :class:`UnreadableAnswer` (a ValueError)
whose ``say(lang)`` gives the reason in English or Chinese.

>>> read_number("1.75×2⁸"), read_number("524 288"), read_number("2⁻⁹") == 2**-9
(Fraction(448, 1), Fraction(524288, 1), True)
>>> read_number("1e999")
Traceback (most recent call last):
...
fp8lab.interview.numbers.UnreadableAnswer: '1e999' is larger than any float64 (the largest is about 1.8e308)
"""

from __future__ import annotations

import math
import numbers
import unicodedata
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from .messages import say

__all__ = ["MAX_NUMBER_CHARS", "UnreadableAnswer", "Unit", "read_number", "read_quantity", "read_unit",
           "to_float", "describe"]

#: The longest numeric answer read (after stripping surrounding spaces); longer ones are refused up front.
MAX_NUMBER_CHARS = 200
_DECIMAL_LIMIT = 1000  # no value along the way beyond 10^±1000 (float64 ends near 10^308)
_BIT_LIMIT = 3400  # the same bound in bits (10^1000 is about 2^3322)
_SIZE_LIMIT = 200_000  # bits of numerator and denominator together: beyond, the form is too big to keep exact
_MAX_DEPTH = 40  # nested parentheses


class UnreadableAnswer(ValueError):
    """Why an answer could not be read: ``key`` names the reason (a message of ``messages.MESSAGES``).

    ``str(err)`` is the English reason; :meth:`say` gives it in either language.

    >>> err = UnreadableAnswer("two_points", text="1.2.3")
    >>> str(err), err.say("zh")
    ('1.2.3 has two decimal points', '1.2.3 有两个小数点')
    """

    def __init__(self, key: str, *, lang: str = "en", **params: object) -> None:
        self.key, self.params, self.lang = key, params, lang
        super().__init__(say(key, lang, **self._params(lang)))

    def _params(self, lang: str) -> dict[str, object]:
        return {k: (v.say(lang) if isinstance(v, UnreadableAnswer) else v) for k, v in self.params.items()}

    def say(self, lang: str = "en") -> str:
        """The reason in ``lang`` (``"en"`` or ``"zh"``).

        >>> UnreadableAnswer("division_by_zero", text="1/0").say("en")
        '1/0 divides by zero'
        """
        return say(self.key, lang, **self._params(lang))

    def localized(self, lang: str) -> "UnreadableAnswer":
        """The same refusal whose ``str`` is in ``lang``.

        >>> str(UnreadableAnswer("two_points", text="1.2.3").localized("zh"))
        '1.2.3 有两个小数点'
        """
        return UnreadableAnswer(self.key, lang=lang, **self.params)


def describe(text: object, limit: int = 40) -> str:
    """A short, printable rendering of (part of) an answer for a message: quoted, cut at ``limit`` characters.

    >>> describe("1,5"), describe("9" * 100)[-6:], describe(10**400)
    ("'1,5'", "9999…'", 'a number of about 10^400')
    """
    if isinstance(text, int) and not isinstance(text, bool) and abs(text).bit_length() > 200:
        return f"a number of about 10^{int(abs(text).bit_length() * math.log10(2))}"
    s = str(text) if not isinstance(text, str) else text
    cut = s[:limit] + ("…" if len(s) > limit else "")
    out = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in cut)
    return f"'{out}'"


# ----- characters -------------------------------------------------------------------------------

_SUPERSCRIPTS = {"⁰": "0", "¹": "1", "²": "2", "³": "3", "⁴": "4", "⁵": "5", "⁶": "6", "⁷": "7", "⁸": "8",
                 "⁹": "9", "⁺": "+", "⁻": "-"}
_SPACES = frozenset(" \t\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                    "\u202f\u205f\u3000")
_MINUS = frozenset("\u2212\u2012\u2013\ufe63\uff0d")
_DASHES = frozenset("\u2012\u2013")  # a minus sign before a number, a range between two: "1.5–2" is refused
_TIMES = frozenset("×✕✖⨉⨯⋅∙·")
_DIVIDE = frozenset("÷∕⁄")
_TIMES_WORDS = frozenset("×✕✖⨉⨯xX")  # a times sign at the end of an answer is a factor: "2×"
_INF_WORDS = {"inf": math.inf, "infinity": math.inf, "∞": math.inf, "无穷": math.inf, "无穷大": math.inf,
              "正无穷": math.inf, "nan": math.nan}
_APPROX_PREFIXES = ("approximately", "approx.", "approx", "about", "around", "roughly", "大约", "约为", "约",
                    "大概", "~", "≈", "≃", "∼")


def _is_word_char(c: str) -> bool:
    return c in "%‰∞" or unicodedata.category(c)[0] in "LM"


def _normalize_char(c: str) -> str:
    """One character mapped to the one character the scanner reads (superscripts are kept as they are)."""
    if c in _SUPERSCRIPTS or c.isascii():
        return c
    if c in _SPACES:
        return " "
    if c in _MINUS:
        return "-"
    if c in _TIMES:
        return "*"
    if c in _DIVIDE:
        return "/"
    if "\uff01" <= c <= "\uff5e":  # full-width ASCII
        return chr(ord(c) - 0xFEE0)
    d = unicodedata.decimal(c, None)
    if d is not None:
        return str(d)
    return c


def _strip(text: str) -> str:
    """Surrounding spaces, one leading "about" and one trailing full stop removed."""
    s = text.strip().strip("".join(_SPACES))
    low = s.casefold()
    for p in _APPROX_PREFIXES:
        if low.startswith(p):
            rest = s[len(p):]
            if p[0].isalpha() and p.isascii() and rest[:1].isalpha():  # "about" must be a word of its own
                continue
            s = rest.lstrip().lstrip("".join(_SPACES))
            break
    if s[-1:] in (".", "。", "．", "｡") and not (len(s) >= 2 and s[-2] == "."):
        s = s[:-1].rstrip().rstrip("".join(_SPACES))
    return s


# ----- scanning -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Tok:
    kind: str  # num, sup, op, (, ), word, end
    value: Any
    pos: int
    raw: str


_DIGITS = frozenset("0123456789")
_GROUP = frozenset(", _")
_HEX = frozenset("0123456789abcdefABCDEF")


def _run(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] in _DIGITS:
        i += 1
    return i


def _scan_number(s: str, i: int, text: str) -> tuple[Fraction, int]:
    """The number starting at ``s[i]`` (a digit, or a point before a digit) and where it ends."""
    n = len(s)
    j = _run(s, i)
    int_digits = s[i:j]
    sep = None
    if 1 <= len(int_digits) <= 3 and int_digits[0] != "0":
        while j < n and s[j] in _GROUP and (sep is None or s[j] == sep):
            k = _run(s, j + 1)
            if k - (j + 1) != 3:
                break
            sep = s[j]
            int_digits += s[j + 1:k]
            j = k
    if j < n and s[j] == "," and j + 1 < n and s[j + 1] in _DIGITS:
        raise UnreadableAnswer("comma_decimal", text=describe(text))
    if j < n and s[j] == "_":
        raise UnreadableAnswer("bad_grouping", text=describe(text))
    frac_digits = ""
    if j < n and s[j] == ".":
        k = _run(s, j + 1)
        frac_digits = s[j + 1:k]
        j = k
        group = len(frac_digits) == 3
        while group and j < n and s[j] in (" ", "_") and sep in (None, s[j]):
            k = _run(s, j + 1)
            size = k - (j + 1)
            if not 1 <= size <= 3:
                break
            frac_digits += s[j + 1:k]
            j = k
            group = size == 3
        if j < n and s[j] == "_":
            raise UnreadableAnswer("bad_grouping", text=describe(text))
        if j < n and s[j] == ".":
            raise UnreadableAnswer("two_points", text=describe(text))
        if j + 1 < n and s[j] == "," and s[j + 1] in _DIGITS:
            raise UnreadableAnswer("comma_decimal", text=describe(text))
    exponent = 0
    if j + 1 < n and s[j] in "eE":
        k = j + 1
        if s[k] in "+-":
            k += 1
        if k < n and s[k] in _DIGITS:
            m = _run(s, k)
            if m - k > 12:
                raise UnreadableAnswer("too_large" if s[j + 1] != "-" else "too_small", text=describe(text))
            exponent = int(s[j + 1:m])
            j = m
    if (int_digits == "0" and not frac_digits and exponent == 0 and j + 1 < n
            and ((s[j] in "xX" and s[j + 1] in _HEX) or (s[j] in "bB" and s[j + 1] in "01")
                 or (s[j] in "oO" and s[j + 1] in "01234567"))):
        raise UnreadableAnswer("radix_literal", text=describe(text))
    significant = (int_digits + frac_digits).lstrip("0")
    if not significant:
        return Fraction(0), j
    shift = exponent - len(frac_digits)
    magnitude = len(significant) - len(frac_digits) + exponent  # about log10 of the value
    if magnitude > _DECIMAL_LIMIT:
        raise UnreadableAnswer("too_large", text=describe(text))
    if magnitude < -_DECIMAL_LIMIT:
        raise UnreadableAnswer("too_small", text=describe(text))
    mantissa = int(int_digits + frac_digits)
    return (Fraction(mantissa * 10**shift) if shift >= 0 else Fraction(mantissa, 10**-shift)), j


def _scan(s: str, text: str) -> list[_Tok]:
    """Tokens of the normalized answer ``s`` (``text`` is what the learner typed, for messages); linear."""
    toks: list[_Tok] = []
    n, i = len(s), 0
    while i < n:
        c = s[i]
        if c == " ":
            i += 1
        elif c in _DIGITS or (c == "." and i + 1 < n and s[i + 1] in _DIGITS):
            value, j = _scan_number(s, i, text)
            toks.append(_Tok("num", value, i, s[i:j]))
            i = j
        elif c in _SUPERSCRIPTS:
            j = i
            sign = ""
            if s[j] in "⁺⁻":
                sign = _SUPERSCRIPTS[s[j]]
                j += 1
            k = j
            while k < n and s[k] in _SUPERSCRIPTS and s[k] not in "⁺⁻":
                k += 1
            if k == j:
                raise UnreadableAnswer("superscript_digits", text=describe(text))
            if k - j > 12:
                raise UnreadableAnswer("exponent_too_large", text=describe(text))
            toks.append(_Tok("sup", int(sign + "".join(_SUPERSCRIPTS[x] for x in s[j:k])), i, s[i:k]))
            i = k
        elif c == "*":
            if i + 1 < n and s[i + 1] == "*":
                toks.append(_Tok("op", "^", i, "**"))
                i += 2
            else:
                toks.append(_Tok("op", "*", i, text[i]))
                i += 1
        elif c in "+-/^":
            toks.append(_Tok("op", c, i, text[i]))
            i += 1
        elif c in "()":
            toks.append(_Tok(c, c, i, c))
            i += 1
        elif _is_word_char(c):
            j = i + 1
            while j < n and _is_word_char(s[j]) and s[j] != "∞":
                j += 1
            toks.append(_Tok("word", s[i:j], i, s[i:j]))
            i = j
        else:
            raise UnreadableAnswer("unexpected_char", char=describe(text[i]), code=f"{ord(text[i]):04X}",
                                   text=describe(text))
    toks.append(_Tok("end", None, n, ""))
    return toks


# ----- exact arithmetic ---------------------------------------------------------------------------

Value = "Fraction | float"  # a float only for inf and nan


def _checked(v: Fraction, text: str) -> Fraction:
    if v == 0:
        return v
    top, bottom = abs(v.numerator).bit_length(), v.denominator.bit_length()
    if top - bottom > _BIT_LIMIT:
        raise UnreadableAnswer("too_large", text=describe(text))
    if bottom - top > _BIT_LIMIT:
        raise UnreadableAnswer("too_small", text=describe(text))
    if top + bottom > _SIZE_LIMIT:
        raise UnreadableAnswer("exponent_too_large", text=describe(text))
    return v


def _log10(v: Fraction) -> float:
    return math.log10(abs(v.numerator)) - math.log10(v.denominator)


def _float_power(base: Fraction, exponent: Fraction, text: str) -> Fraction:
    """``base ** exponent`` (base > 0) where it cannot be exact: through float64, refused out of its range."""
    try:
        lg = float(exponent) * _log10(base)
    except OverflowError:
        lg = math.inf if (exponent > 0) == (base > 1) else -math.inf
    if lg > 308.3:
        raise UnreadableAnswer("too_large", text=describe(text))
    if lg < -330:
        raise UnreadableAnswer("too_small", text=describe(text))
    try:
        r = math.pow(float(base), float(exponent))
    except (OverflowError, ValueError):
        r = 10.0**lg
    if math.isinf(r):
        raise UnreadableAnswer("too_large", text=describe(text))
    if r == 0:
        raise UnreadableAnswer("too_small", text=describe(text))
    return Fraction(r)


def _power(base: "Fraction | float", exponent: "Fraction | float", text: str) -> Fraction:
    if isinstance(base, float) or isinstance(exponent, float):
        raise UnreadableAnswer("infinity_alone", text=describe(text))
    if exponent.denominator == 1:
        k = exponent.numerator
        if base == 0:
            if k < 0:
                raise UnreadableAnswer("division_by_zero", text=describe(text))
            return Fraction(1 if k == 0 else 0)
        if abs(base) == 1:
            return base if k % 2 else Fraction(1)
        if abs(k) > 10**6:
            raise UnreadableAnswer("exponent_too_large", text=describe(text))
        size = abs(k) * (abs(base.numerator).bit_length() + base.denominator.bit_length())
        lg = k * _log10(base)
        if lg > _DECIMAL_LIMIT:
            raise UnreadableAnswer("too_large", text=describe(text))
        if lg < -_DECIMAL_LIMIT:
            raise UnreadableAnswer("too_small", text=describe(text))
        if size <= _SIZE_LIMIT:
            return _checked(base**k, text)
        magnitude = _float_power(abs(base), exponent, text)
        return -magnitude if base < 0 and k % 2 else magnitude
    if base < 0:
        raise UnreadableAnswer("negative_root", text=describe(text))
    if base == 0:
        if exponent < 0:
            raise UnreadableAnswer("division_by_zero", text=describe(text))
        return Fraction(0)
    if base == 1:
        return Fraction(1)
    return _float_power(base, exponent, text)


def _binary(op: str, a: "Fraction | float", b: "Fraction | float", text: str) -> Fraction:
    if isinstance(a, float) or isinstance(b, float):
        raise UnreadableAnswer("infinity_alone", text=describe(text))
    if op == "+":
        return _checked(a + b, text)
    if op == "-":
        return _checked(a - b, text)
    if op == "*":
        return _checked(a * b, text)
    if b == 0:
        raise UnreadableAnswer("division_by_zero", text=describe(text))
    return _checked(a / b, text)


# ----- parsing ------------------------------------------------------------------------------------

class _Parser:
    """Recursive descent over the tokens: expr = term (+|- term)*; term = unary (*|/|x unary)*;
    unary = (+|-) unary | power; power = atom (superscript | ^ unary)?; atom = number | ( expr ) | inf."""

    def __init__(self, toks: list[_Tok], text: str) -> None:
        self.toks, self.i, self.text = toks, 0, text

    def peek(self, ahead: int = 0) -> _Tok:
        return self.toks[min(self.i + ahead, len(self.toks) - 1)]

    def take(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def starts_operand(self, t: _Tok) -> bool:
        return (t.kind in ("num", "(") or (t.kind == "op" and t.value in "+-")
                or (t.kind == "word" and t.value.casefold() in _INF_WORDS))

    def need_operand(self, after: _Tok) -> None:
        if self.peek().kind == "sup":
            raise UnreadableAnswer("superscript_base", text=describe(self.text))
        if not self.starts_operand(self.peek()):
            raise UnreadableAnswer("incomplete", text=describe(self.text), op=describe(after.raw))

    def parse(self) -> tuple["Fraction | float", int]:
        """The value and where the unit starts (the end of the text when there is none)."""
        if not self.starts_operand(self.peek()):
            if self.peek().kind == "sup":
                raise UnreadableAnswer("superscript_base", text=describe(self.text))
            raise UnreadableAnswer("no_number", text=describe(self.text))
        value = self.expr(0)
        t = self.peek()
        if t.kind == "end" or t.kind == "word" or (t.kind == "op" and t.raw in _TIMES_WORDS):
            return value, t.pos
        if t.kind == "num":
            raise UnreadableAnswer("two_numbers", text=describe(self.text))
        if t.kind == ")":
            raise UnreadableAnswer("unbalanced", text=describe(self.text))
        if t.kind == "(":
            raise UnreadableAnswer("implicit_product", text=describe(self.text))
        if t.kind == "sup":
            raise UnreadableAnswer("superscript_base", text=describe(self.text))
        raise UnreadableAnswer("incomplete", text=describe(self.text), op=describe(t.raw))

    def expr(self, depth: int) -> "Fraction | float":
        value = self.term(depth)
        while self.peek().kind == "op" and self.peek().value in "+-":
            op = self.take()
            if op.raw in _DASHES:
                raise UnreadableAnswer("dash_range", text=describe(self.text))
            self.need_operand(op)
            value = _binary(op.value, value, self.term(depth), self.text)
        return value

    def term(self, depth: int) -> "Fraction | float":
        value = self.unary(depth)
        while True:
            t = self.peek()
            times_word = t.kind == "word" and t.value in ("x", "X") and self.starts_operand(self.peek(1))
            if not (times_word or (t.kind == "op" and t.value in "*/")):
                return value
            if t.kind == "op" and not self.starts_operand(self.peek(1)):
                if t.raw in _TIMES_WORDS and self.peek(1).kind in ("end", "word"):
                    return value  # "2×": a factor, read as a unit
                self.take()
                self.need_operand(t)
            self.take()
            value = _binary("/" if t.value == "/" else "*", value, self.unary(depth), self.text)

    def unary(self, depth: int) -> "Fraction | float":
        negative = False
        while self.peek().kind == "op" and self.peek().value in "+-":
            t = self.take()
            self.need_operand(t)
            negative ^= t.value == "-"
        value = self.power(depth)
        return -value if negative else value

    def power(self, depth: int) -> "Fraction | float":
        base = self.atom(depth)
        t = self.peek()
        if t.kind == "sup":
            self.take()
            return _power(base, Fraction(t.value), self.text)
        if t.kind == "op" and t.value == "^":
            self.take()
            self.need_operand(t)
            return _power(base, self.unary(depth), self.text)
        return base

    def atom(self, depth: int) -> "Fraction | float":
        t = self.take()
        if t.kind == "num":
            return t.value
        if t.kind == "(":
            if depth >= _MAX_DEPTH:
                raise UnreadableAnswer("too_deep", text=describe(self.text))
            self.need_operand(t)
            value = self.expr(depth + 1)
            if self.take().kind != ")":
                raise UnreadableAnswer("unbalanced", text=describe(self.text))
            return value
        if t.kind == "word" and t.value.casefold() in _INF_WORDS:
            return _INF_WORDS[t.value.casefold()]
        raise UnreadableAnswer("no_number", text=describe(self.text))  # pragma: no cover - callers check first


def to_float(value: "Fraction | float | int", text: object = None) -> float:
    """An exact value as the nearest float64, refused (:class:`UnreadableAnswer`) when float64 cannot hold it.

    >>> to_float(Fraction(1, 512)), to_float(math.inf)
    (0.001953125, inf)
    >>> to_float(10**400)
    Traceback (most recent call last):
    ...
    fp8lab.interview.numbers.UnreadableAnswer: a number of about 10^400 is larger than any float64 (the largest is about 1.8e308)
    """
    shown = describe(value if text is None else text)
    if isinstance(value, float):
        return value
    try:
        f = float(value)  # int / int division: correctly rounded
    except OverflowError:
        raise UnreadableAnswer("too_large", text=shown) from None
    if f == 0 and value != 0:
        raise UnreadableAnswer("too_small", text=shown)
    return f


def _exact(value: Any) -> "Fraction | float":
    """A number given as a number: exact (ints, fractions, finite floats), inf/nan as floats; checked for range."""
    if isinstance(value, bool):
        raise TypeError("a response is a number or text, not a bool")
    if isinstance(value, float) or (isinstance(value, numbers.Real) and not isinstance(value, numbers.Rational)
                                    and not isinstance(value, Decimal)):
        f = float(value)
        if math.isinf(f) or math.isnan(f):
            return f
        return Fraction(f)
    if isinstance(value, Decimal):
        return Fraction(value) if value.is_finite() else (math.nan if value.is_nan() else float(value))
    if isinstance(value, numbers.Rational):
        top, bottom = abs(int(value.numerator)).bit_length(), int(value.denominator).bit_length()
        if top - bottom > _BIT_LIMIT:
            raise UnreadableAnswer("too_large", text=describe(int(value.numerator)))
        if bottom - top > _BIT_LIMIT and value != 0:
            raise UnreadableAnswer("too_small", text=describe(value))
        return Fraction(int(value.numerator), int(value.denominator))
    raise TypeError(f"a numeric response is text or a number, got {type(value).__name__}")


def read_quantity(text: "str | float | int") -> tuple["Fraction | float", str]:
    """The exact value of an answer and the unit written after it (``""`` when none), as typed.

    Numbers given as numbers have no unit. The value is a Fraction, or a float for inf and nan.

    >>> read_quantity("512 KiB"), read_quantity("2×"), read_quantity(" -inf ")
    ((Fraction(512, 1), 'KiB'), (Fraction(2, 1), '×'), (-inf, ''))
    """
    if not isinstance(text, str):
        value = _exact(text)
        to_float(value, text)
        return value, ""
    stripped = text.strip()
    if len(stripped) > MAX_NUMBER_CHARS:
        raise UnreadableAnswer("too_long", n=len(stripped), limit=MAX_NUMBER_CHARS)
    s = _strip(stripped)
    if not s:
        raise UnreadableAnswer("no_number", text=describe(text.strip()))
    normal = "".join(_normalize_char(c) for c in s)
    value, unit_at = _Parser(_scan(normal, s), s).parse()
    to_float(value, s[:unit_at].strip() or s)
    return value, s[unit_at:].strip()


def read_number(text: "str | float | int") -> "Fraction | float":
    """The exact value of a pure number (no unit), refused with a reason otherwise.

    >>> read_number("1/512"), read_number("10⁻³"), read_number("2^-2^2")
    (Fraction(1, 512), Fraction(1, 1000), Fraction(1, 16))
    """
    value, unit = read_quantity(text)
    if unit:
        raise UnreadableAnswer("unknown_unit", unit=describe(unit), expected=UnreadableAnswer("expected_pure"))
    return value


# ----- units --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Unit:
    """A unit: its canonical ``name``, the ``dimension`` it measures and its size in that dimension's base unit.

    Base units: ``1`` (a pure number), ``bit``, ``s``, ``flop``, ``decade``; ratios such as ``flop/s``.

    >>> read_unit("KiB")
    Unit(name='KiB', dimension='bit', factor=Fraction(8192, 1))
    """

    name: str
    dimension: str
    factor: Fraction

    def __truediv__(self, other: "Unit") -> "Unit":
        return Unit(f"{self.name}/{other.name}", f"{self.dimension}/{other.dimension}", self.factor / other.factor)


_ONE = Fraction(1)
_PURE = Unit("", "1", _ONE)
_NOUNS = {  # counting nouns: a pure number by another name
    "elements": ("element", "elements", "个元素", "元素", "个"), "values": ("value", "values", "个值", "值"),
    "codes": ("code", "codes", "个编码", "编码", "codepoints"), "tokens": ("token", "tokens", "个token", "词元", "个词元"),
    "sequences": ("sequence", "sequences", "seq", "seqs", "条", "条序列", "个序列", "序列"),
    "digits": ("digit", "digits", "个数字", "位数字", "位有效数字", "位十进制数字", "位十进制有效数字", "有效数字",
               "位有效十进制数字"),
    "scales": ("scale", "scales", "个缩放因子", "缩放因子"), "heads": ("head", "heads", "个头", "头"),
    "instructions": ("instruction", "instructions", "wgmma", "wgmmas", "条指令", "条wgmma", "次wgmma"),
    "integers": ("integer", "integers", "个整数"),
}
_SIMPLE: dict[str, Unit] = {}
for _name, _spellings in _NOUNS.items():
    for _sp in _spellings:
        _SIMPLE[_sp] = Unit(_name, "1", _ONE)
for _sp in ("x", "×", "✕", "✖", "⨉", "⨯", "times", "fold", "倍"):
    _SIMPLE[_sp] = Unit("×", "1", _ONE)
for _sp in ("%", "percent", "pct", "百分比"):
    _SIMPLE[_sp] = Unit("%", "1", Fraction(1, 100))
_SIMPLE["‰"] = Unit("‰", "1", Fraction(1, 1000))
for _sp in ("decade", "decades", "数量级", "个数量级", "十进制数量级", "个十进制数量级", "orderofmagnitude",
            "ordersofmagnitude"):
    _SIMPLE[_sp] = Unit("decades", "decade", _ONE)
for _names, _f, _canon in ((("s", "sec", "secs", "second", "seconds", "秒"), _ONE, "s"),
                           (("ms", "msec", "millisecond", "milliseconds", "毫秒"), Fraction(1, 10**3), "ms"),
                           (("us", "usec", "microsecond", "microseconds", "微秒"), Fraction(1, 10**6), "us"),
                           (("ns", "nsec", "nanosecond", "nanoseconds", "纳秒"), Fraction(1, 10**9), "ns"),
                           (("ps", "picosecond", "picoseconds", "皮秒"), Fraction(1, 10**12), "ps"),
                           (("min", "mins", "minute", "minutes", "分钟"), Fraction(60), "min"),
                           (("h", "hr", "hrs", "hour", "hours", "小时"), Fraction(3600), "h")):
    for _sp in _names:
        _SIMPLE[_sp] = Unit(_canon, "s", _f)
_BYTE_WORDS = ("b", "byte", "bytes", "字节", "个字节")
_BIT_WORDS = ("bit", "bits", "比特", "个比特", "位")
_DECIMAL_PREFIXES = {"k": ("k", 3), "m": ("M", 6), "g": ("G", 9), "t": ("T", 12), "p": ("P", 15), "e": ("E", 18)}
_BINARY_PREFIXES = {"ki": ("Ki", 10), "mi": ("Mi", 20), "gi": ("Gi", 30), "ti": ("Ti", 40), "pi": ("Pi", 50),
                    "ei": ("Ei", 60)}
for _sp in _BYTE_WORDS:
    _SIMPLE[_sp] = Unit("bytes", "bit", Fraction(8))
for _sp in _BIT_WORDS:
    _SIMPLE[_sp] = Unit("bits", "bit", _ONE)
for _p, (_shown, _e) in _DECIMAL_PREFIXES.items():
    _SIMPLE[_p + "b"] = Unit(f"{_shown}B", "bit", Fraction(8 * 10**_e))
    _SIMPLE[_p + "bit"] = _SIMPLE[_p + "bits"] = Unit(f"{_shown}bit", "bit", Fraction(10**_e))
    _SIMPLE[_p + "flops"] = Unit(f"{_shown}FLOPS", "flop/s", Fraction(10**_e))
    _SIMPLE[_p + "flop"] = Unit(f"{_shown}FLOP", "flop", Fraction(10**_e))
for _p, (_shown, _e) in _BINARY_PREFIXES.items():
    _SIMPLE[_p + "b"] = Unit(f"{_shown}B", "bit", Fraction(8 * 2**_e))
    _SIMPLE[_p + "bit"] = _SIMPLE[_p + "bits"] = Unit(f"{_shown}bit", "bit", Fraction(2**_e))
_PREFIX_WORDS = {"kilo": "k", "mega": "m", "giga": "g", "tera": "t", "peta": "p", "exa": "e", "kibi": "ki",
                 "mebi": "mi", "gibi": "gi", "tebi": "ti", "pebi": "pi", "exbi": "ei"}
for _p in (*_DECIMAL_PREFIXES, *_BINARY_PREFIXES):  # GByte, GBytes, gigabytes, gibibytes, teraflops
    _SIMPLE[_p + "byte"] = _SIMPLE[_p + "bytes"] = _SIMPLE[_p + "b"]
for _word, _p in _PREFIX_WORDS.items():
    for _base in ("byte", "bytes", "bit", "bits", "flops", "flop"):
        _symbol = _p + {"byte": "b", "bytes": "b"}.get(_base, _base)
        if _symbol in _SIMPLE:
            _SIMPLE[_word + _base] = _SIMPLE[_symbol]
_SIMPLE["flops"] = Unit("FLOPS", "flop/s", _ONE)
_SIMPLE["flop"] = Unit("FLOP", "flop", _ONE)
_SIMPLE["次浮点运算"] = Unit("FLOP", "flop", _ONE)
_RATIO_TOP = {"flops": _SIMPLE["flop"], **{p + "flops": _SIMPLE[p + "flop"] for p in _DECIMAL_PREFIXES}}  # FLOPs/byte


def _unit_key(text: str) -> str:
    s = unicodedata.normalize("NFKC", text).replace("μ", "u").replace("µ", "u")
    s = " ".join(s.split())
    s = s.replace(" per ", "/").replace("每", "/")
    return s.replace(" ", "").casefold()


def read_unit(text: str, context: str = "") -> Unit:
    """The unit a spelling names (case and spaces ignored, Chinese names too), or :class:`UnreadableAnswer`.

    ``context`` is the question's unit: it decides that ``位`` counts decimal digits on a ``digits``
    question (and bits elsewhere). Lowercase ``b`` is read as bytes, like ``B``: bits are ``bit``.

    >>> read_unit("TFLOP/s").factor == read_unit("TFLOPS").factor, read_unit("位", "digits").name
    (True, 'digits')
    """
    key = _unit_key(text)
    if not key:
        return _PURE
    if key == "位" and _unit_key(context) in _NOUNS["digits"]:
        return _SIMPLE["digits"]
    if key in _SIMPLE:
        return _SIMPLE[key]
    if key.count("/") == 1:
        top, bottom = key.split("/")
        a, b = _RATIO_TOP.get(top) or _SIMPLE.get(top), _SIMPLE.get(bottom)
        if a is not None and b is not None and a.dimension != "1" and b.dimension != "1":
            if a.dimension == "flop" and b.name == "s":
                return Unit(f"{a.name}/s", "flop/s", a.factor)
            return a / b
    raise UnreadableAnswer("unknown_unit_bare", unit=describe(text))
