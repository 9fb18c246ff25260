"""Every lab, through the real nbgrader CLI and gradebook: in sync, validates, grades exactly.

For each folder of ``solutions/`` (new labs are picked up automatically, driven by their
``lab.toml``), in three tests marked ``kernel`` (nbgrader; the last two start grading kernels) that
the two pytest workers can run at the same time:

* ``exercises/<lab>`` is exactly what ``nbgrader generate_assignment`` makes of the source;
* ``nbgrader validate`` passes on the source and fails every visible test of the blank exercise
  (its hidden-test cells are empty there);
* ``nbgrader autograde`` of the standard submissions (``fp8lab.labs.submissions.standard``: the
  solution, the blank exercise, a partial solution, cheats on alternate tasks) gives exactly the
  expected points per task, read from the gradebook (this one autograde serves the next two checks too);
* every cell of the graded solution (answers in the sandbox; visible and hidden tests, restored from
  the gradebook, in the grader) ran without an error or a line on stderr (``nbgrader validate`` alone would
  not notice a missing import outside the tests);
* failures say what was expected and what came back; cheats fail with the guard's message;
* the hidden tests pass the solution whatever the grading seed, and the lab follows the conventions
  (both in this process, without a kernel: they run in ``make test-fast``).

The instructor's commands (collect, autograde ``--jobs 2``, feedback, CSV export) are tested end to end
in ``test_labs_cli.py``; the adversarial submissions (timeouts, memory, edited tests, tampering) for
one representative lab in ``test_labs_adversarial.py``.
"""

from __future__ import annotations

import time

import nbformat
import pytest

from fp8lab.labs import submissions
from fp8lab.labs.catalog import list_labs, repo_root
from fp8lab.labs.checks import check_lab
from fp8lab.labs.course import run_nbgrader
from fp8lab.labs.grading import autograde, cell_messages, collect, prepare_scratch

LABS = list_labs()
ROOT = repo_root()
TIMEOUT = 30  # seconds per cell in these runs: a solution's slowest cell takes a few seconds


def errors_and_stderr(nb) -> list[str]:
    out = []
    for c in nb.cells:
        for o in c.get("outputs", []):
            if o.output_type == "error" or (o.output_type == "stream" and o.name == "stderr"):
                gid = c.get("metadata", {}).get("nbgrader", {}).get("grade_id", "?")
                out.append(f"{gid}: {o.get('ename', 'stderr')}: {o.get('evalue', o.get('text', ''))[:500]}")
    return out


@pytest.mark.parametrize("lab", LABS, ids=[lab.name for lab in LABS])
def test_lab_follows_the_conventions(lab):
    assert check_lab(lab) == []


@pytest.mark.kernel
@pytest.mark.parametrize("lab", LABS, ids=[lab.name for lab in LABS])
def test_the_exercise_is_what_generate_assignment_makes_of_the_source(lab, tmp_path):
    course = prepare_scratch(lab, tmp_path / "course", timeout=TIMEOUT)
    made = (course.release / lab.name / f"{lab.name}.ipynb").read_bytes()
    assert made == lab.exercise.read_bytes(), f"{lab.exercise} is out of date: run `make exercises`"


@pytest.mark.kernel
@pytest.mark.parametrize("lab", LABS, ids=[lab.name for lab in LABS])
def test_nbgrader_validate_passes_the_source_and_fails_the_blank_exercise(lab, tmp_path):
    course = prepare_scratch(lab, tmp_path / "course", timeout=TIMEOUT)
    t = time.monotonic()
    out = run_nbgrader(course, ["validate", str(lab.notebook), str(lab.exercise)], check=False).stdout
    source, blank = out.split(f"Validating '{lab.exercise}'")
    assert "Success! Your notebook passes all the tests." in source, source[-2000:]
    n = len(lab.tasks)  # the released hidden-test cells are empty; every visible test cell must fail
    assert f"VALIDATION FAILED ON {n} CELL(S)!" in blank and blank.count("The following cell failed:") == n, blank[-2000:]
    assert blank.count("NotImplementedError: ") >= n, blank[-2000:]
    print(f"\n{lab.name}: validate x2 {time.monotonic() - t:.1f} s")


@pytest.mark.kernel
@pytest.mark.parametrize("lab", LABS, ids=[lab.name for lab in LABS])
def test_standard_submissions_get_exactly_their_points(lab, tmp_path, subtests):
    """One ``nbgrader autograde`` of the standard submissions serves every check of the graded class."""
    course = prepare_scratch(lab, tmp_path / "course", timeout=TIMEOUT)
    subs = submissions.standard(lab)
    folder = tmp_path / "class"
    folder.mkdir()
    for s in subs:
        nbformat.write(s.notebook, str(folder / f"{s.name}.ipynb"))
    collect(lab.name, folder, course=course)
    report = autograde(lab.name, jobs=1, seed=20261201, course=course)
    print(f"\n{lab.name}: autograde x{len(subs)} {report.seconds:.1f} s")

    with subtests.test("autograde gives each standard submission exactly its points"):
        assert report.failed == {}
        for s in subs:
            assert report.scores[s.name] == s.expected, f"{s.name} ({s.why})"

    with subtests.test("every cell of the solution ran in the sandbox and the grader without an error or stderr"):
        graded = nbformat.read(str(course.autograded("solution", lab.name) / f"{lab.name}.ipynb"), as_version=4)
        assert len([c for c in graded.cells if c.cell_type == "code"]) >= 1 + 3 * len(lab.tasks)
        assert errors_and_stderr(graded) == []

    with subtests.test("a failing test says what was expected and what came back"):
        messages = cell_messages(course.autograded("partial_first", lab.name) / f"{lab.name}.ipynb")
        failing = [m for msgs in messages.values() for m in msgs]
        assert failing and all(m.startswith(("NotImplementedError", "AssertionError", "ShortcutError", "ModuleNotFoundError"))
                               for m in failing)
        cheats = cell_messages(course.autograded("cheat_even", lab.name) / f"{lab.name}.ipynb")
        for t in lab.tasks[0::2]:  # the reference is not installed in the sandbox (or the guard refuses it there)
            got = cheats[f"hidden_{t.id}"]
            assert got and ("No module named" in got[0] or "may not use" in got[0] or "ShortcutError" in got[0]), got


@pytest.mark.parametrize("lab", LABS, ids=[lab.name for lab in LABS])
def test_hidden_tests_pass_the_solution_whatever_the_seed(lab, monkeypatch):
    """The graded inputs change with the grading seed: the source must pass for every one (three here)."""
    nb = nbformat.read(str(lab.notebook), as_version=4)
    for seed in (1, 2**40 + 7, 987654321):
        monkeypatch.setenv("FP8LAB_GRADING_SEED", str(seed))
        scope: dict = {"__name__": "__main__"}
        for cell in nb.cells:
            if cell.cell_type == "code":
                gid = cell.metadata.get("nbgrader", {}).get("grade_id", "?")
                try:
                    exec(compile(cell.source, f"<{lab.name}:{gid}>", "exec"), scope)  # noqa: S102 - our own lab
                except Exception as err:  # noqa: BLE001 - report the cell and the seed
                    pytest.fail(f"{lab.name} cell {gid!r} fails with seed {seed}: {type(err).__name__}: {err}")
