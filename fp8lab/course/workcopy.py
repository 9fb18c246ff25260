"""The learner's own working copy of the course: made from ``notebooks/`` on first use, never overwritten.

``make lab`` opens the copy, not the tracked chapters, so that saving a notebook (JupyterLab autosaves)
never writes outputs into ``notebooks/``. Later runs add chapters that have appeared since. A chapter
that changed upstream replaces the copy's when the learner has not edited it (running it, opening it,
JupyterLab's autosave rewriting the file are not edits: only its cells' sources count,
:func:`cell_digest`); an edited one is only reported, and replaced when the learner asks
(:func:`refresh_chapter`, which keeps the old file), or all at once with :func:`fresh_copy` (which
renames the old copy).

A manifest in the copy (``.fp8lab-copy.json``) records, for each chapter, the SHA-256 of the source
it was copied from and the digest of its cells as first written, so that :func:`sync_working_copy` can
tell "changed upstream" from "edited by you".

Widgets live in the kernel: a saved widget output shows "Error displaying widget: model not found"
once the kernel that made it is gone. Each sync turns the copy's saved widget outputs into a line that
says to run the cell again, and drops saved widget state (:func:`forget_widgets`).

>>> import tempfile, pathlib
>>> src = pathlib.Path(tempfile.mkdtemp()); (src / "01_a.ipynb").write_text("{}")
2
>>> copy = src.parent / (src.name + "-copy")
>>> sync_working_copy(src, copy).added
('01_a.ipynb',)
>>> sync_working_copy(src, copy).added
()
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["COPY_DIR", "MANIFEST", "SyncReport", "sync_working_copy", "refresh_chapter", "fresh_copy", "chapter_files",
           "cell_digest", "forget_widgets", "WIDGET_VIEW", "WIDGET_NOTE"]

#: the working copy's default folder name, at the top of the repository (git-ignored)
COPY_DIR = "my_course"
#: the manifest file inside the copy
MANIFEST = ".fp8lab-copy.json"


#: the MIME type of a widget's output (a reference to a model that lives in the kernel)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: what a saved widget output becomes in the working copy
WIDGET_NOTE = "[a widget: widgets live in the running kernel and are not saved; run this cell to show it again]"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _source(text: object) -> str:
    """A cell's source as one string, line ends and trailing whitespace normalised."""
    if isinstance(text, list):
        text = "".join(str(t) for t in text)
    lines = str(text or "").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def cell_digest(path: "str | Path") -> str:
    """SHA-256 of a notebook's cells as the learner writes them: each cell's type and normalised source.

    Outputs, execution counts, metadata, cell ids, key order and indentation do not count, so a notebook
    that was opened, run or autosaved keeps its digest. A file that is not a notebook is digested as bytes.

    >>> import json, tempfile, pathlib
    >>> a = pathlib.Path(tempfile.mkdtemp()) / "a.ipynb"
    >>> _ = a.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "x = 1\\n", "outputs": []}]}))
    >>> before = cell_digest(a)
    >>> _ = a.write_text(json.dumps({"cells": [{"cell_type": "code", "source": ["x = 1"], "id": "c1",
    ...     "outputs": [{"output_type": "stream", "text": "1"}], "execution_count": 3}], "metadata": {"k": 1}}, indent=1))
    >>> cell_digest(a) == before
    True
    """
    data = Path(path).read_bytes()
    try:
        cells = json.loads(data)["cells"]
        key = [[str(c.get("cell_type", "")), _source(c.get("source", ""))] for c in cells]
    except (ValueError, KeyError, TypeError, AttributeError):
        return "bytes:" + hashlib.sha256(data).hexdigest()
    return hashlib.sha256(json.dumps(key, ensure_ascii=False).encode()).hexdigest()


def forget_widgets(path: "str | Path") -> int:
    """Replace the saved widget outputs of a notebook by :data:`WIDGET_NOTE` and drop saved widget state.

    Rewrites the file only when there was something to change; returns how many outputs were replaced.
    A file that is not a notebook is left alone (0).

    >>> import json, tempfile, pathlib
    >>> nb = pathlib.Path(tempfile.mkdtemp()) / "w.ipynb"
    >>> out = {"output_type": "display_data", "metadata": {},
    ...        "data": {"text/plain": "IntSlider(value=3)", WIDGET_VIEW: {"model_id": "ab12", "version_major": 2}}}
    >>> _ = nb.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "", "outputs": [out]}],
    ...                               "metadata": {"widgets": {"state": {}}}, "nbformat": 4, "nbformat_minor": 5}))
    >>> forget_widgets(nb), forget_widgets(nb)
    (1, 0)
    >>> saved = json.loads(nb.read_text()); saved["cells"][0]["outputs"][0]["data"] == {"text/plain": WIDGET_NOTE}
    True
    """
    path = Path(path)
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = nb["cells"]
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    if not isinstance(nb, dict) or not isinstance(cells, list):
        return 0
    replaced = 0
    for cell in cells:
        for out in cell.get("outputs", []) if isinstance(cell, dict) else []:
            data = out.get("data") if isinstance(out, dict) else None
            if isinstance(data, dict) and WIDGET_VIEW in data:
                out["data"] = {"text/plain": WIDGET_NOTE}
                out["metadata"] = {}
                replaced += 1
    metadata = nb.get("metadata")
    state = isinstance(metadata, dict) and metadata.pop("widgets", None) is not None
    if replaced or state:
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return replaced


