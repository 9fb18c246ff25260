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

The Assignments list shows what was *released*; with an empty exchange it says "Error fetching
courses!" and "exchange directory does not exist". :func:`prepare_panels` (run by every ``make lab``
before the server starts, one line of output) makes the gradebook as nbgrader's own tools make it
(with its ``alembic_version`` table) and releases every lab whose exchange copy is missing or stale
(:func:`release`, also ``fp8lab labs release``); it does nothing when both are current. Self-paced
learners can skip the exchange altogether and grade an attempt with ``fp8lab labs grade``.

>>> released_current(["01_decode_exmy"], exchange=pathlib.Path("/nonexistent"))
False
"""

from __future__ import annotations

import pathlib
import sqlite3
import subprocess
import sys
from typing import Sequence

from .._optional import require
from .catalog import get_lab, list_labs
from .course import COURSE_ID, Course, NbgraderError, main_course, nbgrader_env

__all__ = ["release", "released_current", "outbound", "gradebook_current", "prepare_panels"]


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


def gradebook_current(gradebook: pathlib.Path) -> bool:
    """Whether ``gradebook`` is an nbgrader gradebook that records its schema version (``alembic_version``).

    A gradebook made by a Formgrader that could not run ``alembic`` has nbgrader's tables but no
    version, and ``nbgrader db upgrade`` then fails on it.

    >>> gradebook_current(pathlib.Path("/nonexistent/gradebook.db"))
    False
    """
    if not gradebook.is_file():
        return False
    try:
        with sqlite3.connect(f"file:{gradebook}?mode=ro", uri=True) as db:
            names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:
        return False
    return "alembic_version" in names and "assignment" in names


def _nbgrader_session(course: Course, labs: Sequence[str]) -> None:
    """In one nbgrader process: make or repair the gradebook, then ``release_assignment --force`` each lab."""
    cmd = [sys.executable, "-m", __name__, course.db_url, *labs]
    proc = subprocess.run(cmd, cwd=course.root, env=nbgrader_env(None), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)
    if proc.returncode != 0:
        raise NbgraderError(f"nbgrader release_assignment {' '.join(labs)} failed (exit {proc.returncode}):\n"
                            f"{proc.stdout[-4000:]}")


def _in_nbgrader(db_url: str, labs: Sequence[str]) -> None:
    """What :func:`_nbgrader_session` runs: nbgrader's Gradebook and ReleaseAssignmentApp, in the course folder."""
    from nbgrader.api import Gradebook, get_alembic_version
    from nbgrader.apps.releaseassignmentapp import ReleaseAssignmentApp
    from sqlalchemy import create_engine, inspect, text

    engine = create_engine(db_url)
    tables = inspect(engine).get_table_names()
    if tables and "alembic_version" not in tables:
        # nbgrader made these tables with its current models (a server without `alembic` on PATH stops
        # right after create_all): record the schema version nbgrader records for a new gradebook
        with engine.begin() as db:
            db.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
            db.execute(text("INSERT INTO alembic_version (version_num) VALUES (:v)"), {"v": get_alembic_version()})
    engine.dispose()
    with Gradebook(db_url, COURSE_ID):  # creates the tables and alembic_version, as `nbgrader db upgrade` would
        pass
    for name in labs:
        app = ReleaseAssignmentApp()
        app.initialize([name, "--force", "--log-level=WARN"])
        app.start()
        ReleaseAssignmentApp.clear_instance()


def release(labs: Sequence[str] | None = None, course: Course | None = None) -> list[str]:
    """``nbgrader release_assignment`` for every lab (default: all) whose exchange copy is missing or stale.

    Returns the labs released; the exchange is ``.grading/exchange`` of the course. All of them are
    released by one nbgrader process, which also makes (or repairs) the gradebook.

    >>> release(["no_such_lab"])
    Traceback (most recent call last):
    ...
    ValueError: unknown lab 'no_such_lab'; the labs are [...]
    """
    require("nbgrader", "releasing labs into the exchange")  # an ImportError that names the extra, if it is missing
    course = course or main_course()
    names = list(labs) if labs else [lab.name for lab in list_labs()]
    exchange = course.grading / "exchange"
    stale = []
    for name in names:
        lab = get_lab(name)
        if not lab.exercise.is_file():
            raise ValueError(f"{lab.exercise} does not exist: run `fp8lab labs generate {name}` first")
        if not released_current([name], exchange):
            stale.append(name)
    if stale or not gradebook_current(course.gradebook):
        course.grading.mkdir(parents=True, exist_ok=True)
        _nbgrader_session(course, stale)
    return stale


def prepare_panels(course: Course | None = None) -> str:
    """Make JupyterLab's nbgrader panels work on first use; returns the one line ``make lab`` prints.

    The gradebook is made (or repaired) and every lab released into the exchange, unless both are current.
    """
    course = course or main_course()
    labs = [lab.name for lab in list_labs()]
    exchange = course.grading / "exchange"
    try:
        where = exchange.relative_to(course.root)
    except ValueError:
        where = exchange
    try:
        released = release(labs, course)
    except (ValueError, OSError, NbgraderError, subprocess.SubprocessError) as err:
        summary = err.summary if isinstance(err, NbgraderError) else str(err)
        return (f"labs: could not release them into {where}, so JupyterLab's Assignments panel will be empty "
                f"({' '.join(summary.split())[:300]}); `fp8lab labs release` tries again")
    if released:
        return f"labs: released {len(released)} of {len(labs)} into {where} (JupyterLab: Nbgrader > Assignment List)"
    return f"labs: all {len(labs)} released in {where} are current (JupyterLab: Nbgrader > Assignment List)"


if __name__ == "__main__":
    _in_nbgrader(sys.argv[1], sys.argv[2:])
