"""Self-grading for learners: ``fp8lab labs grade <notebook>`` runs the hidden tests through nbgrader.

The attempt is graded as student ``learner`` in a scratch course (its own gradebook, deleted
afterwards), exactly as a class is graded: the test cells are restored from the lab's source, the
source scan and the no-shortcut guard apply, and the hidden random cases use a fresh seed unless
``--seed`` is given. The result lists the points per task and, for each failing test cell, the
message that says what was expected and what came back.
"""

from __future__ import annotations

import pathlib
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass

from .catalog import Lab, get_lab, list_labs
from .grading import _per_student_limit, cell_messages, grade_in_scratch, prepare_scratch, task_scores

__all__ = ["TaskResult", "SelfGrade", "grade_attempt", "lab_of"]

LEARNER = "learner"


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
    <BLANKLINE>
      ok   split_fields                2 / 2    Split
    """
        lines = [f"{self.lab}: {_n(self.points)} / {_n(self.max_points)} points (hidden tests, seed {self.seed})", ""]
        for t in self.tasks:
            mark = "ok  " if t.points == t.max_points else "FAIL"
            lines.append(f"  {mark} {t.id:<24} {_n(t.points):>4} / {_n(t.max_points):<4} {t.title}")
            for m in t.messages:
                for k, part in enumerate(m.splitlines()[:8]):
                    lines.append(("         " if k == 0 else "           ") + part[: width - 11])
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
    raise ValueError(f"cannot tell which lab {path} is: name it <lab>.ipynb or pass --lab; the labs are {sorted(names)}")


def grade_attempt(notebook: str | pathlib.Path, *, lab: str | None = None, seed: int | None = None,
                  timeout: int | None = None) -> SelfGrade:
    """Grade one attempt at a lab with its hidden tests and return the points and messages per task.

    >>> grade_attempt("no_such_file.ipynb")
    Traceback (most recent call last):
    ...
    ValueError: no_such_file.ipynb is not a notebook file
    """
    path = pathlib.Path(notebook)
    if not path.is_file():
        raise ValueError(f"{path} is not a notebook file")
    the_lab = get_lab(lab) if lab else lab_of(path)
    seed = secrets.randbits(63) if seed is None else int(seed)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"fp8lab-selfgrade-{the_lab.name}-") as tmp:
        course = prepare_scratch(the_lab, pathlib.Path(tmp) / "course", timeout=timeout)
        dest = course.submitted(LEARNER, the_lab.name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
        log = grade_in_scratch(the_lab, course, [LEARNER], seed=seed, wall_limit=_per_student_limit(the_lab, course))
        scores = task_scores(the_lab.name, course).get(LEARNER)
        graded = course.autograded(LEARNER, the_lab.name) / f"{the_lab.name}.ipynb"
        if scores is None or not graded.is_file():
            tail = "\n".join(log.splitlines()[-15:])
            raise RuntimeError(f"nbgrader could not grade {path}:\n{tail}")
        messages = cell_messages(graded)
    results = []
    for t in the_lab.tasks:
        msgs = tuple(m for gid in (f"test_{t.id}", f"hidden_{t.id}") for m in messages.get(gid, []))
        results.append(TaskResult(t.id, t.title, scores[t.id], t.points, msgs))
    return SelfGrade(the_lab.name, seed, tuple(results), time.monotonic() - start)