def chapter_files(source: "str | Path") -> list[Path]:
    """The notebooks of a course folder, in name order (hidden files and checkpoints left out).

    >>> chapter_files("/nonexistent")
    []
    """
    source = Path(source)
    if not source.is_dir():
        return []
    return sorted(p for p in source.glob("*.ipynb") if not p.name.startswith("."))


@dataclass(frozen=True)
class SyncReport:
    """What :func:`sync_working_copy` did: the copy's path, whether it was created, which chapters it added,
    which changed upstream and were left as they are (``changed_upstream``; ``edited``: those the learner
    has edited, all of them unless the manifest could not tell), which it updated because the learner had
    not edited them, and in how many chapters it replaced saved widget outputs."""

    copy: Path
    created: bool
    added: tuple[str, ...]
    changed_upstream: tuple[str, ...]
    edited: tuple[str, ...]
    updated: tuple[str, ...] = ()
    widgets_forgotten: int = 0

    def lines(self) -> list[str]:
        """Human-readable lines about the sync (empty when there is nothing to say).

        >>> SyncReport(Path("my_course"), False, (), (), ()).lines()
        []
        """
        out = []
        if self.created:
            out.append(f"made your working copy of the course in {self.copy}/ ({len(self.added)} chapters)")
        elif self.added:
            out.append(f"added {len(self.added)} new chapter(s) to {self.copy}/: {', '.join(self.added)}")
        if self.updated:
            out.append(f"updated from notebooks/ (you had not edited them; outputs are not kept): "
                       f"{', '.join(Path(n).stem for n in self.updated)}")
        if self.widgets_forgotten:
            out.append(f"saved widget outputs in {self.widgets_forgotten} chapter(s) now say to run their cell again "
                       f"(widgets live in the running kernel)")
        if self.changed_upstream:
            names = [Path(n).stem + (" (edited by you)" if n in self.edited else "") for n in self.changed_upstream]
            first = Path(self.changed_upstream[0]).stem
            out.append(f"newer versions in notebooks/ of: {', '.join(names)}; your copies are kept as they are. "
                       f"To take one, keeping yours as a backup: make lab ARGS=\"--refresh {first}\"")
        return out


def _load_manifest(copy: Path) -> dict:
    path = copy / MANIFEST
    if path.exists():
        try:
            data = json.loads(path.read_text())
            if isinstance(data, dict) and isinstance(data.get("chapters"), dict):
                return data
        except (OSError, ValueError):
            pass
    return {"chapters": {}}


