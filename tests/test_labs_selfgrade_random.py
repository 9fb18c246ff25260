"""Self-grading without ``solutions/``: the notebook's visible tests and fp8lab's random cases (issue 19, item 6).

A learner's install has the package and the exercise, not ``solutions/``. ``fp8lab labs grade`` then
runs the notebook's own visible tests and the random cases of :mod:`fp8lab.labs.cases` through the
same sandbox wire as a class's grading. The oracles here are the instructor's solution code (from
``solutions/``, which the package never reads when grading), hand-written wrong answers and the
shipped table regenerated from ``solutions/``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import nbformat
import numpy as np
import pytest

from fp8lab.labs.catalog import list_labs, repo_root
from fp8lab.labs.cases import LABS, checks, missing_checks, render_table, run_check
from fp8lab.labs.cases import HERE as CASES_DIR
from fp8lab.labs.cli import main
from fp8lab.labs.harness import _source, cell_kind
from fp8lab.labs.selfgrade import grade_random

ROOT = repo_root()
#: labs whose tasks have no random cases yet (none: every task of every lab has them)
KNOWN_GAPS: dict[str, list[str]] = {}


def _answers(lab: str) -> dict[str, str]:
    """The instructor's answer cells of a lab, by grade id."""
    nb = nbformat.read(str(ROOT / "solutions" / lab / f"{lab}.ipynb"), as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells if cell_kind(c) == "answer"}


def _attempt(tmp_path, lab: str, answers: dict[str, str] | None = None, edit=None):
    """A copy of the exercise (outside the repository) with some answer cells replaced."""
    nb = nbformat.read(str(ROOT / "exercises" / lab / f"{lab}.ipynb"), as_version=4)
    for c in nb.cells:
        gid = c.metadata.get("nbgrader", {}).get("grade_id")
        if cell_kind(c) == "answer" and answers and gid in answers:
            c.source = answers[gid]
    if edit is not None:
        edit(nb)
    folder = tmp_path / lab
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{lab}.ipynb"
    nbformat.write(nb, str(path))
    return path


def _solution_namespace(lab: str) -> dict:
    nb = nbformat.read(str(ROOT / "solutions" / lab / f"{lab}.ipynb"), as_version=4)
    ns: dict = {"__name__": "solution"}
    for c in nb.cells:
        if cell_kind(c) in ("setup", "answer"):
            exec(compile(_source(c), f"<{lab}>", "exec"), ns)  # noqa: S102 - the instructor's solution
    return ns


def test_the_shipped_table_is_in_step_with_solutions():
    assert (CASES_DIR / "table.py").read_text(encoding="utf-8") == render_table(), \
        "fp8lab/labs/cases/table.py is out of step: run python -m fp8lab.labs.cases --write"


def test_every_task_of_every_lab_has_random_cases():
    labs = list_labs()
    assert sorted(LABS) == [lab.name for lab in labs]
    for lab in labs:
        assert [t["id"] for t in LABS[lab.name]["tasks"]] == [t.id for t in lab.tasks]
        gaps = sorted(t.id for t in lab.tasks if t.id not in checks(lab.name))
        assert gaps == sorted(KNOWN_GAPS.get(lab.name, [])), f"{lab.name}: tasks without random cases {gaps}"
    assert missing_checks() == KNOWN_GAPS


@pytest.mark.parametrize("lab", sorted(LABS))
def test_the_solution_code_passes_every_random_case_of_its_lab(lab):
    ns = _solution_namespace(lab)
    for seed in (1, 2026):
        for t in LABS[lab]["tasks"]:
            run_check(lab, t["id"], ns, seed=seed)


WRONG = {  # (lab, task): an answer that passes the visible tests and misses a class the random cases cover
    ("02_bf16_rounding", "bf16_round"): '''
import numpy as np

def bf16_round(x):
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000   # no NaN policy: a NaN can round to -0.0 or inf
    return b.astype(np.uint32).view(np.float32)
''',
    ("01_decode_exmy", "decode_finite"): '''
import numpy as np

def decode_finite(code, exponent_bits, mantissa_bits, bias):
    s, e, m = split_fields(code, exponent_bits, mantissa_bits)
    if e == 0:
        v = m * 2.0 ** (1 - bias - mantissa_bits)
    else:
        v = (1 + m / 2**mantissa_bits) * 2.0 ** (e - bias)
    if mantissa_bits == 10 and m == 1023:   # off by one ulp at the top of each FP16 binade
        v = float(np.nextafter(v, 0))
    return -v if s else v
''',
    ("03_encode_e4m3", "e4m3_quantize"): '''
import math

def e4m3_quantize(x, saturate=False):
    if math.isnan(x) or math.isinf(x):   # wrong NaN policy: infinities saturate, NaN stays NaN
        return math.nan if math.isnan(x) else math.copysign(448.0, x)
    return _solution(x, saturate)
''',
}


