"""Grade a learner's answer to a bank question: one plain function shared by the terminal quiz, the widget and the tests.

- single / multiple: letters, case- and space-insensitive (``b``, ``B)``, ``a, c``, ``CA``), or a choice's text;
- numeric: a number or arithmetic in any usual notation (``448``, ``2^-9``, ``2⁻⁹``, ``1/512``, ``1,024``,
  ``524 288``, ``1.75×2⁸``, ``inf``; :mod:`fp8lab.interview.numbers` says exactly what is read), the unit
  optional and converted (``512 KiB`` for bytes, ``1.979 PFLOPS`` for TFLOPS); what cannot be read, an
  unknown unit (``448 apples``) or one that measures something else is refused with the reason, not graded;
- open: the learner compares with the model answer and says whether it was covered (``self_assessed``).

How close a numeric answer must be (:func:`accepted_error`): a prompt that states no precision
accepts any value correct to three significant figures, that is within half a unit of the third
significant figure of the true value a, ``|x - a| <= 0.5 * 10**(floor(log10|a|) - 2)``
(``0.00195`` for 0.001953125, ``447.6`` for 448). A question that needs more says so in its prompt
and in its ``precision`` field: ``"exact"`` (the stored tolerance only), ``"N significant"`` (half a
unit of the Nth significant figure), ``"N decimals"`` (half a unit of the Nth decimal). The stored
``tolerance`` / ``rel_tolerance`` applies too, whichever window is wider; a true value of 0 or inf is exact.

>>> from fp8lab.interview import get_question
>>> q = get_question("fp8-e4m3fn-max")
>>> grade(q, "1.75 * 2^8").correct, grade(q, "1.75×2⁸").correct, grade(q, "480").correct
(True, True, False)
>>> print(grade(q, "480", lang="zh").feedback)
不对。答案是 448。
>>> grade(get_question("fp8-e4m3-min-subnormal"), "1.95e-3").correct
True
"""

from __future__ import annotations

import html
import math
import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterable

from .bank import LANGS, Question, parse_precision
from .messages import header, name, say, source_name
from .numbers import UnreadableAnswer, describe, read_number, read_quantity, read_unit, to_float

__all__ = ["Grade", "grade", "read_response", "unit_line", "question_header", "parse_number", "split_unit",
           "same_unit", "format_number", "format_answer", "solution_parts", "solution_text", "solution_html", "question_text", "accepted_error",
           "UnreadableAnswer", "MAX_CHOICE_CHARS", "MAX_OPEN_CHARS"]

#: The longest choice answer read (letters, or a choice's text); numbers: ``numbers.MAX_NUMBER_CHARS``.
MAX_CHOICE_CHARS = 1000
#: The longest open answer kept.
MAX_OPEN_CHARS = 20_000


@dataclass(frozen=True)
class Grade:
    """The verdict on one response: ``correct`` is None for an open question not yet self-assessed.

    ``feedback`` is the verdict and the right answer in the chosen language; ``explanation`` the
    question's explanation in that language; ``response`` what was read (letters, a number in the
    question's unit, the text), None when the response could not be read (or was refused).

    >>> Grade(True, "Correct.", "448", "Why.", 448.0).correct
    True
    """

    correct: bool | None
    feedback: str
    answer: str
    explanation: str
    response: Any = None


# ----- numbers ------------------------------------------------------------------------------

def parse_number(text: "str | float | int") -> float:
    """A pure number from text (any notation :mod:`fp8lab.interview.numbers` reads) or a number, as a float.

    Raises :class:`UnreadableAnswer` (a ValueError) with the reason when it cannot be read.

    >>> parse_number("2^-9"), parse_number("1,024"), parse_number(" 1.75 × 2⁸ "), parse_number("-inf")
    (0.001953125, 1024.0, 448.0, -inf)
    >>> parse_number("__import__('os')")
    Traceback (most recent call last):
    ...
    fp8lab.interview.numbers.UnreadableAnswer: cannot read the character '_' (U+005F) in '__import__('os')'
    """
    return to_float(read_number(text), text)


def split_unit(text: str) -> tuple[float, str]:
    """The number and the unit written after it ("" when none), as typed.

    >>> split_unit("16 GiB"), split_unit("2^-9"), split_unit("8bits"), split_unit("inf")
    ((16.0, 'GiB'), (0.001953125, ''), (8.0, 'bits'), (inf, ''))
    """
    value, unit = read_quantity(text)
    return to_float(value, text), unit


