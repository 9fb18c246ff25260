"""Random cases for self-grading without ``solutions/``: one module per lab, one check per task.

A learner's installed fp8lab has no ``solutions/`` (the hidden tests and ``lab.toml`` stay with the
instructor). ``fp8lab labs grade`` then grades an attempt with these checks: each task's check
draws fresh inputs from a seed (the edge cases of its kind plus random ones), computes the answer
with the installed fp8lab and compares it with what the submission's function returns (exactly
where the lab asks for bits, NaN-aware, with the tolerance the lab states). The labs, their tasks,
titles, points and sandbox packages are in :mod:`fp8lab.labs.cases.table`, written from
``solutions/`` by ``python -m fp8lab.labs.cases --write`` and kept in step by a test.

The check modules are compiled like a test cell (:func:`fp8lab.labs.harness.compile_test`): a list
of calls to the submission's function is one round trip to the sandbox.

>>> sorted(checks("01_decode_exmy"))
['decode_exmy', 'decode_finite', 'format_range', 'split_fields']
>>> run_check("01_decode_exmy", "format_range", {"format_range": lambda e, m, b, s: (0.0, 0.0, 0.0)}, seed=7)
Traceback (most recent call last):
...
AssertionError: format_range(8, 23, 127, 'ieee') for float32[0]: expected 3.4028234663852886e+38, got 0.0 / format_range(8, 23, 127, 'ieee') for float32[0]：期望 3.4028234663852886e+38，得到 0.0
"""

from __future__ import annotations

import importlib.util
import pathlib
import zlib
from functools import lru_cache
from typing import Any, Callable, Mapping

import numpy as np

from .table import LABS

__all__ = ["LABS", "lab_table", "module_of", "checks", "case_rng", "run_check", "render_table", "missing_checks"]

HERE = pathlib.Path(__file__).resolve().parent


def lab_table(name: str) -> dict:
    """The shipped entry of lab ``name``: title, packages and tasks (id, title, visible and random-case points).

    >>> lab_table("03_encode_e4m3")["tasks"][0]["id"]
    'e4m3_round_normal'
    """
    if name not in LABS:
        raise ValueError(f"unknown lab {name!r}; the labs are {sorted(LABS)}")
    return LABS[name]


def module_of(name: str) -> pathlib.Path:
    """The file holding lab ``name``'s checks: ``lab<NN>.py`` for ``NN_...``.

    >>> module_of("07_loss_scaler").name
    'lab07.py'
    """
    return HERE / f"lab{name[:2]}.py"


@lru_cache(maxsize=None)
def checks(name: str) -> dict[str, Callable[[Any, np.random.Generator], None]]:
    """Lab ``name``'s check per task id, each ``check(fn, rng)``; a task without one is left out."""
    from ..harness import batch_calls, compile_test

    lab_table(name)
    path = module_of(name)
    if not path.is_file():
        return {}
    scope: dict[str, Any] = {"__name__": f"fp8lab.labs.cases.{path.stem}", "__fp8lab_batch__": batch_calls}
    exec(compile_test(path.read_text(encoding="utf-8"), str(path)), scope)  # noqa: S102 - fp8lab's own module
    return {t["id"]: scope[t["id"]] for t in LABS[name]["tasks"] if callable(scope.get(t["id"]))}


def missing_checks() -> dict[str, list[str]]:
    """Tasks of each lab that have no random-case check (none, when every lab is covered).

    >>> missing_checks()
    {}
    """
    out = {}
    for name, lab in LABS.items():
        have = checks(name)
        gaps = [t["id"] for t in lab["tasks"] if t["id"] not in have]
        if gaps:
            out[name] = gaps
    return out


def case_rng(seed: int, task: str) -> np.random.Generator:
    """The generator of one task's random cases: the seed mixed with the task id (as ``grading_rng`` does).

    >>> int(case_rng(5, "a").integers(0, 1000)) == int(case_rng(5, "a").integers(0, 1000))
    True
    """
    return np.random.default_rng([int(seed) % 2**64, zlib.crc32(task.encode())])


def run_check(lab: str, task: str, scope: Mapping[str, Any], seed: int) -> None:
    """Run task ``task``'s random cases against ``scope[task]`` (the submission's function); AssertionError on a miss."""
    found = checks(lab)
    if task not in found:
        raise LookupError(f"random cases are not available for task {task} of {lab}")
    fn = scope.get(task)
    if fn is None:
        raise NameError(f"name {task!r} is not defined")
    with np.errstate(all="ignore"):
        found[task](fn, case_rng(seed, task))


def render_table(root: pathlib.Path | None = None) -> str:
    """The text of ``table.py`` from ``solutions/`` (lab.toml and the points of the source notebooks)."""
    import json
    import pprint

    from ..catalog import list_labs

    labs = {}
    for lab in list_labs(root):
        nb = json.loads(lab.notebook.read_text(encoding="utf-8"))
        pts: dict[str, float] = {}
        for cell in nb["cells"]:
            m = cell.get("metadata", {}).get("nbgrader", {})
            if m.get("grade") and not m.get("solution"):
                pts[m.get("grade_id", "")] = pts.get(m.get("grade_id", ""), 0.0) + float(m.get("points", 0))
        labs[lab.name] = {"title": lab.title, "packages": list(lab.packages),
                          "tasks": [{"id": t.id, "title": t.title, "visible": pts.get(f"test_{t.id}", 0.0),
                                     "random": pts.get(f"hidden_{t.id}", 0.0)} for t in lab.tasks]}
    body = pprint.pformat(labs, width=110, sort_dicts=False)
    return ('"""The labs as shipped with fp8lab: titles, sandbox packages, tasks and points (generated; do not edit).\n\n'
            "Written from ``solutions/`` by ``python -m fp8lab.labs.cases --write``; ``--check`` (and a test) says\n"
            "whether it is in step. Per task: ``visible`` points (the notebook's test cell) and ``random`` points\n"
            "(the hidden tests, which self-grading replaces by this package's random cases).\n\n"
            '>>> LABS["01_decode_exmy"]["tasks"][0]["id"]\n'
            "'split_fields'\n"
            '"""\n\n'
            f"LABS = {body}\n")


def main(argv: list[str] | None = None) -> int:
    """``python -m fp8lab.labs.cases --write | --check``: write table.py from solutions/, or check it is in step."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    path = HERE / "table.py"
    text = render_table()
    if args == ["--write"]:
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
        return 0
    if args == ["--check"]:
        same = path.read_text(encoding="utf-8") == text
        print(f"{path}: {'in step with solutions/' if same else 'out of step: run python -m fp8lab.labs.cases --write'}")
        return 0 if same else 1
    print("usage: python -m fp8lab.labs.cases --write | --check", file=sys.stderr)
    return 2