@pytest.mark.parametrize("lab,task", sorted(WRONG))
def test_a_wrong_answer_passes_its_visible_test_and_fails_the_random_cases(lab, task):
    ns = _solution_namespace(lab)
    ns["_solution"] = ns[task]
    exec(WRONG[lab, task], ns)  # noqa: S102 - the test's own wrong answer
    test_cell = next(c for c in nbformat.read(str(ROOT / "exercises" / lab / f"{lab}.ipynb"), as_version=4).cells
                     if c.metadata.get("nbgrader", {}).get("grade_id") == f"test_{task}")
    exec(test_cell.source, dict(ns))  # noqa: S102 - the visible test passes
    with pytest.raises(AssertionError, match="expected .*got"):
        run_check(lab, task, ns, seed=7)


def test_the_random_cases_draw_fresh_inputs_per_seed():
    seen = []
    for seed in (1, 2):
        calls = []

        def record(*args, **kwargs):
            calls.append(repr((args, kwargs)))
            return (0.0, 0, False)

        with pytest.raises(AssertionError):
            run_check("07_loss_scaler", "update_scale", {"update_scale": record}, seed=seed)
        seen.append(calls)
    assert len(seen[0]) > 300 and seen[0][:11] == seen[1][:11]  # the fixed edge cases, then the random ones
    assert seen[0][11:] != seen[1][11:]