def _save_manifest(copy: Path, manifest: dict) -> None:
    (copy / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def _copy_chapter(src: Path, copy: Path, manifest: dict) -> None:
    dst = copy / src.name
    shutil.copy2(src, dst)
    manifest["chapters"][src.name] = {"source_sha256": _sha(src), "copied_sha256": _sha(dst),
                                      "copied_cells": cell_digest(dst), "copied_at": time.strftime("%Y-%m-%d %H:%M:%S")}


def _edited(entry: dict, dst: Path) -> bool:
    """Whether the learner changed a cell of ``dst`` since it was copied (bytes, for a manifest from before cell digests)."""
    if "copied_cells" in entry:
        return entry["copied_cells"] != cell_digest(dst)
    return entry.get("copied_sha256") != _sha(dst)


def sync_working_copy(source: "str | Path", copy: "str | Path") -> SyncReport:
    """Make ``copy`` from the chapters in ``source`` if it does not exist; otherwise add only the chapters it lacks.

    A chapter that changed upstream replaces the copy's only when the learner has not edited its cells;
    an edited chapter is never overwritten. Saved widget outputs become :data:`WIDGET_NOTE`
    (:func:`forget_widgets`). Raises ValueError when ``source`` holds no notebooks or when ``copy``
    exists and is not a folder.

    >>> import tempfile, pathlib
    >>> src = pathlib.Path(tempfile.mkdtemp()); _ = (src / "01_a.ipynb").write_text('{"cells": []}')
    >>> copy = src.parent / (src.name + "-copy"); _ = sync_working_copy(src, copy)
    >>> _ = (src / "01_a.ipynb").write_text('{"cells": [{"cell_type": "markdown", "source": "fixed"}]}')
    >>> sync_working_copy(src, copy).updated
    ('01_a.ipynb',)
    """
    source, copy = Path(source), Path(copy)
    chapters = chapter_files(source)
    if not chapters:
        raise ValueError(f"no notebooks in {source}: expected the course's chapters (*.ipynb) there")
    if copy.exists() and not copy.is_dir():
        raise ValueError(f"{copy} exists and is not a folder; move it away or pass another --copy")
    created = not copy.exists()
    copy.mkdir(parents=True, exist_ok=True)
    manifest = _load_manifest(copy)
    added, changed, edited, updated = [], [], [], []
    for src in chapters:
        dst = copy / src.name
        if not dst.exists():
            _copy_chapter(src, copy, manifest)
            added.append(src.name)
            continue
        entry = manifest["chapters"].get(src.name)
        if entry is None:  # a file the learner put there, or a copy from before the manifest: leave it
            continue
        if "copied_cells" not in entry and entry.get("copied_sha256") == _sha(dst):
            entry["copied_cells"] = cell_digest(dst)  # a manifest from before cell digests, the file as copied
        if entry.get("source_sha256") != _sha(src):
            if _edited(entry, dst):
                changed.append(src.name)
                edited.append(src.name)
            else:
                _copy_chapter(src, copy, manifest)
                updated.append(src.name)
    forgotten = sum(1 for nb in chapter_files(copy) if forget_widgets(nb))
    _save_manifest(copy, manifest)
    return SyncReport(copy, created, tuple(added), tuple(changed), tuple(edited), tuple(updated), forgotten)


def refresh_chapter(source: "str | Path", copy: "str | Path", chapter: str) -> Path | None:
    """Replace one chapter of the copy by the current version in ``source``, keeping the old file.

    ``chapter`` is a file name, a stem (``03_fp8``) or a two-digit number. The learner's file is renamed
    to ``<stem>.backup-<date>-<time>.ipynb`` next to it; returns that path (None when the copy had no
    such chapter). Raises ValueError for a chapter that ``source`` does not have.

    >>> import tempfile, pathlib
    >>> src = pathlib.Path(tempfile.mkdtemp()); _ = (src / "03_x.ipynb").write_text("{}")
    >>> copy = src.parent / (src.name + "-copy"); _ = sync_working_copy(src, copy)
    >>> refresh_chapter(src, copy, "03").name.startswith("03_x.backup-")
    True
    """
    source, copy = Path(source), Path(copy)
    key = str(chapter).removesuffix(".ipynb")
    matches = [p for p in chapter_files(source) if p.stem == key or p.stem[:2] == key]
    if len(matches) != 1:
        raise ValueError(f"no single chapter {chapter!r} in {source}; the chapters are "
                         f"{[p.stem for p in chapter_files(source)]}")
    src = matches[0]
    copy.mkdir(parents=True, exist_ok=True)
    dst = copy / src.name
    backup = None
    if dst.exists():
        backup = dst.with_name(f"{src.stem}.backup-{time.strftime('%Y%m%d-%H%M%S')}.ipynb")
        n = 1
        while backup.exists():
            backup = dst.with_name(f"{src.stem}.backup-{time.strftime('%Y%m%d-%H%M%S')}-{n}.ipynb")
            n += 1
        dst.rename(backup)
    manifest = _load_manifest(copy)
    _copy_chapter(src, copy, manifest)
    _save_manifest(copy, manifest)
    return backup


def fresh_copy(source: "str | Path", copy: "str | Path") -> Path | None:
    """Put the current copy aside (renamed to ``<copy>-<date>-<time>``, nothing deleted) and make a new one.

    Returns the path the old copy was renamed to (None when there was none).

    >>> import tempfile, pathlib
    >>> src = pathlib.Path(tempfile.mkdtemp()); _ = (src / "00_w.ipynb").write_text("{}")
    >>> copy = src.parent / (src.name + "-copy"); _ = sync_working_copy(src, copy)
    >>> old = fresh_copy(src, copy); old.exists() and (copy / "00_w.ipynb").exists()
    True
    """
    source, copy = Path(source), Path(copy)
    old = None
    if copy.exists():
        old = copy.with_name(f"{copy.name}-{time.strftime('%Y%m%d-%H%M%S')}")
        n = 1
        while old.exists():
            old = copy.with_name(f"{copy.name}-{time.strftime('%Y%m%d-%H%M%S')}-{n}")
            n += 1
        copy.rename(old)
    sync_working_copy(source, copy)
    return old
