"""The learner's own working copy of the course: made from ``notebooks/`` on first use, never overwritten.

``make lab`` opens the copy, not the tracked chapters, so that saving a notebook (JupyterLab autosaves)
never writes outputs into ``notebooks/``. Later runs add chapters that have appeared since; a chapter
that changed upstream is only reported, and replaced when the learner asks (:func:`refresh_chapter`,
which keeps the old file), or all at once with :func:`fresh_copy` (which renames the old copy).

A manifest in the copy (``.fp8lab-copy.json``) records, for each chapter, the SHA-256 of the source
it was copied from and of the copy as first written, so that :func:`sync_working_copy` can tell
"changed upstream" from "edited by you".

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

__all__ = ["COPY_DIR", "MANIFEST", "SyncReport", "sync_working_copy", "refresh_chapter", "fresh_copy", "chapter_files"]

#: the working copy's default folder name, at the top of the repository (git-ignored)
COPY_DIR = "my_course"
#: the manifest file inside the copy
MANIFEST = ".fp8lab-copy.json"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


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
    which changed upstream (left as they are), and which of those the learner has edited."""

    copy: Path
    created: bool
    added: tuple[str, ...]
    changed_upstream: tuple[str, ...]
    edited: tuple[str, ...]

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
                                      "copied_at": time.strftime("%Y-%m-%d %H:%M:%S")}


def sync_working_copy(source: "str | Path", copy: "str | Path") -> SyncReport:
    """Make ``copy`` from the chapters in ``source`` if it does not exist; otherwise add only the chapters it lacks.

    Never overwrites a file in the copy. Raises ValueError when ``source`` holds no notebooks or when
    ``copy`` exists and is not a folder.
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
    added, changed, edited = [], [], []
    for src in chapters:
        dst = copy / src.name
        if not dst.exists():
            _copy_chapter(src, copy, manifest)
            added.append(src.name)
            continue
        entry = manifest["chapters"].get(src.name)
        if entry is None:  # a file the learner put there, or a copy from before the manifest: leave it
            continue
        if entry.get("source_sha256") != _sha(src):
            changed.append(src.name)
            if entry.get("copied_sha256") != _sha(dst):
                edited.append(src.name)
    _save_manifest(copy, manifest)
    return SyncReport(copy, created, tuple(added), tuple(changed), tuple(edited))


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