def same_unit(a: str, b: str) -> bool:
    """Whether two spellings name the same unit (case, spaces, plurals and Chinese names ignored).

    >>> same_unit("GiB", "gib"), same_unit("bytes", "B"), same_unit("bits", "位"), same_unit("GiB", "GB")
    (True, True, True, False)
    """
    try:
        ua, ub = read_unit(a), read_unit(b)
    except UnreadableAnswer:
        return " ".join(unicodedata.normalize("NFKC", a).casefold().split()) == \
            " ".join(unicodedata.normalize("NFKC", b).casefold().split())
    return (ua.name, ua.dimension, ua.factor) == (ub.name, ub.dimension, ub.factor)


def format_number(x: "float | Fraction") -> str:
    """A number as a learner would write it: integers without ``.0``, others in full precision.

    >>> format_number(448.0), format_number(0.001953125), format_number(671088640.0), format_number(float("inf"))
    ('448', '0.001953125', '671088640', 'inf')
    """
    x = float(x)
    if math.isinf(x) or math.isnan(x):
        return repr(x)
    if x == int(x) and abs(x) < 1e16:
        return str(int(x))
    return repr(x)


# ----- how close is close enough --------------------------------------------------------------

def _floor_log10(a: Fraction) -> int:
    """floor(log10 |a|) for a != 0, exactly (no rounding trouble at powers of ten)."""
    k = math.floor(math.log10(abs(a.numerator)) - math.log10(a.denominator))
    while Fraction(10) ** k > abs(a):
        k -= 1
    while Fraction(10) ** (k + 1) <= abs(a):
        k += 1
    return k


def _windows(q: Question) -> tuple[Fraction, Fraction, Fraction]:
    """(the stored tolerance, the precision rule's half-width, a 1e-12 relative slack: the answer is a float)."""
    a = float(q.answer)
    if not math.isfinite(a):
        return Fraction(0), Fraction(0), Fraction(0)
    exact = Fraction(a)
    stored = max(Fraction(q.tolerance or 0.0), Fraction(q.rel_tolerance or 0.0) * abs(exact))
    slack = abs(exact) / 10**12
    kind, n = parse_precision(q.precision)
    if exact == 0 or kind == "exact":
        return stored, Fraction(0), slack
    if kind == "sig":
        return stored, Fraction(10) ** (_floor_log10(exact) - n + 1) / 2, slack
    return stored, Fraction(1, 10**n) / 2, slack


def accepted_error(q: Question) -> float:
    """How far from the true value a numeric answer may be, in the question's unit.

    The wider window of the precision rule (three significant figures unless the question states
    otherwise) and the stored tolerance, plus a relative 1e-12 for the float the true value is stored in.

    >>> from fp8lab.interview import get_question
    >>> accepted_error(get_question("fp8-e4m3-min-subnormal")), accepted_error(get_question("fb-fp16-max")) < 1e-7
    (5.000000001953125e-06, True)
    """
    if q.kind != "numeric":
        raise ValueError(f"{q.id} is a {q.kind} question: only numeric questions have a tolerance")
    stored, rule, slack = _windows(q)
    return float(max(stored, rule) + slack)


def _numeric_ok(q: Question, x: "Fraction | float") -> bool:
    a = float(q.answer)
    if isinstance(x, float) or not math.isfinite(a):
        return isinstance(x, float) and x == a  # inf only equals inf; nan never matches
    stored, rule, slack = _windows(q)
    return abs(x - Fraction(a)) <= max(stored, rule) + slack


def _short(x: "Fraction | float") -> str:
    text = format_number(x)
    return text if len(text) <= 12 else f"{float(x):.7g}"


def _rounded(a: float, kind: str, n: int) -> str:
    return f"{a:.{n}g}" if kind == "sig" else f"{a:.{n}f}"


