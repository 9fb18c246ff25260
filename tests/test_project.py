"""The project's own rules: pins in step, notebooks without outputs, README commands true."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def pins(text: str) -> dict[str, str]:
    return {m.group(1).lower(): m.group(2) for m in re.finditer(r"^\s*-?\s*([A-Za-z0-9_.\-]+)==([^\s#]+)", text, re.M)}


def test_environment_yml_has_the_same_pins_as_requirements():
    req = pins((ROOT / "requirements.txt").read_text())
    env = pins((ROOT / "environment.yml").read_text())
    assert req, "requirements.txt pins nothing"
    assert req == env


def test_torch_is_pinned_to_the_cpu_build_on_disk():
    assert pins((ROOT / "requirements.txt").read_text())["torch"] == "2.13.0"


def test_every_dependency_is_pinned_exactly():
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            assert "==" in line, f"{line!r} is not pinned to an exact version"


def test_readme_names_the_two_commands_and_ci_calls_make_test():
    readme = (ROOT / "README.md").read_text()
    assert "make lab" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_the_readme_tour_runs_and_its_comments_are_true():
    import numpy as np

    readme = (ROOT / "README.md").read_text()
    code = readme.split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - our own README
    fl = scope["fl"]
    assert fl.encode([1.0, -2.0, 500.0], "e4m3").tolist() == [56, 192, 127]
    assert fl.quantize(500.0, "e4m3", saturate=True) == 448.0
    assert fl.quantize(scope["torch"].tensor([0.3, 3.0]), "ue8m0").tolist() == [0.25, 4.0]
    assert fl.kv_cache_bytes(fl.get_model("llama-3-70b"), seq_len=4096, batch=1, dtype="fp8") == 671088640
    assert scope["y"].shape == (256, 128) and np.isfinite(np.asarray(scope["y"])).all()
