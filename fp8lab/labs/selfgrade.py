"""Self-grading for learners: ``fp8lab labs grade <notebook>`` runs the hidden tests through nbgrader.

The attempt is graded as student ``learner`` in a scratch course (its own gradebook, deleted
afterwards), exactly as a class is graded: only the answer cells' code is taken (by cell id), it runs
in the sandbox where one can start (your own code on your own machine: it is not required here),
the tests run in the grader, and the hidden random cases use a fresh seed unless
``--seed`` is given. The result lists the points per task and, for each failing test cell, the
message that says what was expected and what came back.

Without ``solutions/`` (a learner's install) or with ``--random-cases``, :func:`grade_random` grades
instead with the notebook's own visible test cells (as released: nbgrader's checksums tell an edited
one) and the random cases shipped in :mod:`fp8lab.labs.cases`, through the same sandbox and wire
(:func:`fp8lab.labs.harness.grade_notebook`); each failure is labelled ``visible test`` or
``random case (seed S)``.

What it prints is in English and Chinese (:mod:`fp8lab.labs.messages`): the summary line with the
Chinese line under it, each failure as ``label: message`` in both languages, and the one line that
says why an attempt cannot be graded.
"""

from __future__ import annotations

import json
import pathlib
import textwrap
import secrets
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Sequence

from .catalog import Lab, get_lab, list_labs
from .course import NbgraderError
from .grading import _per_student_limit, cell_messages, grade_in_scratch, prepare_scratch, stage_submission, task_scores
from .messages import Text, joined, labelled, phrase, say, text_of
from .sandbox import sandbox_problem

__all__ = ["TaskResult", "SelfGrade", "grade_attempt", "lab_of", "check_attempt", "read_attempt", "grade_random",
           "has_solutions", "random_lab_of", "answer_problems"]

LEARNER = "learner"

#: the words of :attr:`SelfGrade.source` in both languages
_SOURCES = {"hidden tests": "source_hidden", "visible tests and random cases": "source_random"}


@dataclass(frozen=True)
class TaskResult:
    """One task of a graded attempt: points scored, points possible, and why points were lost."""

    id: str
    title: str
    points: float
    max_points: float
    messages: tuple[str, ...]


@dataclass(frozen=True)
class SelfGrade:
    """A graded attempt: the lab, the seed of its hidden cases, the tasks, the time it took."""

    lab: str
    seed: int
    tasks: tuple[TaskResult, ...]
    seconds: float
    source: str = "hidden tests"

    @property
    def points(self) -> float:
        """Points scored."""
        return float(sum(t.points for t in self.tasks))

    @property
    def max_points(self) -> float:
        """Points possible."""
        return float(sum(t.max_points for t in self.tasks))

    def text(self, width: int = 100) -> str:
        """The report printed by ``fp8lab labs grade``.

    >>> print(SelfGrade("01_decode_exmy", 3, (TaskResult("split_fields", "Split", 2.0, 2.0, ()),), 1.0).text())
    01_decode_exmy: 2 / 2 points (hidden tests, seed 3)
    中文：01_decode_exmy：2 / 2 分（隐藏测试，种子 3）
    <BLANKLINE>
      ok   split_fields                2 / 2    Split
    >>> long = TaskResult("f", "F", 0.0, 1.0, ("visible test: " + "x" * 150,))
    >>> print(SelfGrade("lab", 3, (long,), 1.0).text(width=60).split(chr(10), 3)[3])
      FAIL f                           0 / 1    F
             visible test: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
               xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
               xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
               xxxxxxxxxxxxxxxxx
    """
        source = phrase(_SOURCES[self.source]) if self.source in _SOURCES else self.source
        summary = say("summary", lab=self.lab, points=_n(self.points), max=_n(self.max_points), source=source,
                      seed=self.seed)
        lines = [*summary.splitlines(), ""]
        for t in self.tasks:
            mark = "ok  " if t.points == t.max_points else "FAIL"
            lines.append(f"  {mark} {t.id:<24} {_n(t.points):>4} / {_n(t.max_points):<4} {t.title}")
            for m in t.messages:  # every line of every message, wrapped, never cut
                first = True
                for part in m.splitlines() or [""]:
                    for piece in textwrap.wrap(part, width - 11, break_long_words=True, break_on_hyphens=False) or [""]:
                        lines.append(("         " if first else "           ") + piece)
                        first = False
        return "\n".join(lines)


