"""Text laid out by display width: a CJK character takes two terminal columns, so Chinese tables align too.

>>> display_width("FP8 · 数值"), display_width("e4m3")
(10, 4)
>>> print(text_table(["主题", "题数"], [["FP8", 3], ["INT8 与 FP4", 12]], align="lr"))
主题         题数
-----------  ----
FP8             3
INT8 与 FP4    12
"""

from __future__ import annotations

import unicodedata
from typing import Any, Sequence

from ..tables import cell

__all__ = ["display_width", "fit", "text_table"]


def _columns(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal: wide and full-width characters 2, combining marks 0, others 1.

    >>> display_width("（单位：字节）"), display_width("e\\u0301")
    (14, 1)
    """
    if not isinstance(text, str):
        raise TypeError(f"display_width takes a str, got {type(text).__name__}")
    return sum(_columns(ch) for ch in text)


def fit(text: str, width: int) -> str:
    """``text`` on one line, cut to at most ``width`` columns with "..." when it is longer.

    >>> fit("最大有限值是多少？", 10), fit("short", 10)
    ('最大有...', 'short')
    """
    if width < 4:
        raise ValueError(f"width must be at least 4 columns, got {width}")
    text = " ".join(text.split())
    if display_width(text) <= width:
        return text
    out, used = [], 0
    for ch in text:
        w = _columns(ch)
        if used + w > width - 3:
            break
        out.append(ch)
        used += w
    return "".join(out).rstrip() + "..."


def _pad(text: str, width: int, right: bool) -> str:
    gap = " " * max(width - display_width(text), 0)
    return gap + text if right else text + gap


def text_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str = "") -> str:
    """Columns under a dashed rule, as :func:`fp8lab.tables.format_table` prints them, aligned by display width.

    ``align`` gives 'l' or 'r' per column (default left); cells are shown with :func:`fp8lab.tables.cell`.

    >>> print(text_table(["a", "b"], [[1, "二"]], align="rl"))
    a  b
    -  --
    1  二
    """
    text = [[c if isinstance(c, str) else cell(c) for c in row] for row in rows]
    if any(len(r) != len(headers) for r in text):
        raise ValueError(f"every row needs {len(headers)} cells")
    widths = [max([display_width(h)] + [display_width(r[i]) for r in text]) for i, h in enumerate(headers)]
    align = align.ljust(len(headers), "l")

    def line(cells: Sequence[str]) -> str:
        return "  ".join(_pad(c, w, a == "r") for c, w, a in zip(cells, widths, align)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in text])
