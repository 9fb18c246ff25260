"""nbgrader preprocessors of the labs: ``ShortcutScan``, ``ShortHiddenTracebacks``, ``ClearHiddenTestCells``.

``ClearHiddenTestCells`` and ``ShortHiddenTracebacks`` run in ``generate_feedback``
(``nbgrader_config.py``). ``ShortcutScan`` applies :mod:`fp8lab.labs.scan` while sanitizing: for
every task with a finding it makes that task's test cells fail on their first line with the
finding. The course no longer configures it (findings are reported and flagged, never scored:
shortcuts are refused by the sandbox's allowlist); a course that wants the scan to score puts it in
``Autograde.sanitize_preprocessors`` right after ``OverwriteCells``.

Cells follow the lab convention (``solutions/AUTHORING.md``): a task ``T`` has the answer cell
``T`` and the test cells ``test_T`` and ``hidden_T``.

>>> import nbformat
>>> nb = nbformat.v4.new_notebook(cells=[
...     nbformat.v4.new_code_cell("def f(x):\\n    import fp8lab\\n    return fp8lab.quantize(x, 'e4m3')",
...                               metadata={"nbgrader": {"grade_id": "f", "solution": True, "grade": False, "locked": False}}),
...     nbformat.v4.new_code_cell("with no_shortcut(f) as g: g(1)",
...                               metadata={"nbgrader": {"grade_id": "test_f", "grade": True, "solution": False, "locked": True, "points": 1}})])
>>> nb, findings = mark_shortcuts(nb)
>>> nb.cells[1].source.splitlines()[-2].startswith("raise AssertionError")
True
"""

from __future__ import annotations

from typing import Any

from .._optional import require

require("nbgrader", "fp8lab's nbgrader preprocessors")  # an ImportError that names the extra, if it is missing
from nbgrader.preprocessors import NbGraderPreprocessor

from .messages import say
from .scan import Cell, Finding, scan

__all__ = ["notebook_cells", "mark_shortcuts", "task_of_test", "shorten_hidden_tracebacks", "ShortcutScan",
           "ShortHiddenTracebacks", "TEST_PREFIXES", "clear_hidden_tests", "ClearHiddenTestCells"]

#: grade-id prefixes of a task's test cells: ``test_T`` (visible) and ``hidden_T`` (hidden tests)
TEST_PREFIXES = ("test_", "hidden_")

MARK = "# fp8lab grader:"


def _meta(cell: Any) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def task_of_test(grade_id: str) -> str | None:
    """The task a test cell's grade id belongs to (``hidden_decode`` -> ``decode``), or None.

    >>> task_of_test("hidden_decode"), task_of_test("setup")
    ('decode', None)
    """
    for p in TEST_PREFIXES:
        if grade_id.startswith(p) and len(grade_id) > len(p):
            return grade_id[len(p):]
    return None


def notebook_cells(nb: Any) -> list[Cell]:
    """The notebook's code cells as scan cells: which are trusted, which are answers, which are tests.

    Trusted cells are those nbgrader restores from the gradebook: locked cells that kept their grade
    id through sanitizing (a cell the student added with made-up metadata loses its grade id).
    """
    code = [c for c in nb.cells if c.get("cell_type") == "code"]
    tests = {task_of_test(_meta(c).get("grade_id", "")) for c in code if _meta(c).get("grade")}
    out = []
    for i, c in enumerate(code):
        m = _meta(c)
        gid = m.get("grade_id")
        trusted = bool(gid) and bool(m.get("locked")) and not m.get("solution")
        task = gid if (gid and m.get("solution") and gid in tests) else None
        test_of = task_of_test(gid) if (gid and m.get("grade") and not m.get("solution")) else None
        out.append(Cell(gid or f"added cell {i + 1}", c.get("source", ""), trusted=trusted, task=task, test_of=test_of))
    return out


def mark_shortcuts(nb: Any) -> tuple[Any, list[Finding]]:
    """Scan ``nb`` and make the test cells of every task with a finding fail with it; returns (nb, findings)."""
    cells = notebook_cells(nb)
    findings = scan(cells)
    if not findings:
        return nb, findings
    tasks = {c.test_of for c in cells if c.test_of}
    per_task: dict[str, list[Finding]] = {t: [] for t in tasks}
    for f in findings:
        for t in (f.tasks if f.tasks is not None else sorted(tasks)):
            if t in per_task:
                per_task[t].append(f)
    for c in nb.cells:
        m = _meta(c)
        t = task_of_test(m.get("grade_id", "")) if m.get("grade") and c.get("cell_type") == "code" else None
        if not t or not per_task.get(t):
            continue
        lines = [f.describe() for f in per_task[t]]
        header = [f"{MARK} {say('scan_refused')}"]
        header += [f"#   {line}" for line in lines]
        why = "; ".join(lines)
        header.append(f"raise AssertionError({str(say('shortcut_found', why=why))!r})")
        c["source"] = "\n".join(header) + "\n" + c.get("source", "")
    return nb, findings


