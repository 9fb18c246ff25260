"""Claims: a sentence of a chapter that compares computed results, asserted by the cell that computes them.

A chapter's prose marks such a sentence with an invisible HTML comment right after it,
``<!-- claim:01-fp32-sum-equal -->``; the code cell that computes the result calls
``claim("01-fp32-sum-equal", condition, "one-line statement")``, which prints nothing when the
condition holds and raises an AssertionError naming the claim when it does not. A chapter is
consistent when the set of IDs its markdown marks equals the set its code asserts
(:func:`claim_mismatches`): every marked sentence is backed, every assertion is referred to. The
Chinese edition carries the same markers in its translations.

>>> claim("01-demo", 0.1 + 0.2 != 0.3, "0.1 + 0.2 differs from 0.3 in float64")
>>> claim("01-demo", 0.1 + 0.2 == 0.3, "0.1 + 0.2 equals 0.3 in float64")
Traceback (most recent call last):
...
AssertionError: claim 01-demo does not hold: 0.1 + 0.2 equals 0.3 in float64
"""

from __future__ import annotations

import ast
import re
from typing import Any, Mapping

__all__ = ["claim", "claim_markers", "claims_in_code", "chapter_claims", "claim_mismatches", "CLAIM_ID", "MARKER"]

#: a claim ID: the chapter's two digits, then lowercase words joined by dashes (``04-first-step-fits``)
CLAIM_ID = re.compile(r"[0-9]{2}(?:-[a-z0-9.]+)+")
#: the marker in markdown, exactly ``<!-- claim:ID -->``
MARKER = re.compile(r"<!-- claim:(\S+?) -->")


def _check_id(claim_id: object) -> str:
    if not isinstance(claim_id, str) or not CLAIM_ID.fullmatch(claim_id):
        raise ValueError(f"claim ID {claim_id!r} is not of the form 'NN-words-joined-by-dashes' "
                         "(the chapter's two digits, then lowercase words)")
    return claim_id


def claim(claim_id: str, condition: Any, statement: str) -> None:
    """Assert a claim the prose makes: nothing when ``condition`` is true, AssertionError naming it when false.

    ``condition`` must be one truth value (a Python or numpy bool, or a one-element array); an array
    of several values is refused, since its truth is ambiguous.

    >>> import numpy as np
    >>> claim("05-e2m1-wins", np.float32(20.4) > np.float32(20.3), "E2M1 beats INT4 at NVFP4's scales")
    >>> claim("05-x", np.array([True, False]), "s")
    Traceback (most recent call last):
    ...
    TypeError: claim 05-x: the condition must be one truth value, got an array of shape (2,)
    """
    _check_id(claim_id)
    if not isinstance(statement, str) or not statement.strip():
        raise ValueError(f"claim {claim_id}: give the one-line statement the prose makes")
    if getattr(condition, "size", 1) != 1:
        raise TypeError(f"claim {claim_id}: the condition must be one truth value, "
                        f"got an array of shape {tuple(getattr(condition, 'shape', ()))}")
    if not bool(condition):
        raise AssertionError(f"claim {claim_id} does not hold: {statement}")


def claim_markers(markdown: str) -> list[str]:
    """The claim IDs a markdown text marks, in order (a malformed ID raises ValueError).

    >>> claim_markers("FP32 rounds both to the same float. <!-- claim:01-fp32-sum-equal --> More.")
    ['01-fp32-sum-equal']
    """
    return [_check_id(m.group(1)) for m in MARKER.finditer(markdown)]


def _python(source: str) -> str:
    """A cell's source with IPython's line magics and shell escapes blanked, so that ``ast`` can parse it."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def claims_in_code(source: str) -> list[str]:
    """The claim IDs a code cell asserts: calls ``claim("ID", ...)`` (or ``x.claim(...)``) with a literal ID.

    A call whose ID is not a string literal raises ValueError: the test could not match it to the prose.

    >>> claims_in_code('%matplotlib inline\\nclaim("02-fp16-overflows", x > 65504, "x overflows FP16")')
    ['02-fp16-overflows']
    """
    found = []
    for node in ast.walk(ast.parse(_python(source))):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name != "claim" or not node.args:
                continue
            first = node.args[0]
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                raise ValueError(f"claim(...) at line {node.lineno} takes its ID as a string literal")
            found.append(_check_id(first.value))
    return found


def _source(cell: Mapping[str, Any]) -> str:
    s = cell.get("source", "")
    return s if isinstance(s, str) else "".join(s)


def chapter_claims(nb: Mapping[str, Any]) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """The claims a notebook marks in its markdown and asserts in its code, each ID with its cell indices.

    >>> nb = {"cells": [{"cell_type": "markdown", "source": "Equal. <!-- claim:01-a -->"},
    ...                 {"cell_type": "code", "source": "claim('01-a', True, 'equal')"}]}
    >>> chapter_claims(nb)
    ({'01-a': [0]}, {'01-a': [1]})
    """
    marked: dict[str, list[int]] = {}
    asserted: dict[str, list[int]] = {}
    for i, cell in enumerate(nb.get("cells", [])):
        kind = cell.get("cell_type")
        ids = claim_markers(_source(cell)) if kind == "markdown" else claims_in_code(_source(cell)) if kind == "code" else []
        for claim_id in ids:
            (marked if kind == "markdown" else asserted).setdefault(claim_id, []).append(i)
    return marked, asserted


def claim_mismatches(nb: Mapping[str, Any]) -> list[str]:
    """What keeps a notebook's marked and asserted claims from being the same set (empty when they are).

    >>> nb = {"cells": [{"cell_type": "markdown", "source": "<!-- claim:01-a --> <!-- claim:01-b -->"},
    ...                 {"cell_type": "code", "source": "claim('01-a', True, 'a')\\nclaim('01-c', True, 'c')"}]}
    >>> for problem in claim_mismatches(nb): print(problem)
    claim 01-b is marked in the prose (cells [0]) but no code cell asserts it
    claim 01-c is asserted in code (cells [1]) but no sentence of the prose marks it
    """
    marked, asserted = chapter_claims(nb)
    problems = [f"claim {k} is marked in the prose (cells {marked[k]}) but no code cell asserts it"
                for k in sorted(set(marked) - set(asserted))]
    problems += [f"claim {k} is asserted in code (cells {asserted[k]}) but no sentence of the prose marks it"
                 for k in sorted(set(asserted) - set(marked))]
    return problems
