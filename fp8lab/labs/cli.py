"""``fp8lab labs ...``: the graded labs from the command line (also ``python -m fp8lab.labs ...``).

Instructor, one command per step (everything lands in the git-ignored ``.grading/``)::

    fp8lab labs generate                           # exercises/ from solutions/, labs into the gradebook
    fp8lab labs collect 01_decode_exmy subs/       # subs/<student id>.ipynb -> .grading/submitted/
    fp8lab labs autograde 01_decode_exmy --jobs 2  # parallel workers, merged into .grading/gradebook.db
    fp8lab labs feedback 01_decode_exmy            # .grading/feedback/<student>/<lab>/<lab>.html
    fp8lab labs export                             # .grading/grades.csv and grades_by_task.csv

Learner and author::

    fp8lab labs list                               # labs, tasks, points, the chapters they follow
    fp8lab labs grade my_labs/01_decode_exmy/01_decode_exmy.ipynb   # hidden tests, points per task
    fp8lab labs grade ... --random-cases           # without solutions/ (the default there): visible tests, random cases
    fp8lab labs check                              # a lab follows the conventions of solutions/AUTHORING.md
    fp8lab labs release                            # labs into the local exchange (JupyterLab's panels)

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="fp8lab")
>>> register(parser.add_subparsers(dest="command"))
>>> args = parser.parse_args(["labs", "list"])
>>> args.func(args)  # doctest: +ELLIPSIS
lab ... tasks  points  chapters ... title
...
01_decode_exmy ... 4      10      01_fp32, 03_fp8 ... Decode any ExMy format from its bits
...
0
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from ..cli_types import DEBUG_ENV, CliParser, nonnegative_int, output_path, positive_int, run_command
from ..tables import format_table
from .catalog import get_lab, list_labs

__all__ = ["register", "main", "labs_table", "lab_name", "shipped_lab_name"]


def lab_name(text: str) -> str:
    """An argparse type: the name of a lab under ``solutions/``, checked when the arguments are parsed.

    >>> lab_name("01_decode_exmy")
    '01_decode_exmy'
    """
    try:
        return get_lab(text).name
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def labs_table() -> tuple[list[str], list[list[object]]]:
    """Headers and rows of ``fp8lab labs list``: each lab with its task count, points and chapters.

    >>> headers, rows = labs_table()
    >>> rows[0][:3]
    ['01_decode_exmy', 4, 10]
    """
    rows = []
    for lab in list_labs():
        rows.append([lab.name, len(lab.tasks), _n(lab.points), ", ".join(lab.chapters), lab.title])
    return ["lab", "tasks", "points", "chapters", "title"], rows


def _n(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def _cmd_list(args: argparse.Namespace) -> int:
    headers, rows = labs_table()
    print(format_table(headers, rows))
    if args.tasks:
        for lab in list_labs():
            print(f"\n{lab.name}: {lab.title}")
            print(format_table(["task", "points", "title"], [[t.id, _n(t.points), t.title] for t in lab.tasks]))
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    from .grading import generate

    for path in generate(args.labs or None):
        print(f"wrote {path}")
    return 0


def _cmd_collect(args: argparse.Namespace) -> int:
    from .grading import collect

    students = collect(args.lab, args.folder)
    print(f"collected {len(students)} submissions of {args.lab}: {', '.join(students)}")
    return 0


def _cmd_autograde(args: argparse.Namespace) -> int:
    from .grading import autograde

    report = autograde(args.lab, jobs=args.jobs, seed=args.seed, timeout=args.timeout, students=args.student,
                       unsafe_no_sandbox=args.unsafe_no_sandbox)
    lab = get_lab(args.lab)
    rows = [[s, *[_n(v) for v in t.values()], _n(sum(t.values()))] for s, t in report.scores.items()]
    print(format_table(["student", *[t.id for t in lab.tasks], "total"], rows))
    print(f"\ngraded {len(report.scores)} submissions of {lab.name} (max {_n(lab.points)} points) in "
          f"{report.seconds:.1f} s with {report.jobs} job(s); hidden-test seed {report.seed}")
    for s, why in report.failed.items():
        print(f"  {s}: {why}", file=sys.stderr)
    for s, found in report.findings.items():
        print(f"  {s} flagged: {'; '.join(found)}", file=sys.stderr)
    return 0


def _cmd_due(args: argparse.Namespace) -> int:
    from .grading import set_due_date

    print(f"{args.lab} is due {set_due_date(args.lab, args.date)}")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from .grading import instructor_report

    entries = instructor_report(args.lab)
    rows = [[s, e.get("ungradeable") or "-", "; ".join(e.get("findings", [])) or "-"] for s, e in entries.items()]
    print(format_table(["student", "ungradeable", "findings (scan and sandbox)"], rows))
    return 0


def _cmd_feedback(args: argparse.Namespace) -> int:
    from .grading import feedback

    files = feedback(args.lab)
    print(f"wrote {len(files)} feedback files under .grading/feedback/")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from .grading import export

    from .grading import EXPORT_COLUMNS, read_csv

    totals, per_task = export(args.to)
    rows = read_csv(totals)  # the table printed is the file written, row for row
    print(format_table(EXPORT_COLUMNS, [[r[c] for c in EXPORT_COLUMNS] for r in rows]))
    print(f"\nwrote {totals} and {per_task}")
    return 0


def _cmd_grade(args: argparse.Namespace) -> int:
    import shutil

    from .selfgrade import grade_attempt, grade_random, has_solutions

    width = max(60, shutil.get_terminal_size((100, 24)).columns)
    if args.random_cases or not has_solutions():  # a learner's install: visible tests and fp8lab's random cases
        result = grade_random(args.notebook, lab=args.lab, seed=args.seed, timeout=args.timeout)
        print(result.text(width=width))
        return 0
    result = grade_attempt(args.notebook, lab=args.lab, seed=args.seed, timeout=args.timeout)
    print(result.text(width=width))
    return 0


def shipped_lab_name(text: str) -> str:
    """An argparse type: the name of a lab shipped with fp8lab (``solutions/`` not needed).

    >>> shipped_lab_name("09_int8_asymmetric")
    '09_int8_asymmetric'
    """
    from .cases import lab_table

    try:
        lab_table(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def _cmd_check(args: argparse.Namespace) -> int:
    from .checks import check_lab

    bad = 0
    for lab in ([get_lab(n) for n in args.labs] if args.labs else list_labs()):
        problems = check_lab(lab)
        print(f"{lab.name}: {'ok' if not problems else str(len(problems)) + ' problem(s)'}")
        for p in problems:
            print(f"  - {p}")
        bad += len(problems)
    return 1 if bad else 0


def _cmd_release(args: argparse.Namespace) -> int:
    from .jupyter import release

    for name in release(args.labs or None):
        print(f"released {name} into the local exchange")
    return 0


def _safe(fn):
    """Report a failed nbgrader run as one line (the command and its last error) and exit code 2."""

    def run(args: argparse.Namespace) -> int:
        from .course import NbgraderError

        try:
            return fn(args)
        except NbgraderError as err:
            if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
                raise
            print(f"fp8lab labs {args.labs_command}: error: {err.summary} "
                  f"(run with {DEBUG_ENV}=1 to see nbgrader's log)", file=sys.stderr)
            return 2

    return run


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``labs`` command and its subcommands to an argparse subparsers object.

    >>> p = argparse.ArgumentParser(prog="fp8lab")
    >>> register(p.add_subparsers(dest="command"))
    >>> p.parse_args(["labs", "autograde", "01_decode_exmy", "--jobs", "2"]).jobs
    2
    """
    labs = subparsers.add_parser("labs", help="graded labs: list, grade an attempt, and the instructor's nbgrader workflow")
    sub = labs.add_subparsers(dest="labs_command", required=True)

    p = sub.add_parser("list", help="the labs, their points and the chapters they follow")
    p.add_argument("--tasks", action="store_true", help="also list each lab's tasks and their points")
    p.set_defaults(func=_safe(_cmd_list))

    p = sub.add_parser("grade", help="grade your attempt: hidden tests in a scratch course, or without solutions/ "
                                     "the visible tests and fp8lab's random cases")
    p.add_argument("notebook", help="your notebook, e.g. my_labs/01_decode_exmy/01_decode_exmy.ipynb")
    p.add_argument("--lab", type=shipped_lab_name, help="the lab, when the file name does not say")
    p.add_argument("--random-cases", action="store_true",
                   help="grade with the visible tests and fp8lab's random cases even where solutions/ is present "
                        "(the default without it)")
    p.add_argument("--seed", type=nonnegative_int, help="seed of the hidden random cases (default: a fresh one)")
    p.add_argument("--timeout", type=positive_int, help="seconds per cell (default: nbgrader_config.py's)")
    p.set_defaults(func=_safe(_cmd_grade))

    p = sub.add_parser("generate", help="nbgrader generate_assignment: exercises/ and the gradebook from solutions/")
    p.add_argument("labs", nargs="*", type=lab_name, help="labs (default: all)")
    p.set_defaults(func=_safe(_cmd_generate))

    p = sub.add_parser("collect", help="copy a folder of <student id>.ipynb into .grading/submitted/")
    p.add_argument("lab", type=lab_name)
    p.add_argument("folder", help="a folder of <student id>.ipynb files")
    p.set_defaults(func=_safe(_cmd_collect))

    p = sub.add_parser("autograde", help="nbgrader autograde every collected submission, --jobs in parallel")
    p.add_argument("lab", type=lab_name)
    p.add_argument("--jobs", "-j", type=positive_int, default=1, help="worker processes (default 1)")
    p.add_argument("--seed", type=nonnegative_int,
                   help="seed of the hidden random cases for the whole class (default: fresh)")
    p.add_argument("--timeout", type=positive_int, help="seconds per cell for this run (default: nbgrader_config.py's)")
    p.add_argument("--student", action="append", help="regrade only this student (repeat for several)")
    p.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="grade without the bubblewrap sandbox: submissions can then read and change this machine")
    p.set_defaults(func=_safe(_cmd_autograde))

    p = sub.add_parser("due", help="set a lab's due date in the gradebook (late submissions are flagged)")
    p.add_argument("lab", type=lab_name)
    p.add_argument("date", help="ISO 8601, such as 2026-12-24T17:00 (UTC) or 2026-12-24T17:00+01:00")
    p.set_defaults(func=_safe(_cmd_due))

    p = sub.add_parser("report", help="the instructor's report of a lab: findings of the scan and the sandbox")
    p.add_argument("lab", type=lab_name)
    p.set_defaults(func=_safe(_cmd_report))

    p = sub.add_parser("feedback", help="nbgrader generate_feedback: one HTML page per student")
    p.add_argument("lab", type=lab_name)
    p.set_defaults(func=_safe(_cmd_feedback))

    p = sub.add_parser("export", help="nbgrader export: grades CSV (and a CSV of points per task)")
    p.add_argument("--to", type=output_path, help="CSV file (default .grading/grades.csv)")
    p.set_defaults(func=_safe(_cmd_export))

    p = sub.add_parser("check", help="check that labs follow solutions/AUTHORING.md")
    p.add_argument("labs", nargs="*", type=lab_name)
    p.set_defaults(func=_safe(_cmd_check))

    p = sub.add_parser("release", help="release labs into the local exchange for JupyterLab's Assignments panel")
    p.add_argument("labs", nargs="*", type=lab_name)
    p.set_defaults(func=_safe(_cmd_release))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fp8lab.labs <subcommand>``: the same as ``fp8lab labs <subcommand>``, errors as one line.

    >>> main(["grade", "no_such_file.ipynb"])  # stderr: fp8lab labs grade: error: no_such_file.ipynb is not a notebook file
    2
    """
    def make() -> argparse.ArgumentParser:
        parser = CliParser(prog="fp8lab", description="fp8lab's graded labs")
        register(parser.add_subparsers(dest="command", required=True))
        return parser

    return run_command(make, ["labs", *(sys.argv[1:] if argv is None else argv)])
