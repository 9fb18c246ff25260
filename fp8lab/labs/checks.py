"""``fp8lab labs check``: whether a lab follows the conventions of ``solutions/AUTHORING.md``.

Static checks only (no kernel): the notebook's cells and metadata, ``lab.toml``, and that the
stated points match the metadata. The tests in ``tests/test_labs.py`` run the rest (every solution
cell executes, nbgrader grades the solution to full marks and the blank exercise to zero, ...).

>>> from fp8lab.labs.catalog import get_lab
>>> check_lab(get_lab("01_decode_exmy"))
[]
"""

from __future__ import annotations

import re

from .authoring import check_notebook, task_cells
from .catalog import Lab

__all__ = ["check_lab"]


def _points_text(x: float) -> str:
    n = int(x) if float(x).is_integer() else x
    return f"{n} point" + ("" if n == 1 else "s")


def check_lab(lab: Lab) -> list[str]:
    """Every convention ``lab`` breaks, as messages (empty when it follows them all)."""
    import nbformat

    nb = nbformat.read(str(lab.notebook), as_version=4)
    ids = [t.id for t in lab.tasks]
    problems = check_notebook(nb, ids)
    if not re.match(r"^\d\d_[a-z0-9_]+$", lab.name):
        problems.append(f"lab folder {lab.name!r}: name it NN_short_name")
    if not lab.chapters:
        problems.append("lab.toml: chapters is empty (which course chapters does the lab follow?)")
    seen: list[str] = []
    for t in lab.tasks:
        for d in t.depends:
            if d not in seen:
                problems.append(f"lab.toml: task {t.id!r} depends on {d!r}, which is not an earlier task")
        if not t.cheats:
            problems.append(f"lab.toml: task {t.id!r} has no cheat (an answer that calls the reference)")
        seen.append(t.id)
    intro = nb.cells[0].source if nb.cells and nb.cells[0].cell_type == "markdown" else ""
    if _points_text(lab.points) not in intro:
        problems.append(f"the first cell must state the total, '{_points_text(lab.points)}'")
    cells = task_cells(nb)
    order = [c for c in nb.cells]
    for t in lab.tasks:
        answer = cells.get(t.id, {}).get("answer")
        if answer is None:
            continue
        i = order.index(answer)
        heading = next((c.source for c in reversed(order[:i]) if c.cell_type == "markdown"), "")
        want = f"({_points_text(t.points)})"
        if want not in heading:
            problems.append(f"the statement above answer cell {t.id!r} must show its points, '{want}'")
    if not lab.exercise.is_file():
        problems.append(f"{lab.exercise} does not exist: run `make exercises`")
    return problems