class ShortcutScan(NbGraderPreprocessor):
    """nbgrader preprocessor: fail the test cells of tasks whose answers take a shortcut (see the module doc)."""

    def preprocess(self, nb, resources):  # noqa: D102 - nbgrader's interface
        nb, findings = mark_shortcuts(nb)
        for f in findings:
            self.log.warning("shortcut scan: %s (costs %s)", f.describe(), ", ".join(f.tasks) if f.tasks else "every task")
        return nb, resources


def shorten_hidden_tracebacks(nb: Any) -> Any:
    """Replace the traceback of every error in a hidden-test cell by its last line (``Error: message``).

    IPython tracebacks quote the lines around the failing one, which would put hidden test code
    into the feedback; the message itself says what was expected and what came back.

    >>> import nbformat
    >>> cell = nbformat.v4.new_code_cell("### BEGIN HIDDEN TESTS\\nsecret()\\n### END HIDDEN TESTS",
    ...     metadata={"nbgrader": {"grade": True, "grade_id": "hidden_f", "points": 1}})
    >>> cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue="f(1): expected 2, got 3",
    ...                                        traceback=["...", "----> 2 secret()", "AssertionError: f(1): expected 2, got 3"])]
    >>> shorten_hidden_tracebacks(nbformat.v4.new_notebook(cells=[cell])).cells[0].outputs[0].traceback
    ['AssertionError: f(1): expected 2, got 3']
    """
    for c in nb.cells:
        if c.get("cell_type") != "code" or "### BEGIN HIDDEN TESTS" not in c.get("source", ""):
            continue
        for o in c.get("outputs", []):
            if o.get("output_type") == "error":
                o["traceback"] = [f"{o.get('ename', 'Error')}: {o.get('evalue', '')}"]
    return nb


class ShortHiddenTracebacks(NbGraderPreprocessor):
    """nbgrader feedback preprocessor: hidden-test errors show their message, not the hidden code around it."""

    def preprocess(self, nb, resources):  # noqa: D102 - nbgrader's interface
        return shorten_hidden_tracebacks(nb), resources


BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


def clear_hidden_tests(nb: Any) -> Any:
    """Remove the hidden-test regions of the instructor's test cells (grade cells that are not answers).

    Unlike nbgrader's ``ClearHiddenTests`` it never raises and never reads a student's cell: a stray
    ``BEGIN HIDDEN TESTS`` in an answer is the student's own text, shown as written. A region with no
    end marker is removed to the end of the cell.

    >>> import nbformat
    >>> t = nbformat.v4.new_code_cell("a = 1\\n### BEGIN HIDDEN TESTS\\nsecret()\\n### END HIDDEN TESTS",
    ...                               metadata={"nbgrader": {"grade": True, "solution": False, "grade_id": "hidden_f"}})
    >>> s = nbformat.v4.new_code_cell("# ### BEGIN HIDDEN TESTS", metadata={"nbgrader": {"solution": True}})
    >>> [c.source for c in clear_hidden_tests(nbformat.v4.new_notebook(cells=[t, s])).cells]
    ['a = 1\\n# (hidden tests: run by the grader, not shown) / （隐藏测试：由评分程序运行，不显示）', '# ### BEGIN HIDDEN TESTS']
    """
    for c in nb.cells:
        m = _meta(c)
        if c.get("cell_type") != "code" or not m.get("grade") or m.get("solution"):
            continue
        out, hidden = [], False
        for line in c.get("source", "").split("\n"):
            if BEGIN_HIDDEN in line:
                if not hidden:
                    out.append(f"# {say('hidden_tests_left_out')}")
                hidden = True
            elif END_HIDDEN in line and hidden:
                hidden = False
            elif not hidden:
                out.append(line)
        c["source"] = "\n".join(out)
    return nb


class ClearHiddenTestCells(NbGraderPreprocessor):
    """nbgrader feedback preprocessor: :func:`clear_hidden_tests` (in ``ClearHiddenTests``' place)."""

    def preprocess(self, nb, resources):  # noqa: D102 - nbgrader's interface
        return clear_hidden_tests(nb), resources
