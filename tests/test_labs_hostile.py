"""Hostile submissions, one per attack class of the threat model (solutions/AUTHORING.md, section 0).

One class of submissions of the representative lab is graded once with ``--jobs 2`` (a module-scoped
fixture); every test reads that run. Each attacker carries honest answers next to its attack, so its
honest score is known: what its answer functions earn. The attacks know the real paths (the course,
its gradebook, a classmate's notebook, the repository, ``solutions/``), as a student who read the
course's config would. After the run:

* every score is exactly the honest one (controls: full marks and zero);
* every submitted notebook, ``solutions/``, the course config and the repository's lab sources are
  byte-identical, and no file carrying the attack's token was created in the repository or the course;
* no process carrying the token is alive (daemons, ``start_new_session`` children, double forks);
* printed output is capped with a note; hidden test code and the grading seed appear in no
  autograded answer output and no feedback page, and a stray marker breaks no one's feedback;
* a manual grade and extra credit survive a one-student regrade, which leaves the others' rows
  untouched; the export gives each status (graded, not submitted, ungradeable, late, flagged).
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import secrets
import textwrap

import nbformat
import pytest

from fp8lab.labs import submissions
from fp8lab.labs.catalog import get_lab, repo_root
from fp8lab.labs.grading import autograde, collect, export_rows, feedback, prepare_scratch, set_due_date
from fp8lab.labs.sandbox import sandbox_problem
from fp8lab.labs.submissions import BLANK, CHEAT, SOLVED, build, expected_points

pytestmark = pytest.mark.kernel

LAB = os.environ.get("FP8LAB_HOSTILE_LAB", "01_decode_exmy")
TIMEOUT = 10
SEED = 8675309123457  # must appear in no output a student sees
TOKEN = "fp8lab-hostile-" + secrets.token_hex(6)


def _hash_tree(root: pathlib.Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def _cell(nb, grade_id):
    return next(c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)


def _guarded(code: str) -> str:
    """Attack code that runs when the cell runs, without stopping the honest answer below it from being defined."""
    return "try:\n" + textwrap.indent(textwrap.dedent(code).strip("\n"), "    ") + "\nexcept BaseException:\n    pass\n"


def _prepend(nb, grade_id, code):
    c = _cell(nb, grade_id)
    c.source = _guarded(code) + "\n" + c.source
    return nb


def _attacks(lab, paths: dict[str, str]):
    """(name, notebook, expected points): one per attack class, honest answers beside each attack."""
    ids = [t.id for t in lab.tasks]
    first, last = ids[0], ids[-1]
    solved = {t: SOLVED for t in ids}
    full = expected_points(lab, solved)
    p = {k: repr(v) for k, v in paths.items()}
    out = [("solution", build(lab, solved), full), ("blank", build(lab, {}), expected_points(lab, {}))]

    out.append(("gradebook_rewrite", _prepend(build(lab, solved), first, f"""
        import os, sqlite3
        roots, d = [{p['course']}, {p['repo']}], os.getcwd()
        while d != os.path.dirname(d):  # the course a worker's config names, found from the working folder
            if os.path.exists(os.path.join(d, "nbgrader_config.py")):
                roots.append(d)
            d = os.path.dirname(d)
        found = [{p['gradebook']}] + [os.path.join(r, ".grading", "gradebook.db") for r in roots]
        for top, dirs, files in os.walk("/"):
            dirs[:] = [x for x in dirs if x not in ("proc", "sys", "usr", "dev", "root")]
            found += [os.path.join(top, f) for f in files if f.endswith(".db")]
        for db in found:
            try:
                con = sqlite3.connect(db)
                con.execute("update grade set auto_score = 1000, manual_score = 1000")
                con.commit()
            except Exception:
                pass
        open({p['course']} + "/.grading/{TOKEN}", "w").write("x")
    """), full))

    out.append(("detached_process", _prepend(build(lab, solved), first, f"""
        import os, subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "{TOKEN}"], start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        pid = os.fork()
        if pid == 0:  # a double-forked daemon in its own session
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", "{TOKEN}-daemon"])
            os._exit(0)
        os.waitpid(pid, 0)
    """), full))

    out.append(("overwrite_other", _prepend(build(lab, solved), first, f"""
        import os
        blank = open({p['exercise']}).read() if os.path.exists({p['exercise']}) else "{{}}"
        found = [os.path.join(t, f) for t, _, fs in os.walk("/tmp") for f in fs if f.endswith(".ipynb")]
        for target in [{p['victim']}, {p['victim_autograded']}] + found:
            try:
                open(target, "w").write(blank)
            except Exception:
                pass
    """), full))

    out.append(("write_repo", _prepend(build(lab, solved), first, f"""
        for target in [{p['repo']} + "/{TOKEN}", {p['repo']} + "/solutions/{TOKEN}", {p['repo']} + "/fp8lab/{TOKEN}.py"]:
            try:
                open(target, "w").write("pwned")
            except Exception:
                pass
        open({p['source']}, "a").write("pwned")
    """), full))

    # patching, mocking, input transformers, a fake harness, deleted verdict lines: blank answers stay blank
    patched = build(lab, {})
    _prepend(patched, first, """
        import builtins, sys, types, unittest.mock, timeit
        fake = types.ModuleType("fp8lab.labs")
        fake.expect_equal = fake.expect_close = fake.expect_raises = lambda *a, **k: None
        class _Pass:
            def __init__(self, fn, **k): self.fn = fn
            def __enter__(self): return lambda *a, **k: None
            def __exit__(self, *e): return True
        fake.no_shortcut = _Pass
        sys.modules["fp8lab"] = types.ModuleType("fp8lab")
        sys.modules["fp8lab.labs"] = fake
        unittest.mock.patch("builtins.AssertionError", Warning).start()
        timeit.default_timer = lambda: 0.0
        ip = get_ipython()
        ip.input_transformers_cleanup.append(lambda lines: [ln for ln in lines if "expect_" not in ln])
    """)
    out.append(("patching", patched, expected_points(lab, {})))

    # a cast looked up at run time and kept on an object attribute: the module does not exist where answers run
    cast = build(lab, dict(solved, **{last: BLANK}))
    c = _cell(cast, last)
    name = c.source.split("def ", 1)[1].split("(", 1)[0]
    c.source = (f"class _Box:\n    pass\n_box = _Box()\n\ndef {name}(*args, **kwargs):\n"
                "    _box.cast = getattr(__import__('ml_' + 'dtypes'), 'float8_' + 'e4m3fn')\n"
                "    _box.ref = __import__('fp8' + 'lab')\n"
                "    return _box.ref.__dict__['decode'](*args, **kwargs)\n")
    out.append(("cast_at_runtime", cast, expected_points(lab, dict(solved, **{last: CHEAT}))))

    # reading the solutions and the hidden tests: nothing to read, so the copied answer is not there
    reader = build(lab, dict(solved, **{last: BLANK}))
    _prepend(reader, last, f"""
        import json
        source = json.load(open({p['source']}))
        for cell in source["cells"]:
            if cell.get("metadata", {{}}).get("nbgrader", {{}}).get("grade_id") == "{last}":
                exec("".join(cell["source"]))
    """)
    out.append(("read_solutions", reader, expected_points(lab, dict(solved, **{last: BLANK}))))

    out.append(("print_hidden", _prepend(build(lab, solved), first, f"""
        import os
        print(dict(os.environ))
        for top, dirs, files in os.walk("/"):
            dirs[:] = [x for x in dirs if x not in ("proc", "sys", "usr", "dev", "root")]
            for f in files:
                try:
                    text = open(os.path.join(top, f), errors="ignore").read()
                except Exception:
                    continue
                if "HIDDEN" + " TESTS" in text or "grading_" + "rng" in text:
                    print(text)
        print(open({p['source']}).read())
    """), full))

    meta = build(lab, solved)  # metadata edits and an invented graded cell: the answers are still graded
    _cell(meta, f"test_{first}").metadata["nbgrader"]["grade"] = False
    _cell(meta, first).metadata["nbgrader"].update(grade=True, points=100)
    _cell(meta, f"hidden_{last}").metadata["nbgrader"]["grade_id"] = "renamed"
    meta.cells.append(nbformat.v4.new_code_cell("pass", metadata={"nbgrader": {
        "grade": True, "solution": False, "locked": True, "grade_id": "invented", "points": 50, "schema_version": 3}}))
    out.append(("metadata_edits", meta, full))

    stray = build(lab, solved)
    _cell(stray, first).source += "\n# ### BEGIN HIDDEN TESTS\n# ### BEGIN SOLUTION\n"
    _cell(stray, last).source += "\n### END HIDDEN TESTS\n"
    out.append(("stray_markers", stray, full))

    out.append(("huge_output", _prepend(build(lab, solved), first, """
        import sys
        for _ in range(40):
            print("x" * 1_000_000)
        sys.stdout.write("y" * 10_000_000)
    """), full))

    exits = build(lab, dict(solved, **{last: BLANK}))  # sys.exit ends a cell, os._exit the process: the rest is graded
    c = _cell(exits, last)
    c.source = c.source.replace("raise NotImplementedError()", "import os\n    os._exit(7)")
    _cell(exits, first).source += "\nimport sys\nsys.exit(3)\n"
    out.append(("exits", exits, expected_points(lab, dict(solved, **{last: BLANK}))))
    return out


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    problem = sandbox_problem()
    if problem:
        pytest.fail(f"the sandbox must start on the test machine: {problem}")
    lab = get_lab(LAB)
    tmp = tmp_path_factory.mktemp("hostile")
    course = prepare_scratch(lab, tmp / "course", timeout=TIMEOUT)
    paths = {"course": str(course.root), "repo": str(repo_root()), "gradebook": str(course.gradebook),
             "victim": str(course.submitted("solution", lab.name)),
             "victim_autograded": str(course.autograded("solution", lab.name) / f"{lab.name}.ipynb"),
             "exercise": str(lab.exercise), "source": str(lab.notebook)}
    subs = _attacks(lab, paths)
    folder = tmp / "class"
    folder.mkdir()
    for name, nb, _ in subs:
        nbformat.write(nb, str(folder / f"{name}.ipynb"))
        (folder / f"{name}.timestamp.txt").write_text("2029-12-31 12:00:00 UTC")  # in time, as the exchange records it
    nbformat.write(build(lab, {t.id: SOLVED for t in lab.tasks}), str(folder / "late.ipynb"))
    (folder / "late.timestamp.txt").write_text("2030-01-02 03:04:05 UTC")
    (folder / "broken.ipynb").write_text('{"cells": [')
    collect(lab.name, folder, course=course)
    for name in [n for n, _, _ in subs] + ["late"]:  # what `nbgrader collect` from the exchange records beside each
        (course.submitted(name, lab.name).parent / "submission_secret.txt").write_text(secrets.token_hex(16))
    set_due_date(lab.name, "2030-01-01T00:00", course=course)
    from nbgrader.api import Gradebook

    with Gradebook(course.db_url, "fp8lab") as gb:
        gb.update_or_create_student("absent")
    before = {"submitted": _hash_tree(course.grading / "submitted"), "solutions": _hash_tree(repo_root() / "solutions"),
              "config": hashlib.sha256((repo_root() / "nbgrader_config.py").read_bytes()).hexdigest()}
    report = autograde(lab.name, jobs=2, seed=SEED, timeout=TIMEOUT, course=course)
    print(f"\n{lab.name}: {len(subs) + 2} hostile and control submissions graded with --jobs 2 in {report.seconds:.1f} s")
    pages = feedback(lab.name, course=course)
    return {"lab": lab, "course": course, "subs": subs, "report": report, "before": before, "pages": pages}


def test_every_submission_gets_exactly_its_honest_score(graded):
    report = graded["report"]
    wrong = {n: (report.scores.get(n), e) for n, _, e in graded["subs"] if report.scores.get(n) != e}
    assert wrong == {}, "\n".join(f"{n}: got {g}, honest {e}" for n, (g, e) in wrong.items())
    assert set(report.failed) == {"broken"} and "ungradeable" in report.failed["broken"]


def test_no_submission_solution_config_or_repository_file_changed(graded):
    course, before = graded["course"], graded["before"]
    assert _hash_tree(course.grading / "submitted") == before["submitted"]
    assert _hash_tree(repo_root() / "solutions") == before["solutions"]
    assert hashlib.sha256((repo_root() / "nbgrader_config.py").read_bytes()).hexdigest() == before["config"]
    planted = [p for root in (repo_root(), course.root) for p in root.rglob(f"*{TOKEN}*")]
    assert planted == []


def test_no_process_of_a_submission_is_alive_afterwards(graded):
    alive = []
    for proc in pathlib.Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if TOKEN.encode() in (proc / "cmdline").read_bytes():
                    alive.append(proc.name)
            except OSError:
                pass
    assert alive == []


def test_output_is_capped_with_a_note(graded):
    lab, course = graded["lab"], graded["course"]
    nb = nbformat.read(str(course.autograded("huge_output", lab.name) / f"{lab.name}.ipynb"), as_version=4)
    first = next(c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == lab.tasks[0].id)
    text = "".join(o.get("text", "") for o in first.outputs if o.output_type == "stream")
    assert len(text) <= 2**20 + 1000 and "[output cut:" in text
    assert course.feedback("huge_output", lab.name).stat().st_size < 4 * 2**20
    assert "huge_output" in graded["report"].findings  # the instructor's report says so


def test_hidden_tests_and_the_seed_reach_no_student_page(graded):
    lab, course = graded["lab"], graded["course"]
    names = {n for n, _, _ in graded["subs"]} - {"broken"}
    assert {p.parent.parent.name for p in graded["pages"]} >= names  # a stray marker stops no one's feedback
    for page in graded["pages"]:
        html = page.read_text(encoding="utf-8")
        assert "grading_rng" not in html, page
        assert str(SEED) not in html, page
    printed = nbformat.read(str(course.autograded("print_hidden", lab.name) / f"{lab.name}.ipynb"), as_version=4)
    shown = json.dumps([c.get("outputs", []) for c in printed.cells if c.get("metadata", {}).get("nbgrader", {}).get("solution")])
    assert "grading_rng" not in shown and str(SEED) not in shown


def test_a_manual_grade_survives_a_one_student_regrade_that_leaves_the_others_alone(graded):
    from nbgrader.api import Gradebook

    lab, course = graded["lab"], graded["course"]
    cell = f"hidden_{lab.tasks[0].id}"

    def rows():
        with Gradebook(course.db_url, "fp8lab") as gb:
            return {(s.student.id, g.name): (g.auto_score, g.manual_score, g.extra_credit)
                    for s in gb.find_assignment(lab.name).submissions for nb in s.notebooks for g in nb.grades}

    with Gradebook(course.db_url, "fp8lab") as gb:
        g = gb.find_grade(cell, lab.name, lab.name, "blank")
        g.manual_score, g.extra_credit = 0.5, 1.5
        gb.db.commit()
    others = {k: v for k, v in rows().items() if k[0] != "blank"}
    again = autograde(lab.name, jobs=1, seed=SEED + 1, timeout=TIMEOUT, students=["blank"], course=course)
    assert set(again.scores) == {"blank"}
    after = rows()
    assert after[("blank", cell)] == (0.0, 0.5, 1.5)
    assert {k: v for k, v in after.items() if k[0] != "blank"} == others
    with Gradebook(course.db_url, "fp8lab") as gb:
        assert gb.find_submission(lab.name, "blank").score == 2.0  # manual 0.5 + extra credit 1.5


def test_the_export_gives_every_status_with_a_reason(graded):
    lab, course = graded["lab"], graded["course"]
    rows = {r["student"]: r for r in export_rows(course) if r["lab"] == lab.name}
    assert rows["solution"]["status"] == "graded" and rows["solution"]["score"] == str(int(lab.points))
    assert rows["absent"]["status"] == "not submitted"
    assert rows["broken"]["status"] == "ungradeable" and "not a readable notebook" in rows["broken"]["reason"]
    assert rows["late"]["status"] == "late" and "after the due date" in rows["late"]["reason"]
    assert rows["cast_at_runtime"]["status"] == "flagged" and "scan:" in rows["cast_at_runtime"]["reason"]
    assert rows["blank"]["status"] == "graded"


def test_feedback_is_released_through_nbgraders_exchange(graded):
    from fp8lab.labs.course import run_nbgrader

    lab, course = graded["lab"], graded["course"]
    (course.grading / "exchange").mkdir(mode=0o777, exist_ok=True)  # the exchange root, as an instructor makes it
    run_nbgrader(course, ["release_feedback", lab.name])
    released = list((course.grading / "exchange" / "fp8lab" / "feedback").glob("*.html"))
    # one page per graded student with a submission time (as the exchange's collect records it)
    assert len(released) == len(graded["pages"]) > 0
