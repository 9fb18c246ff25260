"""Grade a learner's answer to a bank question: one plain function shared by the terminal quiz, the widget and the tests.

- single / multiple: letters, case- and space-insensitive (``b``, ``B)``, ``a, c``, ``CA``), or a choice's text;
- numeric: a number or simple arithmetic (``448``, ``2^-9``, ``1/512``, ``1,024``, ``inf``), the unit
  optional; right when within the question's ``tolerance`` (absolute) or ``rel_tolerance``;
- open: the learner compares with the model answer and says whether it was covered (``self_assessed``).

>>> from fp8lab.interview import get_question
>>> q = get_question("fp8-e4m3fn-max")
>>> grade(q, "1.75 * 2^8").correct, grade(q, "480").correct
(True, False)
>>> print(grade(q, "480", lang="zh").feedback)
不对。答案是 448。
"""

from __future__ import annotations

import ast
import html
import math
import operator
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Iterable

from .bank import LANGS, Question
from .messages import say

__all__ = ["Grade", "grade", "read_response", "parse_number", "split_unit", "same_unit", "format_number",
           "format_answer", "solution_parts", "solution_text", "solution_html", "question_text"]


@dataclass(frozen=True)
class Grade:
    """The verdict on one response: ``correct`` is None for an open question not yet self-assessed.

    ``feedback`` is the verdict and the right answer in the chosen language; ``explanation`` the
    question's explanation in that language; ``response`` what was read (letters, a number, the text),
    None when the response could not be read.
    """

    correct: bool | None
    feedback: str
    answer: str
    explanation: str
    response: Any = None


# ----- numbers ------------------------------------------------------------------------------

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.Pow: operator.pow}
_NAMES = {"inf": math.inf, "infinity": math.inf, "nan": math.nan}


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id.lower() in _NAMES:
        return _NAMES[node.id.lower()]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a, b = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and (abs(b) > 2000 or abs(a) > 1e300):
            raise ValueError("exponent too large")
        try:
            return float(_OPS[type(node.op)](a, b))
        except (ZeroDivisionError, OverflowError) as err:
            raise ValueError(str(err)) from None
    raise ValueError("only numbers and + - * / ^ ( ) are understood")


def _normalize(text: str) -> str:
    s = unicodedata.normalize("NFKC", text).strip()
    s = s.replace("\u2212", "-").replace("×", "*").replace("·", "*").replace("∞", "inf").replace("^", "**")
    s = re.sub(r"(?<=[\d)])\s+[xX]\s+(?=[\d(])", "*", s)  # 1.75 x 2^8
    s = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", s)  # thousands separators: 1,024 and 671,088,640
    return s


def parse_number(text: "str | float | int") -> float:
    """A number from text: decimals, exponents, ``2^-9``, ``2**-9``, ``1/512``, ``1,024``, ``inf``, ``1.75 x 2^8``.

    >>> parse_number("2^-9"), parse_number("1,024"), parse_number(" 1.75 × 2^8 "), parse_number("-inf")
    (0.001953125, 1024.0, 448.0, -inf)
    >>> parse_number("__import__('os')")
    Traceback (most recent call last):
    ...
    ValueError: not a number: "__import__('os')"
    """
    if isinstance(text, bool):
        raise TypeError("a response is a number or text, not a bool")
    if isinstance(text, (int, float)):
        return float(text)
    if not isinstance(text, str):
        raise TypeError(f"a numeric response is text or a number, got {type(text).__name__}")
    s = _normalize(text)
    if not s or len(s) > 200 or re.search(r"0[xXbBoO_]|\d_", s):  # no hex/binary/octal literals, no 1_000
        raise ValueError(f'not a number: "{text}"')
    try:
        return _eval(ast.parse(s, mode="eval"))
    except (SyntaxError, ValueError, RecursionError):
        raise ValueError(f'not a number: "{text}"') from None


#: Spellings of one unit (lowercase, no spaces) -> its canonical name.
_UNIT_ALIASES = {
    "b": "bytes", "byte": "bytes", "bytes": "bytes", "字节": "bytes", "个字节": "bytes",
    "bit": "bits", "bits": "bits", "位": "bits", "比特": "bits",
    "decade": "decades", "decades": "decades", "数量级": "decades", "个数量级": "decades",
    "db": "db", "分贝": "db", "%": "%", "percent": "%", "x": "x", "times": "x", "倍": "x",
    "tflop/s": "tflops", "tflops": "tflops", "gb/s": "gb/s", "tb/s": "tb/s",
    "element": "elements", "elements": "elements", "个元素": "elements", "个": "elements",
    "value": "values", "values": "values", "个值": "values", "code": "codes", "codes": "codes", "个编码": "codes",
}


def _canon_unit(unit: str) -> str:
    u = unicodedata.normalize("NFKC", unit).strip().lower().replace(" ", "")
    return _UNIT_ALIASES.get(u, u)


def same_unit(a: str, b: str) -> bool:
    """Whether two spellings name the same unit (case, spaces, plurals and Chinese names ignored).

    >>> same_unit("GiB", "gib"), same_unit("bytes", "B"), same_unit("bits", "位"), same_unit("GiB", "GB")
    (True, True, True, False)
    """
    return _canon_unit(a) == _canon_unit(b)


_UNIT_TAIL = re.compile(r"(.*?[\d).a-zA-Z])\s*([A-Za-z%µ\u4e00-\u9fff][A-Za-z%µ/\u4e00-\u9fff ]*)")


