"""Recorded GPU measurements: the JSON files ``bench/hopper.py`` writes, read back for the hardware chapter.

No GPU has been available to this project, so there are none yet; the chapter then says "not yet
measured". Each file holds ``device``, ``capability``, ``torch``, ``cuda``, ``date``, ``check``,
``accumulation`` and, where the native path ran, ``speed`` (rows with ``op`` and ``tflops``).

>>> import tempfile
>>> load_bench_results(tempfile.mkdtemp())
[]
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["load_bench_results"]


def load_bench_results(folder: "str | os.PathLike[str]") -> list[dict]:
    """Every ``hopper_*.json`` result in ``folder`` (sorted by file name), each with its ``path``; [] if none.

    A missing folder gives []; a file that is not a JSON object raises ValueError naming it.

    >>> load_bench_results("/nonexistent/folder")
    []
    """
    if not isinstance(folder, (str, os.PathLike)):
        raise TypeError(f"folder is a path, got {type(folder).__name__}")
    path = Path(folder)
    if not path.is_dir():
        return []
    out = []
    for f in sorted(path.glob("hopper_*.json")):
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise ValueError(f"{f}: not valid JSON ({e})") from None
        if not isinstance(data, dict) or "device" not in data:
            raise ValueError(f"{f}: expected a bench/hopper.py result (a JSON object with 'device')")
        out.append({**data, "path": str(f)})
    return out
