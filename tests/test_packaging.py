"""`pip install .` without extras gives a working core, and a missing extra says which extra to install.

A scratch virtual environment gets only numpy and ml_dtypes (the core's dependencies, at the pins
of requirements.txt) and then the package from a wheel built from this checkout; the core must
import and compute, and the parts that need torch or matplotlib must fail with an ImportError that
names ``fp8lab[torch]`` / ``fp8lab[course]``. The metadata must declare those extras.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_extras_are_declared_and_the_license_is_spdx():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["license"] == "MIT"
    assert set(meta["optional-dependencies"]) >= {"torch", "course", "labs", "dev"}
    assert sorted(re.split(r"[<>=!]", d)[0] for d in meta["dependencies"]) == ["ml_dtypes", "numpy"]
    course = " ".join(meta["optional-dependencies"]["course"])
    assert "matplotlib" in course and "ipywidgets" in course and "jupyterlab" in course
    assert "nbgrader" in " ".join(meta["optional-dependencies"]["labs"])


def _pins() -> dict[str, str]:
    text = (ROOT / "requirements.txt").read_text()
    return {m.group(1).lower(): m.group(2) for m in re.finditer(r"^([A-Za-z0-9_.\-]+)==(\S+)", text, re.M)}


@pytest.mark.slow
def test_the_core_installs_without_extras(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    pins = _pins()
    pip = [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run(pip + [f"numpy=={pins['numpy']}", f"ml_dtypes=={pins['ml_dtypes']}"], check=True, timeout=600)
    wheel_dir = tmp_path / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(wheel_dir), str(ROOT)], check=True, timeout=600, cwd=tmp_path)
    wheel = next(wheel_dir.glob("fp8lab-*.whl"))
    subprocess.run(pip + ["--no-deps", str(wheel)], check=True, timeout=300)
    probe = r'''
import sys, numpy as np
import fp8lab as fl
assert "torch" not in sys.modules
assert fl.encode([1.0, 500.0], "e4m3").tolist() == [56, 127]
assert fl.quantize_tensor(np.ones((2, 128), np.float32), "e4m3", "1x128").dequantize().tolist()[0][0] == 1.0
assert fl.kv_cache_bytes(fl.get_model("llama-3-70b"), seq_len=4096, batch=1, dtype="fp8") == 671088640
assert len(fl.interview.load_bank()) > 150  # the bank is package data
from importlib.resources import files
assert (files("fp8lab.codec") / "_kernels.c").is_file()  # the C kernels' source, built on first use
for what, call, extra in [("plots", lambda: __import__("fp8lab.viz"), "fp8lab[course]"),
                          ("layers", lambda: __import__("fp8lab.nn"), "fp8lab[torch]"),
                          ("quiz widget", lambda: fl.interview.quiz_widget(n=1), "fp8lab[course]"),
                          ("gemm", lambda: fl.scaled_matmul(fl.quantize_tensor(np.ones((2, 4), np.float32)),
                                                            fl.quantize_tensor(np.ones((4, 2), np.float32))), "fp8lab[torch]")]:
    try:
        call()
    except ImportError as e:
        assert extra in str(e), (what, str(e))
    else:
        raise AssertionError(what + " worked without its extra")
print("ok")
'''
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    out = subprocess.run([str(py), "-c", probe], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stdout + out.stderr
    cli = subprocess.run([str(venv / "bin" / "fp8lab"), "explain", "0.8125", "--format", "e4m3"], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)
    assert cli.returncode == 0 and "0x35" in cli.stdout, cli.stderr
    for argv, extra in [(["train", "--steps", "1"], "fp8lab[torch]"), (["labs", "release"], "fp8lab[labs]")]:
        run = subprocess.run([str(venv / "bin" / "fp8lab"), *argv], capture_output=True, text=True, timeout=120,
                             cwd=tmp_path)
        assert run.returncode == 2 and extra in run.stderr and "Traceback" not in run.stderr, (argv, run.stderr)
        assert len(run.stderr.strip().splitlines()) == 1, run.stderr  # one line, not a traceback