def split_unit(text: str) -> tuple[float, str]:
    """The number and the unit written after it ("" when none).

    >>> split_unit("16 GiB"), split_unit("2^-9"), split_unit("8bits"), split_unit("inf")
    ((16.0, 'GiB'), (0.001953125, ''), (8.0, 'bits'), (inf, ''))
    """
    try:
        return parse_number(text), ""
    except ValueError:
        pass
    m = _UNIT_TAIL.fullmatch(_normalize(text).replace("**", "^"))
    if m:
        try:
            return parse_number(m.group(1)), m.group(2).strip()
        except ValueError:
            pass
    raise ValueError(f'not a number: "{text}"')


def format_number(x: float) -> str:
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


def read_response(q: Question, response: Any, lang: str = "en") -> Any:
    """What a response says: a letter, a sorted tuple of letters, ``(number, unit)``, or the open answer's text.

    Raises ValueError (with a message in ``lang``) when the response cannot be read.

    >>> from fp8lab.interview import get_question
    >>> read_response(get_question("fp8-e4m3fn-max"), "448 ")
    (448.0, '')
    """
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
    valid = q.letters
    shown = "/".join(valid)
    if q.kind == "single":
        if not isinstance(response, str):
            raise TypeError(f"a single-choice response is a str, got {type(response).__name__}")
        letter = _strip_letter(response)
        if letter in valid:
            return letter
        by_text = _choice_by_text(q, response)
        if by_text:
            return by_text
        raise ValueError(say("expect_letter", lang, letters=shown))
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
                    raise ValueError(say("expect_letters", lang, letters=shown))
        elif isinstance(response, Iterable):
            picked = []
            for r in response:
                if not isinstance(r, str) or _strip_letter(r) not in valid:
                    raise ValueError(say("expect_letters", lang, letters=shown))
                picked.append(_strip_letter(r))
        else:
            raise TypeError(f"a multiple-choice response is a str or a list of letters, got {type(response).__name__}")
        if not picked:
            raise ValueError(say("expect_letters", lang, letters=shown))
        return tuple(sorted(set(picked)))
    if q.kind == "numeric":
        unit = f" {q.unit}" if q.unit else ""
        try:
            return split_unit(response) if isinstance(response, str) else (parse_number(response), "")
        except ValueError:
            raise ValueError(say("expect_number", lang, unit=unit)) from None
    if q.kind == "open":
        if response is None:
            return ""
        if not isinstance(response, str):
            raise TypeError(f"an open response is a str, got {type(response).__name__}")
        return response.strip()
    raise ValueError(f"question {q.id} has an unknown kind {q.kind!r}")


def _numeric_ok(q: Question, x: float) -> bool:
    a = float(q.answer)
    if math.isinf(a) or math.isinf(x) or math.isnan(x):
        return a == x
    tol = max(q.tolerance or 0.0, (q.rel_tolerance or 0.0) * abs(a), 1e-12 * abs(a))
    return abs(x - a) <= tol


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
        return ", ".join(q.answer or ())
    if q.kind == "numeric":
        text = format_number(q.answer)
        return f"{text} {q.unit}" if q.unit else text
    return q.text("model_answer", lang)


def _tolerance_text(q: Question) -> str:
    if q.tolerance:
        return f"±{format_number(q.tolerance)}{(' ' + q.unit) if q.unit else ''}"
    if q.rel_tolerance:
        return f"±{format_number(q.rel_tolerance * 100)}%"
    return ""


def grade(question: Question, response: Any, lang: str = "en", *, self_assessed: bool | None = None) -> Grade:
    """Grade ``response`` to ``question``; feedback in ``lang`` (``"en"`` or ``"zh"``).

    Open questions are self-assessed: ``correct`` is ``self_assessed`` (None until the learner says).

    >>> from fp8lab.interview import get_question
    >>> g = grade(get_question("fp8-e4m3fn-max"), "0x7E")
    >>> g.correct, g.response
    (False, None)
    """
    if not isinstance(question, Question):
        raise TypeError(f"grade takes a Question, got {type(question).__name__}")
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
    answer = format_answer(question, lang)
    explanation = question.text("explanation", lang)
    try:
        read = read_response(question, response, lang)
    except ValueError as err:
        return Grade(False, say("unreadable", lang, reason=err), answer, explanation, None)  # no spoiler: try again
    if question.kind == "open":
        if self_assessed is not None and not isinstance(self_assessed, bool):
            raise TypeError(f"self_assessed is True, False or None, got {self_assessed!r}")
        head = {None: say("self_assess", lang), True: say("self_yes", lang), False: say("self_no", lang)}[self_assessed]
        return Grade(self_assessed, head, answer, explanation, read)
    if question.kind == "numeric":
        x, unit = read
        notes = []
        ok = _numeric_ok(question, x)
        if unit and question.unit and not same_unit(unit, question.unit):
            ok = False
            notes.append(say("unit_mismatch", lang, unit=question.unit, got=unit))
        tol = _tolerance_text(question)
        shown = say("answer_is", lang, answer=answer) + (f" {say('within', lang, tol=tol)}" if tol else "")
        return Grade(ok, _join(lang, say("correct" if ok else "wrong", lang), *notes, shown), answer, explanation, x)
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
        lines.append(f"  ({say('unit', lang)}: {q.unit})")
    return "\n".join(lines)


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
        parts.append((say("claim", lang), f"\u201c{q.text('claim', lang)}\u201d ({say('claim_source', lang)}: "
                      f"{q.claim_source})"))
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
