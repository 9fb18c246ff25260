"""Plain-text tables for the CLI, the benchmarks and notebooks that print rather than plot.

>>> print(format_table(["format", "max"], [["e4m3", 448.0], ["e5m2", 57344.0]]))
format  max
------  -----
e4m3    448
e5m2    57344
"""

from __future__ import annotations

from typing import Any, Sequence

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


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str = "") -> str:
    """Left-aligned columns under a dashed rule (``align`` may give 'r' per column to right-align).

    >>> print(format_table(["a", "b"], [[1, 2.5]], align="lr"))
    a    b
    -  ---
    1  2.5
    """
    text = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in text]) for i, h in enumerate(headers)]
    align = align.ljust(len(headers), "l")

    def line(cells: Sequence[str]) -> str:
        out = [c.rjust(w) if a == "r" else c.ljust(w) for c, w, a in zip(cells, widths, align)]
        return "  ".join(out).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in text])
