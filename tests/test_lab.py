"""`make lab` is proven, not hoped for: the learner's working copy (made once, never overwritten), the
argument pass-through, and (kernel) JupyterLab started exactly as `make lab` starts it, answering the one
URL it prints, serving the copy, and stopping when the launcher is stopped; the make targets the README
promises."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from fp8lab.course.lab import jupyter_command, lab_url, parse_arguments
from fp8lab.course.workcopy import MANIFEST, fresh_copy, refresh_chapter, sync_working_copy

ROOT = pathlib.Path(__file__).resolve().parents[1]


def course(tmp_path, names=("00_welcome", "01_fp32")) -> pathlib.Path:
    src = tmp_path / "notebooks"
    src.mkdir()
    for n in names:
        (src / f"{n}.ipynb").write_text(json.dumps({"cells": [], "name": n}))
    return src


def test_the_first_sync_makes_the_copy_and_later_syncs_add_only_new_chapters(tmp_path) -> None:
    src, copy = course(tmp_path), tmp_path / "my_course"
    first = sync_working_copy(src, copy)
    assert first.created and first.added == ("00_welcome.ipynb", "01_fp32.ipynb")
    assert (copy / MANIFEST).exists()
    (copy / "01_fp32.ipynb").write_text("my edits")             # the learner saves their work
    (src / "02_fp16_bf16.ipynb").write_text("{}")                # the course grows
    second = sync_working_copy(src, copy)
    assert not second.created and second.added == ("02_fp16_bf16.ipynb",)
    assert (copy / "01_fp32.ipynb").read_text() == "my edits"     # never overwritten


def test_an_upstream_change_is_reported_not_applied(tmp_path) -> None:
    src, copy = course(tmp_path), tmp_path / "my_course"
    sync_working_copy(src, copy)
    (src / "00_welcome.ipynb").write_text("new version")
    (src / "01_fp32.ipynb").write_text("new version")
    (copy / "01_fp32.ipynb").write_text("my edits")
    report = sync_working_copy(src, copy)
    assert report.changed_upstream == ("01_fp32.ipynb",) and report.edited == ("01_fp32.ipynb",)
    assert report.updated == ("00_welcome.ipynb",)  # not edited by the learner: the fix is taken
    assert (copy / "00_welcome.ipynb").read_text() == "new version"
    assert (copy / "01_fp32.ipynb").read_text() == "my edits"
    updated, held = report.lines()
    assert "00_welcome" in updated and "01_fp32 (edited by you)" in held and "--refresh 01_fp32" in held


def test_refresh_keeps_the_learners_file_and_fresh_renames_the_copy(tmp_path) -> None:
    src, copy = course(tmp_path), tmp_path / "my_course"
    sync_working_copy(src, copy)
    (copy / "01_fp32.ipynb").write_text("my edits")
    (src / "01_fp32.ipynb").write_text("new version")
    backup = refresh_chapter(src, copy, "01")
    assert backup.read_text() == "my edits" and (copy / "01_fp32.ipynb").read_text() == "new version"
    assert sync_working_copy(src, copy).changed_upstream == ()
    with pytest.raises(ValueError, match="no single chapter"):
        refresh_chapter(src, copy, "09_missing")
    old = fresh_copy(src, copy)
    assert old.exists() and (old / backup.name).read_text() == "my edits"
    assert sorted(p.name for p in copy.glob("*.ipynb")) == ["00_welcome.ipynb", "01_fp32.ipynb"]


def test_a_course_folder_without_chapters_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(ValueError, match="no notebooks"):
        sync_working_copy(tmp_path / "nothing", tmp_path / "copy")


def test_port_ip_token_and_browser_are_read_and_everything_else_passes_through() -> None:
    opts = parse_arguments(["--port", "8890", "--ip=0.0.0.0", "--no-browser", "--ServerApp.base_url=/x/", "--refresh", "03"])
    assert (opts.port, opts.ip, opts.open_browser, opts.refresh) == (8890, "0.0.0.0", False, ["03"])
    cmd = jupyter_command(opts, 8890, "tok")
    assert "--ServerApp.base_url=/x/" in cmd and "--ServerApp.port=8890" in cmd and "--ServerApp.ip=0.0.0.0" in cmd
    assert f"--ServerApp.root_dir={opts.root}" in cmd and "--ServerApp.port_retries=0" in cmd
    assert ("--allow-root" in cmd) == (os.geteuid() == 0)
    assert lab_url("127.0.0.1", 8890, "my_course/00_welcome.ipynb", "tok") == \
        "http://127.0.0.1:8890/lab/tree/my_course/00_welcome.ipynb?token=tok"
    with pytest.raises(SystemExit, match="port number"):
        parse_arguments(["--port=abc"])


def test_the_makefile_runs_the_launcher_and_the_copy_is_git_ignored() -> None:
    make = (ROOT / "Makefile").read_text()
    assert "-m fp8lab.course.lab $(ARGS)" in make and "--fresh $(ARGS)" in make
    assert "/my_course/" in (ROOT / ".gitignore").read_text().splitlines()


def test_make_test_fast_leaves_out_every_costly_marker_and_the_markers_are_registered() -> None:
    import re
    import tomllib

    make = (ROOT / "Makefile").read_text()
    fast = re.search(r"^FAST\s*:=\s*(.+)$", make, re.M).group(1)
    costly = {"kernel", "browser", "exhaustive", "slow"}
    assert {m for m in costly if f"not {m}" in fast} == costly, fast
    target = make.split("\ntest-fast:", 1)[1].split("\n\n", 1)[0]
    assert '-m "$(FAST)"' in target and "--dist load " in target  # the scheduler of tests/conftest.py
    assert "--dist load " in make.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert costly | {"gpu"} <= {m.split(":", 1)[0] for m in ini["markers"]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, token: str | None = None):
    headers = {"Authorization": f"token {token}"} if token else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as resp:
        body = resp.read()
        return resp.status, body


@pytest.mark.kernel
def test_make_lab_serves_the_working_copy_at_the_url_it_prints(tmp_path) -> None:
    port = free_port()
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               PYTHONUNBUFFERED="1", FP8LAB_GRADING_DIR=str(tmp_path / "grading"))
    cmd = [sys.executable, "-m", "fp8lab.course.lab", "--root", str(tmp_path), "--source", str(ROOT / "notebooks"),
           "--no-browser", f"--port={port}", "--ip=127.0.0.1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines = []
    try:
        deadline = time.monotonic() + 150
        url = None
        while time.monotonic() < deadline and url is None:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("fp8lab course: open "):
                url = line.split("open ", 1)[1].strip()
        assert url, f"make lab printed no URL line:\n{''.join(lines)}"
        assert sum("http" in ln for ln in lines) == 1, f"more than one URL printed:\n{''.join(lines)}"
        assert any(ln.startswith("labs: released ") for ln in lines), f"no line about the labs:\n{''.join(lines)}"
        assert url.startswith(f"http://127.0.0.1:{port}/lab/tree/my_course/00_welcome.ipynb?token=")
        assert get(url)[0] == 200
        token = url.split("token=", 1)[1]
        status, body = get(f"http://127.0.0.1:{port}/api/contents/my_course", token)
        names = {item["name"] for item in json.loads(body)["content"]}
        on_disk = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
        assert on_disk <= names, f"the server lists {sorted(names)}, the course has {sorted(on_disk)}"
        assert "python3" in json.loads(get(f"http://127.0.0.1:{port}/api/kernelspecs", token)[1])["kernelspecs"]
    finally:
        proc.send_signal(signal.SIGTERM)  # as Ctrl+C or a CI runner would stop it
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0, "JupyterLab still listens after make lab was stopped"


# --- opening, running or autosaving a chapter is not editing it (cell sources count, not bytes) -----------------

CHAPTER_03 = ROOT / "notebooks" / "03_fp8.ipynb"


def _autosaved(nb: dict) -> dict:
    """What JupyterLab writes after a learner opened and ran a chapter: outputs, counts, metadata, ids."""
    nb = json.loads(json.dumps(nb))
    nb["metadata"]["language_info"] = {"name": "python", "version": "3.11.2"}
    nb["metadata"].setdefault("kernelspec", {})["display_name"] = "Python 3 (ipykernel)"
    for i, cell in enumerate(nb["cells"]):
        cell.setdefault("id", f"autosave-{i}")
        cell.setdefault("metadata", {})["scrolled"] = True
        if cell["cell_type"] == "code":
            cell["execution_count"] = i + 1
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["ran\n"]}]
        source = cell["source"]
        cell["source"] = "".join(source) if isinstance(source, list) else source.splitlines(keepends=True)
    return nb


NOT_EDITS = {
    "autosave": _autosaved,
    "reindented": lambda nb: nb,  # written with another indent and key order below
    "crlf and trailing spaces": lambda nb: {**nb, "cells": [{**c, "source": "".join(c["source"]).replace("\n", "  \r\n")}
                                                            for c in nb["cells"]]},
    "minor version": lambda nb: {**nb, "nbformat_minor": 4},
}


def _edit_source(nb: dict, k: int, new: str) -> dict:
    nb = json.loads(json.dumps(nb))
    nb["cells"][k]["source"] = new
    return nb


EDITS = {
    "one character": lambda nb: _edit_source(nb, 3, "".join(nb["cells"][3]["source"]).replace("e", "E", 1)),
    "a cell added": lambda nb: {**nb, "cells": nb["cells"] + [{"cell_type": "code", "source": "x = 1", "metadata": {},
                                                               "outputs": [], "execution_count": None}]},
    "a cell deleted": lambda nb: {**nb, "cells": nb["cells"][:-1]},
    "two cells swapped": lambda nb: {**nb, "cells": [nb["cells"][1], nb["cells"][0], *nb["cells"][2:]]},
    "a cell's type": lambda nb: {**nb, "cells": [{**nb["cells"][0], "cell_type": "raw"}, *nb["cells"][1:]]},
    "emptied": lambda nb: _edit_source(nb, 2, ""),
}


@pytest.mark.parametrize("change", sorted(NOT_EDITS) + sorted(EDITS))
def test_a_chapter_opened_run_or_autosaved_takes_upstream_fixes_and_an_edited_one_is_kept(tmp_path, change) -> None:
    src = tmp_path / "notebooks"
    src.mkdir()
    (src / CHAPTER_03.name).write_bytes(CHAPTER_03.read_bytes())
    copy = tmp_path / "my_course"
    sync_working_copy(src, copy)
    nb = json.loads((copy / CHAPTER_03.name).read_text())
    edited = change in EDITS
    changed = (EDITS if edited else NOT_EDITS)[change](nb)
    (copy / CHAPTER_03.name).write_text(json.dumps(changed, indent=2 if change == "reindented" else 1,
                                                   sort_keys=change == "reindented"))
    mine = (copy / CHAPTER_03.name).read_text()
    fixed = json.loads(CHAPTER_03.read_text())
    fixed["cells"][-1]["source"] = "".join(fixed["cells"][-1]["source"]) + "\nan upstream fix"
    (src / CHAPTER_03.name).write_text(json.dumps(fixed, indent=1))
    report = sync_working_copy(src, copy)
    if edited:
        assert report.edited == report.changed_upstream == (CHAPTER_03.name,) and report.updated == ()
        assert (copy / CHAPTER_03.name).read_text() == mine  # the learner's work is never overwritten
        assert "(edited by you)" in report.lines()[-1]
    else:
        assert report.updated == (CHAPTER_03.name,) and report.changed_upstream == report.edited == ()
        assert (copy / CHAPTER_03.name).read_text() == (src / CHAPTER_03.name).read_text()
        assert not any("edited by you" in line for line in report.lines())


def test_a_copy_from_before_cell_digests_is_judged_by_bytes_until_it_has_one(tmp_path) -> None:
    src, copy = course(tmp_path), tmp_path / "my_course"
    sync_working_copy(src, copy)
    manifest = json.loads((copy / MANIFEST).read_text())
    for entry in manifest["chapters"].values():
        del entry["copied_cells"]
    (copy / MANIFEST).write_text(json.dumps(manifest))
    (copy / "01_fp32.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "source": "mine"}]}))
    for name in ("00_welcome.ipynb", "01_fp32.ipynb"):
        (src / name).write_text(json.dumps({"cells": [], "name": name, "fixed": True}))
    report = sync_working_copy(src, copy)
    assert report.updated == ("00_welcome.ipynb",) and report.edited == ("01_fp32.ipynb",)


def test_saved_widget_outputs_and_widget_state_do_not_survive_into_the_next_session(tmp_path) -> None:
    from fp8lab.course.workcopy import WIDGET_NOTE, WIDGET_VIEW

    src = tmp_path / "notebooks"
    src.mkdir()
    (src / CHAPTER_03.name).write_bytes(CHAPTER_03.read_bytes())
    copy = tmp_path / "my_course"
    sync_working_copy(src, copy)
    nb = _autosaved(json.loads((copy / CHAPTER_03.name).read_text()))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    view = {"output_type": "display_data", "metadata": {},
            "data": {"text/plain": "interactive(children=(IntSlider(value=3),))",
                     WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": "0123abcd"}}}
    code[0]["outputs"] = [view, {"output_type": "stream", "name": "stdout", "text": "kept\n"}]
    code[1]["outputs"] = [dict(view, output_type="execute_result", execution_count=2)]
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    (copy / CHAPTER_03.name).write_text(json.dumps(nb, indent=1))
    report = sync_working_copy(src, copy)
    assert report.widgets_forgotten == 1 and report.edited == () and report.updated == ()
    assert any("run their cell again" in line for line in report.lines())
    saved = json.loads((copy / CHAPTER_03.name).read_text())
    text = json.dumps(saved)
    assert WIDGET_VIEW not in text and "widgets" not in saved["metadata"] and "0123abcd" not in text
    outs = [c["outputs"] for c in saved["cells"] if c["cell_type"] == "code"]
    assert outs[0][0]["data"] == {"text/plain": WIDGET_NOTE} and outs[0][1]["text"] == "kept\n"
    assert outs[1][0]["data"] == {"text/plain": WIDGET_NOTE} and outs[1][0]["output_type"] == "execute_result"
    assert sync_working_copy(src, copy).widgets_forgotten == 0  # nothing left to forget; the file is not rewritten
    import nbformat

    nbformat.validate(nbformat.read(copy / CHAPTER_03.name, as_version=4))


def test_the_fp8lab_command_runs_in_a_clean_shell_as_make_lab_says(tmp_path) -> None:
    """The line make lab prints about the fp8lab command, followed word for word in a shell with a bare PATH."""
    import re
    import shlex

    from fp8lab.course.lab import command_hint

    hint = command_hint(ROOT)
    steps = re.findall(r"`([^`]+)`", hint)
    assert steps and steps[-1] == "fp8lab --help", hint
    clean = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    assert subprocess.run(["bash", "-c", "command -v fp8lab"], env=clean, cwd=ROOT).returncode != 0  # the bare shell lacks it
    activated = " && ".join(steps[:-1] + ["fp8lab explain 0.8125 --format e4m3", "fp8lab --help"])
    direct = re.search(r"\(or (\S+) --help", hint).group(1)
    for script in (activated, f"{shlex.quote(direct)} explain 0.8125 --format e4m3"):
        out = subprocess.run(["env", "-i", *(f"{k}={v}" for k, v in clean.items()), "bash", "-c", script],
                             capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert out.returncode == 0 and "0x35" in out.stdout, (script, out.stdout[-2000:], out.stderr[-2000:])


def test_the_first_make_lab_says_what_it_does_while_pip_works() -> None:
    """The venv recipe names each step before it runs and lets pip show its progress for the big install."""
    if subprocess.run(["make", "--version"], capture_output=True).returncode != 0:
        pytest.skip("make is not installed")
    out = subprocess.run(["make", "--no-print-directory", "-n", "-B", "-C", str(ROOT), ".venv/.installed"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = [ln.strip() for ln in out.stdout.splitlines() if ln.strip()]
    work = [i for i, ln in enumerate(lines) if "-m pip" in ln or "-m venv" in ln or "ipykernel install" in ln]
    assert len(work) >= 4, lines
    for i in work:  # a step line comes first (the venv is created inside its own echo's block)
        assert "echo" in lines[i] or (i > 0 and lines[i - 1].startswith("echo")), f"no step line before: {lines[i]}"
    requirements = [ln for ln in lines if "-r requirements.txt" in ln]
    assert requirements and all("--quiet" not in ln and " -q" not in ln for ln in requirements), requirements
    assert any("activate" in ln for ln in lines)  # and how to run the fp8lab command, once it is ready