def _tolerance_text(q: Question, lang: str) -> str:
    stored, rule, _ = _windows(q)
    a = float(q.answer)
    kind, n = parse_precision(q.precision)
    if rule > stored:
        example = _rounded(a, kind, n)
        if float(example) == a:  # the true value is already that short: nothing looser to announce
            return ""
        return say("within_sig" if kind == "sig" else "within_dp", lang, n=n, example=example)
    if q.tolerance and Fraction(q.tolerance) >= stored:
        return say("within", lang, tol=f"±{format_number(q.tolerance)}{(' ' + name('unit', q.unit, lang)) if q.unit else ''}")
    if q.rel_tolerance:
        return say("within", lang, tol=f"±{format_number(q.rel_tolerance * 100)}%")
    return ""


# ----- reading a response ---------------------------------------------------------------------

def _strip_letter(s: str) -> str:
    return unicodedata.normalize("NFKC", s).strip().strip(").:）。").strip().upper()


def _choice_by_text(q: Question, s: str) -> str | None:
    key = " ".join(unicodedata.normalize("NFKC", s).split()).casefold()
    for lang in LANGS:
        for letter, text in zip(q.letters, q.items("choices", lang)):
            if " ".join(unicodedata.normalize("NFKC", text).split()).casefold() == key:
                return letter
    return None


def _expected(q: Question) -> UnreadableAnswer:
    return UnreadableAnswer("expected_unit", unit=q.unit) if q.unit else UnreadableAnswer("expected_pure")


def _read_numeric(q: Question, response: Any) -> tuple["Fraction | float", "Fraction | float", str, bool]:
    """(value in the question's unit, value as typed, the unit as typed, whether a note on the unit is due)."""
    value, written = read_quantity(response)
    target = read_unit(q.unit or "")
    if not written:
        return value, value, "", False
    try:
        unit = read_unit(written, q.unit or "")
    except UnreadableAnswer:
        raise UnreadableAnswer("unknown_unit", unit=describe(written), expected=_expected(q)) from None
    if unit.dimension != target.dimension:
        raise UnreadableAnswer("incompatible_unit", unit=describe(written), expected=_expected(q))
    converted = value if isinstance(value, float) else value * unit.factor / target.factor
    if not isinstance(converted, float):
        to_float(converted, response)
    same = (unit.name, unit.factor) == (target.name, target.factor) or (unit.name == "×" and not q.unit)
    return converted, value, written, not same


def read_response(q: Question, response: Any, lang: str = "en") -> Any:
    """What a response says: a letter, a sorted tuple of letters, ``(number, unit)``, or the open answer's text.

    A numeric response is ``(number as typed, unit as typed)``; an unknown unit, or one that cannot be
    converted to the question's unit, is refused. Raises :class:`UnreadableAnswer` (a ValueError, its
    message in ``lang``) when the response cannot be read.

    >>> from fp8lab.interview import get_question
    >>> read_response(get_question("fp8-e4m3fn-max"), "448 ")
    (448.0, '')
    """
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
    valid = q.letters
    shown = "/".join(valid)
    if q.kind in ("single", "multiple") and isinstance(response, str) and len(response.strip()) > MAX_CHOICE_CHARS:
        raise UnreadableAnswer("too_long", lang=lang, n=len(response.strip()), limit=MAX_CHOICE_CHARS)
    if q.kind == "single":
        if not isinstance(response, str):
            raise TypeError(f"a single-choice response is a str, got {type(response).__name__}")
        letter = _strip_letter(response)
        if letter in valid:
            return letter
        by_text = _choice_by_text(q, response)
        if by_text:
            return by_text
        raise UnreadableAnswer("expect_letter", lang=lang, letters=shown)
    if q.kind == "multiple":
        if isinstance(response, str):
            by_text = _choice_by_text(q, response)
            if by_text:
                return (by_text,)
            parts = [p for p in re.split(r"[\s,;/、，；和]+", unicodedata.normalize("NFKC", response).strip()) if p]
            picked = []
            for p in parts:
                p = _strip_letter(p)
                if p in valid:
                    picked.append(p)
                elif p and all(c in valid for c in p):
                    picked += list(p)
                else:
                    raise UnreadableAnswer("expect_letters", lang=lang, letters=shown)
        elif isinstance(response, Iterable):
            picked = []
            for r in response:
                if not isinstance(r, str) or _strip_letter(r) not in valid:
                    raise UnreadableAnswer("expect_letters", lang=lang, letters=shown)
                picked.append(_strip_letter(r))
        else:
            raise TypeError(f"a multiple-choice response is a str or a list of letters, got {type(response).__name__}")
        if not picked:
            raise UnreadableAnswer("expect_letters", lang=lang, letters=shown)
        return tuple(sorted(set(picked)))
    if q.kind == "numeric":
        try:
            _, typed, unit, _ = _read_numeric(q, response)
        except UnreadableAnswer as err:
            raise err.localized(lang) from None
        return to_float(typed), unit
    if q.kind == "open":
        if response is None:
            return ""
        if not isinstance(response, str):
            raise TypeError(f"an open response is a str, got {type(response).__name__}")
        if len(response.strip()) > MAX_OPEN_CHARS:
            raise UnreadableAnswer("too_long", lang=lang, n=len(response.strip()), limit=MAX_OPEN_CHARS)
        return response.strip()
    raise ValueError(f"question {q.id} has an unknown kind {q.kind!r}")


