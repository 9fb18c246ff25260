"""JupyterLab's nbgrader panels on one machine, for a learner and an instructor.

nbgrader 0.9.6 adds an *Nbgrader* menu to JupyterLab. With ``nbgrader_config.py`` at the
repository root they all work when JupyterLab's root directory is the repository root (``make lab``
starts it there; no other flag, file or environment variable is needed):

* **Assignments** (learner): lists the labs released into the local exchange
  (``.grading/exchange``), *Fetch* copies one into ``my_labs/<lab>/`` (git-ignored), *Validate* runs
  its visible tests in the grading kernel, *Submit* hands it in to the exchange.
* **Courses**: shows the course ``fp8lab`` and links to the Formgrader (local, same server).
* **Formgrader** (instructor): the labs of ``solutions/``; generate, release, collect the
  submissions from the exchange, autograde, feedback, the gradebook ``.grading/gradebook.db``.
* **Create Assignment** cell toolbar (lab authors) and the **Validate** button of a notebook.

Before nbgrader knew the course id and the exchange folder, the Assignments list said "Error
fetching courses!" and "exchange directory does not exist". The Assignments list shows what was
*released*: :func:`release` (``fp8lab labs release``, run by ``make lab``) puts every generated lab
into the local exchange and is a no-op when they are current. Self-paced learners can skip the
exchange altogether and grade an attempt with ``fp8lab labs grade``.

>>> released_current(["01_decode_exmy"], exchange=pathlib.Path("/nonexistent"))
False
"""

from __future__ import annotations

import pathlib
from typing import Sequence

from .catalog import get_lab, list_labs
from .course import COURSE_ID, Course, main_course, run_nbgrader

__all__ = ["release", "released_current", "outbound"]


def outbound(exchange: pathlib.Path, lab: str) -> pathlib.Path:
    """Where the exchange keeps the released notebook of ``lab``.

    >>> outbound(pathlib.Path("/x"), "01_decode_exmy").as_posix()
    '/x/fp8lab/outbound/01_decode_exmy/01_decode_exmy.ipynb'
    """
    return exchange / COURSE_ID / "outbound" / lab / f"{lab}.ipynb"


def released_current(labs: Sequence[str], exchange: pathlib.Path) -> bool:
    """Whether every lab's released copy in ``exchange`` equals its ``exercises/`` notebook."""
    for name in labs:
        lab = get_lab(name)
        out = outbound(exchange, name)
        if not out.is_file() or out.read_bytes() != lab.exercise.read_bytes():
            return False
    return True


def release(labs: Sequence[str] | None = None, course: Course | None = None) -> list[str]:
    """``nbgrader release_assignment`` for every lab (default: all) whose exchange copy is missing or stale.

    Returns the labs released; the exchange is ``.grading/exchange`` of the course.

    >>> release(["no_such_lab"])
    Traceback (most recent call last):
    ...
    ValueError: unknown lab 'no_such_lab'; the labs are [...]
    """
    course = course or main_course()
    names = list(labs) if labs else [lab.name for lab in list_labs()]
    exchange = course.grading / "exchange"
    done = []
    for name in names:
        lab = get_lab(name)
        if not lab.exercise.is_file():
            raise ValueError(f"{lab.exercise} does not exist: run `fp8lab labs generate {name}` first")
        if released_current([name], exchange):
            continue
        run_nbgrader(course, ["release_assignment", name, "--force"])
        done.append(name)
    return done
