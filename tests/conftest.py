"""Shared fixtures (the oracle table, seeded generators, the run's executed course) and the test schedule."""

from __future__ import annotations

import os
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

#: every format ml_dtypes has, by fp8lab's registered name (float16 is numpy's own)
ML_DTYPES = {
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "float8_e4m3": ml_dtypes.float8_e4m3,
    "float8_e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "float8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "float8_e3m4": ml_dtypes.float8_e3m4,
    "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu,
    "float6_e2m3fn": ml_dtypes.float6_e2m3fn,
    "float6_e3m2fn": ml_dtypes.float6_e3m2fn,
    "float4_e2m1fn": ml_dtypes.float4_e2m1fn,
}


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261129)


# --- what a test costs, and the order the workers take them in --------------------------------------
#
# Markers (registered in pyproject.toml): ``kernel`` starts Jupyter kernels, a Jupyter server or nbgrader;
# ``browser`` drives headless Chromium; ``exhaustive`` sweeps a whole input space (every finite float32);
# ``slow`` is long library work that does none of those (training runs, installing into a fresh venv).
# ``make test-fast`` deselects all four. Doctests of library modules cannot carry a marker: the ones
# that start nbgrader are marked here.
DOCTEST_MARKS = {"fp8lab.labs.course.run_nbgrader": "kernel"}

#: Seconds the long tests took (2 busy cores, pytest -n 2), by test function: the scheduler starts the
#: longest first, so no long test is left for the end while the other worker idles. Tests not named
#: here count by their marker (:data:`MARKER_SECONDS`), all others as 0 (they keep their order).
EXPECTED_SECONDS = {
    "test_adversarial_submissions_get_exactly_their_points_in_parallel": 65,
    "test_every_submission_gets_exactly_its_honest_score": 50,  # the hostile class's one graded run (its unit)
    "test_a_subset_graded_one_by_one_gets_the_scores_of_the_parallel_grading": 25,
    "test_the_cast_matches_torch_on_every_finite_float32": 75,
    "test_the_recorded_run_is_reproduced_to_its_first_validation": 60,
    "test_every_recipe_lowers_the_loss_in_30_steps": 55,
    "test_controls_show_their_failure_mode": 55,
    "test_chapter_03_runs_all_cells_without_errors_and_its_widgets_respond": 120,
    "test_the_welcome_chapter_opens_and_links_to_chapter_03": 120,
    "test_standard_submissions_get_exactly_their_points": 40,
    "test_the_instructor_workflow_one_command_per_step": 45,
    "test_chapter_runs_within_its_budget_and_backs_every_number": 20,
    "test_the_core_installs_without_extras": 25,
    "test_nbgrader_validate_passes_the_source_and_fails_the_blank_exercise": 15,
    "test_myth_and_check_cells_run_on_their_own": 10,
    # the book reads the chapters the notebook tests executed: scheduled after them, it only converts
    **dict.fromkeys(["test_the_contents_page_lists_every_chapter_in_order",
                     "test_every_chapter_page_carries_its_figures_inline",
                     "test_links_between_chapters_resolve_inside_the_book",
                     "test_pages_show_no_widget_reprs_and_load_nothing_from_a_cdn",
                     "test_the_glossary_from_the_welcome_chapter_is_in_the_book",
                     "test_the_chinese_book_has_every_chapter_its_figures_and_its_links_from_the_same_executions"], 5),
}
MARKER_SECONDS = {"browser": 60, "exhaustive": 60, "slow": 30, "kernel": 10}

#: Tests that share an expensive module-scoped fixture, by node id prefix -> unit name: the scheduler hands a
#: unit to one worker as a whole, so the fixture is built once (xdist's own ``--dist loadgroup`` cannot do
#: this with pytest 9, whose node ids no longer take the ``@group`` suffix xdist writes into them).
SHARED_FIXTURE_UNITS = {
    **dict.fromkeys([f"tests/test_book.py::{name}" for name in (  # the `built` book
        "test_the_contents_page_lists_every_chapter_in_order", "test_every_chapter_page_carries_its_figures_inline",
        "test_links_between_chapters_resolve_inside_the_book", "test_pages_show_no_widget_reprs_and_load_nothing_from_a_cdn",
        "test_the_glossary_from_the_welcome_chapter_is_in_the_book",
        "test_the_chinese_book_has_every_chapter_its_figures_and_its_links_from_the_same_executions")], "book"),
    "tests/test_browser.py::": "browser",            # one JupyterLab and one Chromium
    "tests/test_browser_zh.py::": "browser",         # after the English ones on the same worker: two make labs started
                                                     # at once on two workers can race for a port
    "tests/test_labs_jupyter.py::": "labs-jupyter",  # one JupyterLab server
    "tests/test_labs_hostile.py::": "labs-hostile",  # one graded run of the hostile class (it was built twice)
    **dict.fromkeys(["tests/test_train.py::test_every_recipe_lowers_the_loss_in_30_steps",  # `short_runs`
                     "tests/test_train.py::test_controls_show_their_failure_mode"], "train-short-runs"),
}


