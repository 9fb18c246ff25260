"""Numbers stated in a chapter's prose, and whether the chapter backs each one.

The course's rule: no number stands in the prose that a cell does not compute or a source does not
back. :func:`unbacked_numbers` enforces it on an *executed* notebook. A number in a markdown cell is
backed when

* the text output of an earlier code cell shows it (to the precision the prose writes it), or of
  the code cell right after the markdown cell (the cell the prose introduces: "add 4096 ones
  through an accumulator with 4 mantissa bits:"), or
* it is in the chapter's list of cited constants, ``metadata["fp8lab"]["cited_numbers"]``, a mapping
  from the number as written to its source (a paper and section, a spec, a library's default), or
* it sits in the chapter's opening cells (title, hook, goals: before the first code cell) and any
  output of the chapter shows it — the chapter computes what its hook asks, or
* it is in a myth's claim (a line ``> **Myth: ...``) and the next code cell, which checks the
  claim, prints it.

What counts as a number, and how it is read (:func:`numbers_in_prose`):

* ``448``, ``1,024`` (comma, thin or no-break space between groups of three), ``0.25``, ``1e-5``,
  ``3.39e38``, ``75%`` (also read as 0.75), ``8×`` or ``8x``, powers ``2^-9``, ``2^(-9)``,
  ``2**-9`` (exact values) and ``10^2.7`` (a power of ten with a fractional exponent states its
  exponent: 2.7 decades). Signs are ignored; values are compared by magnitude.
* A number is backed when an output, rounded to the digits the prose writes, equals it (``1.34``
  is backed by ``1.342``, not by ``1.3``; an exact power ``2^-9`` by ``0.00195``).
* Not numbers: parts of names and identifiers (``FP8``, ``E4M3``, ``H100``, ``LLaMA-3-70B``,
  ``sm_90``, ``Q1``, ``V3.1``), hexadecimal codes, version strings with two dots, section, chapter,
  table, figure and issue references (``§3.3``, ``section 4``, ``chapter 03``, ``#4``), arXiv
  identifiers, URLs and link targets, link texts of links to other chapters, list numbering,
  heading numbers, years after ``et al.`` or in parentheses, integers from 0 to 10 written plainly
  (they are words: "two formats", "3 mantissa bits"), exact powers of ten and the binary unit
  prefixes ``2^10``, ``2^20``, ``2^30``, ``2^40``, and inline code that is a call or a string
  (``fl.quantize(1e-5, "e4m3")``: an input, not a claim).
* Everything from a ``Sources`` heading on is a bibliography and is not checked.

>>> [(n.text, float(n.value)) for n in numbers_in_prose("From 2^-9 to 448, 75% of the time; see section 4.")]
[('2^-9', 0.001953125), ('448', 448.0), ('75%', 75.0)]
>>> pool = NumberPool.from_text("max 448.0, min subnormal 0.001953 (2^-9), 0.753")
>>> [pool.backs(n) for n in numbers_in_prose("448, 2^-9, 75%, 0.76, 65504")]
[True, True, True, False, False]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

__all__ = ["Number", "NumberPool", "Finding", "numbers_in_prose", "numbers_in_text", "unbacked_numbers",
           "cited_numbers", "output_text"]

# --- tokenising -------------------------------------------------------------------------------------

_GROUP = "[,\u202f\u2009\u00a0]"
_NUM = (r"(?:\d{1,3}(?:" + _GROUP + r"\d{3})+(?!\d)(?:\.\d+)?"  # 1,024 or 65 520 (thin space)
        r"|\d+(?:\.\d+)?)")
_EXP = r"[-−+]?\d+(?:\.\d+)?"
_TOKEN = re.compile(
    r"(?P<power>(?P<base>\d+(?:\.\d+)?)\s*(?:\^|\*\*)\s*(?:\((?P<pexp>" + _EXP + r")\)|(?P<exp>" + _EXP + r")))"
    r"|(?P<sci>\d+(?:\.\d+)?[eE][-−+]?\d+)"
    r"|(?P<num>" + _NUM + r")")
_SUFFIX = re.compile(r"\s?(%)|(×)(?!\s?\d)|(x)(?![A-Za-z0-9])")

_REFERENCE_WORDS = re.compile(
    r"(?:§\s*|\b(?:[Ss]ections?|[Cc]hapters?|[Tt]ables?|[Ff]igures?|[Ff]igs?\.|[Aa]ppendi(?:x|ces)|[Ii]ssues?|"
    r"[Pp]ull requests?|PRs?|[Ee]quations?|[Ee]qs?\.|[Ll]ines?|[Cc]ells?|[Pp]ages?|pp?\.|[Vv]ersions?|[Rr]evisions?|"
    r"[Rr]eleases?|[Ss]teps? \d+ of|[Rr]ules?|[Pp]arts?)\s+)$")
_REF_CONTINUATION = re.compile(r"^(?:\s*(?:,|and|or|to|–|-|&)\s*)$")


@dataclass(frozen=True)
class Number:
    """A number as written: its text, magnitude, the unit of its last written digit (0 when exact), and other readings.

    >>> n = numbers_in_prose("75%")[0]; (n.text, float(n.value), float(n.unit), [float(a) for a in n.alternatives])
    ('75%', 75.0, 1.0, [0.75])
    """

    text: str
    value: Decimal
    unit: Decimal
    alternatives: tuple[Decimal, ...] = ()
    start: int = 0

    def readings(self) -> list[tuple[Decimal, Decimal]]:
        """Every (value, unit) this number may mean: itself, and a percentage as a fraction.

        >>> [(float(v), float(u)) for v, u in numbers_in_prose("5%")[0].readings()]
        [(5.0, 1.0), (0.05, 0.01)]
        """
        out = [(self.value, self.unit)]
        for a in self.alternatives:
            out.append((a, self.unit / 100 if self.text.endswith("%") else self.unit))
        return out


def _decimal(text: str) -> tuple[Decimal, Decimal]:
    """Value and unit of the last digit of a plain or scientific number written ``text``."""
    d = Decimal(re.sub(_GROUP, "", text).replace("−", "-"))
    exp = d.as_tuple().exponent
    return abs(d), Decimal(1).scaleb(int(exp)) if isinstance(exp, int) else Decimal(0)


def _power(base: str, exp: str) -> tuple[Decimal, Decimal] | None:
    """An exact power of an integer base with an integer exponent, or None."""
    exp = exp.replace("−", "-")
    if "." in base or "." in exp:
        return None
    b, e = int(base), int(exp)
    if b == 0 or abs(e) > 400:
        return None
    return (Decimal(b) ** e if e >= 0 else Decimal(1) / (Decimal(b) ** -e)), Decimal(0)


def numbers_in_text(text: str) -> list[Number]:
    """Every number token in ``text`` (outputs: no exclusions), with its reading.

    >>> [n.text for n in numbers_in_text("float8_e4m3fn max 448.0 = 2^8 x 1.75, 1e-05, 12.5%")]
    ['8', '4', '3', '448.0', '2^8', '1.75', '1e-05', '12.5%']
    """
    out = []
    for m in _TOKEN.finditer(text):
        n = _number(m, text)
        if n is not None:
            out.append(n)
    return out


def _number(m: re.Match, text: str) -> Number | None:
    """The Number of one token match (None when the text is no number, such as a power with a huge exponent)."""
    suffix = _SUFFIX.match(text, m.end())
    suf = next((g for g in suffix.groups() if g), "") if suffix else ""
    written = m.group(0) + (suffix.group(0) if suffix else "")
    try:
        if m.group("power"):
            exp = m.group("pexp") or m.group("exp")
            exact = _power(m.group("base"), exp)
            if exact is not None:
                value, unit = exact
            elif m.group("base") == "10":  # 10^2.7: the claim is the exponent, in decades
                value, unit = _decimal(exp)
            else:
                return None
        elif m.group("sci"):
            value, unit = _decimal(m.group("sci"))
        else:
            value, unit = _decimal(m.group("num"))
    except InvalidOperation:
        return None
    alternatives = (value / 100,) if suf == "%" else ()
    return Number(written, value, unit, alternatives, m.start())


# --- prose: what is a claim -------------------------------------------------------------------------

_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_CODE_LIKE = re.compile(r"[A-Za-z_][\w.]*\(|[\"']|\bfl\.|\bnp\.|\btorch\.|\[|<<|>>|==|!=|\w=\S")
_REMOVE = [
    re.compile(r"\]\([^)]*\)"),                                   # link targets
    re.compile(r"<[^>]+>"),                                       # HTML tags
    re.compile(r"https?://\S+"),                                  # URLs
    re.compile(r"\barXiv[: ]\s*\d{4}\.\d{4,5}(?:v\d+)?", re.I),   # arXiv identifiers
    re.compile(r"\b0x[0-9A-Fa-f]+\b"),                            # hexadecimal codes
    re.compile(r"\bIEEE[ -]?754(?:-\d{4})?"),                      # the standard's name (and its year)
    re.compile(r"\bJESD\w*(?:\.\d+)?"),                            # JEDEC standard names
    re.compile(r"\b\d+(?:\.\d+){2,}\b"),                          # versions such as 0.9.6
    re.compile(r"#\d+"),                                          # issue and PR numbers
    re.compile(r"\bet al\.?,?\s+\(?\d{4}[a-z]?\)?"),              # (Ainslie et al. 2023)
    re.compile(r"\((?:19|20)\d{2}[a-z]?\)"),                       # (2022)
    re.compile(r"\b[A-Z][a-z]+,? (?:19|20)\d{2}[a-z]?\b"),            # Shazeer 2019
    re.compile(r"\b[\w./-]+\.(?:py|json|ipynb|md|txt|yml|toml|cc|h)\b"),  # file names
]
_CHAPTER_LINK = re.compile(r"\[([^\]]*)\]\((?!https?:)[^)]*\.ipynb[^)]*\)")
_HEADING_NUMBER = re.compile(r"^(\s*#+\s+)(?:\d+(?:\.\d+)*\.?|[A-Z]\.)\s", re.M)
_LIST_NUMBER = re.compile(r"^(\s*(?:>\s*)?)\d+\.\s", re.M)
_SOURCES = re.compile(r"^\s*#+\s+(?:\d+(?:\.\d+)*\.?\s+)?(?:Sources|References|Bibliography)\b", re.M | re.I)
#: values that are words or definitions rather than claims
_BINARY_PREFIXES = {Decimal(2) ** k for k in (10, 20, 30, 40)}


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def _strip(markdown: str) -> str:
    """The markdown with everything that is not prose replaced by spaces (positions kept)."""
    text = markdown
    m = _SOURCES.search(text)
    if m:
        text = text[:m.start()]
    for m in list(_CHAPTER_LINK.finditer(text)):
        text = _blank(text, m.start(), m.end())
    for m in list(_CODE_SPAN.finditer(text)):
        if _CODE_LIKE.search(m.group(2)):
            text = _blank(text, m.start(), m.end())
        else:  # bit patterns such as `0 1111 110` or `S.1111.111` are codes, not numbers
            for b in list(re.finditer(r"\b[A-Za-z]\.[01]+\.[01]+\b|(?<![\d.])[01]{3,}(?![\d.])", m.group(2))):
                text = _blank(text, m.start(2) + b.start(), m.start(2) + b.end())
    lines = []
    fenced = False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            lines.append(" " * len(line))
        elif (fenced or line.startswith("    ")) and _CODE_LIKE.search(line):
            lines.append(" " * len(line))
        else:
            lines.append(line)
    text = "\n".join(lines)
    for pattern in _REMOVE:
        for m in list(pattern.finditer(text)):
            text = _blank(text, m.start(), m.end())
    for pattern in (_HEADING_NUMBER, _LIST_NUMBER):
        for m in list(pattern.finditer(text)):
            text = _blank(text, m.start() + len(m.group(1)), m.end())
    return text


def _is_identifier_part(text: str, start: int, end: int) -> bool:
    """True when the token at text[start:end] is part of a name (FP8, E4M3, LLaMA-3-70B, 70B, sm_90, V3.1)."""
    before = text[max(0, start - 2):start]
    after = text[end:end + 1]
    if after and (after.isalpha() or after == "_") and after not in "x×":
        return True
    if after == "x" and text[end + 1:end + 2].isalpha():
        return True
    if before[-1:].isalpha() or before[-1:] in ("_", "."):
        if before[-1:] in ("x", "×") and before[:1].isdigit():  # 1x128, 16×16: shapes
            return False
        return True
    if before[-1:] in ("-", "/", ":") and before[:1].isalpha():  # LLaMA-3, V3/..., arXiv:...
        return True
    return False


def numbers_in_prose(markdown: str) -> list[Number]:
    """The numbers a markdown cell states as claims (see the module docstring for what is left out).

    >>> [n.text for n in numbers_in_prose("LLaMA-3-70B has 80 layers (section 9, §3.3); 1x128 tiles; FP8 is 8-bit.")]
    ['80', '128']
    >>> [n.text for n in numbers_in_prose("## 4. FP8\\n1. the cast rounds `fl.quantize(1e-5, 'e4m3')` to 0")]
    []
    """
    text = _strip(markdown)
    out: list[Number] = []
    last_ref_end = -1
    for m in _TOKEN.finditer(text):
        start, end = m.span()
        if _is_identifier_part(text, start, end):
            continue
        head = text[max(0, start - 40):start]
        if _REFERENCE_WORDS.search(head):
            last_ref_end = end
            continue
        if last_ref_end >= 0 and _REF_CONTINUATION.match(text[last_ref_end:start]):
            last_ref_end = end  # "sections 4 and 6", "§3.3 and §3.5"
            continue
        n = _number(m, text)
        if n is None:
            continue
        plain = not n.text.endswith(("%", "×", "x")) and n.unit == 1 and m.group("num")
        if plain and n.value <= 10:
            continue
        if m.group("power") and n.unit == 0 and (n.value in _BINARY_PREFIXES or m.group("base") == "10"):
            continue
        out.append(n)
    return out


# --- outputs and matching ---------------------------------------------------------------------------

def _round(value: Decimal, unit: Decimal, mode: str) -> Decimal | None:
    """``value`` rounded to a multiple of ``unit`` (None when that needs more digits than a context holds)."""
    with localcontext() as ctx:
        ctx.prec = 400
        try:
            return (value / unit).quantize(Decimal(1), rounding=mode) * unit
        except InvalidOperation:
            return None


class NumberPool:
    """The numbers some outputs show, for asking whether they back a prose number.

    >>> pool = NumberPool.from_text("1.3422 GB and 0.001953125")
    >>> [pool.backs(n) for n in numbers_in_prose("1.34, 1.3, 1.35, 2^-9")]
    [True, True, False, True]
    """

    def __init__(self, numbers: Iterable[Number] = ()) -> None:
        self._numbers: list[tuple[float, Decimal, Decimal]] = []
        self._arrays: tuple[np.ndarray, np.ndarray] | None = None
        self.add(numbers)

    @classmethod
    def from_text(cls, text: str) -> "NumberPool":
        """A pool of every number in ``text``.

        >>> len(NumberPool.from_text("1 2 3").numbers)
        3
        """
        return cls(numbers_in_text(text))

    @property
    def numbers(self) -> list[tuple[float, Decimal, Decimal]]:
        """(float value, exact value, unit) of every number in the pool.

        >>> NumberPool.from_text("0.5").numbers[0][0]
        0.5
        """
        return self._numbers

    def add(self, numbers: Iterable[Number]) -> None:
        """Add numbers (every reading of each).

        >>> p = NumberPool(); p.add(numbers_in_text("7")); len(p.numbers)
        1
        """
        for n in numbers:
            for value, unit in n.readings():
                self._numbers.append((float(value), value, unit))
        self._arrays = None

    def backs(self, n: Number) -> bool:
        """Whether a number of the pool, rounded to the digits ``n`` is written with, equals ``n``.

        An exact ``n`` (a power such as ``2^-9``) is also backed by an output that is ``n`` rounded
        to the output's own digits.

        >>> NumberPool.from_text("65520.0").backs(numbers_in_prose("65504")[0])
        False
        """
        if not self._numbers:
            return False
        if self._arrays is None:
            self._arrays = (np.array([v for v, _, _ in self._numbers]),
                            np.array([float(u) for _, _, u in self._numbers]))
        values, units = self._arrays
        modes = (ROUND_HALF_EVEN, ROUND_HALF_UP)
        for value, unit in n.readings():
            fv = float(value)
            with np.errstate(invalid="ignore", over="ignore"):
                near = np.abs(values - fv) <= np.maximum(units, float(unit)) + 1e-9 * abs(fv) + 1e-300
            for k in np.flatnonzero(near):
                _, oexact, ounit = self._numbers[k]
                if oexact == value:
                    return True
                if unit > 0 and any(_round(oexact, unit, mode) == value for mode in modes):
                    return True
                if unit == 0 and ounit > 0 and any(_round(value, ounit, mode) == oexact for mode in modes):
                    return True
        return False


def output_text(cell: Mapping[str, Any]) -> str:
    """The text a code cell showed: streams and the text of its results (HTML tags dropped), not errors.

    >>> output_text({"cell_type": "code", "outputs": [{"output_type": "stream", "name": "stdout", "text": "448\\n"}]})
    '448\\n'
    """
    parts = []
    for out in cell.get("outputs", []):
        kind = out.get("output_type")
        if kind == "stream":
            parts.append(_join(out.get("text", "")))
        elif kind in ("execute_result", "display_data"):
            data = out.get("data", {})
            if "text/plain" in data:
                parts.append(_join(data["text/plain"]))
            if "text/html" in data:
                parts.append(re.sub(r"<[^>]+>", " ", _join(data["text/html"])))
    return "\n".join(parts)


def _join(text: "str | Sequence[str]") -> str:
    return text if isinstance(text, str) else "".join(text)


def cited_numbers(nb: Mapping[str, Any]) -> dict[str, str]:
    """The chapter's cited constants: ``metadata["fp8lab"]["cited_numbers"]`` (number as written -> source).

    >>> cited_numbers({"metadata": {"fp8lab": {"cited_numbers": {"2000": "torch GradScaler growth_interval"}}}})
    {'2000': 'torch GradScaler growth_interval'}
    """
    return dict(nb.get("metadata", {}).get("fp8lab", {}).get("cited_numbers", {}))


@dataclass(frozen=True)
class Finding:
    """A prose number nothing backs: the markdown cell's index, the number as written, and its context.

    >>> str(Finding(3, "65504", "max 65504 in"))
    'cell 3: 65504  (...max 65504 in...)'
    """

    cell: int
    text: str
    context: str

    def __str__(self) -> str:
        return f"cell {self.cell}: {self.text}  (...{self.context}...)"


def _myth_claims(source: str) -> list[tuple[int, int]]:
    """Character ranges of the myth claims (blockquote lines opening with ``> **Myth``) in a markdown cell."""
    ranges, pos, inside = [], 0, False
    for line in source.split("\n"):
        quoted = line.lstrip().startswith(">")
        inside = quoted and (inside or bool(re.match(r"\s*>\s*\*\*Myth", line)))
        if inside:
            ranges.append((pos, pos + len(line)))
        pos += len(line) + 1
    return ranges


def unbacked_numbers(nb: Mapping[str, Any], cited: Mapping[str, str] | None = None) -> list[Finding]:
    """Every number in the markdown of an executed notebook that neither an output nor a citation backs.

    ``cited`` defaults to :func:`cited_numbers` of the notebook.

    >>> nb = {"cells": [
    ...     {"cell_type": "markdown", "source": "# Why 448?"},
    ...     {"cell_type": "code", "source": "", "outputs": [{"output_type": "stream", "text": "max 448.0"}]},
    ...     {"cell_type": "markdown", "source": "The max is 448, not 480; OCP wrote it in 2023."}],
    ...     "metadata": {"fp8lab": {"cited_numbers": {"2023": "OCP OFP8 spec, revision 1.0"}}}}
    >>> [f.text for f in unbacked_numbers(nb)]
    ['480']
    """
    cells = list(nb.get("cells", []))
    cited = cited_numbers(nb) if cited is None else dict(cited)
    cited_pool = NumberPool(n for key in cited for n in numbers_in_text(key))
    texts = [output_text(c) if c.get("cell_type") == "code" else "" for c in cells]
    whole = NumberPool(n for t in texts for n in numbers_in_text(t))
    first_code = next((i for i, c in enumerate(cells) if c.get("cell_type") == "code"), len(cells))
    sources_seen = False
    earlier = NumberPool()
    findings = []
    for i, cell in enumerate(cells):
        if cell.get("cell_type") == "code":
            earlier.add(numbers_in_text(texts[i]))
            continue
        if cell.get("cell_type") != "markdown" or sources_seen:
            continue
        source = _join(cell.get("source", ""))
        if _SOURCES.search(source):
            sources_seen = True
        nxt = next((j for j in range(i + 1, len(cells)) if cells[j].get("cell_type") == "code"), None)
        claims = _myth_claims(source)
        myth_pool = NumberPool.from_text(texts[nxt]) if nxt is not None and claims else None
        introduced = NumberPool.from_text(texts[i + 1]) if nxt == i + 1 else None
        for n in numbers_in_prose(source):
            if earlier.backs(n) or cited_pool.backs(n):
                continue
            if i < first_code and whole.backs(n):
                continue
            if introduced is not None and introduced.backs(n):
                continue
            if myth_pool is not None and any(a <= n.start < b for a, b in claims) and myth_pool.backs(n):
                continue
            context = re.sub(r"\s+", " ", source[max(0, n.start - 30):n.start + len(n.text) + 30])
            findings.append(Finding(i, n.text, context))
    return findings