def format_answer(q: Question, lang: str = "en") -> str:
    """The right answer as shown to a learner: ``B) text``, ``A, C``, ``448 GiB``, or the model answer.

    >>> from fp8lab.interview import get_question
    >>> format_answer(get_question("fp8-e4m3fn-max"))
    '448'
    """
    if q.kind == "single":
        i = q.letters.index(q.answer) if q.answer in q.letters else None
        return f"{q.answer}) {q.items('choices', lang)[i]}" if i is not None else str(q.answer)
    if q.kind == "multiple":
        return ("、" if lang == "zh" else ", ").join(q.answer or ())
    if q.kind == "numeric":
        text = format_number(q.answer)
        return f"{text} {name('unit', q.unit, lang)}" if q.unit else text
    return q.text("model_answer", lang)


def grade(question: Question, response: Any, lang: str = "en", *, self_assessed: bool | None = None) -> Grade:
    """Grade ``response`` to ``question``; feedback in ``lang`` (``"en"`` or ``"zh"``).

    Open questions are self-assessed: ``correct`` is ``self_assessed`` (None until the learner says).
    A response that cannot be read (or is refused: too long, an unknown unit, beyond float64) gets
    ``correct=False``, ``response=None`` and the reason, without the answer.

    >>> from fp8lab.interview import get_question
    >>> g = grade(get_question("fp8-e4m3fn-max"), "0x7E")
    >>> g.correct, g.response
    (False, None)
    >>> grade(get_question("kv-llama2-7b-per-token"), "512 KiB").correct
    True
    """
    if not isinstance(question, Question):
        raise TypeError(f"grade takes a Question, got {type(question).__name__}")
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
    answer = format_answer(question, lang)
    explanation = question.text("explanation", lang)
    try:
        read = read_response(question, response, lang)
        numeric = _read_numeric(question, response) if question.kind == "numeric" else None
    except ValueError as err:
        reason = err.say(lang) if isinstance(err, UnreadableAnswer) else str(err)
        return Grade(False, say("unreadable", lang, reason=reason), answer, explanation, None)  # no spoiler
    if question.kind == "open":
        if self_assessed is not None and not isinstance(self_assessed, bool):
            raise TypeError(f"self_assessed is True, False or None, got {self_assessed!r}")
        head = {None: say("self_assess", lang), True: say("self_yes", lang), False: say("self_no", lang)}[self_assessed]
        return Grade(self_assessed, head, answer, explanation, read)
    if numeric is not None:
        x, typed, unit, note = numeric
        ok = _numeric_ok(question, x)
        notes = []
        if note:
            given = " ".join(response.split()) if isinstance(response, str) else f"{format_number(typed)} {unit}"
            notes.append(say("converted", lang, given=given,
                             value=f"{_short(x)} {name('unit', question.unit or '', lang)}".strip()))
        tol = _tolerance_text(question, lang)
        shown = say("answer_is", lang, answer=answer) + (f" {tol}" if tol and lang == "en" else tol)
        return Grade(ok, _join(lang, say("correct" if ok else "wrong", lang), *notes, shown), answer, explanation,
                     to_float(x))
    ok = read == (question.answer if question.kind == "single" else tuple(question.answer or ()))
    return Grade(ok, _join(lang, say("correct" if ok else "wrong", lang), say("answer_is", lang, answer=answer)),
                 answer, explanation, read)


def _join(lang: str, *sentences: str) -> str:
    return ("" if lang == "zh" else " ").join(sentences)