def _n(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def lab_of(path: pathlib.Path) -> Lab:
    """The lab a notebook belongs to: its file name or its folder name is the lab's name.

    >>> lab_of(pathlib.Path("my_labs/01_decode_exmy/attempt.ipynb")).name
    '01_decode_exmy'
    """
    names = {lab.name: lab for lab in list_labs()}
    for candidate in (path.stem, path.parent.name):
        if candidate in names:
            return names[candidate]
    raise ValueError(say("which_lab", path=path, labs=sorted(names)))


def check_attempt(path: str | pathlib.Path, lab: Lab) -> None:
    """Raise ValueError, in one line, when ``path`` is not a readable notebook with some of ``lab``'s answer cells.

    Run before grading, so that a malformed file is refused with what is wrong with it rather than
    with the end of nbgrader's log.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".ipynb") as fh:
    ...     _ = fh.write('{"cells": [')
    ...     fh.flush()
    ...     check_attempt(fh.name, get_lab("01_decode_exmy"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ... is not a Jupyter notebook: its JSON ends early at line 1 column 12 / ...
    """
    read_attempt(path, lab.name, [t.id for t in lab.tasks])


def read_attempt(path: str | pathlib.Path, lab: str, task_ids: Sequence[str]) -> Any:
    """The notebook at ``path`` (nbformat 4), or ValueError in one line when it is not one with some of the answer cells.

    >>> read_attempt("no_such_file.ipynb", "01_decode_exmy", ["split_fields"])
    Traceback (most recent call last):
    ...
    ValueError: no_such_file.ipynb is not a notebook file / no_such_file.ipynb 不是笔记本文件
    """
    path = pathlib.Path(path)
    if path.is_dir():
        raise ValueError(say("is_folder", path=path))
    if not path.is_file():
        raise ValueError(say("not_notebook_file", path=path))
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ValueError(say("cannot_read", path=path, error=err.strerror or err)) from None
    if not data.strip():
        raise ValueError(say("empty_file", path=path))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(say("not_jupyter", path=path, why=phrase("not_utf8", byte=err.start))) from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        what = (phrase("json_ends_early", line=err.lineno, column=err.colno) if err.pos >= len(text.rstrip())
                else phrase("json_invalid", error=err.msg, line=err.lineno, column=err.colno))
        raise ValueError(say("not_jupyter", path=path, why=what)) from None
    except RecursionError:
        raise ValueError(say("not_jupyter", path=path, why=phrase("json_too_deep"))) from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list) or not isinstance(raw.get("nbformat"), int):
        got = type(raw).__name__ if not isinstance(raw, dict) else "keys " + str(sorted(raw)[:5])
        raise ValueError(say("not_jupyter", path=path, why=phrase("json_not_notebook", got=got)))
    if raw["nbformat"] != 4:
        raise ValueError(say("old_nbformat", path=path, version=raw["nbformat"]))
    import nbformat

    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as err:  # noqa: BLE001 - nbformat raises several kinds; each means the same here
        first = str(getattr(err, "message", "") or err).strip().splitlines()
        raise ValueError(say("invalid_notebook", path=path, error=first[0][:200] if first else type(err).__name__)) from None
    ids = set(task_ids)
    found = {(c.get("metadata", {}).get("nbgrader") or {}).get("grade_id") for c in nb.cells}
    if not ids & found:
        raise ValueError(say("no_answer_cells", path=path, lab=lab, ids=", ".join(sorted(ids)),
                             exercise=f"exercises/{lab}/{lab}.ipynb"))
    return nb


