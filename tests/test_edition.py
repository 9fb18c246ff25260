"""The Chinese edition: every chapter's catalogue complete and current, its numbers, claims and terms those of the
English, no English paragraph left; figures translated without tofu; the numbers-in-prose check on the Chinese.

The per-chapter checks fail for a chapter whose translation is not finished: that is what they are for.
Only text is swapped and checked here; the kernel tests read the chapters the notebook tests executed
(the run's ``course_cache``), so the second edition executes nothing again.
"""

from __future__ import annotations

import random
import re
import tomllib
from pathlib import Path

import nbformat
import pytest

from fp8lab.course import edition
from fp8lab.course.claims import claim_markers
from fp8lab.course.edition import Catalogue, Entry, check_translation, en_sha256, numbers_view, render
from fp8lab.course.prose import numbers_in_prose

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
CHAPTERS = sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
IDS = [p.stem for p in CHAPTERS]
#: the notebook tests' cell timeout (tests/test_notebooks.py): the cache key includes it
CELL_TIMEOUT_S = 30
GROUPS = {"complete": {"missing", "stale", "orphan"}, "numbers": {"numbers"}, "claims": {"claims"},
          "terms": {"terms"}, "english": {"english"}}


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def identity_catalogue(nb: nbformat.NotebookNode, chapter: str = "x") -> Catalogue:
    """A catalogue whose "translation" of each markdown cell is the English itself, with the right hashes."""
    return Catalogue(chapter, {c.id: Entry(c.id, en_sha256(c.source), c.source)
                               for c in nb.cells if c.cell_type == "markdown"})


# --- every chapter (these fail until its translation is complete and right) -----------------------------------

@pytest.mark.parametrize("group", sorted(GROUPS))
@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_the_chinese_edition_of_the_chapter(path: Path, group: str) -> None:
    catalogue = edition.catalogue_for(path)
    assert catalogue is not None, f"{path.stem}: no catalogue notebooks/zh/{path.stem}.toml yet"
    assert catalogue.chapter == path.stem, f"{catalogue.path}: chapter = {catalogue.chapter!r}, expected {path.stem!r}"
    findings = [f for f in check_translation(read(path), catalogue) if f.kind in GROUPS[group]]
    assert not findings, f"{path.stem} ({group}): {len(findings)} findings\n" + "\n".join(map(str, findings[:40]))


def test_every_catalogue_belongs_to_a_chapter() -> None:
    stems = {p.stem for p in CHAPTERS}
    for toml in (NOTEBOOKS / "zh").glob("*.toml"):
        if toml.name == "figures.toml":
            continue
        assert toml.stem in stems, f"{toml.name} translates no chapter of notebooks/"
        assert edition.load_catalogue(toml).chapter == toml.stem


# --- staleness, orphans, missing cells --------------------------------------------------------------------------

def _chapter_with_catalogue() -> tuple[nbformat.NotebookNode, Catalogue]:
    """A real chapter and a catalogue for it: its own where it has one, else the identity catalogue."""
    for path in CHAPTERS:
        cat = edition.catalogue_for(path)
        if cat is not None and cat.entries:
            return read(path), cat
    nb = read(CHAPTERS[3])
    return nb, identity_catalogue(nb)


@pytest.mark.parametrize("change", ["append a sentence", "one character", "trailing space", "a newline"])
def test_a_changed_english_cell_makes_its_translation_stale(change: str) -> None:
    nb, cat = _chapter_with_catalogue()
    current = [c for c in nb.cells if c.cell_type == "markdown" and c.id in cat.entries
               and cat.entries[c.id].en_sha256 == en_sha256(c.source)]
    assert current, "no current translation to change the English of"
    before = {f.cell_id for f in check_translation(nb, cat, terms=False) if f.kind == "stale"}
    cell = random.Random(change).choice(current)
    src = cell.source
    cell.source = {"append a sentence": src + " One more sentence.", "one character": src[:-1] + chr(ord(src[-1]) ^ 1),
                   "trailing space": src + " ", "a newline": src + "\n"}[change]
    after = {f.cell_id for f in check_translation(nb, cat, terms=False) if f.kind == "stale"}
    assert after - before == {cell.id}


def test_missing_and_orphan_entries_are_reported() -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("One", id="m1"),
                                         nbformat.v4.new_code_cell("1", id="k1"),
                                         nbformat.v4.new_markdown_cell("Two", id="m2")])
    cat = Catalogue("x", {"m1": Entry("m1", en_sha256("One"), "一"), "gone": Entry("gone", "0" * 64, "旧"),
                          "k1": Entry("k1", en_sha256("1"), "代码")})
    kinds = sorted((f.kind, f.cell_id) for f in check_translation(nb, cat))
    assert kinds == [("missing", "m2"), ("orphan", "gone"), ("orphan", "k1")]
    assert [f.kind for f in check_translation(nb, None)] == ["missing", "missing"]


