"""Plain-text tables for the CLI, the benchmarks and notebooks that print rather than plot.

>>> print(format_table(["format", "max"], [["e4m3", 448.0], ["e5m2", 57344.0]]))
format  max
------  -----
e4m3    448
e5m2    57344
"""

from __future__ import annotations

import unicodedata
from typing import Any, Callable, Sequence

__all__ = ["format_table", "cell"]


def cell(value: Any) -> str:
    """One cell as text: floats in a compact general format, everything else with ``str``.

    >>> cell(0.001953125), cell(448.0), cell(1 / 3), cell(True)
    ('0.001953125', '448', '0.3333333', 'yes')
    """
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != value:
            return "nan"
        text = repr(value)
        if text.endswith(".0"):
            text = text[:-2]
        return text if len(text) <= 12 else f"{value:.7g}"
    return str(value)


def _width(text: str) -> int:
    """Columns ``text`` takes in a monospaced font: two for a wide (Chinese) character.

    >>> _width("error"), _width("误差")
    (5, 4)
    """
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str = "",
                 specs: "Sequence[str] | None" = None, cell_text: "Callable[[Any], str] | None" = None) -> str:
    """Columns under a dashed rule: the one table printer of the CLI, the benchmarks and the notebooks.

    ``align`` gives 'l' or 'r' per column, or is ``"auto"`` (columns whose cells are all numbers go
    right); ``specs`` gives a format spec per column (``".2f"``, ``","``, ``""`` for :func:`cell`)
    applied to non-string cells; ``cell_text`` replaces :func:`cell` for every cell without a spec.
    Columns line up in a monospaced font with Chinese text too (a wide character counts two columns).

    >>> print(format_table(["a", "b"], [[1, 2.5]], align="lr"))
    a    b
    -  ---
    1  2.5
    >>> print(format_table(["n", "x"], [[1000, 0.5]], align="auto", specs=[",", ".2f"]))
        n     x
    -----  ----
    1,000  0.50
    """
    specs = list(specs) if specs is not None else [""] * len(headers)
    text_of = cell_text or cell

    def render(v: Any, spec: str) -> str:
        return format(v, spec) if spec and not isinstance(v, str) else text_of(v)

    text = [[render(v, specs[i] if i < len(specs) else "") for i, v in enumerate(row)] for row in rows]
    if align == "auto":
        align = "".join("r" if rows and all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool) for r in rows)
                        else "l" for i in range(len(headers)))
    widths = [max([_width(h)] + [_width(r[i]) for r in text]) for i, h in enumerate(headers)]
    align = align.ljust(len(headers), "l")

    def line(cells: Sequence[str]) -> str:
        pads = [" " * (w - _width(c)) for c, w in zip(cells, widths)]
        out = [p + c if a == "r" else c + p for c, p, a in zip(cells, pads, align)]
        return "  ".join(out).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in text])