def grade_attempt(notebook: str | pathlib.Path, *, lab: str | None = None, seed: int | None = None,
                  timeout: int | None = None) -> SelfGrade:
    """Grade one attempt at a lab with its hidden tests and return the points and messages per task.

    >>> grade_attempt("no_such_file.ipynb")
    Traceback (most recent call last):
    ...
    ValueError: no_such_file.ipynb is not a notebook file / no_such_file.ipynb 不是笔记本文件
    """
    path = pathlib.Path(notebook)
    if not path.is_file():
        raise ValueError(say("is_folder" if path.is_dir() else "not_notebook_file", path=path))
    the_lab = get_lab(lab) if lab else lab_of(path)
    check_attempt(path, the_lab)  # a malformed file is refused here, in one line, before nbgrader starts
    seed = secrets.randbits(63) if seed is None else int(seed)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"fp8lab-selfgrade-{the_lab.name}-") as tmp:
        course = prepare_scratch(the_lab, pathlib.Path(tmp) / "course", timeout=timeout)
        release = course.release / the_lab.name / f"{the_lab.name}.ipynb"
        try:
            stage_submission(path, release, course.submitted(LEARNER, the_lab.name))
        except ValueError as err:
            raise ValueError(say("cannot_be_graded", path=path, why=text_of(err))) from None
        # your own code on your own machine: the sandbox is used where it can start, and not required
        log = grade_in_scratch(the_lab, course, [LEARNER], seed=seed, wall_limit=_per_student_limit(the_lab, course),
                               unsafe_no_sandbox=sandbox_problem() is not None)
        scores = task_scores(the_lab.name, course).get(LEARNER)
        graded = course.autograded(LEARNER, the_lab.name) / f"{the_lab.name}.ipynb"
        if scores is None or not graded.is_file():
            tail = "\n".join(log.splitlines()[-15:])
            raise NbgraderError(f"{say('nbgrader_failed', path=path)}\n{tail}")
        messages = cell_messages(graded)
    results = []
    for t in the_lab.tasks:
        msgs = tuple(str(labelled(label, m)) for gid, label in ((f"test_{t.id}", phrase("visible_test")),
                                                                 (f"hidden_{t.id}", phrase("hidden_tests_seed", seed=seed)))
                     for m in messages.get(gid, []))
        results.append(TaskResult(t.id, t.title, scores[t.id], t.points, msgs))
    return SelfGrade(the_lab.name, seed, tuple(results), time.monotonic() - start)


# ------------------------------------------------------------------------------------------------
# Without solutions/: the notebook's visible tests and the package's random cases (fp8lab.labs.cases)
# ------------------------------------------------------------------------------------------------

def has_solutions() -> bool:
    """Whether ``solutions/`` (the hidden tests and ``lab.toml``) is there: a checkout of the repository.

    >>> isinstance(has_solutions(), bool)
    True
    """
    from .catalog import repo_root

    try:
        repo_root()
    except FileNotFoundError:
        return False
    return True


def random_lab_of(path: pathlib.Path) -> str:
    """The lab a notebook belongs to, from the labs shipped with fp8lab: its file or folder name.

    >>> random_lab_of(pathlib.Path("my_labs/07_loss_scaler/attempt.ipynb"))
    '07_loss_scaler'
    """
    from .cases import LABS

    for candidate in (path.stem, path.parent.name):
        if candidate in LABS:
            return candidate
    raise ValueError(say("which_lab", path=path, labs=sorted(LABS)))


def _nbg(cell: Any) -> dict:
    m = cell.get("metadata", {}).get("nbgrader") if isinstance(cell.get("metadata"), dict) else None
    return m if isinstance(m, dict) else {}


def _edited(cell: Any) -> bool:
    """A locked cell whose source differs from the checksum nbgrader recorded when it released the lab (or that has none)."""
    try:
        from nbgrader.utils import compute_checksum
    except ImportError:  # nbgrader is not installed: the cells are taken as they are
        return False
    want = _nbg(cell).get("checksum")
    return not want or compute_checksum(cell) != want  # a locked cell without a checksum was not released


def answer_problems(nb: Any, lab: str) -> list[Text]:
    """Why the notebook cannot be graded: an answer cell missing, with a syntax error, or not defining its function.

    >>> import nbformat
    >>> cell = nbformat.v4.new_code_cell("def split_fields(c, e, m):\\n    return (0, 0", metadata={"nbgrader":
    ...     {"solution": True, "grade": False, "grade_id": "split_fields"}})
    >>> [p.en for p in answer_problems(nbformat.v4.new_notebook(cells=[cell]), "01_decode_exmy")[:2]]
    ["the answer cell of split_fields has a syntax error at line 2: '(' was never closed", 'no answer cell for decode_finite']
    """
    import ast

    from .cases import lab_table
    from .harness import answer_names, cell_kind
    from .runner import strip_magics

    cells = {}
    for c in nb.cells:
        if cell_kind(c) == "answer":
            cells.setdefault(str(_nbg(c).get("grade_id")), c.source)
    defined: set[str] = set()
    problems = []
    for t in lab_table(lab)["tasks"]:
        if t["id"] not in cells:
            problems.append(phrase("no_answer_for", task=t["id"]))
            continue
        try:
            ast.parse(strip_magics(cells[t["id"]]))
        except SyntaxError as err:
            problems.append(phrase("answer_syntax_error", task=t["id"], line=err.lineno, error=err.msg))
            continue
        defined.update(answer_names(cells[t["id"]]))
    for t in lab_table(lab)["tasks"]:
        if t["id"] in cells and not any(t["id"] in p.en for p in problems) and t["id"] not in defined:
            problems.append(phrase("no_function", task=t["id"]))
    return problems


