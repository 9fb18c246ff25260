"""Writing a run's results so that nothing it produced is lost: paths checked before training, strict JSON, atomic writes.

- :func:`check_output_path` refuses, with a one-line reason, a path no file can be written to (a
  missing folder, a folder, a file where a folder should be, no permission, a name the file system
  rejects), by really creating and removing files there, so that a run fails before its first step
  and not after its last.
- :func:`finite_json` turns a result into JSON that every strict parser reads: each NaN or infinity
  becomes ``null`` and the fields that held one are listed under ``"nonfinite_as_null"``; it dumps
  with ``allow_nan=False``, so a bare ``NaN`` can never be written.
- :func:`atomic_write` writes a temporary file in the target's folder and renames it over the
  target (``os.replace``): a reader sees the old file or the new one, never half of one.

>>> import tempfile; from pathlib import Path
>>> d = Path(tempfile.mkdtemp()); p = check_output_path(d / "run.json", "--json")
>>> _ = atomic_write(p, finite_json({"loss": [1.5, float("nan")]})); p.read_text()
'{\\n "loss": [\\n  1.5,\\n  null\\n ],\\n "nonfinite_as_null": [\\n  "/loss"\\n ]\\n}'
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["check_output_path", "atomic_write", "finite_json", "partial_path", "NONFINITE_KEY"]

NONFINITE_KEY = "nonfinite_as_null"


def _show(path: Any) -> str:
    """A path as one printable line (``repr`` when it holds a newline or another control character)."""
    s = os.fspath(path)
    return s if s.isprintable() else repr(s)


def _temp_prefix(path: Path) -> str:
    """The name start of the temporary files written beside ``path`` (bounded, so a long name still fits)."""
    return f".{path.name[:64]}."


def check_output_path(path: str | os.PathLike, option: str = "output") -> Path:
    """``path`` as a Path if a result file can be written there (tried for real); else ValueError, one line.

    ``option`` names the path in the message (``--json``). An existing regular file that may be
    written is accepted (it will be replaced); a folder, a device or a read-only file is not.

    >>> check_output_path("/nonexistent-folder/run.json", "--json")
    Traceback (most recent call last):
    ...
    ValueError: --json /nonexistent-folder/run.json: the folder /nonexistent-folder does not exist
    """
    raw = os.fspath(path)
    if not raw:
        raise ValueError(f"{option}: the path is empty")
    if raw.endswith(os.sep) or (os.altsep and raw.endswith(os.altsep)):
        raise ValueError(f"{option} {_show(raw)}: ends with {os.sep}, so it names a folder; give a file name")
    p = Path(raw)
    where = f"{option} {_show(p)}"
    try:
        _check_writable(p, where)
    except OSError as err:  # a stat that fails for another reason than absence: name too long, a loop of links
        raise ValueError(f"{where}: {err.strerror or err}") from None
    return p


def _check_writable(p: Path, where: str) -> None:
    """The checks of :func:`check_output_path` (ValueError for what they find; OSError from a failing stat)."""
    if p.is_dir():
        raise ValueError(f"{where}: is a folder, not a file")
    parent = p.parent
    if not parent.is_dir():
        up = parent
        while not (up.exists() or up.is_symlink()) and up != up.parent:
            up = up.parent
        if up.exists() and not up.is_dir():
            raise ValueError(f"{where}: {_show(up)} is a file, not a folder")
        raise ValueError(f"{where}: the folder {_show(parent)} does not exist")
    if p.exists() or p.is_symlink():
        if not p.is_file():
            raise ValueError(f"{where}: exists and is not a regular file")
        try:  # opened for writing, not truncated, nothing written: the file stays as it is
            os.close(os.open(p, os.O_WRONLY | os.O_APPEND))
        except PermissionError:
            raise ValueError(f"{where}: the file is read-only") from None
    try:  # what atomic_write does: a temporary file beside the target
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=_temp_prefix(p), suffix=".tmp")
        os.close(fd)
        os.unlink(tmp)
    except OSError as err:
        raise ValueError(f"{where}: cannot write in the folder {_show(parent)} ({err.strerror or err})") from None
    if not p.exists():  # the name itself (too long, or a character this file system refuses)
        try:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            pass
        except OSError as err:
            raise ValueError(f"{where}: cannot create that file ({err.strerror or err})") from None
        else:
            os.close(fd)
            os.unlink(p)


def _file_mode(path: Path) -> int:
    """The permissions a rewritten ``path`` gets: its own if it exists, else what the umask gives a new file."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def atomic_write(path: str | os.PathLike, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` atomically: a temporary file in its folder, flushed, then renamed over it.

    >>> import tempfile; from pathlib import Path
    >>> p = Path(tempfile.mkdtemp()) / "a.txt"; atomic_write(p, "one") == p, p.read_text(), sorted(x.name for x in p.parent.iterdir())
    (True, 'one', ['a.txt'])
    """
    p = Path(path)
    blob = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    mode = _file_mode(p)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=_temp_prefix(p), suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable where the platform allows it
        dfd = os.open(p.parent, os.O_RDONLY)
    except OSError:
        return p
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
    return p


def _pointer(parts: list[str]) -> str:
    """A JSON pointer (RFC 6901) from path parts."""
    return "".join("/" + s.replace("~", "~0").replace("/", "~1") for s in parts)


def _finite(x: Any, parts: list[str], found: set[str]) -> Any:
    """``x`` with every non-finite float replaced by None; the pointers of the fields that held one added to ``found``."""
    if isinstance(x, dict):
        return {k: _finite(v, [*parts, str(k)], found) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        # a list of numbers is one field (its nulls are the places); in a list of objects each entry is its own
        scalars = all(not isinstance(v, (dict, list, tuple)) for v in x)
        return [_finite(v, parts if scalars else [*parts, str(i)], found) for i, v in enumerate(x)]
    if hasattr(x, "item") and callable(x.item) and getattr(x, "shape", None) == ():  # numpy / torch scalars
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        found.add(_pointer(parts))
        return None
    return x


def finite_json(doc: Any, *, indent: int | None = 1) -> str:
    """``doc`` as strict JSON: NaN and ±inf become null, and a dict ``doc`` lists the fields that held one under ``"nonfinite_as_null"``.

    The list holds JSON pointers; a list of numbers counts as one field (its nulls mark the
    entries), a list of objects names each entry. It is empty when every number was finite.

    >>> finite_json({"loss": [2.0, float("inf")], "val": [{"val": float("nan")}]}, indent=None)
    '{"loss": [2.0, null], "val": [{"val": null}], "nonfinite_as_null": ["/loss", "/val/0/val"]}'
    """
    found: set[str] = set()
    clean = _finite(doc, [], found)
    if isinstance(clean, dict):
        clean[NONFINITE_KEY] = sorted(found)
    return json.dumps(clean, indent=indent, allow_nan=False)


def partial_path(path: str | os.PathLike) -> Path:
    """Where a partial result goes that must not replace ``path``'s complete one: ``<stem>.partial<suffix>`` beside it.

    >>> partial_path("out/run.json").as_posix(), partial_path("run").as_posix()
    ('out/run.partial.json', 'run.partial.json')
    """
    p = Path(path)
    return p.with_name(f"{p.stem}.partial{p.suffix or '.json'}")
