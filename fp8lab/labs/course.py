"""nbgrader courses: the main one at the repository root, and scratch copies that grade in isolation.

The **main course** is the repository itself (``nbgrader_config.py``): ``solutions/`` is the source,
``exercises/`` the release, the gradebook and every grading folder live in ``.grading/``.

A **scratch course** is a temporary folder whose ``nbgrader_config.py`` loads the main one and
overrides only its own root, release folder and gradebook; it reads ``solutions/`` in place. The
self-grader and each ``--jobs`` worker grade in one, so no two nbgrader processes ever write the
same SQLite gradebook. A timeout other than the main config's is written into the scratch config,
because a config-file value would silently win over a command-line flag.

nbgrader runs as ``python -m nbgrader`` of this interpreter, with this interpreter's ``bin/`` first on
``PATH`` (nbgrader calls the ``alembic`` executable to create a gradebook) and the grading seed in
the environment, which every kernel it starts inherits.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Sequence

from .._optional import require
from .catalog import repo_root
from .seed import SEED_ENV

__all__ = ["Course", "main_course", "scratch_course", "run_nbgrader", "NbgraderError", "COURSE_ID"]

COURSE_ID = "fp8lab"


class NbgraderError(RuntimeError):
    """An nbgrader command failed; the message carries the end of its log, :attr:`summary` one line of it."""

    @property
    def summary(self) -> str:
        """The message's first line and the log's last error line, as one line (what the command line prints).

        >>> NbgraderError("nbgrader x failed (exit 1):\\n[x | INFO] start\\n[x | ERROR] no file a\\nTrace\\n").summary
        'nbgrader x failed (exit 1): [x | ERROR] no file a'
        """
        first, *log = str(self).splitlines() or [""]
        errors = [ln.strip() for ln in log if ("error" in ln.lower() or "ran past" in ln) and ln.strip()]
        last = errors[-1] if errors else next((ln.strip() for ln in reversed(log) if ln.strip()), "")
        return " ".join(f"{first.rstrip(':')}: {last}".split()) if last else first


@dataclass(frozen=True)
class Course:
    """An nbgrader course folder (with its ``nbgrader_config.py``) and where its parts are."""

    root: pathlib.Path
    scratch: bool = False
    grading_dir: pathlib.Path | None = None

    @property
    def grading(self) -> pathlib.Path:
        """The folder of grading artefacts (``.grading``, or ``FP8LAB_GRADING_DIR`` for the main course)."""
        return self.grading_dir or self.root / ".grading"

    @property
    def gradebook(self) -> pathlib.Path:
        """The SQLite gradebook file."""
        return self.grading / "gradebook.db"

    @property
    def db_url(self) -> str:
        """The gradebook as an SQLAlchemy URL."""
        return f"sqlite:///{self.gradebook}"

    @property
    def release(self) -> pathlib.Path:
        """Where ``generate_assignment`` writes (``exercises/`` of the main course)."""
        return self.root / "exercises"

    def config(self):
        """This course's nbgrader configuration, loaded the way nbgrader loads it (a traitlets Config)."""
        from traitlets.config.loader import PyFileConfigLoader

        return PyFileConfigLoader("nbgrader_config.py", path=str(self.root)).load_config()

    def timeout(self) -> int:
        """The per-cell timeout in seconds (``Execute.timeout``) this course grades with."""
        value = self.config().Execute.get("timeout", None)
        if not isinstance(value, int):
            raise ValueError(f"{self.root / 'nbgrader_config.py'} must set c.Execute.timeout to a number of seconds")
        return value

    def submitted(self, student: str, lab: str) -> pathlib.Path:
        """The submitted notebook of ``student`` for ``lab``."""
        return self.grading / "submitted" / student / lab / f"{lab}.ipynb"

    def autograded(self, student: str, lab: str) -> pathlib.Path:
        """The autograded folder of ``student`` for ``lab``."""
        return self.grading / "autograded" / student / lab

    def feedback(self, student: str, lab: str) -> pathlib.Path:
        """The feedback HTML of ``student`` for ``lab``."""
        return self.grading / "feedback" / student / lab / f"{lab}.html"


def main_course() -> Course:
    """The repository's own course (gradebook in ``.grading/gradebook.db``, or under ``FP8LAB_GRADING_DIR``).

    >>> main_course().root == repo_root(), main_course().timeout()
    (True, 60)
    """
    moved = os.environ.get("FP8LAB_GRADING_DIR")
    return Course(repo_root(), grading_dir=pathlib.Path(moved).resolve() if moved else None)