def _random_cell(lab: str, task: str, seed: int) -> Any:
    import nbformat

    code = (f"from fp8lab.labs.cases import run_check as __run_check\n"
            f"__run_check({lab!r}, {task!r}, globals(), seed={seed})\n")
    return nbformat.v4.new_code_cell(code, metadata={"nbgrader": {"grade": True, "solution": False, "locked": True,
                                                                  "grade_id": f"random_{task}"}})


def grade_random(notebook: str | pathlib.Path, *, lab: str | None = None, seed: int | None = None,
                 timeout: int | None = None) -> SelfGrade:
    """Grade an attempt without ``solutions/``: its own visible tests and fp8lab's random cases per task.

    The answer cells run in the sandbox where one can start (not required: your own code on your own
    machine); the visible test cells (as released: an edited one fails) and the random cases
    (:mod:`fp8lab.labs.cases`, drawn from ``seed``) run in this process against the values the
    answers send back. Points are the lab's, as shipped in :mod:`fp8lab.labs.cases.table`.

    >>> grade_random("no_such_file.ipynb")
    Traceback (most recent call last):
    ...
    ValueError: no_such_file.ipynb is not a notebook file / no_such_file.ipynb 不是笔记本文件
    """
    from .cases import lab_table
    from .harness import answer_names, cell_kind, grade_notebook

    path = pathlib.Path(notebook)
    if not path.is_file():
        raise ValueError(say("is_folder" if path.is_dir() else "not_notebook_file", path=path))
    name = lab or random_lab_of(path)
    table = lab_table(name)
    nb = read_attempt(path, name, [t["id"] for t in table["tasks"]])
    problems = answer_problems(nb, name)
    if problems:
        raise ValueError(say("cannot_be_graded", path=path, why=joined(problems)))
    for c in nb.cells:
        if cell_kind(c) == "setup" and _edited(c):
            why = phrase("locked_cell_edited", cell=repr(_nbg(c).get("grade_id")), path=f"exercises/{name}/{name}.ipynb")
            raise ValueError(say("cannot_be_graded", path=path, why=why))
    seed = secrets.randbits(63) if seed is None else int(seed)
    start = time.monotonic()
    ids = [t["id"] for t in table["tasks"]]
    graded = nb.copy()
    graded.cells = []
    edited: set[str] = set()
    for c in nb.cells:
        kind, gid = cell_kind(c), str(_nbg(c).get("grade_id", ""))
        if kind == "test":
            if not gid.startswith("test_") or gid[5:] not in ids:
                continue  # hidden test cells (empty in an exercise) and anything else graded: replaced below
            if _edited(c):
                edited.add(gid[5:])
                continue
        if kind != "text":
            graded.cells.append(c)
    for t in ids:
        graded.cells.append(_random_cell(name, t, seed))
    names: dict[str, str] = {t: t for t in ids}
    for c in nb.cells:
        if cell_kind(c) == "answer":
            for n in answer_names(c.source):
                names.setdefault(n, str(_nbg(c).get("grade_id", "")))
    graded, _findings = grade_notebook(graded, names, packages=tuple(table["packages"]), timeout=timeout or 60,
                                       unsafe=sandbox_problem() is not None)
    outcome: dict[str, list[str]] = {}
    for c in graded.cells:
        if cell_kind(c) == "test":
            outcome[str(_nbg(c).get("grade_id"))] = [f"{o.get('ename')}: {o.get('evalue')}".rstrip(": ")
                                                     for o in c.get("outputs", []) if o.get("output_type") == "error"]
    exercise = f"exercises/{name}/{name}.ipynb"
    results = []
    for t in table["tasks"]:
        visible: list[str] | None = outcome.get(f"test_{t['id']}")
        if t["id"] in edited:
            visible = [phrase("test_cell_edited", cell=f"test_{t['id']}", path=exercise)]
        elif visible is None:
            visible = [phrase("test_cell_missing", cell=f"test_{t['id']}", path=exercise)]
        random = outcome.get(f"random_{t['id']}", [phrase("random_did_not_run")])
        msgs = tuple([str(labelled(phrase("visible_test"), m)) for m in visible]
                     + [str(labelled(phrase("random_case_seed", seed=seed), m)) for m in random])
        points = (0.0 if visible else t["visible"]) + (0.0 if random else t["random"])
        results.append(TaskResult(t["id"], t["title"], points, t["visible"] + t["random"], msgs))
    return SelfGrade(name, seed, tuple(results), time.monotonic() - start, source="visible tests and random cases")
