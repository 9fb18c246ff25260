"""`make lab` is proven, not hoped for: JupyterLab starts headless, answers its REST API and lists the course."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, token: str) -> dict | list:
    req = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=5) as resp:
        return json.loads(resp.read())


def test_jupyterlab_serves_the_course(tmp_path):
    port, token = free_port(), "fp8lab-test-token"
    jupyter = pathlib.Path(sys.executable).with_name("jupyter")
    cmd = [str(jupyter), "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={ROOT}", "--ServerApp.port_retries=0"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")  # CI and this machine run as root; JupyterLab refuses otherwise
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"))
    log = open(tmp_path / "lab.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        status = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            try:
                status = get(f"{base}/api/status", token)
                break
            except OSError:
                time.sleep(0.5)
        assert status is not None, f"JupyterLab did not answer within 120 s:\n{(tmp_path / 'lab.log').read_text()[-3000:]}"
        listing = get(f"{base}/api/contents/notebooks", token)
        assert listing["type"] == "directory"
        names = {item["name"] for item in listing["content"]}
        on_disk = {p.name for p in (ROOT / "notebooks").iterdir() if not p.name.startswith(".")}
        assert names == on_disk, f"the server lists {sorted(names)}, the folder holds {sorted(on_disk)}"
        assert any(n.endswith(".ipynb") for n in names), "the course folder has no notebook"
        kernels = get(f"{base}/api/kernelspecs", token)
        assert "python3" in kernels["kernelspecs"]
        lab_page = urllib.request.urlopen(urllib.request.Request(f"{base}/lab", headers={"Authorization": f"token {token}"}), timeout=10)
        assert lab_page.status == 200
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
