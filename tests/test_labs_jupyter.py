"""JupyterLab's nbgrader panels work on one machine: a real headless server, its nbgrader endpoints.

The server starts as ``make lab`` starts it (its command line and environment, from a PATH without the
venv's ``bin/``, after :func:`prepare_panels`), with ``FP8LAB_GRADING_DIR`` and ``FP8LAB_MY_LABS_DIR`` moving the exchange, the gradebook and the
fetched labs into temporary folders. Then, through the REST endpoints the panels call: the Courses
panel finds the local Formgrader of course ``fp8lab``; the Formgrader lists every lab; the
Assignments panel lists the released labs (not "Error fetching courses!" or "exchange directory
does not exist"), fetches one into the learner's folder, validates it in the grading kernel and
submits it to the exchange, from where ``nbgrader collect`` takes it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid

import pytest

from fp8lab.labs.catalog import get_lab, list_labs, repo_root
from fp8lab.labs.course import main_course, run_nbgrader
from fp8lab.course.lab import LabOptions, jupyter_command, server_env
from fp8lab.labs.jupyter import gradebook_current, prepare_panels, release

pytestmark = pytest.mark.kernel  # the module runs on one worker, one server (SHARED_FIXTURE_UNITS in tests/conftest.py)
ROOT = repo_root()
LAB = "01_decode_exmy"


def user_path(path: str) -> str:
    """``path`` without this interpreter's bin/ and any folder holding ``alembic`` (a learner's shell)."""
    bindir = os.path.dirname(sys.executable)
    return os.pathsep.join(p for p in path.split(os.pathsep)
                           if p and p != bindir and not os.path.exists(os.path.join(p, "alembic"))) or "/usr/bin:/bin"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base: str, token: str, path: str, data: dict | None = None, timeout: float = 120):
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    req = urllib.request.Request(f"{base}/{path}", data=body, headers={"Authorization": f"token {token}"},
                                 method="POST" if data is not None else "GET")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("jupyter")
    my_labs = ROOT / "my_labs" / f"test-{uuid.uuid4().hex[:8]}"  # inside the root dir, git-ignored
    env = dict(os.environ, FP8LAB_GRADING_DIR=str(tmp / "grading"), FP8LAB_MY_LABS_DIR=str(my_labs),
               JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), JUPYTER_CONFIG_DIR=str(tmp / "config"))
    env["PATH"] = user_path(env.get("PATH", ""))  # a learner's shell: make lab adds the venv's bin for the server
    with pytest.MonkeyPatch.context() as mp:  # what make lab does before it starts the server
        mp.setenv("FP8LAB_GRADING_DIR", env["FP8LAB_GRADING_DIR"])
        mp.setenv("FP8LAB_MY_LABS_DIR", str(my_labs))
        mp.setenv("PATH", env["PATH"])
        n = len(list_labs())
        assert prepare_panels(main_course()).startswith(f"labs: released {n} of {n} into")
        assert gradebook_current(main_course().gradebook)
    port, token = free_port(), uuid.uuid4().hex
    cmd = jupyter_command(LabOptions(root=ROOT, ip="127.0.0.1"), port, token)
    log = open(tmp / "lab.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=server_env(env))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                call(base, token, "api/status", timeout=5)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail(f"JupyterLab did not start:\n{(tmp / 'lab.log').read_text()[-3000:]}")
        yield base, token, tmp, my_labs, env
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        shutil.rmtree(my_labs, ignore_errors=True)


def test_the_courses_panel_finds_the_local_formgrader(server):
    base, token, *_ = server
    got = call(base, token, "formgraders")
    assert got["success"], got
    assert [c["course_id"] for c in got["value"]] == ["fp8lab"] and got["value"][0]["kind"] == "local"
    assert call(base, token, "formgrader/api/status") == {"status": True}


def test_the_formgrader_lists_every_lab(server):
    base, token, *_ = server
    names = {a["name"] for a in call(base, token, "formgrader/api/assignments")}
    assert names == {lab.name for lab in list_labs()}


def test_a_learner_lists_fetches_validates_and_submits_a_lab(server):
    base, token, tmp, my_labs, env = server
    courses = call(base, token, "courses")
    assert courses == {"success": True, "value": ["fp8lab"]}, courses
    listed = call(base, token, "assignments?course_id=fp8lab")
    assert listed["success"], listed
    assert {(a["assignment_id"], a["status"]) for a in listed["value"]} >= {(LAB, "released")}

    fetched = call(base, token, "assignments/fetch", {"course_id": "fp8lab", "assignment_id": LAB})
    assert fetched["success"], fetched
    path = next(n["path"] for a in fetched["value"] if a["status"] == "fetched" for n in a["notebooks"])
    assert (ROOT / path).is_file() and (ROOT / path).is_relative_to(my_labs)
    contents = call(base, token, f"api/contents/{path}?content=0")
    assert contents["type"] == "notebook"

    validated = call(base, token, "assignments/validate", {"path": path}, timeout=300)
    assert validated["success"], validated
    assert len(validated["value"]["failed"]) == len(get_lab(LAB).tasks)  # the visible tests of a blank lab fail

    submitted = call(base, token, "assignments/submit", {"course_id": "fp8lab", "assignment_id": LAB})
    assert submitted["success"], submitted
    inbound = list((tmp / "grading" / "exchange" / "fp8lab" / "inbound").iterdir())
    assert len(inbound) == 1 and (inbound[0] / f"{LAB}.ipynb").is_file()

    # the instructor's side: nbgrader collect takes it from the exchange into submitted/
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FP8LAB_GRADING_DIR", env["FP8LAB_GRADING_DIR"])
        out = run_nbgrader(main_course(), ["collect", LAB]).stdout
    assert "Collecting submission" in out, out
    assert list((tmp / "grading" / "submitted").glob(f"*/{LAB}/{LAB}.ipynb"))


def test_release_repairs_a_gradebook_left_without_its_version_and_is_idempotent(tmp_path, monkeypatch):
    """A Formgrader without `alembic` on PATH leaves nbgrader's tables and no alembic_version; release repairs it."""
    grading = tmp_path / "grading"
    grading.mkdir()
    monkeypatch.setenv("FP8LAB_GRADING_DIR", str(grading))
    monkeypatch.setenv("PATH", user_path(os.environ.get("PATH", "")))
    course = main_course()
    broken = subprocess.run([sys.executable, "-c", "import sys; from nbgrader.api import Gradebook; Gradebook(sys.argv[1])",
                             course.db_url], capture_output=True, text=True, env=dict(os.environ), timeout=120)
    assert broken.returncode != 0 and "alembic" in broken.stderr  # what the Formgrader's 500 was
    assert course.gradebook.is_file() and not gradebook_current(course.gradebook)
    assert release([LAB], course=course) == [LAB]
    assert gradebook_current(course.gradebook)
    upgrade = run_nbgrader(course, ["db", "upgrade"], check=False)  # nbgrader's own tools accept the repaired gradebook
    assert upgrade.returncode == 0, upgrade.stdout
    before = course.gradebook.stat().st_mtime_ns
    assert release([LAB], course=course) == []  # current: nothing runs
    assert course.gradebook.stat().st_mtime_ns == before
