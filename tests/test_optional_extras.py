"""Every public entry point names the extra to install when an optional dependency is missing.

``tests/extras_probe.py`` runs in a child process in which torch, matplotlib, ipywidgets or nbgrader
(each alone, then all four: the core install, ``pip install .``) cannot be imported, its children
included: every module of the package is imported, every ``fp8lab`` subcommand run with arguments that
do real work, every public callable of the lazily loaded subpackages called. Each must work, or fail
with one message that names ``fp8lab[<extra>]`` of a hidden module: no traceback, no bare
"No module named 'torch'", no "internal error". The probe's tables must cover every subcommand and
every public callable, so a new one is checked from the day it appears.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import extras_probe  # noqa: E402 - the probe is a script beside this file

from fp8lab._optional import EXTRAS  # noqa: E402

OPTIONAL = ("torch", "matplotlib", "ipywidgets", "nbgrader")
SCENARIOS = {name: (name,) for name in OPTIONAL} | {"core install (all four hidden)": OPTIONAL}


def cli_leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[str]:
    """Every runnable subcommand of ``parser``, as its words (``labs grade``)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [" ".join(path)]
    return [leaf for name, sub in subs[0].choices.items() for leaf in cli_leaves(sub, path + (name,))]


def test_the_probe_covers_every_subcommand_and_every_public_callable() -> None:
    from fp8lab.cli import build_parser

    assert set(cli_leaves(build_parser())) == set(extras_probe.COMMANDS)
    public = set()
    for pkg in extras_probe.SUBPACKAGES:
        mod = importlib.import_module(f"fp8lab.{pkg}")
        public |= {f"{pkg}.{n}" for n in getattr(mod, "__all__", []) if callable(getattr(mod, n, None))
                   and not isinstance(getattr(mod, n), type)}
    assert public == set(extras_probe.CALLS)


def test_the_refusing_finder_makes_a_module_look_not_installed(tmp_path) -> None:
    (tmp_path / "sitecustomize.py").write_text(extras_probe.SITECUSTOMIZE)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), FP8LAB_HIDE="json")
    code = "import importlib\ntry:\n    import json\nexcept ModuleNotFoundError as e:\n    print(e.name)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.strip() == "json", out.stderr
    child = subprocess.run([sys.executable, "-c", f"import subprocess, sys; sys.exit(subprocess.run([sys.executable, '-c', {code!r}]).returncode)"],
                           capture_output=True, text=True, env=env, timeout=60)
    assert child.stdout.strip() == "json", child.stderr  # a child process inherits the refusal


@pytest.mark.slow
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_entry_point_works_or_names_the_missing_extra(tmp_path, scenario) -> None:
    hidden = SCENARIOS[scenario]
    extras = {f"fp8lab[{EXTRAS[m]}]" for m in hidden}
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(extras_probe.SITECUSTOMIZE)
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FP8LAB_DEBUG")}
    env.update(PYTHONPATH=str(tmp_path / "site"), FP8LAB_HIDE=",".join(hidden), MPLBACKEND="Agg",
               FP8LAB_GRADING_DIR=str(tmp_path / "grading"), FP8LAB_MY_LABS_DIR=str(tmp_path / "my_labs"),
               OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "extras_probe.py"), str(work)], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, f"the probe itself failed with {hidden} hidden:\n{proc.stderr[-4000:]}"
    results = json.loads(proc.stdout)["results"]
    assert len(results) > 100
    bad = []
    for r in results:
        if r["ok"]:
            continue
        message = r["message"]
        if not any(e in message for e in extras) or "Traceback" in message or "internal error" in message:
            bad.append(f"{r['entry']}: {r['type']}: {message[:300]}")
    assert not bad, f"with {', '.join(hidden)} hidden, these do not name the extra to install:\n" + "\n".join(bad)
    failed = {r["entry"] for r in results if not r["ok"]}
    if "torch" in hidden:
        assert {"import fp8lab.nn", "fp8lab train", "fp8lab.nn.convert"} <= failed  # the probe did hide it
    if "matplotlib" in hidden:
        assert {"import fp8lab.viz", "fp8lab.viz.plot_bits"} <= failed
    if "ipywidgets" in hidden:
        assert {"fp8lab.widgets.bit_flipper", "fp8lab.interview.quiz_widget"} <= failed
    if "nbgrader" in hidden:
        assert {"fp8lab labs grade", "fp8lab labs release"} <= failed