def scheduling_unit(nodeid: str) -> str:
    """The unit a test is scheduled in: its :data:`SHARED_FIXTURE_UNITS` entry, else the test itself.

    >>> scheduling_unit("tests/test_browser.py::test_x"), scheduling_unit("tests/test_formats.py::test_y[a]")
    ('browser', 'tests/test_formats.py::test_y[a]')
    """
    for prefix, unit in SHARED_FIXTURE_UNITS.items():
        if nodeid == prefix or nodeid.startswith(prefix if prefix.endswith("::") else prefix + "["):
            return unit
    return nodeid


def expected_seconds(item: pytest.Item) -> float:
    """The scheduler's estimate of a test's seconds (see :data:`EXPECTED_SECONDS`)."""
    name = getattr(item, "originalname", None) or item.name.split("[")[0]
    if name in EXPECTED_SECONDS:
        return EXPECTED_SECONDS[name]
    return max((s for m, s in MARKER_SECONDS.items() if item.get_closest_marker(m)), default=0.0)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        mark = DOCTEST_MARKS.get(item.name) if type(item).__name__ == "DoctestItem" else None
        if mark:
            item.add_marker(mark)
    # longest first (the sort is stable: equal estimates keep their order); a unit's tests go together, at
    # the place of its longest test
    unit_cost: dict[str, float] = {}
    for item in items:
        unit = scheduling_unit(item.nodeid)
        unit_cost[unit] = max(unit_cost.get(unit, 0.0), expected_seconds(item))
    items.sort(key=lambda item: -unit_cost[scheduling_unit(item.nodeid)])


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``-n N`` (xdist's default ``--dist load``): the workers take the tests in the order collected (longest
    first, see above), each test on its own except the units of :data:`SHARED_FIXTURE_UNITS`, each of which
    one worker runs whole. Another ``--dist`` mode keeps xdist's own scheduler."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Units(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scheduling_unit(nodeid)

    config.option.loadscopereorder = False  # keep the collected order: longest first
    return Units(config, log)


@pytest.fixture(scope="session")
def course_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This run's cache of executed chapters (``fp8lab.course.execute.execute_cached``), one folder for all
    xdist workers (each worker's base temp folder is a child of the run's): a chapter is executed once per
    run, by whichever test asks first, and read by the notebook tests and the book build alike."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    folder = base / "executed-course"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# --- where the time goes: seconds by cost marker, printed at the end of every run ---------------------------
#
# The summary sums each test's setup, call and teardown durations as the workers report them (so with -n 2 the
# totals are worker-seconds, about twice the wall time of a part that keeps both workers busy). It is what the
# README's suite times and a closing note quote, and it tells a contributor which marker to deselect.
COST_MARKERS = ("kernel", "browser", "exhaustive", "slow")
_seconds_by_marker: dict[str, float] = {}


def cost_class(keywords: "dict[str, object] | set[str]") -> str:
    """The cost class a test's report falls in: its first cost marker, else "fast" (what `make test-fast` runs).

    >>> cost_class({"kernel": 1, "test_x": 1}), cost_class({"test_y": 1})
    ('kernel', 'fast')
    """
    return next((m for m in COST_MARKERS if m in keywords), "fast")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    cls = cost_class(report.keywords)
    _seconds_by_marker[cls] = _seconds_by_marker.get(cls, 0.0) + float(report.duration)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER") or not _seconds_by_marker:
        return
    parts = ", ".join(f"{m} {s:.0f} s" for m, s in sorted(_seconds_by_marker.items(), key=lambda kv: -kv[1]))
    terminalreporter.write_line(f"worker-seconds by cost marker: {parts} (total {sum(_seconds_by_marker.values()):.0f} s)")
