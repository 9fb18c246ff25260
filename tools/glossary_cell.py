"""Render chapter 00's glossary cell from the term base, or check that the notebook holds the rendered text.

    .venv/bin/python tools/glossary_cell.py            # print the cell's markdown
    .venv/bin/python tools/glossary_cell.py --check    # exit 1 if notebooks/00_welcome.ipynb's cell differs
    .venv/bin/python tools/glossary_cell.py --write    # replace the cell's source and its Chinese entry

The cell is the markdown cell with id ``a00w0012``; its text is :func:`fp8lab.terms.glossary_cell`. Its Chinese
counterpart, ``glossary_cell("zh")``, is the cell's entry in the Chinese edition's catalogue
(``notebooks/zh/00_welcome.toml``), written with the hash of the English it belongs to, so both editions'
glossaries come from the term base and neither goes stale.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fp8lab.course.edition import _literal, en_sha256  # noqa: E402
from fp8lab.terms import glossary_cell  # noqa: E402

NOTEBOOK = ROOT / "notebooks" / "00_welcome.ipynb"
CATALOGUE = ROOT / "notebooks" / "zh" / "00_welcome.toml"
CELL_ID = "a00w0012"


def catalogue_with_entry(catalogue: str, cell_id: str, english: str, chinese: str) -> str:
    """``catalogue`` (a chapter's TOML text) with the entry of ``cell_id`` replaced, or appended when it has none.

    >>> old = 'chapter = "x"' + chr(10) + chr(10) + '[cells.a]' + chr(10) + 'en_sha256 = "0"' + chr(10) + 'zh = "旧"' + chr(10)
    >>> import tomllib; tomllib.loads(catalogue_with_entry(old, "a", "Hi", "你好"))["cells"]["a"]["zh"]
    '你好\\n'
    """
    entry = f"[cells.{cell_id}]\nen_sha256 = \"{en_sha256(english)}\"\nzh = {_literal(chinese.rstrip(chr(10)))}\n"
    lines = catalogue.splitlines(keepends=True)
    head = f"[cells.{cell_id}]"
    if not any(line.strip() == head for line in lines):
        return catalogue.rstrip("\n") + "\n\n" + entry
    start = next(i for i, line in enumerate(lines) if line.strip() == head)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("[")), len(lines))
    while end > start + 1 and not lines[end - 1].strip():  # keep the blank line before the next entry
        end -= 1
    return "".join(lines[:start]) + entry + "".join(lines[end:])


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
    import tomllib

    zh = glossary_cell("zh")
    if args.check:
        same = cells[0].source == text
        entry = tomllib.loads(CATALOGUE.read_text(encoding="utf-8")).get("cells", {}).get(CELL_ID, {})
        same_zh = entry.get("zh", "").rstrip("\n") == zh.rstrip("\n") and entry.get("en_sha256") == en_sha256(text)
        print(f"{NOTEBOOK.name} cell {CELL_ID}: {'current' if same else 'differs from the term base'}; "
              f"its Chinese entry: {'current' if same_zh else 'differs from the term base'}")
        return 0 if same and same_zh else 1
    cells[0].source = text
    nbformat.write(nb, NOTEBOOK)
    CATALOGUE.write_text(catalogue_with_entry(CATALOGUE.read_text(encoding="utf-8"), CELL_ID, text, zh), encoding="utf-8")
    print(f"wrote the glossary ({text.count(chr(10)) - 6} terms) into {NOTEBOOK.name} cell {CELL_ID} "
          f"and its Chinese entry into {CATALOGUE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
