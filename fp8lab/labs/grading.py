"""The instructor's workflow on nbgrader's CLI and gradebook: generate, collect, autograde, feedback, export.

Every step is one function (and one ``fp8lab labs`` command):

1. :func:`generate` - ``nbgrader generate_assignment`` for each lab: writes ``exercises/`` and puts the
   labs (with their hidden tests) into the gradebook ``.grading/gradebook.db``.
2. :func:`collect` - a folder of submissions, one notebook per student named ``<student id>.ipynb``,
   into ``.grading/submitted/<student>/<lab>/<lab>.ipynb``.
3. :func:`autograde` - grades the collected submissions with ``--jobs N`` worker processes. Each worker
   runs ``nbgrader autograde`` in its own scratch course (its own SQLite gradebook, so no two
   processes write one database); the results are then merged into the main gradebook one student
   at a time, and the autograded notebooks copied to ``.grading/autograded/``. The hidden tests'
   random cases come from one seed for the whole class (``--seed``, recorded in the report).
4. :func:`feedback` - ``nbgrader generate_feedback``: one HTML page per student in ``.grading/feedback/``
   (hidden test code is left out; the failure messages say what was expected and what came back).
5. :func:`export` - ``nbgrader export`` to a CSV of totals, plus a CSV of points per task.

What a student or an instructor reads of a submission (why it is ungradeable, the export's
``reason`` column, a test cell that wrote to stderr) is in English and Chinese in one string
(:mod:`fp8lab.labs.messages`); the statuses themselves (:data:`STATUSES`) are the CSV's codes.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import math
import pathlib
import re
import secrets
import shutil
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Sequence

from .catalog import Lab, get_lab, list_labs
from .course import COURSE_ID, Course, NbgraderError, copy_course, main_course, run_nbgrader, scratch_course
from .messages import phrase, say, text_of
from .sandbox import UNSAFE_ENV, sandbox_problem

__all__ = ["generate", "collect", "autograde", "feedback", "export", "task_scores", "GradingReport",
           "prepare_scratch", "grade_in_scratch", "merge_submission", "cell_messages", "STUDENT_ID",
           "stage_submission", "export_rows", "instructor_report", "set_due_date", "feedback_failures",
           "STATUSES", "EXPORT_COLUMNS"]

#: what a student id (a submission's file name without .ipynb) may look like
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")

STARTUP_ALLOWANCE = 120  # seconds per student beyond the cells' timeouts: nbgrader, kernel start, imports
MAX_NOTEBOOK_BYTES = 64 * 2**20  # a bigger submission is ungradeable (its answers are never that big)


# ------------------------------------------------------------------------------------------------
# 1. generate
def generate(labs: Sequence[str] | None = None, course: Course | None = None) -> list[pathlib.Path]:
    """Run ``nbgrader generate_assignment --force`` for ``labs`` (default: all) and return the exercises written.

    >>> generate(["no_such_lab"])
    Traceback (most recent call last):
    ...
    ValueError: unknown lab 'no_such_lab'; the labs are [...]
    """
    course = course or main_course()
    names = list(labs) if labs else [lab.name for lab in list_labs()]
    out = []
    for name in names:
        get_lab(name)  # a clear error for an unknown lab
        run_nbgrader(course, ["generate_assignment", name, "--force"])
        out.append(course.release / name / f"{name}.ipynb")
    return out


# ------------------------------------------------------------------------------------------------
# 2. collect
def collect(lab: str, folder: str | pathlib.Path, course: Course | None = None) -> list[str]:
    """Copy ``folder/<student>.ipynb`` (one notebook per student) into the course's ``submitted/``.

    A ``folder/<student>.timestamp.txt`` (a time such as ``2026-12-24 17:05:00 UTC``) becomes the
    submission's ``timestamp.txt``, which nbgrader compares with the lab's due date.

    Returns the student ids. A file name that is not a valid student id raises ValueError before
    anything is copied.

    >>> collect("01_decode_exmy", "/nonexistent")
    Traceback (most recent call last):
    ...
    ValueError: /nonexistent is not a folder of submissions (one <student id>.ipynb per student)
    """
    course = course or main_course()
    get_lab(lab)
    folder = pathlib.Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a folder of submissions (one <student id>.ipynb per student)")
    files = sorted(folder.glob("*.ipynb"))
    if not files:
        raise ValueError(f"{folder} holds no .ipynb files (one <student id>.ipynb per student)")
    bad = [f.name for f in files if not STUDENT_ID.match(f.stem)]
    if bad:
        raise ValueError(f"not valid student ids (letters, digits, '_', '-', '.'): {bad}")
    students = []
    for f in files:
        dest = course.submitted(f.stem, lab)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, dest)
        stamp = f.with_name(f.stem + ".timestamp.txt")  # the submission time, as nbgrader's exchange records it
        if stamp.is_file():
            shutil.copyfile(stamp, dest.with_name("timestamp.txt"))
        students.append(f.stem)
    return students


# ------------------------------------------------------------------------------------------------
# 3. autograde
@dataclass
class GradingReport:
    """What a class grading run did: per student the points per task, the findings, why one was ungradeable."""

    lab: str
    seed: int
    jobs: int
    seconds: float
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    findings: dict[str, list[str]] = field(default_factory=dict)

    def totals(self) -> dict[str, float]:
        """Total points per student.

    >>> GradingReport("lab", 1, 1, 0.0, {"ann": {"a": 1.0, "b": 2.0}}).totals()
    {'ann': 3.0}
    """
        return {s: float(sum(t.values())) for s, t in self.scores.items()}


def prepare_scratch(lab: Lab, folder: pathlib.Path, *, timeout: int | None = None) -> Course:
    """A scratch course in ``folder`` whose gradebook knows ``lab``, copied from a cached template.

    The template (a scratch course where ``generate_assignment`` ran) is kept in ``.grading/cache/``
    under a key of the lab's source, ``nbgrader_config.py`` and the nbgrader version, because creating
    a gradebook takes seconds; ``timeout`` is written into the copy's config.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:  # doctest: +SKIP
    ...     prepare_scratch(get_lab("01_decode_exmy"), pathlib.Path(tmp), timeout=5).timeout()
    5
    """
    return copy_course(_template(lab), folder, timeout=timeout)


def _template(lab: Lab) -> Course:
    import nbgrader

    main = main_course()
    digest = hashlib.sha256()
    for part in (lab.notebook.read_bytes(), (main.root / "nbgrader_config.py").read_bytes(), nbgrader.__version__.encode()):
        digest.update(hashlib.sha256(part).digest())
    cache = main.grading / "cache"
    final = cache / f"{lab.name}-{digest.hexdigest()[:16]}"
    if (final / ".ready").is_file():
        return Course(final, scratch=True)
    cache.mkdir(parents=True, exist_ok=True)
    for old in cache.glob(f"{lab.name}-*"):
        if old != final and time.time() - old.stat().st_mtime > 3600:
            shutil.rmtree(old, ignore_errors=True)  # templates of older sources
    build = pathlib.Path(tempfile.mkdtemp(prefix=f".{lab.name}-", dir=cache))
    course = scratch_course(build / "course")
    run_nbgrader(course, ["generate_assignment", lab.name, "--force"])
    try:
        copy_course(course, final.with_suffix(".tmp"))
        (final.with_suffix(".tmp") / ".ready").touch()
        os.replace(final.with_suffix(".tmp"), final)  # another process may have won the race: fine
    except OSError:
        pass
    finally:
        shutil.rmtree(build, ignore_errors=True)
        shutil.rmtree(final.with_suffix(".tmp"), ignore_errors=True)
    return Course(final, scratch=True)


def _per_student_limit(lab: Lab, course: Course) -> float:
    """Seconds one submission may take: every code cell at its timeout, plus start-up."""
    nb = json.loads(lab.notebook.read_text(encoding="utf-8"))
    cells = sum(1 for c in nb["cells"] if c["cell_type"] == "code")
    return cells * course.timeout() + STARTUP_ALLOWANCE


def grade_in_scratch(lab: Lab, course: Course, students: Sequence[str], *, seed: int,
                     wall_limit: float | None = None, unsafe_no_sandbox: bool = False) -> str:
    """Run ``nbgrader autograde`` for ``students`` (already in ``course``'s submitted/) and return its log.

    >>> grade_in_scratch(get_lab("01_decode_exmy"), main_course(), [], seed=1)
    ''
    """
    if not students:
        return ""
    args = ["autograde", lab.name, "--force"]
    if len(students) == 1:
        args.append(f"--student={students[0]}")
    env = {UNSAFE_ENV: "1"} if unsafe_no_sandbox else {UNSAFE_ENV: ""}
    proc = run_nbgrader(course, args, seed=seed, wall_limit=wall_limit, check=False, env=env)
    return proc.stdout


def stage_submission(src: pathlib.Path, release: pathlib.Path, dest: pathlib.Path) -> list[str]:
    """Write into ``dest`` the notebook that is graded for the submission ``src``: the exercise ``release``
    with the code of ``src``'s answer cells (matched by cell id, :func:`fp8lab.labs.harness.normalise`).

    Returns notes on what was left out; ValueError (one line) when ``src`` is not a readable notebook.
    A ``timestamp.txt`` and a ``submission_secret.txt`` beside ``src`` (what ``nbgrader collect`` records;
    ``release_feedback`` needs both) are copied along.
    """
    import nbformat

    from .harness import normalise

    size = pathlib.Path(src).stat().st_size if pathlib.Path(src).is_file() else 0
    if size > MAX_NOTEBOOK_BYTES:
        raise ValueError(say("file_too_big", size=size // 2**20, limit=MAX_NOTEBOOK_BYTES // 2**20))
    try:
        raw = json.loads(pathlib.Path(src).read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        raise ValueError(say("unreadable_notebook", error=f"{type(err).__name__}: {str(err)[:120]}")) from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise ValueError(say("no_cells_list"))
    nb, notes = normalise(nbformat.read(str(release), as_version=4), raw)
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(dest))
    for extra in ("timestamp.txt", "submission_secret.txt"):  # what nbgrader's exchange collect records beside it
        found = pathlib.Path(src).with_name(extra)
        if found.is_file():
            shutil.copyfile(found, dest.with_name(extra))
    return notes


def merge_submission(src: Course, dst: Course, lab: str, student: str, *, flagged: bool = False) -> None:
    """Copy one graded submission from a scratch gradebook into ``dst``'s (auto scores and comments, flags, files).

    Manual scores, manual comments and extra credit already in ``dst`` are kept, as nbgrader's own
    autograde keeps them; ``flagged`` flags the submission for the instructor (findings).
    """
    from nbgrader.api import Gradebook

    with _quiet_sqlalchemy(), Gradebook(src.db_url, COURSE_ID) as a, Gradebook(dst.db_url, COURSE_ID) as b:
        sub = a.find_submission(lab, student)
        b.update_or_create_student(student)
        kw = {"timestamp": sub.timestamp} if sub.timestamp else {}
        b.update_or_create_submission(lab, student, **kw)
        for nb in sub.notebooks:
            target = b.find_submission_notebook(nb.name, lab, student)
            target.flagged = bool(nb.flagged or flagged)
            target.late_submission_penalty = nb.late_submission_penalty
            for g in nb.grades:  # the autograder's part only: manual grades and extra credit stay (as nbgrader does)
                t = b.find_grade(g.name, nb.name, lab, student)
                t.auto_score = g.auto_score
                t.needs_manual_grade = bool(g.needs_manual_grade) and t.manual_score is None
            for cm in nb.comments:
                t = b.find_comment(cm.name, nb.name, lab, student)
                t.auto_comment = cm.auto_comment
        b.db.commit()
    here, there = src.autograded(student, lab), dst.autograded(student, lab)
    if there.exists():
        shutil.rmtree(there)
    if here.exists():
        shutil.copytree(here, there)


@contextlib.contextmanager
def _quiet_sqlalchemy():
    """nbgrader's gradebook API triggers harmless SQLAlchemy ``SAWarning``s (autoflush); keep them out of the output."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not in session.*")
        yield


def _has_submission(course: Course, lab: str, student: str) -> bool:
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(course.db_url, COURSE_ID) as gb:
        try:
            sub = gb.find_submission(lab, student)
        except MissingEntry:
            return False
        return all(g.auto_score is not None or g.manual_score is not None for nb in sub.notebooks for g in nb.grades)


def _check_gradebook(lab: Lab, template: Course, course: Course) -> None:
    """The main gradebook must hold this lab exactly as ``solutions/`` has it (else: run generate)."""
    from nbgrader.api import Gradebook, MissingEntry

    def cells(db_url: str) -> dict[str, str]:
        with Gradebook(db_url, COURSE_ID) as gb:
            nb = gb.find_notebook(lab.name, lab.name)
            return {c.name: c.checksum for c in nb.source_cells}

    try:
        main = cells(course.db_url)
    except MissingEntry:
        raise ValueError(f"the gradebook has no lab {lab.name}: run `fp8lab labs generate {lab.name}` first") from None
    if main != cells(template.db_url):
        raise ValueError(f"the gradebook's copy of {lab.name} differs from solutions/: run `fp8lab labs generate {lab.name}`")


def autograde(lab_name: str, *, jobs: int = 1, seed: int | None = None, timeout: int | None = None,
              students: Sequence[str] | None = None, course: Course | None = None,
              unsafe_no_sandbox: bool = False) -> GradingReport:
    """Autograde every collected submission of a lab (or ``students``) with ``jobs`` worker processes.

    Scores land in the course gradebook; the returned report has the points per task per student,
    the findings per student (sandbox events, source-scan findings) and the submissions that could
    not be graded, with why. ``seed`` fixes the hidden random cases (default: a fresh secret one);
    ``timeout`` overrides the per-cell timeout of ``nbgrader_config.py`` for this run. Grading
    refuses to start when no sandbox can (:func:`fp8lab.labs.sandbox.sandbox_problem`) unless
    ``unsafe_no_sandbox``.

    >>> autograde("01_decode_exmy", jobs=0)
    Traceback (most recent call last):
    ...
    ValueError: jobs must be a positive integer, got 0
    """
    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    if not unsafe_no_sandbox and sandbox_problem():
        raise ValueError(f"grading refused: no sandbox can start ({sandbox_problem()}); "
                         "--unsafe-no-sandbox grades without one, with submissions able to reach this machine")
    course = course or main_course()
    lab = get_lab(lab_name)
    seed = secrets.randbits(63) if seed is None else int(seed)
    subdir = course.grading / "submitted"
    found = sorted(p.name for p in subdir.iterdir() if (p / lab.name / f"{lab.name}.ipynb").is_file()) if subdir.is_dir() else []
    todo = list(students) if students is not None else found
    missing = sorted(set(todo) - set(found))
    if missing:
        raise ValueError(f"no collected submission of {lab.name} for {missing}: run `fp8lab labs collect` first")
    start = time.monotonic()
    report = GradingReport(lab.name, seed, jobs, 0.0)
    with tempfile.TemporaryDirectory(prefix=f"fp8lab-grade-{lab.name}-") as tmp:
        template = prepare_scratch(lab, pathlib.Path(tmp) / "template", timeout=timeout)
        _check_gradebook(lab, template, course)
        _copy_due_date(course, template, lab.name)
        release = template.release / lab.name / f"{lab.name}.ipynb"
        gradable = []
        for s in todo:
            try:
                notes = stage_submission(course.submitted(s, lab.name), release,
                                         pathlib.Path(tmp) / "staged" / s / lab.name / f"{lab.name}.ipynb")
            except ValueError as err:
                report.failed[s] = say("ungradeable", why=text_of(err))
                _zero_submission(course, lab.name, s)
                continue
            report.findings[s] = notes + _scan_findings(pathlib.Path(tmp) / "staged" / s / lab.name / f"{lab.name}.ipynb")
            gradable.append(s)
        n = max(1, min(jobs, len(gradable)))
        chunks = [gradable[i::n] for i in range(n)]
        workers = [copy_course(template, pathlib.Path(tmp) / f"worker{i}") for i in range(n)]
        limit = _per_student_limit(lab, template)
        for w, chunk in zip(workers, chunks):
            for s in chunk:
                shutil.copytree(pathlib.Path(tmp) / "staged" / s / lab.name, w.submitted(s, lab.name).parent,
                                dirs_exist_ok=True)

        def run(i: int) -> str:
            try:
                return grade_in_scratch(lab, workers[i], chunks[i], seed=seed, wall_limit=limit * len(chunks[i]),
                                        unsafe_no_sandbox=unsafe_no_sandbox)
            except NbgraderError as err:
                return str(err)

        with ThreadPoolExecutor(max_workers=n) as pool:
            logs = list(pool.map(run, range(n)))
        for w, chunk, log in zip(workers, chunks, logs):  # merge one student at a time: one writer
            for s in chunk:
                if _has_submission(w, lab.name, s):
                    report.findings[s] = report.findings.get(s, []) + _sandbox_findings(w, lab.name, s)
                    merge_submission(w, course, lab.name, s, flagged=bool(report.findings[s]))
                else:
                    report.failed[s] = say("ungradeable", why=_failure(log, s))
                    _zero_submission(course, lab.name, s)
    report.findings = {s: f for s, f in report.findings.items() if f}
    report.scores = {s: v for s, v in task_scores(lab.name, course).items() if s in todo}
    report.seconds = time.monotonic() - start
    _save_report(course, report, todo)
    return report


def _copy_due_date(main: Course, scratch: Course, lab: str) -> None:
    """The main gradebook's due date of ``lab`` into a scratch gradebook (so nbgrader computes lateness there)."""
    from nbgrader.api import Gradebook

    with Gradebook(main.db_url, COURSE_ID) as a:
        due = a.find_assignment(lab).duedate
    if due is not None:
        with _quiet_sqlalchemy(), Gradebook(scratch.db_url, COURSE_ID) as b:
            b.update_or_create_assignment(lab, duedate=due)


def _scan_findings(notebook: pathlib.Path) -> list[str]:
    """What the source scan finds in the graded notebook's answer cells (reported and flagged, never scored)."""
    import nbformat

    from .preprocess import notebook_cells
    from .scan import scan

    try:
        return [f"scan: {f.describe()}" for f in scan(notebook_cells(nbformat.read(str(notebook), as_version=4)))]
    except Exception as err:  # noqa: BLE001 - the scan informs; it never stops grading
        return [say("scan_could_not_run", error=type(err).__name__)]


def _sandbox_findings(course: Course, lab: str, student: str) -> list[str]:
    """The sandbox's findings the harness wrote into the autograded notebook's metadata."""
    path = course.autograded(student, lab) / f"{lab}.ipynb"
    try:
        meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
        return [f"sandbox: {f}" for f in meta.get("fp8lab", {}).get("findings", [])]
    except (OSError, ValueError):
        return []


def _save_report(course: Course, report: GradingReport, graded: Sequence[str]) -> None:
    """The instructor's report of a lab (``.grading/reports/<lab>.json``): per student the last run's findings
    and why a submission could not be graded; a one-student regrade replaces only that student's entry."""
    path = course.grading / "reports" / f"{report.lab}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        old = {}
    students = {k: v for k, v in old.get("students", {}).items() if k not in graded}
    for s in graded:
        students[s] = {"findings": report.findings.get(s, []), "ungradeable": report.failed.get(s, "")}
    data = {"lab": report.lab, "last_seed": report.seed, "students": dict(sorted(students.items()))}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def _failure(log: str, student: str) -> str:
    lines = [ln for ln in log.splitlines() if "ERROR" in ln or "Error" in ln or "ran past" in ln]
    return phrase("did_not_finish", student=student, lines=" | ".join(lines[-3:]) if lines else phrase("see_log"))


def _zero_submission(course: Course, lab: str, student: str) -> None:
    """Record a submission that could not be graded with zero points, so it shows in the gradebook."""
    from nbgrader.api import Gradebook

    with _quiet_sqlalchemy(), Gradebook(course.db_url, COURSE_ID) as gb:
        gb.update_or_create_student(student)
        sub = gb.update_or_create_submission(lab, student)
        for nb in sub.notebooks:
            nb.flagged = True
            for g in nb.grades:
                g.auto_score, g.needs_manual_grade = 0.0, False
        gb.db.commit()


# ------------------------------------------------------------------------------------------------
# scores and messages
def task_scores(lab_name: str, course: Course | None = None) -> dict[str, dict[str, float]]:
    """Points per task per student for one lab, read from the gradebook (tasks in lab order).

    A task's points are the sum over its test cells ``test_<task>`` and ``hidden_<task>``.
    """
    from nbgrader.api import Gradebook, MissingEntry

    course = course or main_course()
    lab = get_lab(lab_name)
    out: dict[str, dict[str, float]] = {}
    with Gradebook(course.db_url, COURSE_ID) as gb:
        try:
            assignment = gb.find_assignment(lab.name)
        except MissingEntry:
            return out
        for sub in assignment.submissions:
            per = {t.id: 0.0 for t in lab.tasks}
            for nb in sub.notebooks:
                for g in nb.grades:
                    for prefix in ("test_", "hidden_"):
                        if g.name.startswith(prefix) and g.name[len(prefix):] in per:
                            per[g.name[len(prefix):]] += float(g.score or 0.0)
            out[sub.student.id] = per
    return dict(sorted(out.items()))


def cell_messages(notebook: pathlib.Path | str) -> dict[str, list[str]]:
    """The error messages of each graded test cell of an autograded notebook (empty list: it passed).

    >>> import nbformat, tempfile
    >>> cell = nbformat.v4.new_code_cell("f(1)", metadata={"nbgrader": {"grade": True, "grade_id": "test_f", "points": 1}})
    >>> cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue="f(1): expected 2, got 3", traceback=[])]
    >>> with tempfile.NamedTemporaryFile("w", suffix=".ipynb", delete=False) as fh:
    ...     nbformat.write(nbformat.v4.new_notebook(cells=[cell]), fh)
    >>> cell_messages(fh.name)
    {'test_f': ['AssertionError: f(1): expected 2, got 3']}
    """
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    out: dict[str, list[str]] = {}
    for cell in nb.cells:
        m = cell.get("metadata", {}).get("nbgrader", {})
        if not (m.get("grade") and cell.cell_type == "code"):
            continue
        msgs = []
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                msgs.append(f"{o.get('ename')}: {o.get('evalue')}".rstrip(": "))
            elif o.get("output_type") == "stream" and o.get("name") == "stderr":
                msgs.append(say("wrote_stderr", text=o.get("text", "")[:300]))
        out[m.get("grade_id", "?")] = msgs
    return out


# ------------------------------------------------------------------------------------------------
# 4. feedback, 5. export
def feedback(lab: str, course: Course | None = None) -> list[pathlib.Path]:
    """Run ``nbgrader generate_feedback`` for a lab; returns the HTML files written.

    When the one run for the whole lab fails, each student is tried alone, so one broken notebook
    never stops the others' feedback (:func:`feedback_failures` says whose failed).

    >>> feedback("no_such_lab")
    Traceback (most recent call last):
    ...
    ValueError: unknown lab 'no_such_lab'; the labs are [...]
    """
    course = course or main_course()
    get_lab(lab)
    proc = run_nbgrader(course, ["generate_feedback", lab, "--force"], check=False)
    failed: dict[str, str] = {}
    if proc.returncode != 0:
        graded = sorted(p.parent.name for p in (course.grading / "autograded").glob(f"*/{lab}"))
        for student in graded:
            try:
                run_nbgrader(course, ["generate_feedback", lab, "--force", f"--student={student}"])
            except NbgraderError as err:
                failed[student] = err.summary
    _FEEDBACK_FAILURES[lab] = failed
    return sorted((course.grading / "feedback").glob(f"*/{lab}/{lab}.html"))


_FEEDBACK_FAILURES: dict[str, dict[str, str]] = {}


def feedback_failures(lab: str) -> dict[str, str]:
    """The students whose feedback page the last :func:`feedback` of ``lab`` in this process could not write, and why.

    >>> feedback_failures("never_run")
    {}
    """
    return dict(_FEEDBACK_FAILURES.get(lab, {}))


#: the statuses of a row of the export, in the order one wins over the next
STATUSES = ("not submitted", "ungradeable", "late", "flagged", "graded")
EXPORT_COLUMNS = ["student", "lab", "score", "max", "status", "reason"]


def export_rows(course: Course | None = None) -> list[dict[str, str]]:
    """One row per student and lab from the gradebook: score, max, status (:data:`STATUSES`) and a reason.

    A student the gradebook knows who has no submission of a lab gets ``not submitted`` (not a
    graded zero); ``ungradeable`` and the findings come from ``.grading/reports/<lab>.json``;
    ``late`` is nbgrader's own lateness against the lab's due date (the score already carries
    nbgrader's late penalty, if one is configured).
    """
    from nbgrader.api import Gradebook, MissingEntry

    course = course or main_course()
    rows = []
    with Gradebook(course.db_url, COURSE_ID) as gb:
        students = sorted(s.id for s in gb.students)
        for lab in list_labs():
            try:
                assignment = gb.find_assignment(lab.name)
            except MissingEntry:
                continue
            report = _read_report(course, lab.name)
            for student in students:
                row = {"student": student, "lab": lab.name, "score": "0", "max": _num(assignment.max_score)}
                try:
                    sub = gb.find_submission(lab.name, student)
                except MissingEntry:
                    rows.append({**row, "status": "not submitted", "reason": say("no_submission")})
                    continue
                row["score"] = _num(float(sub.score))
                entry = report.get(student, {})
                late = float(sub.total_seconds_late or 0)
                if entry.get("ungradeable"):
                    status, reason = "ungradeable", entry["ungradeable"]
                elif late > 0:
                    status = "late"
                    reason = say("late", seconds=_num(round(late)), penalty=_num(float(sub.late_submission_penalty or 0)))
                elif any(nb.flagged for nb in sub.notebooks) or entry.get("findings"):
                    status = "flagged"
                    reason = "; ".join(entry.get("findings", [])[:5]) or say("flagged_formgrader")
                else:
                    status, reason = "graded", ""
                rows.append({**row, "status": status, "reason": _one_line(reason)})
    return rows


def _one_line(reason: str, limit: int = 1000) -> str:
    """A reason on one line (a message's Chinese block follows its English after a space), cut at ``limit``.

    >>> _one_line("f: 1 of 2 values differ; the first:\\n  at [1]: expected 2, got 3\\n中文：f：2 个数值中有 1 个不同")
    'f: 1 of 2 values differ; the first: at [1]: expected 2, got 3 中文：f：2 个数值中有 1 个不同'
    """
    return " ".join(str(reason).split())[:limit]


def _read_report(course: Course, lab: str) -> dict:
    try:
        return json.loads((course.grading / "reports" / f"{lab}.json").read_text(encoding="utf-8")).get("students", {})
    except (OSError, ValueError):
        return {}


def export(to: str | pathlib.Path | None = None, course: Course | None = None) -> tuple[pathlib.Path, pathlib.Path]:
    """The grades CSV (``to``, default ``.grading/grades.csv``: :data:`EXPORT_COLUMNS`, one row per student
    and lab, :func:`export_rows`) and a per-task CSV beside it."""
    course = course or main_course()
    to = pathlib.Path(to or course.grading / "grades.csv").resolve()
    to.parent.mkdir(parents=True, exist_ok=True)
    with open(to, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, EXPORT_COLUMNS)
        w.writeheader()
        w.writerows(export_rows(course))
    per_task = to.with_name(to.stem + "_by_task.csv")
    with open(per_task, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["lab", "student_id", "task", "points", "max_points"])
        for lab in list_labs():
            for student, tasks in task_scores(lab.name, course).items():
                for t in lab.tasks:
                    w.writerow([lab.name, student, t.id, _num(tasks[t.id]), _num(t.points)])
    return to, per_task


def instructor_report(lab: str, course: Course | None = None) -> dict[str, dict]:
    """Per student of ``lab``: the last run's findings (scan and sandbox) and why it was ungradeable.

    >>> instructor_report("no_such_lab")
    Traceback (most recent call last):
    ...
    ValueError: unknown lab 'no_such_lab'; the labs are [...]
    """
    course = course or main_course()
    get_lab(lab)
    return _read_report(course, lab)


def set_due_date(lab: str, due: str, course: Course | None = None) -> str:
    """Set ``lab``'s due date in the gradebook (nbgrader's ``duedate``; ISO 8601, UTC unless an offset is given).

    >>> set_due_date("01_decode_exmy", "next week")
    Traceback (most recent call last):
    ...
    ValueError: due date 'next week' is not ISO 8601 (such as 2026-12-24T17:00 or 2026-12-24 17:00+01:00)
    """
    import datetime

    from nbgrader.api import Gradebook

    try:
        when = datetime.datetime.fromisoformat(due.strip())
    except ValueError:
        raise ValueError(f"due date {due!r} is not ISO 8601 (such as 2026-12-24T17:00 or 2026-12-24 17:00+01:00)") from None
    if when.tzinfo is not None:
        when = when.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    course = course or main_course()
    get_lab(lab)
    with _quiet_sqlalchemy(), Gradebook(course.db_url, COURSE_ID) as gb:
        gb.update_or_create_assignment(lab, duedate=when)
    return when.isoformat() + " UTC"


def _num(x: float) -> str:
    return str(int(x)) if math.isfinite(x) and float(x).is_integer() else repr(float(x))


def read_csv(path: str | pathlib.Path) -> list[dict[str, str]]:
    """The rows of a CSV written by :func:`export` (for scripts and tests).

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as fh:
    ...     _ = fh.write("student_id,raw_score\\nann,7\\n")
    >>> read_csv(fh.name)
    [{'student_id': 'ann', 'raw_score': '7'}]
    """
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))

