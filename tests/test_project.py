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
