"""Made-up submissions of a lab with the score each must get: what the tests grade to prove a lab right.

Every submission starts from the released exercise (``exercises/<lab>/<lab>.ipynb``) and fills
answer cells with the source's solutions, with a task's ``cheat`` from ``lab.toml``, or leaves
them blank. A task is expected to score its points exactly when its answer and every answer it
depends on (``depends`` in ``lab.toml``, followed transitively) are honest solutions; otherwise zero.

:func:`standard` (run for every lab): the solution, the blank exercise, a partial solution and two
submissions that cheat on alternate tasks. :func:`adversarial` (run for one representative lab):
an infinite loop, edited and deleted test cells, an allocation bomb, and cheats that bind the
reference at import time, import it inside the function, reach it by a detour, precompute a table,
patch the reference or the grading harness.

>>> from fp8lab.labs.catalog import get_lab
>>> subs = {s.name: s for s in standard(get_lab("01_decode_exmy"))}
>>> subs["solution"].expected, subs["blank"].total
({'split_fields': 2.0, 'decode_finite': 3.0, 'decode_exmy': 3.0, 'format_range': 2.0}, 0.0)
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from .authoring import fill_answers, solution_bodies
from .catalog import Lab

__all__ = ["Submission", "standard", "adversarial", "expected_points", "build"]

SOLVED, BLANK, CHEAT = "solved", "blank", "cheat"


@dataclass(frozen=True)
class Submission:
    """A notebook to grade (as student ``name``), the points per task it must get, and why."""

    name: str
    notebook: Any
    expected: dict[str, float]
    why: str

    @property
    def total(self) -> float:
        """Expected total points.

    >>> Submission("x", None, {"a": 1.0, "b": 2.0}, "").total
    3.0
    """
        return float(sum(self.expected.values()))


def _read(path) -> Any:
    import nbformat

    return nbformat.read(str(path), as_version=4)


def expected_points(lab: Lab, state: dict[str, str]) -> dict[str, float]:
    """Points per task when each task's answer is ``solved``, ``blank`` or ``cheat`` (see the module doc).

    >>> from fp8lab.labs.catalog import get_lab
    >>> expected_points(get_lab("01_decode_exmy"), {"split_fields": "solved", "decode_finite": "cheat",
    ...                                             "decode_exmy": "solved", "format_range": "solved"})
    {'split_fields': 2.0, 'decode_finite': 0.0, 'decode_exmy': 0.0, 'format_range': 0.0}
    """
    return {t.id: (t.points if all(state.get(d) == SOLVED for d in lab.closure(t.id)) else 0.0) for t in lab.tasks}


def build(lab: Lab, state: dict[str, str], cheat_index: int = 0) -> Any:
    """The exercise with each task's answer cell solved, left blank or replaced by its cheat.

    >>> from fp8lab.labs.catalog import get_lab
    >>> nb = build(get_lab("01_decode_exmy"), {"split_fields": "solved"})
    >>> [c.source.splitlines()[-1].strip() for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")][:2]
    ['return sign, exponent, mantissa', 'raise NotImplementedError()']
    """
    exercise = _read(lab.exercise)
    bodies = solution_bodies(_read(lab.notebook))
    answers = {}
    for t in lab.tasks:
        s = state.get(t.id, BLANK)
        if s == SOLVED:
            answers[t.id] = bodies[t.id]
        elif s == CHEAT:
            answers[t.id] = t.cheats[cheat_index % len(t.cheats)].strip("\n")
        elif s != BLANK:
            raise ValueError(f"state of {t.id!r} must be solved, blank or cheat, got {s!r}")
    return fill_answers(exercise, answers)


def _make(lab: Lab, name: str, state: dict[str, str], why: str, cheat_index: int = 0) -> Submission:
    return Submission(name, build(lab, state, cheat_index), expected_points(lab, state), why)


def standard(lab: Lab) -> list[Submission]:
    """The submissions graded for every lab: full marks, zero, partial credit, cheats on alternate tasks.

    >>> from fp8lab.labs.catalog import get_lab
    >>> [s.name for s in standard(get_lab("01_decode_exmy"))]
    ['solution', 'blank', 'partial_first', 'cheat_even', 'cheat_odd']
    """
    ids = [t.id for t in lab.tasks]
    half = len(ids) // 2
    out = [
        _make(lab, "solution", {t: SOLVED for t in ids}, "the source's solutions: full marks"),
        _make(lab, "blank", {}, "the exercise as released: zero"),
        _make(lab, "partial_first", {t: SOLVED for t in ids[:half]}, "the first tasks solved: their points only"),
    ]
    for name, picks in (("cheat_even", ids[0::2]), ("cheat_odd", ids[1::2])):
        state = {t: (CHEAT if t in picks else SOLVED) for t in ids}
        out.append(_make(lab, name, state, f"tasks {', '.join(picks)} call the reference: zero on them"))
    return out


# ------------------------------------------------------------------------------------------------
def _cell(nb: Any, grade_id: str) -> Any:
    for c in nb.cells:
        if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
            return c
    raise KeyError(grade_id)


def _insert_before(nb: Any, grade_id: str, source: str) -> Any:
    import nbformat

    nb = copy.deepcopy(nb)
    i = nb.cells.index(_cell(nb, grade_id))
    nb.cells.insert(i, nbformat.v4.new_code_cell(source))
    return nb


def adversarial(lab: Lab, *, target: str | None = None) -> list[Submission]:
    """Submissions that try to break the grading, each with the score it must still get.

    ``target`` is the task they attack (default: the last task).

    >>> from fp8lab.labs.catalog import get_lab
    >>> [s.name for s in adversarial(get_lab("01_decode_exmy"))][:5]
    ['infinite_loop', 'ignores_interrupts', 'allocation_bomb', 'edited_tests', 'deleted_tests']
    """
    ids = [t.id for t in lab.tasks]
    target = target or ids[-1]
    bodies = solution_bodies(_read(lab.notebook))
    solved = {t: SOLVED for t in ids}
    broken = dict(solved, **{target: BLANK})
    out: list[Submission] = []

    # an infinite loop in the target's function: its tests time out, the others are graded
    nb = build(lab, solved)
    _cell(nb, target).source = _with_body(bodies[target], "while True:\n    pass")
    out.append(Submission("infinite_loop", nb, expected_points(lab, broken), f"{target} never returns: its cells time out"))

    # a loop that swallows the interrupt: the kernel stays busy, so the cells after it time out as well
    nb = build(lab, solved)
    _cell(nb, target).source = _with_body(bodies[target], "while True:\n    try:\n        pass\n    except BaseException:\n        pass")
    out.append(Submission("ignores_interrupts", nb, expected_points(lab, broken),
                          f"{target} loops and swallows KeyboardInterrupt: its cells and those after it time out"))

    # an allocation bomb: a MemoryError in its own cell, under the kernel's address-space cap
    nb = build(lab, solved)
    _cell(nb, target).source = _with_body(bodies[target], "hog = []\nwhile True:\n    hog.append(bytearray(1 << 26))")
    out.append(Submission("allocation_bomb", nb, expected_points(lab, broken), f"{target} allocates until the memory cap"))

    # edited test cells (emptied, points inflated): graded with the original tests and points
    nb = build(lab, broken)
    for prefix in ("test_", "hidden_"):
        c = _cell(nb, prefix + target)
        c.source = "pass  # the tests are gone"
        c.metadata["nbgrader"]["points"] = 1000
    out.append(Submission("edited_tests", nb, expected_points(lab, broken), f"{target}'s test cells emptied: restored"))

    # deleted test cells: nbgrader adds them back and they fail on the blank answer
    nb = build(lab, broken)
    nb.cells = [c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                not in (f"test_{target}", f"hidden_{target}")]
    out.append(Submission("deleted_tests", nb, expected_points(lab, broken), f"{target}'s test cells deleted: re-added"))

    # every cheat body of the target, one submission each
    for k in range(len(lab.task(target).cheats)):
        out.append(_make(lab, f"cheat_{target}_{k}", dict(solved, **{target: CHEAT}),
                         f"cheat #{k} of {target} from lab.toml", cheat_index=k))

    # a cheat with its imports moved to a cell the student added above: bound at import time
    for t in reversed(ids):
        cheat = lab.task(t).cheats[0].strip("\n").splitlines()
        imports = [ln for ln in cheat if ln.startswith(("import ", "from "))]
        if imports:
            nb = _insert_before(build(lab, dict(solved, **{t: BLANK})), ids[0], "\n".join(imports))
            _cell(nb, t).source = "\n".join(ln for ln in cheat if ln not in imports)
            out.append(Submission("cheat_imports_elsewhere", nb, expected_points(lab, dict(solved, **{t: CHEAT})),
                                  f"{t}'s cheat with its imports in another cell"))
            break

    # code outside the answers (cells the student added) that uses or tampers with the reference: such
    # cells are not graded at all (only answer cells, by cell id), so the answers score what they earn
    added = {
        "added_cell_table": "import numpy as np\nimport fp8lab\nTABLE = fp8lab.quantize(np.arange(8.0), 'e4m3')",
        "patch_reference": "import fp8lab\nfp8lab.decode = lambda codes, fmt: codes",
        "patch_harness": "import fp8lab.labs.guard as guard\nguard.no_shortcut.__enter__ = lambda self: self.fn",
        "detour": "tool = getattr(__import__('fp8' + 'lab'), 'dec' + 'ode')",
        "magic": "%load_ext autoreload",
    }
    for name, source in added.items():
        nb = _insert_before(build(lab, solved), ids[0], source)
        out.append(Submission(name, nb, expected_points(lab, solved), "an added cell that uses or tampers with the "
                              "reference: never run, the solutions score full marks"))
    return out


def _with_body(solution: str, body: str) -> str:
    """``solution`` (one ``def``) with its body replaced by ``body``, keeping the signature.

    >>> print(_with_body("def f(x,\\n      y):\\n    return x", "return y"))
    def f(x,
          y):
        return y
    """
    lines = solution.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("def "))
    end = next(i for i in range(start, len(lines)) if lines[i].rstrip().endswith(":"))
    return "\n".join(lines[: end + 1] + ["    " + b for b in body.splitlines()])