def test_a_catalogue_with_bad_content_is_refused(tmp_path: Path) -> None:
    good = 'chapter = "x"\n[cells.a]\nen_sha256 = "' + "a" * 64 + '"\nzh = "中"\n'
    (tmp_path / "x.toml").write_text(good, encoding="utf-8")
    assert edition.load_catalogue(tmp_path / "x.toml").entries["a"].zh == "中"
    for bad in (good.replace('chapter = "x"\n', ""), good.replace("a" * 64, "A" * 64), good.replace("a" * 64, "a" * 63),
                good.replace('zh = "中"', "zh = 3"), good + 'note = "x"\n', good.replace("[cells.a]", "[cells.a")):
        (tmp_path / "x.toml").write_text(bad, encoding="utf-8")
        with pytest.raises(ValueError):
            edition.load_catalogue(tmp_path / "x.toml")


def test_the_catalogue_writer_round_trips_through_the_reader(tmp_path: Path) -> None:
    nb = read(CHAPTERS[1])
    texts = {c.id: f"中文 {k}\\ '''" if k % 3 == 0 else f"中文 $2^{{-{k}}}$ \\frac" for k, c in enumerate(nb.cells)
             if c.cell_type == "markdown"}
    (tmp_path / "c.toml").write_text(edition.catalogue_toml(nb, CHAPTERS[1].stem, texts), encoding="utf-8")
    cat = edition.load_catalogue(tmp_path / "c.toml")
    assert {k: e.zh for k, e in cat.entries.items()} == texts
    assert not [f for f in check_translation(nb, cat, terms=False) if f.kind in ("missing", "stale", "orphan")]


# --- numbers -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("en, zh", [
    ("E4M3's max is 448, about 75% of the time 8x faster; see chapter 11 and section 4.",
     "E4M3 的最大值是448，约75％的时候快 8 倍；见第 11 章与第 4 节。"),
    ("From 2^-9 to 448 (Micikevicius et al. 2022), 1,024 values.", "从 2^-9 到 448（Micikevicius et al. 2022），共 1,024 个值。"),
    ("> **Myth: FP8 halves memory 2.5x.**", "> **误区：FP8 让内存减半 2.5x。**"),
    ("Table 3 shows 57344 and 1e-5.", "表 3 给出 57344 与 1e-5。"),
])
def test_chinese_prose_states_the_numbers_of_its_english(en: str, zh: str) -> None:
    def values(text: str) -> list:
        return sorted(n.value.normalize() for n in numbers_in_prose(text))

    assert values(numbers_view(zh)) == values(en) != []


def test_every_english_cell_as_its_own_translation_passes_and_a_drifted_digit_fails() -> None:
    """The Chinese reading changes nothing in English text; a changed digit in any cell with numbers is caught."""
    rng = random.Random(23)
    drifted = 0
    for path in CHAPTERS:
        nb = read(path)
        cat = identity_catalogue(nb, path.stem)
        assert not [f for f in check_translation(nb, cat, terms=False) if f.kind == "numbers"], path.stem
        for cell in (c for c in nb.cells if c.cell_type == "markdown"):
            numbers = [n for n in numbers_in_prose(cell.source) if re.fullmatch(r"\d{2,}", n.text)]
            if not numbers:
                continue
            n = rng.choice(numbers)
            digit = str((int(n.text[-1]) + rng.randint(1, 8)) % 10)
            text = cell.source[:n.start] + n.text[:-1] + digit + cell.source[n.start + len(n.text):]
            one = Catalogue(path.stem, {cell.id: Entry(cell.id, en_sha256(cell.source), text)})
            found = [f for f in check_translation(nb, one, terms=False) if f.kind == "numbers" and f.cell_id == cell.id]
            assert found, f"{path.stem} {cell.id}: {n.text} -> {n.text[:-1] + digit} went unnoticed"
            drifted += 1
    assert drifted >= 20


def test_claim_markers_must_be_the_same() -> None:
    en = "FP32 rounds both alike. <!-- claim:01-fp32-sum-equal --> And more. <!-- claim:01-other -->"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(en, id="a")])
    for zh, ok in (("二者一样。<!-- claim:01-other --> 还有 <!-- claim:01-fp32-sum-equal -->", True),
                   ("二者一样。<!-- claim:01-fp32-sum-equal -->", False),
                   ("二者一样。<!-- claim:01-fp32-sum-equal --><!-- claim:01-other --><!-- claim:01-other -->", False),
                   ("二者一样。<!-- claim:01-fp32-sum-eqal --> <!-- claim:01-other -->", False)):
        cat = Catalogue("x", {"a": Entry("a", en_sha256(en), zh)})
        assert bool([f for f in check_translation(nb, cat) if f.kind == "claims"]) is not ok, zh
    assert sorted(claim_markers(en)) == ["01-fp32-sum-equal", "01-other"]


# --- terms and English left --------------------------------------------------------------------------------------

