"""Render chapter 00's glossary cell from the term base, or check that the notebook holds the rendered text.

    .venv/bin/python tools/glossary_cell.py            # print the cell's markdown
    .venv/bin/python tools/glossary_cell.py --check    # exit 1 if notebooks/00_welcome.ipynb's cell differs
    .venv/bin/python tools/glossary_cell.py --write    # replace the cell's source (nothing else changes)

The cell is the markdown cell with id ``a00w0012``; its text is :func:`fp8lab.terms.glossary_cell`.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fp8lab.terms import glossary_cell  # noqa: E402

NOTEBOOK = ROOT / "notebooks" / "00_welcome.ipynb"
CELL_ID = "a00w0012"


def main(argv: list[str] | None = None) -> int:
    """Print, check or write the glossary cell; the exit status says whether the notebook is current."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="exit 1 if the notebook's cell is not the rendered text")
    group.add_argument("--write", action="store_true", help="write the rendered text into the notebook's cell")
    args = ap.parse_args(argv)
    text = glossary_cell("en")
    if not (args.check or args.write):
        print(text)
        return 0
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    cells = [c for c in nb.cells if c.get("id") == CELL_ID]
    if len(cells) != 1 or cells[0].cell_type != "markdown":
        print(f"{NOTEBOOK.name}: no single markdown cell with id {CELL_ID}", file=sys.stderr)
        return 2
    if args.check:
        same = cells[0].source == text
        print(f"{NOTEBOOK.name} cell {CELL_ID}: {'current' if same else 'differs from the term base'}")
        return 0 if same else 1
    cells[0].source = text
    nbformat.write(nb, NOTEBOOK)
    print(f"wrote the glossary ({text.count(chr(10)) - 6} terms) into {NOTEBOOK.name} cell {CELL_ID}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
