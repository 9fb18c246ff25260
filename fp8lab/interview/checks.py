"""Run each question's ``check`` (Python with ``fl``, ``np`` and ``math`` in scope) and compare it with the stored answer.

A check is one expression, or a block that assigns ``result``. What the result must equal depends
on the kind (see ``data/README.md``): the numeric answer (relative ``check_tol``, default 1e-9),
one boolean per choice, a value among ``choice_values``, or an open question's ``check_expect``.
torch is imported only for checks whose source mentions it.

>>> run_check("fl.get_format('e4m3').max")
448.0
>>> verify([get_question("fp8-e4m3fn-max")])
[]
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Iterable, Sequence

from .bank import Problem, Question, get_question, letters, read_bank, schema_problems

__all__ = ["run_check", "check_question", "verify", "same_value", "DEFAULT_CHECK_TOL"]

#: Relative tolerance between a check's result and a stored number when the question sets no ``check_tol``.
DEFAULT_CHECK_TOL = 1e-9


def _scope(source: str) -> dict[str, Any]:
    import numpy as np

    import fp8lab

    scope: dict[str, Any] = {"fl": fp8lab, "np": np, "math": math, "__builtins__": __builtins__}
    if "torch" in source:
        import torch

        scope["torch"] = torch
    return scope


def run_check(source: str) -> Any:
    """Evaluate a check: the value of a single expression, or ``result`` after running a block.

    >>> run_check("x = fl.get_format('e5m2')\\nresult = x.max / x.min_normal")
    939524096.0
    """
    if not isinstance(source, str) or not source.strip():
        raise ValueError("a check is a non-empty string of Python source")
    scope = _scope(source)
    try:
        code = compile(source.strip(), "<check>", "eval")
    except SyntaxError:
        code = None
    if code is not None:
        return _plain(eval(code, scope))  # noqa: S307 - the bank's own, reviewed source
    exec(compile(source, "<check>", "exec"), scope)  # noqa: S102
    if "result" not in scope:
        raise ValueError("a check block must assign `result`")
    return _plain(scope["result"])


def _plain(value: Any) -> Any:
    """numpy / torch scalars and arrays become Python numbers and lists."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return value.tolist()
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def same_value(a: Any, b: Any, rel_tol: float = DEFAULT_CHECK_TOL) -> bool:
    """Whether two check values agree: numbers within ``rel_tol`` (NaN equals NaN), sequences elementwise.

    >>> same_value(448, 448.0000001, 1e-6), same_value(float("nan"), float("nan")), same_value([1, "a"], (1, "a"))
    (True, True, True)
    >>> same_value(True, 1)
    False
    """
    a, b = _plain(a), _plain(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or math.isclose(a, b, rel_tol=rel_tol, abs_tol=0.0)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y, rel_tol) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def _choice_letters(q: Question, result: Any, tol: float) -> tuple[set[str] | None, str | None]:
    """The letters a choice check's result selects, or an error message."""
    n = len(q.letters)
    if q.choice_values is not None:
        values = list(q.choice_values)
        picks = result if q.kind == "multiple" and isinstance(result, list) else [result]
        chosen: set[str] = set()
        for r in picks:
            hits = [q.letters[i] for i, v in enumerate(values) if same_value(r, v, tol)]
            if len(hits) != 1:
                return None, (f"check computed {_show(r)}, which matches {len(hits)} of choice_values "
                              f"{_show(values)} (exactly one must match)")
            chosen |= set(hits)
        return chosen, None
    if not isinstance(result, list) or len(result) != n or not all(isinstance(r, bool) for r in result):
        return None, f"check must give {n} booleans (one per choice) or a value among choice_values, got {_show(result)}"
    return {q.letters[i] for i, r in enumerate(result) if r}, None


def check_question(q: Question) -> list[Problem]:
    """The problems with one question's check: it fails, or what it computes disagrees with what is stored.

    >>> q = get_question("fp8-e4m3fn-max")
    >>> print(check_question(replace(q, answer=480.0))[0])
    fp8-e4m3fn-max: check computed 448.0, stored answer is 480.0
    """
    if q.check is None:
        return []
    try:
        result = run_check(q.check)
    except Exception as err:  # noqa: BLE001 - any failure of a check is a problem to report
        return [Problem(q.id, "check", f"check raised {type(err).__name__}: {err}", q.file)]
    tol = DEFAULT_CHECK_TOL if q.check_tol is None else q.check_tol
    if q.kind == "numeric":
        if isinstance(result, bool) or not isinstance(result, (int, float)):
            return [Problem(q.id, "check", f"check must give a number, got {_show(result)}", q.file)]
        if not isinstance(q.answer, (int, float)) or not same_value(result, q.answer, tol):
            return [Problem(q.id, "check", f"check computed {_show(result)}, stored answer is {_show(q.answer)}", q.file)]
        return []
    if q.kind in ("single", "multiple"):
        chosen, error = _choice_letters(q, result, tol)
        if error:
            return [Problem(q.id, "check", error, q.file)]
        stored = {q.answer} if q.kind == "single" else set(q.answer or ())
        if q.kind == "single" and len(chosen) != 1:
            return [Problem(q.id, "check", f"check marks {sorted(chosen)} correct; a single-choice question needs exactly one",
                            q.file)]
        if chosen != stored:
            shown = sorted(chosen)[0] if q.kind == "single" else sorted(chosen)
            return [Problem(q.id, "check", f"check computed {_show(result)}, which is answer {shown!r}; "
                            f"stored answer is {q.answer!r}", q.file)]
        return []
    if q.kind == "open":
        if not same_value(result, q.check_expect, tol):
            return [Problem(q.id, "check", f"check computed {_show(result)}, check_expect is {_show(q.check_expect)}",
                            q.file)]
        return []
    return [Problem(q.id, "check", f"cannot check a question of kind {q.kind!r}", q.file)]


def verify(questions: Iterable[Question] | None = None) -> list[Problem]:
    """Every problem with the bank (``None``: all files) or with the given questions: schema first, then checks.

    Empty when every field is well formed and every check reproduces its stored answer.

    >>> verify([replace(get_question("fp8-e4m3fn-max"), unit=None)])[0].message
    'a numeric question needs unit = "..." ("" for a pure number)'
    """
    if questions is None:
        qs, load = read_bank()
        problems = list(load)
    else:
        qs = list(questions)
        problems = schema_problems(qs)
    for q in qs:
        if not isinstance(q, Question):
            raise TypeError(f"verify takes Question objects, got {type(q).__name__}")
        problems += check_question(q)
    return problems
