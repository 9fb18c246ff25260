"""Building and checking lab notebooks: cells with the right nbgrader metadata, and the lab conventions.

A lab's source notebook ``solutions/<lab>/<lab>.ipynb`` is ordinary nbgrader source; these helpers
write the metadata correctly so an author can build a lab from a short script (or edit it in
JupyterLab with nbgrader's "Create Assignment" toolbar) and then check it:

>>> nb = lab_notebook([
...     markdown("# Lab 0: doubling\\n\\nImplement `double`."),
...     setup("import numpy as np"),
...     answer("double", "def double(x):\\n    ### BEGIN SOLUTION\\n    return 2 * x\\n    ### END SOLUTION"),
...     graded("double", "from fp8lab.labs import expect_equal, no_shortcut\\n"
...           "with no_shortcut(double) as f:\\n    expect_equal(f(2), 4, what='double(2)')", points=1),
...     graded("double", "### BEGIN HIDDEN TESTS\\nfrom fp8lab.labs import expect_equal, no_shortcut\\n"
...           "with no_shortcut(double) as f:\\n    expect_equal(f(-3), -6, what='double(-3)')\\n### END HIDDEN TESTS",
...           points=2, hidden=True),
... ])
>>> check_notebook(nb, ["double"])
['a lab has 3 to 6 graded tasks, this one has 1']
>>> task_points(nb)
{'double': 3.0}
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

__all__ = ["markdown", "setup", "answer", "graded", "lab_notebook", "check_notebook", "task_points", "task_cells",
           "write_notebook", "solution_body", "solution_bodies", "fill_answers"]

_ID = re.compile(r"^[a-z][a-z0-9_]*$")


def _nbformat():
    import nbformat

    return nbformat


def _meta(grade_id: str | None, *, grade: bool, solution: bool, locked: bool, points: float | None = None) -> dict:
    m: dict[str, Any] = {"grade": grade, "locked": locked, "schema_version": 3, "solution": solution, "task": False}
    if grade_id is not None:
        m["grade_id"] = grade_id
    if points is not None:
        m["points"] = points
    return {"nbgrader": m}


def markdown(text: str) -> Any:
    """A markdown cell (statement, worked example); students may edit it, nothing grades it.

    >>> markdown("## Task 1").cell_type
    'markdown'
    """
    return _nbformat().v4.new_markdown_cell(text.strip("\n"))


def setup(source: str, grade_id: str = "setup") -> Any:
    """A read-only code cell (imports, helpers the lab provides): nbgrader restores it when graded.

    >>> setup("import numpy as np").metadata["nbgrader"]["locked"]
    True
    """
    return _nbformat().v4.new_code_cell(source.strip("\n"), metadata=_meta(grade_id, grade=False, solution=False, locked=True))


def answer(task: str, source: str) -> Any:
    """The answer cell of ``task``: the solution between ``### BEGIN SOLUTION`` / ``### END SOLUTION``.

    >>> answer("f", "def f():\\n    ### BEGIN SOLUTION\\n    return 1\\n    ### END SOLUTION").metadata["nbgrader"]["grade_id"]
    'f'
    """
    if "### BEGIN SOLUTION" not in source:
        raise ValueError(f"the answer cell of {task!r} needs a '### BEGIN SOLUTION' ... '### END SOLUTION' region")
    return _nbformat().v4.new_code_cell(source.strip("\n"), metadata=_meta(task, grade=False, solution=True, locked=False))


def graded(task: str, source: str, *, points: float, hidden: bool = False) -> Any:
    """A test cell of ``task`` worth ``points``: ``test_<task>`` (visible) or ``hidden_<task>`` (hidden tests).

    >>> graded("f", "### BEGIN HIDDEN TESTS\\n### END HIDDEN TESTS", points=2, hidden=True).metadata["nbgrader"]["grade_id"]
    'hidden_f'
    """
    if hidden and "### BEGIN HIDDEN TESTS" not in source:
        raise ValueError(f"the hidden test cell of {task!r} needs a '### BEGIN HIDDEN TESTS' region")
    gid = f"{'hidden' if hidden else 'test'}_{task}"
    return _nbformat().v4.new_code_cell(source.strip("\n"), metadata=_meta(gid, grade=True, solution=False, locked=True, points=points))


def lab_notebook(cells: Iterable[Any]) -> Any:
    """A notebook of ``cells`` with the python3 kernelspec (nbgrader records it; the grader swaps in its own).

    >>> lab_notebook([setup("import math")]).cells[0].id
    'setup'
    """
    nbf = _nbformat()
    nb = nbf.v4.new_notebook(cells=list(cells))
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    for i, c in enumerate(nb.cells):  # stable cell ids, so regenerating a lab changes nothing
        gid = c.metadata.get("nbgrader", {}).get("grade_id")
        c["id"] = (gid or f"cell-{i}").replace("_", "-")[:64]
    return nb


def write_notebook(nb: Any, path: str) -> None:
    """Validate and write ``nb`` without outputs.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     write_notebook(lab_notebook([setup("import math")]), f"{tmp}/lab.ipynb")
    """
    nbf = _nbformat()
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    nbf.validate(nb)
    with open(path, "w", encoding="utf-8") as fh:
        nbf.write(nb, fh)


def _nb(cell: Any) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def task_cells(nb: Any) -> dict[str, dict[str, Any]]:
    """Per task (in notebook order): its answer cell and its test cells, by the lab convention.

    >>> list(task_cells(lab_notebook([answer("f", "### BEGIN SOLUTION\\n### END SOLUTION")])))
    ['f']
    """
    out: dict[str, dict[str, Any]] = {}
    for c in nb.cells:
        m = _nb(c)
        gid = m.get("grade_id", "")
        if m.get("solution") and not m.get("grade"):
            out.setdefault(gid, {"answer": None, "tests": []})["answer"] = c
        elif m.get("grade") and not m.get("solution"):
            for p in ("test_", "hidden_"):
                if gid.startswith(p):
                    out.setdefault(gid[len(p):], {"answer": None, "tests": []})["tests"].append(c)
    return out


def task_points(nb: Any) -> dict[str, float]:
    """Points of each task: the sum over its test cells.

    >>> task_points(lab_notebook([]))
    {}
    """
    return {t: float(sum(float(_nb(c).get("points", 0)) for c in d["tests"])) for t, d in task_cells(nb).items()}


def check_notebook(nb: Any, tasks: Sequence[str]) -> list[str]:
    """Everything that breaks the lab conventions (``solutions/AUTHORING.md``), as messages; empty when none.

    ``tasks`` are the task ids from ``lab.toml``, in order.

    >>> check_notebook(lab_notebook([]), ["a", "b", "c"])[0]
    "the notebook's tasks [] are not lab.toml's tasks ['a', 'b', 'c'] (same ids, same order)"
    """
    problems: list[str] = []
    cells = task_cells(nb)
    found = list(cells)
    if found != list(tasks):
        problems.append(f"the notebook's tasks {found} are not lab.toml's tasks {list(tasks)} (same ids, same order)")
    if not 3 <= len(tasks) <= 6:
        problems.append(f"a lab has 3 to 6 graded tasks, this one has {len(tasks)}")
    for t, d in cells.items():
        if not _ID.match(t):
            problems.append(f"task id {t!r}: use lower-case letters, digits and underscores")
        if d["answer"] is None:
            problems.append(f"task {t!r} has test cells but no answer cell with grade id {t!r}")
            continue
        src = d["answer"].source
        if "### BEGIN SOLUTION" not in src or "### END SOLUTION" not in src:
            problems.append(f"answer cell {t!r} has no '### BEGIN SOLUTION' ... '### END SOLUTION' region")
        kinds = sorted(_nb(c)["grade_id"].split("_")[0] for c in d["tests"])
        if kinds != ["hidden", "test"]:
            problems.append(f"task {t!r} needs exactly one visible test cell 'test_{t}' and one hidden 'hidden_{t}', has {kinds}")
        for c in d["tests"]:
            gid = _nb(c)["grade_id"]
            if "no_shortcut(" not in c.source:
                problems.append(f"test cell {gid!r} calls the student's function outside no_shortcut(...)")
            if "from fp8lab.labs import" not in c.source:
                problems.append(f"test cell {gid!r} must import its checks itself (from fp8lab.labs import ...)")
            if gid.startswith("hidden_") and "### BEGIN HIDDEN TESTS" not in c.source:
                problems.append(f"test cell {gid!r} has no '### BEGIN HIDDEN TESTS' region")
            if gid.startswith("test_") and "### BEGIN HIDDEN TESTS" in c.source:
                problems.append(f"visible test cell {gid!r} has hidden tests: put them in 'hidden_{t}'")
            if not float(_nb(c).get("points", 0)) > 0:
                problems.append(f"test cell {gid!r} has no points")
            last = c.source.rstrip().splitlines()[-1] if c.source.strip() else ""
            if re.match(r"^[\w.]+\s*$", last) or re.match(r"^\d", last):
                problems.append(f"test cell {gid!r} ends with a bare expression: nbgrader would read its value as partial credit")
    for i, c in enumerate(nb.cells):
        if c.cell_type == "code" and not _nb(c):
            problems.append(f"code cell {i + 1} has no nbgrader metadata: make it setup(...) (read-only), an answer or tests")
        if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count")):
            problems.append(f"code cell {i + 1} has outputs: store lab notebooks without outputs")
    return problems


# ------------------------------------------------------------------------------------------------
# submissions, for testing a lab (the generic tests in tests/test_labs*.py use these)
def solution_body(source: str) -> str:
    """An answer cell's source with the solution markers removed: what a student who solved it would submit.

    >>> solution_body("def f():\\n    ### BEGIN SOLUTION\\n    return 1\\n    ### END SOLUTION")
    'def f():\\n    return 1'
    """
    keep = [ln for ln in source.splitlines() if ln.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")]
    return "\n".join(keep)


def solution_bodies(source_nb: Any) -> dict[str, str]:
    """Per task, the solved answer cell of the lab's source notebook.

    >>> solution_bodies(lab_notebook([answer("f", "def f():\\n    ### BEGIN SOLUTION\\n    return 1\\n    ### END SOLUTION")]))
    {'f': 'def f():\\n    return 1'}
    """
    return {t: solution_body(d["answer"].source) for t, d in task_cells(source_nb).items() if d["answer"] is not None}


def fill_answers(exercise_nb: Any, answers: dict[str, str]) -> Any:
    """A copy of the released notebook with the answer cells of ``answers`` (task -> source) filled in.

    >>> nb = lab_notebook([answer("f", "### BEGIN SOLUTION\\n### END SOLUTION")])
    >>> fill_answers(nb, {"f": "def f():\\n    return 1"}).cells[0].source
    'def f():\\n    return 1'
    """
    import copy

    nb = copy.deepcopy(exercise_nb)
    unknown = set(answers) - set(task_cells(nb))
    if unknown:
        raise ValueError(f"no answer cells for {sorted(unknown)}; the tasks are {sorted(task_cells(nb))}")
    for c in nb.cells:
        gid = _nb(c).get("grade_id")
        if _nb(c).get("solution") and gid in answers:
            c.source = answers[gid]
    return nb
