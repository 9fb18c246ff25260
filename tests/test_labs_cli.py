"""The documented commands, end to end: ``fp8lab labs list | grade | collect | autograde | feedback | export``.

The instructor's commands run on the repository's own course with ``FP8LAB_GRADING_DIR`` moving
``.grading/`` into a temporary folder (its gradebook seeded with the lab, as ``fp8lab labs generate``
would, without rewriting ``exercises/`` under the other tests' feet).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import nbformat
import pytest

from fp8lab.labs import submissions
from fp8lab.labs.catalog import get_lab, list_labs, repo_root
from fp8lab.labs.cli import labs_table
from fp8lab.labs.grading import prepare_scratch, read_csv

LAB = "01_decode_exmy"


def fp8lab(*args: str, env: dict | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    exe = [sys.executable, "-c", "import sys; from fp8lab.cli import main; sys.exit(main())"]
    return subprocess.run([*exe, *args], capture_output=True, text=True, timeout=timeout, cwd=repo_root(),
                          env={**os.environ, **(env or {})})


def test_list_shows_every_lab_with_points_and_chapters():
    out = fp8lab("labs", "list")
    assert out.returncode == 0, out.stderr
    for lab in list_labs():
        line = next(ln for ln in out.stdout.splitlines() if ln.startswith(lab.name))
        assert f" {int(lab.points)} " in line and lab.chapters[0] in line
    headers, rows = labs_table()
    assert headers[:3] == ["lab", "tasks", "points"] and len(rows) == len(list_labs())


def test_check_passes_for_every_lab():
    out = fp8lab("labs", "check")
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.kernel
def test_a_learner_grades_an_attempt_and_sees_points_and_messages_per_task(tmp_path):
    lab = get_lab(LAB)
    subs = {s.name: s for s in submissions.standard(lab)}
    attempt = tmp_path / f"{LAB}.ipynb"
    nbformat.write(subs["partial_first"].notebook, str(attempt))
    out = fp8lab("labs", "grade", str(attempt), "--seed", "7", "--timeout", "30")
    assert out.returncode == 0, out.stdout + out.stderr
    want = subs["partial_first"]
    assert f"{LAB}: {int(want.total)} / {int(lab.points)} points (hidden tests, seed 7)" in out.stdout
    for t in lab.tasks:
        line = next(ln for ln in out.stdout.splitlines() if f" {t.id} " in ln)
        assert ("ok" in line) == (want.expected[t.id] == t.points), line
    assert "NotImplementedError" in out.stdout  # the failing tasks say why
    bad = fp8lab("labs", "grade", str(tmp_path / "nothing.ipynb"))
    assert bad.returncode == 2 and "is not a notebook file" in bad.stderr


@pytest.mark.kernel
def test_the_instructor_workflow_one_command_per_step(tmp_path):
    lab = get_lab(LAB)
    grading = tmp_path / "grading"
    scratch = prepare_scratch(lab, tmp_path / "scratch")
    grading.mkdir()
    shutil.copyfile(scratch.gradebook, grading / "gradebook.db")  # what `fp8lab labs generate` records
    env = {"FP8LAB_GRADING_DIR": str(grading)}
    subs = [s for s in submissions.standard(lab) if s.name in ("solution", "blank", "cheat_odd")]
    folder = tmp_path / "inbox"
    folder.mkdir()
    for s in subs:
        nbformat.write(s.notebook, str(folder / f"{s.name}.ipynb"))

    out = fp8lab("labs", "collect", LAB, str(folder), env=env)
    assert out.returncode == 0 and "collected 3 submissions" in out.stdout, out.stderr
    out = fp8lab("labs", "autograde", LAB, "--jobs", "2", "--seed", "5", "--timeout", "30", env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "hidden-test seed 5" in out.stdout
    out = fp8lab("labs", "feedback", LAB, env=env)
    assert out.returncode == 0 and "wrote 3 feedback files" in out.stdout, out.stdout + out.stderr
    out = fp8lab("labs", "export", env=env)
    assert out.returncode == 0, out.stderr
    rows = read_csv(grading / "grades.csv")
    assert list(rows[0]) == ["student", "lab", "score", "max", "status", "reason"]
    totals = {r["student"]: float(r["score"]) for r in rows if r["lab"] == LAB}
    assert totals == {s.name: s.total for s in subs}
    status = {r["student"]: r["status"] for r in rows if r["lab"] == LAB}
    assert status == {"solution": "graded", "blank": "graded", "cheat_odd": "flagged"}  # the scan's findings flag
    printed = [ln.split() for ln in out.stdout.splitlines() if ln.startswith(tuple(totals))]
    assert [p[:5] for p in printed] == [[r[c] for c in ("student", "lab", "score", "max")] + r["status"].split()[:1]
                                        for r in rows]  # the printed table is the file, row for row
    html = (grading / "feedback" / "cheat_odd" / LAB / f"{LAB}.html").read_text()
    assert "No module named" in html  # why the points were lost: the reference does not exist where answers run
    assert "BEGIN HIDDEN TESTS" not in html and "grading_rng" not in html  # the hidden test code is left out
    per_task = {(r["student_id"], r["task"]): float(r["points"]) for r in read_csv(grading / "grades_by_task.csv")}
    assert per_task == {(s.name, t): p for s in subs for t, p in s.expected.items()}
    bad = fp8lab("labs", "collect", LAB, str(tmp_path / "missing"), env=env)
    assert bad.returncode == 2 and "not a folder" in bad.stderr


def test_the_readme_lists_every_lab_and_the_commands_it_documents_exist():
    readme = (repo_root() / "README.md").read_text()
    section = readme.split("## Graded labs", 1)[1].split("\n## ", 1)[0]
    for lab in list_labs():
        assert f"`{lab.name}`" in section, f"the README's lab table misses {lab.name}"
    from fp8lab.cli import build_parser

    labs = build_parser()._subparsers._group_actions[0].choices["labs"]
    commands = set(labs._subparsers._group_actions[0].choices)
    for word in ("generate", "collect", "autograde", "feedback", "export", "grade", "release"):
        assert f"fp8lab labs {word}" in section and word in commands