def test_every_refused_rendering_of_the_term_base_is_reported() -> None:
    terms = tomllib.loads((ROOT / "fp8lab" / "data" / "termbase.toml").read_text(encoding="utf-8"))["term"]
    avoided = [(bad, t["zh"]) for t in terms for bad in t.get("avoid", [])]
    assert avoided
    for bad, good in avoided:
        assert edition.term_findings(f"这里的{bad}很重要。"), f"{bad!r} (the term base says {good!r}) went unnoticed"


def test_english_sentences_left_in_a_translation_are_found() -> None:
    rng = random.Random(5)
    sentences = []
    for path in CHAPTERS:
        for c in read(path).cells:
            if c.cell_type == "markdown":
                prose = re.sub(r"`[^`]*`|\$[^$]*\$|\]\([^)]*\)|<[^>]*>", " ", c.source)
                sentences += [s for s in re.findall(r"\b[a-z]+(?:,? [a-z]+){5,}", prose)
                              if not set(s.replace(",", "").split()) & edition.NAMES]  # a name breaks a run
    assert len(sentences) >= 20
    for s in rng.sample(sentences, 20):
        assert edition.english_runs(f"这是一段中文说明，{s}然后继续。"), s
        assert edition.english_runs(f"说明{s}继续"), s
        words = s.split()
        with_number = " ".join(words[:3] + ["448 (2^-9),"] + words[3:])  # numbers and code inside an English run
        with_code = " ".join(words[:2] + ["`fl.quantize(x)`"] + words[2:])
        assert edition.english_runs(f"说明：{with_number}。") and edition.english_runs(f"说明：{with_code}。"), s
    kept = ("用 `fl.quantize(x, \"e4m3\")` 与 $2^{-9} \\times m$ 计算；见 [the course map](00_welcome.ipynb#Course-map)、"
            "NVIDIA Transformer Engine、DeepSeek-V3 与 *FP8 Formats for Deep Learning*。\n\n## 参考资料\n\n"
            "- Micikevicius et al., FP8 formats for deep learning, arXiv 2209.05433.")
    assert edition.english_runs(kept) == []


# --- rendering ---------------------------------------------------------------------------------------------------

def test_render_swaps_markdown_and_shares_code_and_outputs() -> None:
    from fp8lab.course.figtext import META_KEY

    nb = read(CHAPTERS[3])
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="448\n"),
                    nbformat.v4.new_output("display_data", data={"image/png": "EN", "text/plain": "<Figure>"},
                                           metadata={META_KEY: {"zh": {"image/png": "ZH"}}})]
    md = [c for c in nb.cells if c.cell_type == "markdown"]
    cat = Catalogue(CHAPTERS[3].stem, {c.id: Entry(c.id, en_sha256(c.source), f"中文 {k}") for k, c in enumerate(md[:-1])})
    zh = render(nb, cat)
    assert [c.source for c in zh.cells if c.cell_type == "markdown"] == [f"中文 {k}" for k in range(len(md) - 1)] + [md[-1].source]
    assert [c.source for c in zh.cells if c.cell_type == "code"] == [c.source for c in nb.cells if c.cell_type == "code"]
    zcode = zh.cells[nb.cells.index(code)]
    assert zcode.outputs[0].text == "448\n" and zcode.outputs[1].data["image/png"] == "ZH"
    assert code.outputs[1].data["image/png"] == "EN" and zh.metadata["fp8lab"]["lang"] == "zh"
    assert [c.id for c in zh.cells] == [c.id for c in nb.cells]
    nbformat.validate(zh)


# --- on the executed chapters (kernel: read from the run's cache) ------------------------------------------------

def _executed(path: Path, course_cache: Path) -> nbformat.NotebookNode:
    from fp8lab.course.execute import execute_cached

    return execute_cached(path, course_cache, cell_timeout=CELL_TIMEOUT_S).notebook


@pytest.mark.kernel
@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_the_chinese_text_backs_every_number_and_every_figure_is_in_chinese(path: Path, course_cache: Path) -> None:
    from fp8lab.course.figtext import META_KEY

    nb = _executed(path, course_cache)
    catalogue = edition.catalogue_for(path)
    unbacked = edition.unbacked_in_edition(nb, catalogue)
    assert not unbacked, f"{path.stem}: numbers the Chinese text states that no output backs:\n" + "\n".join(map(str, unbacked))
    problems = []
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if "image/png" not in out.get("data", {}):
                continue
            meta = out.get("metadata", {}).get(META_KEY)
            if not meta or "zh" not in meta:
                problems.append(f"cell {i}: no Chinese rendering ({(meta or {}).get('error', 'the hook did not run')})")
                continue
            problems += [f"cell {i}: untranslated figure text {t!r}" for t in meta.get("untranslated", [])]
            problems += [f"cell {i}: {m}" for m in meta.get("missing_glyphs", [])]
    assert not problems, f"{path.stem}:\n" + "\n".join(problems)
