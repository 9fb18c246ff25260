"""Every lab's instructions are bilingual: each markdown cell holds the English, then the Chinese.

One nbgrader assignment serves a whole class, so the two languages share a cell: the English text, a line
``---``, a line ``**中文**``, then the Simplified Chinese. The Chinese part is held to the rules of the
course's Chinese edition (``notebooks/zh/README.md``) by the edition's own checker
(``fp8lab.course.edition.check_translation``): the same numbers as the English, the same claim markers,
the term base (``fp8lab.terms.check_zh``) and no English sentence left untranslated. The released
exercise must carry the same markdown as its source. Fast: no kernel, no nbgrader.
"""

from __future__ import annotations

import re
from collections import Counter

import nbformat
import pytest

from fp8lab.course.edition import Catalogue, Entry, check_translation, en_sha256
from fp8lab.labs.catalog import list_labs
from fp8lab.terms import check_zh

LABS = list_labs()
MARK = "\n\n---\n\n**中文**\n\n"
CJK = re.compile(r"[\u3400-\u9fff]")
# a number as written in digits, not the digits inside a name or a code (FP8, E4M3, 0x35, x_2)
NUMBER = re.compile(r"(?<![A-Za-z0-9_.])\d+(?:\.\d+)*")


def numbers(text: str) -> Counter:
    """Every number written in digits, as written (the prose reader skips small ones; this check does not).

    >>> sorted(numbers("FP8 的最大值是 448，E4M3 编码 0x7E，共 4 个任务、10 分").elements())
    ['0', '10', '4', '448']
    """
    return Counter(NUMBER.findall(text))


def split(source: str) -> tuple[str, str]:
    """The English and the Chinese part of a bilingual markdown cell; ValueError unless it has exactly one marker."""
    parts = source.split(MARK)
    if len(parts) != 2:
        raise ValueError(f"expected one '---' / '**中文**' marker, found {len(parts) - 1}")
    return parts[0], parts[1]


def findings(cells: list[tuple[str, str]]) -> list[str]:
    """Every problem of bilingual markdown cells given as (cell id, source)."""
    problems, entries, english = [], {}, nbformat.v4.new_notebook()
    for cell_id, source in cells:
        try:
            en, zh = split(source)
        except ValueError as e:
            problems.append(f"{cell_id}: {e}")
            continue
        if not en.strip() or CJK.search(en):
            problems.append(f"{cell_id}: the English part is empty or holds Chinese")
        if len(CJK.findall(zh)) < 10:
            problems.append(f"{cell_id}: the Chinese part has almost no Chinese")
        if numbers(en) != numbers(zh):
            problems.append(f"{cell_id}: numbers only in the English {sorted((numbers(en) - numbers(zh)).elements())}, "
                            f"only in the Chinese {sorted((numbers(zh) - numbers(en)).elements())}")
        problems += [f"{cell_id}: {p}" for p in check_zh(zh, en)]
        entries[cell_id] = Entry(cell_id, en_sha256(en), zh)
        english.cells.append(nbformat.v4.new_markdown_cell(en, id=cell_id))
    problems += [str(f) for f in check_translation(english, Catalogue("lab", entries))]
    return problems


def markdown(path) -> list[tuple[str, str]]:
    nb = nbformat.read(str(path), as_version=4)
    return [(c.id, c.source) for c in nb.cells if c.cell_type == "markdown"]


@pytest.mark.parametrize("lab", LABS, ids=[lab.name for lab in LABS])
def test_every_markdown_cell_of_the_source_is_english_then_chinese(lab):
    cells = markdown(lab.notebook)
    assert cells, f"{lab.name} has no markdown cell"
    assert findings(cells) == []


@pytest.mark.parametrize("lab", LABS, ids=[lab.name for lab in LABS])
def test_the_exercise_carries_the_same_bilingual_markdown(lab):
    assert markdown(lab.exercise) == markdown(lab.notebook)
    assert findings(markdown(lab.exercise)) == []


def _mutations(source: str) -> dict[str, str]:
    en, zh = split(source)
    digit = NUMBER.search(zh)
    return {
        "English only": en,
        "marker twice": source + MARK + zh,
        "a number changed": en + MARK + zh[:digit.start()] + str(int(digit.group()) + 7) + zh[digit.end():],
        "a number added": en + MARK + zh + "\n\n另见 9973 个例子。",
        "an avoided term": en + MARK + zh + "\n\n非规格化数很少见。",
        "an English sentence left": en + MARK + zh + "\n\nThe largest value is the one we want here.",
        "the Chinese missing": en + MARK + "E4M3",
    }


@pytest.mark.parametrize("lab", LABS, ids=[lab.name for lab in LABS])
def test_the_check_catches_every_kind_of_drift(lab):
    cell_id, source = next((i, s) for i, s in markdown(lab.notebook) if re.search(r"\d", split(s)[1]))
    for kind, bad in _mutations(source).items():
        assert findings([(cell_id, bad)]), f"{lab.name} {cell_id}: {kind} went unnoticed"