def scratch_course(folder: pathlib.Path | str, *, timeout: int | None = None) -> Course:
    """Make ``folder`` an nbgrader course that grades the repository's labs with its own gradebook.

    Its config names its own folders relative to itself, so a copy of the folder is a course too.
    ``timeout`` (seconds per cell) replaces the main config's ``Execute.timeout`` in this course only.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     course = scratch_course(tmp, timeout=5)
    ...     course.timeout(), course.config().CourseDirectory.root == str(course.root)
    (5, True)
    """
    folder = pathlib.Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".grading").mkdir(exist_ok=True)
    root = repo_root()
    lines = [
        '"""A scratch copy of the fp8lab course, written by fp8lab.labs.course (delete it freely)."""',
        "import os",
        "c = get_config()  # noqa: F821",
        f"load_subconfig({str(root / 'nbgrader_config.py')!r})",
        "_here = os.path.dirname(os.path.abspath(__file__))",
        "c.CourseDirectory.root = _here",
        f"c.CourseDirectory.source_directory = {str(root / 'solutions')!r}",
        "_grading = os.path.join(_here, '.grading')",
        "for _step in ('submitted', 'autograded', 'feedback', 'solution', 'source_with_tests'):",
        "    setattr(c.CourseDirectory, _step + '_directory', os.path.join(_grading, _step))",
        "c.CourseDirectory.db_url = 'sqlite:///' + os.path.join(_grading, 'gradebook.db')",
        "c.Exchange.root = os.path.join(_grading, 'exchange')",
        "c.Exchange.assignment_dir = _here",
    ]
    if timeout is not None:
        if not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 1:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        lines.append(f"c.Execute.timeout = {timeout}")
    (folder / "nbgrader_config.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Course(folder, scratch=True)


def copy_course(src: Course, dst: pathlib.Path | str, *, timeout: int | None = None) -> Course:
    """A copy of a scratch course (config, gradebook) in ``dst``, without submissions; e.g. one per worker.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     copy = copy_course(scratch_course(f"{tmp}/a"), f"{tmp}/b", timeout=9)
    ...     copy.config().CourseDirectory.root == str(copy.root), copy.timeout()
    (True, 9)
    """
    dst = pathlib.Path(dst).resolve()
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src.root, dst, ignore=shutil.ignore_patterns("submitted", "autograded", "feedback", ".ready"))
    if timeout is not None:
        scratch_course(dst, timeout=timeout)
    return Course(dst, scratch=True)


def nbgrader_env(seed: int | None) -> dict[str, str]:
    """The environment nbgrader runs in: this interpreter's bin/ on PATH, the seed, quiet warnings.

    >>> env = nbgrader_env(7)
    >>> env["FP8LAB_GRADING_SEED"], env["PATH"].split(os.pathsep)[0] == os.path.dirname(sys.executable)
    ('7', True)
    """
    env = dict(os.environ)
    bindir = str(pathlib.Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([bindir, env.get("PATH", "")])
    if seed is not None:
        env[SEED_ENV] = str(int(seed))
    env.setdefault("PYTHONWARNINGS", "ignore::DeprecationWarning")
    return env


def run_nbgrader(course: Course, args: Sequence[str], *, seed: int | None = None, wall_limit: float | None = None,
                 check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``nbgrader <args>`` in ``course`` and return the finished process (stdout and stderr joined).

    ``check`` raises :class:`NbgraderError` on a non-zero exit; ``wall_limit`` (seconds) kills a run
    that takes longer and raises as well. nbgrader's ``autograde`` exits 0 even when tests fail:
    read the scores from the gradebook.

    >>> run_nbgrader(main_course(), ["--version"]).stdout.splitlines()[-1]
    'nbgrader version 0.9.6'
    """
    require("nbgrader", "the lab tooling")  # an ImportError that names the extra, if it is missing
    cmd = [sys.executable, "-m", "nbgrader", *args]
    try:
        proc = subprocess.run(cmd, cwd=course.root, env={**nbgrader_env(seed), **(env or {})}, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=wall_limit)
    except subprocess.TimeoutExpired as err:
        tail = (err.stdout or b"")[-3000:]
        raise NbgraderError(f"nbgrader {' '.join(args)} ran past {wall_limit:.0f} s and was stopped:\n{tail!s}") from None
    if check and proc.returncode != 0:
        raise NbgraderError(f"nbgrader {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stdout[-4000:]}")
    return proc
