"""The labs of the course: ``solutions/<lab>/lab.toml`` plus the points in ``solutions/<lab>/<lab>.ipynb``.

``lab.toml`` holds what nbgrader does not know: the title, the chapters the lab follows, the
packages a submission may import when graded (``packages``, default ``["numpy"]``: the sandbox's
allowlist, so the reference a lab re-implements does not exist there), and per
task its title, the tasks its solution calls (``depends``) and one or more ``cheat`` bodies (an answer
that calls the reference, which the tests submit to prove it scores zero). Points live where
nbgrader reads them, in the test cells' metadata, and are summed per task here.

>>> lab = get_lab("01_decode_exmy")
>>> lab.title, [t.id for t in lab.tasks][:2], lab.points
('Decode any ExMy format from its bits', ['split_fields', 'decode_finite'], 10.0)
"""

from __future__ import annotations

import json
import pathlib
import tomllib
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Task", "Lab", "repo_root", "solutions_dir", "list_labs", "get_lab"]


def repo_root() -> pathlib.Path:
    """The repository root: the folder holding ``nbgrader_config.py`` above this package.

    >>> (repo_root() / "nbgrader_config.py").is_file()
    True
    """
    here = pathlib.Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "nbgrader_config.py").is_file() and (parent / "solutions").is_dir():
            return parent
    raise FileNotFoundError("no nbgrader_config.py with a solutions/ folder above fp8lab/labs: "
                            "the lab tooling runs from a checkout of the fp8lab repository")


def solutions_dir() -> pathlib.Path:
    """``solutions/`` of the repository."""
    return repo_root() / "solutions"


@dataclass(frozen=True)
class Task:
    """One graded task: its id (the answer cell's grade id), title, points and what its solution calls."""

    id: str
    title: str
    points: float
    depends: tuple[str, ...]
    cheats: tuple[str, ...]


@dataclass(frozen=True)
class Lab:
    """One lab: its folder name, title, chapters, tasks (in notebook order) and where its files are."""

    name: str
    title: str
    chapters: tuple[str, ...]
    summary: str
    tasks: tuple[Task, ...]
    source: pathlib.Path
    packages: tuple[str, ...] = ("numpy",)

    @property
    def points(self) -> float:
        """Total points of the lab."""
        return float(sum(t.points for t in self.tasks))

    @property
    def notebook(self) -> pathlib.Path:
        """``solutions/<lab>/<lab>.ipynb``."""
        return self.source / f"{self.name}.ipynb"

    @property
    def exercise(self) -> pathlib.Path:
        """``exercises/<lab>/<lab>.ipynb`` (generated)."""
        return self.source.parent.parent / "exercises" / self.name / f"{self.name}.ipynb"

    def task(self, task_id: str) -> Task:
        """The task with this id."""
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise ValueError(f"lab {self.name} has no task {task_id!r}; its tasks are {[t.id for t in self.tasks]}")

    def closure(self, task_id: str) -> set[str]:
        """The task and every task it depends on, directly or not.

        >>> sorted(get_lab("01_decode_exmy").closure("decode_exmy"))
        ['decode_exmy', 'decode_finite', 'split_fields']
        """
        out, todo = set(), [task_id]
        while todo:
            t = todo.pop()
            if t not in out:
                out.add(t)
                todo.extend(self.task(t).depends)
        return out


def _points(notebook: pathlib.Path) -> dict[str, float]:
    """Points per task from the test cells' nbgrader metadata (``test_T`` and ``hidden_T``)."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    points: dict[str, float] = {}
    for cell in nb["cells"]:
        m = cell.get("metadata", {}).get("nbgrader", {})
        gid = m.get("grade_id", "")
        if m.get("grade") and not m.get("solution"):
            for p in ("test_", "hidden_"):
                if gid.startswith(p):
                    points[gid[len(p):]] = points.get(gid[len(p):], 0.0) + float(m.get("points", 0))
    return points


@lru_cache(maxsize=None)
def _load(folder: pathlib.Path, stamp: tuple[float, float]) -> Lab:
    name = folder.name
    meta_file = folder / "lab.toml"
    try:
        meta = tomllib.loads(meta_file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{meta_file}: {err}") from None
    for key in ("title", "chapters", "tasks"):
        if key not in meta:
            raise ValueError(f"{meta_file} has no {key!r} (see solutions/AUTHORING.md)")
    points = _points(folder / f"{name}.ipynb")
    tasks = []
    for t in meta["tasks"]:
        if "id" not in t or "title" not in t:
            raise ValueError(f"{meta_file}: every [[tasks]] entry needs an id and a title, got {t}")
        cheats = t.get("cheats", [])
        if "cheat" in t:
            cheats = [t["cheat"], *cheats]
        tasks.append(Task(t["id"], t["title"], points.get(t["id"], 0.0), tuple(t.get("depends", ())), tuple(cheats)))
    packages = meta.get("packages", ["numpy"])
    if not (isinstance(packages, list) and all(isinstance(p, str) and p.isidentifier() for p in packages)):
        raise ValueError(f"{meta_file}: packages must be a list of importable package names, got {packages!r}")
    return Lab(name, meta["title"], tuple(meta["chapters"]), meta.get("summary", ""), tuple(tasks), folder,
               tuple(packages))


def list_labs(root: pathlib.Path | None = None) -> list[Lab]:
    """Every lab under ``solutions/`` (a folder with ``lab.toml`` and ``<lab>.ipynb``), sorted by name.

    >>> [lab.name for lab in list_labs()][:1]
    ['01_decode_exmy']
    """
    base = (root or repo_root()) / "solutions"
    labs = []
    for folder in sorted(p for p in base.iterdir() if p.is_dir() and (p / "lab.toml").is_file()):
        nb = folder / f"{folder.name}.ipynb"
        if not nb.is_file():
            raise FileNotFoundError(f"{folder} has a lab.toml but no {nb.name}")
        labs.append(_load(folder, ((folder / "lab.toml").stat().st_mtime, nb.stat().st_mtime)))
    return labs


def get_lab(name: str, root: pathlib.Path | None = None) -> Lab:
    """The lab called ``name`` (its folder under ``solutions/``); ValueError listing the labs otherwise.

    >>> get_lab("01_decode_exmy").chapters
    ('01_fp32', '03_fp8')
    """
    labs = list_labs(root)
    for lab in labs:
        if lab.name == name:
            return lab
    raise ValueError(f"unknown lab {name!r}; the labs are {[lab.name for lab in labs]}")