@pytest.mark.kernel
def test_without_solutions_the_command_gives_the_solution_full_marks(tmp_path):
    """``python -m fp8lab.labs grade`` from a copy of the package with no checkout above it."""
    shutil.copytree(ROOT / "fp8lab", tmp_path / "pkg" / "fp8lab", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "pkg")}
    lab = "01_decode_exmy"
    path = _attempt(tmp_path / "work", lab, _answers(lab))
    probe = subprocess.run([sys.executable, "-c", "import fp8lab.labs.selfgrade as s; print(s.has_solutions())"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert probe.stdout.strip() == "False", probe.stderr
    res = subprocess.run([sys.executable, "-m", "fp8lab.labs", "grade", str(path), "--seed", "12"], env=env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0] == f"{lab}: 10 / 10 points (visible tests and random cases, seed 12)"


@pytest.mark.kernel
def test_the_solution_scores_full_marks_through_the_sandbox(tmp_path):
    lab = "07_loss_scaler"
    result = grade_random(_attempt(tmp_path, lab, _answers(lab)), seed=3)
    assert result.points == result.max_points == sum(t["visible"] + t["random"] for t in LABS[lab]["tasks"])
    assert all(not t.messages for t in result.tasks)


@pytest.mark.kernel
def test_a_blank_exercise_scores_zero_with_every_failure_labelled(tmp_path, capsys):
    lab = "09_int8_asymmetric"
    path = _attempt(tmp_path, lab)
    assert main(["grade", str(path), "--random-cases", "--seed", "5"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{lab}: 0 / 10 points (visible tests and random cases, seed 5)"
    result = grade_random(path, seed=5)
    assert result.points == 0
    for t in result.tasks:
        labels = [m.split(":", 1)[0] for m in t.messages]
        assert labels == ["visible test", "random case (seed 5)"], t


@pytest.mark.kernel
def test_a_wrong_nan_policy_is_caught_by_the_random_cases_through_the_sandbox(tmp_path, capsys):
    lab = "02_bf16_rounding"
    answers = _answers(lab)
    answers["bf16_round"] = WRONG[lab, "bf16_round"]
    path = _attempt(tmp_path, lab, answers)
    result = grade_random(path, seed=9)
    task = next(t for t in result.tasks if t.id == "bf16_round")
    assert task.points == LABS[lab]["tasks"][1]["visible"] and len(task.messages) == 1
    message = task.messages[0]
    assert message.startswith("random case (seed 9): AssertionError: bf16_round(x)") and "expected" in message
    assert "for input 0x" in message and "got" in message
    others = [t for t in result.tasks if t.id != "bf16_round"]
    assert all(t.points == t.max_points for t in others)
    # the report cuts no line: narrow output wraps, and every word of the message is there
    text = result.text(width=60)
    assert max(len(line) for line in text.splitlines() if line.startswith(" " * 9)) <= 60
    assert " ".join(text.split()).count(" ".join(message.split())[:50]) == 1
    joined = "".join(line.strip() for line in text.splitlines())
    assert "".join(message.split()) in "".join(joined.split())


def _cell(nb, gid):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == gid)


@pytest.mark.parametrize("how,expected", [
    ("syntax", "the answer cell of split_fields has a syntax error at line 2"),
    ("renamed", "no answer cell defines the function decode_finite"),
    ("deleted", "no answer cell for format_range"),
    ("json", "is not a Jupyter notebook: invalid JSON"),
    ("setup", "its locked cell 'setup' was edited"),
])
def test_an_ungradeable_notebook_gets_one_line_and_a_nonzero_exit(tmp_path, capsys, how, expected):
    lab = "01_decode_exmy"

    def edit(nb):
        if how == "syntax":
            _cell(nb, "split_fields").source = "def split_fields(code, e, m):\n    return (0, 0\n"
        elif how == "renamed":
            _cell(nb, "decode_finite").source = "def decode_finit(code, e, m, bias):\n    return 0.0\n"
        elif how == "deleted":
            nb.cells.remove(_cell(nb, "format_range"))
        elif how == "setup":
            _cell(nb, "setup").source += "\nimport fp8lab.labs.feedback as f; f.expect_equal = lambda *a, **k: None\n"

    path = _attempt(tmp_path, lab, _answers(lab), edit=edit)
    if how == "json":
        path.write_text(path.read_text(encoding="utf-8")[:500], encoding="utf-8")
    assert main(["grade", str(path), "--random-cases"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fp8lab labs grade: error: ") and expected in lines[0], captured.err
    assert "Traceback" not in captured.err


@pytest.mark.kernel
def test_an_edited_visible_test_fails_that_test_only(tmp_path):
    lab = "01_decode_exmy"

    def edit(nb):
        _cell(nb, "test_format_range").source = "pass"

    result = grade_random(_attempt(tmp_path, lab, {}, edit=edit), seed=1)
    task = next(t for t in result.tasks if t.id == "format_range")
    assert task.messages[0].startswith("visible test: the test cell test_format_range was edited")
    assert np.isclose(result.points, 0.0)


def test_an_added_locked_cell_is_refused_not_run_in_the_grader(tmp_path, capsys):
    """A cell marked locked setup without the released checksum would run in the grader: refused."""
    lab = "01_decode_exmy"

    def edit(nb):
        cell = nbformat.v4.new_code_cell("import fp8lab.labs.feedback as f\nf.expect_equal = lambda *a, **k: None",
                                         metadata={"nbgrader": {"locked": True, "grade": False, "solution": False,
                                                                "grade_id": "mine"}})
        nb.cells.insert(1, cell)

    path = _attempt(tmp_path, lab, {}, edit=edit)
    assert main(["grade", str(path), "--random-cases"]) == 2
    assert "its locked cell 'mine' was edited" in capsys.readouterr().err


def _body(fn_source: str) -> list[str]:
    import ast
    import textwrap

    node = ast.parse(textwrap.dedent(fn_source)).body[0]
    lines = textwrap.dedent(fn_source).splitlines()[node.body[1].lineno - 1:]  # after the docstring
    return [ln[4:] if ln.startswith("    ") else ln for ln in lines]


@pytest.mark.parametrize("lab", sorted(LABS))
def test_the_random_cases_draw_what_the_hidden_tests_draw(lab):
    """Each task's random cases are its hidden test cell's code (imports and ``grading_rng`` aside): a hidden
    test changed in solutions/ must be changed in fp8lab/labs/cases too."""
    import ast
    import re

    nb = nbformat.read(str(ROOT / "solutions" / lab / f"{lab}.ipynb"), as_version=4)
    module = (CASES_DIR / f"lab{lab[:2]}.py").read_text(encoding="utf-8")
    functions = {n.name: ast.get_source_segment(module, n) for n in ast.parse(module).body
                 if isinstance(n, ast.FunctionDef)}
    for t in LABS[lab]["tasks"]:
        code = _cell(nb, f"hidden_{t['id']}").source
        code = code[code.index("### BEGIN HIDDEN TESTS") + 23:code.index("### END HIDDEN TESTS")]
        want = [ln for ln in code.splitlines() if not re.match(r"(import |from |rng = grading_rng\()", ln)]
        while want and not want[0].strip():
            want.pop(0)
        got = _body(functions[t["id"]])
        assert [ln.rstrip() for ln in got if ln.strip()] == [ln.rstrip() for ln in want if ln.strip()], \
            f"{lab} {t['id']}: fp8lab/labs/cases/lab{lab[:2]}.py differs from the hidden test cell"


@pytest.mark.kernel
def test_the_cheats_score_zero_where_the_sandbox_holds_fp8lab(tmp_path):
    """Lab 05's sandbox allows fp8lab (for its helpers): the runtime guard refuses the reference in random cases too."""
    from fp8lab.labs.catalog import get_lab

    lab = get_lab("05_mx_e8m0")
    result = grade_random(_attempt(tmp_path, lab.name, {t.id: t.cheats[0] for t in lab.tasks}), seed=4)
    assert result.points == 0
    for t in result.tasks:
        assert [m.split(":", 1)[0] for m in t.messages] == ["visible test", "random case (seed 4)"]
        assert all("ShortcutError" in m for m in t.messages), t
