"""Submissions that try to break the grading, for one representative lab, graded in parallel.

``fp8lab.labs.submissions.adversarial`` builds them from the lab's own solution and ``lab.toml``: an
infinite loop (its cells time out, the other tasks are graded), an allocation bomb (a MemoryError
under the grading kernel's cap), edited and deleted test cells (graded with the original tests and
points), each cheat body of a task, the cheat's imports moved to another cell, and code outside the
answers that precomputes with the reference, patches it or the grading harness, takes a detour
around the names, or uses a magic. Each must get exactly its expected points. The class is graded
with ``--jobs 2``; a subset graded one by one with the same seed must get the same scores.

The representative lab is ``REPRESENTATIVE`` (``FP8LAB_ADVERSARIAL_LAB`` picks another).
"""

from __future__ import annotations

import os

import nbformat
import pytest

from fp8lab.labs import submissions
from fp8lab.labs.catalog import get_lab
from fp8lab.labs.grading import autograde, collect, prepare_scratch

pytestmark = pytest.mark.slow

REPRESENTATIVE = os.environ.get("FP8LAB_ADVERSARIAL_LAB", "01_decode_exmy")
TIMEOUT = 8  # seconds per cell: the infinite loop costs two of them
SEED = 31337


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    lab = get_lab(REPRESENTATIVE)
    root = tmp_path_factory.mktemp("adversarial")
    course = prepare_scratch(lab, root / "course", timeout=TIMEOUT)
    subs = submissions.adversarial(lab)
    folder = root / "class"
    folder.mkdir()
    for s in subs:
        nbformat.write(s.notebook, str(folder / f"{s.name}.ipynb"))
    collect(lab.name, folder, course=course)
    report = autograde(lab.name, jobs=2, seed=SEED, course=course)
    print(f"\n{lab.name}: {len(subs)} adversarial submissions graded with --jobs 2 in {report.seconds:.1f} s")
    return lab, subs, report, course, root


def test_every_adversarial_submission_gets_exactly_its_points(graded_class):
    lab, subs, report, _, _ = graded_class
    assert report.failed == {}
    wrong = {s.name: (report.scores.get(s.name), s.expected) for s in subs if report.scores.get(s.name) != s.expected}
    assert wrong == {}, "\n".join(f"{n}: got {g}, expected {e}" for n, (g, e) in wrong.items())


def test_the_set_covers_what_the_issue_asks_for(graded_class):
    _, subs, _, _, _ = graded_class
    names = {s.name for s in subs}
    assert {"infinite_loop", "allocation_bomb", "edited_tests", "deleted_tests", "cheat_imports_elsewhere",
            "patch_reference", "patch_harness", "detour", "added_cell_table"} <= names
    assert any(n.startswith("cheat_") and n[-1].isdigit() for n in names)


def test_edited_points_do_not_change_the_maximum(graded_class):
    lab, _, _, course, _ = graded_class
    from nbgrader.api import Gradebook

    with Gradebook(course.db_url, "fp8lab") as gb:
        sub = gb.find_submission(lab.name, "edited_tests")
        assert sub.max_score == lab.points


def test_parallel_grading_gives_the_same_scores_as_one_by_one(graded_class):
    lab, subs, report, _, root = graded_class
    serial = prepare_scratch(lab, root / "serial", timeout=TIMEOUT)
    pick = [s for s in subs if s.name in ("infinite_loop", "patch_harness", "deleted_tests")]
    folder = root / "serial_class"
    folder.mkdir()
    for s in pick:
        nbformat.write(s.notebook, str(folder / f"{s.name}.ipynb"))
    collect(lab.name, folder, course=serial)
    one = autograde(lab.name, jobs=1, seed=SEED, course=serial)
    assert one.scores == {s.name: report.scores[s.name] for s in pick}