# ----- showing a question and its solution ----------------------------------------------------

def question_text(q: Question, lang: str = "en") -> str:
    """The prompt and, for choice questions, the lettered choices, as plain text.

    >>> from fp8lab.interview import get_question
    >>> question_text(get_question("fp8-e4m3fn-max"))[:30]
    'What is the largest finite val'
    """
    lines = [q.text("prompt", lang)]
    for letter, choice in zip(q.letters, q.items("choices", lang)):
        lines.append(f"  {letter}) {choice}")
    if q.kind == "numeric" and q.unit:
        lines.append(f"  {unit_line(q, lang)}")
    return "\n".join(lines)


def unit_line(q: Question, lang: str = "en") -> str:
    """The note under a numeric prompt naming its unit: ``(unit: bytes)``, ``（单位：字节）``.

    >>> from fp8lab.interview import get_question
    >>> unit_line(get_question("kv-llama2-7b-per-token"), "zh")
    '（单位：字节）'
    """
    unit = name("unit", q.unit or "", lang)
    return f"（{say('unit', lang)}：{unit}）" if lang == "zh" else f"({say('unit', lang)}: {unit})"


def question_header(q: Question, lang: str = "en") -> str:
    """The line above a question: topic · kind · difficulty in ``lang`` (never the id, which can hint at the answer).

    >>> from fp8lab.interview import get_question
    >>> question_header(get_question("fp8-e4m3fn-max"), "zh")
    'FP8 · 数值 · 易'
    """
    return header(q.topic, q.kind, q.difficulty, lang)


def solution_parts(q: Question, lang: str = "en") -> list[tuple[str, "str | tuple[str, ...]"]]:
    """The solution as labelled parts: answer, explanation, open-question parts, and a myth's claim and correction.

    >>> from fp8lab.interview import get_question
    >>> [label for label, _ in solution_parts(get_question("fp8-e4m3fn-max"))]
    ['The answer is 448.', 'Why']
    """
    parts: list[tuple[str, str | tuple[str, ...]]] = []
    if q.kind == "open":
        parts.append((say("model_answer", lang), q.text("model_answer", lang)))
        parts.append((say("points", lang), q.items("points", lang)))
        parts.append((say("weak_answer", lang), q.text("weak_answer", lang)))
    else:
        parts.append((say("answer_is", lang, answer=format_answer(q, lang)), ""))
    parts.append((say("explanation", lang), q.text("explanation", lang)))
    if q.is_myth:
        source = source_name(q.claim_source or "", lang)
        where = f"（{say('claim_source', lang)}：{source}）" if lang == "zh" else f" ({say('claim_source', lang)}: {source})"
        parts.append((say("claim", lang), f"\u201c{q.text('claim', lang)}\u201d{where}"))
        parts.append((say("correction", lang), q.text("correction", lang)))
    return parts


def solution_text(q: Question, lang: str = "en") -> str:
    """The solution as plain text for the terminal.

    >>> from fp8lab.interview import get_question
    >>> print(solution_text(get_question("fp8-e4m3fn-max")).splitlines()[0])
    The answer is 448.
    """
    lines = []
    colon = say("colon", lang)
    for label, body in solution_parts(q, lang):
        if isinstance(body, tuple):
            lines.append(f"{label}{colon.rstrip()}")
            lines += [f"  - {b}" for b in body]
        elif body:
            lines.append(f"{label}{colon}{body}")
        else:
            lines.append(label)
    return "\n".join(lines)


def solution_html(q: Question, lang: str = "en") -> str:
    """The solution as HTML (for the widget and the flash cards).

    >>> from fp8lab.interview import get_question
    >>> solution_html(get_question("fp8-e4m3fn-max"))[:30]
    '<p><b>The answer is 448.</b></'
    """
    out = []
    for label, body in solution_parts(q, lang):
        if isinstance(body, tuple):
            items = "".join(f"<li>{html.escape(b)}</li>" for b in body)
            out.append(f"<p><b>{html.escape(label)}</b></p><ul>{items}</ul>")
        elif body:
            out.append(f"<p><b>{html.escape(label)}{say('colon', lang).rstrip()}</b> {html.escape(body)}</p>")
        else:
            out.append(f"<p><b>{html.escape(label)}</b></p>")
    return "".join(out)
