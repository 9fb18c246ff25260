"""Submissions that try to break the grading, for one representative lab, graded in parallel.

``fp8lab.labs.submissions.adversarial`` builds them from the lab's own solution and ``lab.toml``: an
infinite loop (its cells time out, the other tasks are graded), a loop that swallows the interrupt
(the cells after it time out too, and grading still ends), an allocation bomb (a MemoryError
under the grading kernel's cap), edited and deleted test cells (graded with the original tests and
points), each cheat body of a task, the cheat's imports moved to another cell, and code outside the
answers that precomputes with the reference, patches it or the grading harness, takes a detour
around the names, or uses a magic. Each must get exactly its expected points. The class is graded
with ``--jobs 2``; a subset graded one by one with the same seed must get the same scores. The two
gradings are two tests (the workers run them side by side): the class graded in parallel must get
exactly the expected points, and so must the subset graded one by one, which makes their scores equal.

The representative lab is ``REPRESENTATIVE`` (``FP8LAB_ADVERSARIAL_LAB`` picks another).
"""

from __future__ import annotations

import os

import nbformat
import pytest

from fp8lab.labs import submissions
from fp8lab.labs.catalog import get_lab
from fp8lab.labs.grading import autograde, collect, prepare_scratch

pytestmark = pytest.mark.kernel

REPRESENTATIVE = os.environ.get("FP8LAB_ADVERSARIAL_LAB", "01_decode_exmy")
TIMEOUT = 8  # seconds per cell: the infinite loop costs two of them (a solution's slowest cell takes under 2 s)
SEED = 31337


def test_adversarial_submissions_get_exactly_their_points_in_parallel(tmp_path, subtests):
    lab = get_lab(REPRESENTATIVE)
    course = prepare_scratch(lab, tmp_path / "course", timeout=TIMEOUT)
    subs = submissions.adversarial(lab)
    folder = tmp_path / "class"
    folder.mkdir()
    for s in subs:
        nbformat.write(s.notebook, str(folder / f"{s.name}.ipynb"))
    collect(lab.name, folder, course=course)
    # autograde grades with the main config's timeout (60 s) unless it is given one: the scratch course's own
    # setting is not read there, and every cell that must time out would wait 60 s
    report = autograde(lab.name, jobs=2, seed=SEED, timeout=TIMEOUT, course=course)
    print(f"\n{lab.name}: {len(subs)} adversarial submissions graded with --jobs 2 in {report.seconds:.1f} s")

    with subtests.test("the set covers what the issue asks for"):
        names = {s.name for s in subs}
        assert {"infinite_loop", "ignores_interrupts", "allocation_bomb", "edited_tests", "deleted_tests", "cheat_imports_elsewhere",
                "patch_reference", "patch_harness", "detour", "added_cell_table", "magic"} <= names
        assert any(n.startswith("cheat_") and n[-1].isdigit() for n in names)

    with subtests.test("every adversarial submission gets exactly its points"):
        assert report.failed == {}
        wrong = {s.name: (report.scores.get(s.name), s.expected) for s in subs if report.scores.get(s.name) != s.expected}
        assert wrong == {}, "\n".join(f"{n}: got {g}, expected {e}" for n, (g, e) in wrong.items())

    with subtests.test("edited points do not change the maximum"):
        from nbgrader.api import Gradebook

        with Gradebook(course.db_url, "fp8lab") as gb:
            assert gb.find_submission(lab.name, "edited_tests").max_score == lab.points


def test_a_subset_graded_one_by_one_gets_the_scores_of_the_parallel_grading(tmp_path):
    """The parallel test above asserts that every submission of the class gets exactly ``s.expected``; graded one
    by one with the same seed, these get exactly ``s.expected`` too: the same scores."""
    lab = get_lab(REPRESENTATIVE)
    serial = prepare_scratch(lab, tmp_path / "serial", timeout=TIMEOUT)
    pick = [s for s in submissions.adversarial(lab) if s.name in ("infinite_loop", "patch_harness", "deleted_tests")]
    assert len(pick) == 3
    one_folder = tmp_path / "serial_class"
    one_folder.mkdir()
    for s in pick:
        nbformat.write(s.notebook, str(one_folder / f"{s.name}.ipynb"))
    collect(lab.name, one_folder, course=serial)
    one = autograde(lab.name, jobs=1, seed=SEED, timeout=TIMEOUT, course=serial)
    assert one.failed == {}
    assert one.scores == {s.name: s.expected for s in pick}
