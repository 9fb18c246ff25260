"""The term base (fp8lab/data/termbase.toml) and fp8lab.terms: one Chinese term per concept, checked in any text."""

from __future__ import annotations

import pathlib
import re
import sys

import pytest

from fp8lab import terms as tb

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_one_term_per_concept_and_no_term_avoids_another():
    entries = tb.terms()
    assert len(entries) >= 100
    assert len({t.en.lower() for t in entries}) == len(entries)
    assert len({t.zh for t in entries}) == len(entries)
    renderings = {f for t in entries for f in t.zh_forms}
    for t in entries:
        assert not set(t.avoid) & renderings, t.en
        assert t.chapter.isdigit() and len(t.chapter) == 2, t.en
        assert re.search(r"[\u3400-\u9fff]", t.meaning_zh), t.en


@pytest.mark.parametrize("t", tb.terms(), ids=lambda t: t.en)
def test_every_avoided_rendering_is_refused_in_a_sentence(t):
    for a in t.avoid:
        for text in (f"{a}", f"这里的{a}很常见。", f"例如 {a}（见第 {t.chapter} 章）"):
            problems = tb.check_zh(text)
            assert any(repr(a) in p and repr(t.zh) in p for p in problems), (text, problems)


@pytest.mark.parametrize("t", tb.terms(), ids=lambda t: t.en)
def test_every_accepted_rendering_passes_in_a_sentence(t):
    # the term itself, bare and glossed, next to any other term: no avoid list may hit an accepted term
    for form in t.zh_forms:
        for other in tb.terms():
            text = f"{form}与{other.zh}；{other.zh}的{form}"
            assert tb.check_zh(text, en_text=f"{t.en} truncation {other.en}") == [], text


@pytest.mark.parametrize("en, ok", [
    ("the sum is truncated to 13 bits", True), ("Truncation drops the low bits", True),
    ("a truncating accumulator", True), ("round toward zero", True), ("chop the mantissa", True),
    ("values above 448 are clipped", False), ("saturate to the maximum", False), ("clamp to ±448", False),
    ("percentile calibration cuts the tail", False), ("", False),
])
def test_jieduan_only_where_the_english_says_truncation(en, ok):
    problems = tb.check_zh("把尾数截断到 3 位", en_text=en)
    assert (problems == []) is ok, problems
    if not ok:
        assert "饱和" in problems[0] and "裁剪" in problems[0]
    assert tb.check_zh("把尾数截断到 3 位") == []  # without the English it is not judged


def test_decades_are_not_binades():
    assert tb.check_zh("E5M2 覆盖约 9.4 个十进制数量级，也就是 32 个二进制区间") == []
    assert tb.check_zh("跨越 10 个数量级") == []
    for wrong in ("二进制数量级", "二进制量级", "二进制数量级区间"):
        assert tb.check_zh(f"每个{wrong}内等间距")[0].startswith(repr(wrong)), wrong


def test_longest_avoided_rendering_is_reported_once():
    assert tb.check_zh("非规格化数") == ["'非规格化数' (subnormal number): write '次正规数'"]
    assert len(tb.check_zh("平局、平局、打平")) == 2


@pytest.mark.parametrize("bad", [None, 3, b"\xe4"])
def test_bad_input_is_refused(bad):
    with pytest.raises(TypeError):
        tb.check_zh(bad)
    with pytest.raises(TypeError):
        tb.check_zh("中点", en_text=bad if bad is not None else 1)


@pytest.mark.parametrize("body, message", [
    ('[[term]]\nen = "a"\nzh = "甲"\nmeaning = "m"\nmeaning_zh = "义"\nchapter = "01"\ncolour = "red"\n', "unknown keys"),
    ('[[term]]\nen = "a"\nzh = "甲"\nmeaning = "m"\nmeaning_zh = "义"\nchapter = "01"\n' * 2, "one term per concept"),
    ('[[term]]\nen = "a"\nzh = "甲"\nmeaning = "m"\nmeaning_zh = "义"\nchapter = "01"\n'
     '[[term]]\nen = "b"\nzh = "乙"\navoid = ["甲"]\nmeaning = "m"\nmeaning_zh = "义"\nchapter = "01"\n', "rendering of"),
    ('[[term]]\nen = "a"\nzh = ""\nmeaning = "m"\nmeaning_zh = "义"\nchapter = "01"\n', "zh must be"),
    ('[[term]]\nen = "a"\nzh = "甲"\navoid = "乙"\nmeaning = "m"\nmeaning_zh = "义"\nchapter = "01"\n', "avoid must be"),
])
def test_a_malformed_term_base_is_refused_with_its_reason(tmp_path, body, message):
    path = tmp_path / "tb.toml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        tb.terms(path)


def test_term_lookup():
    assert tb.term("  NORMAL number ").zh == "正规数"
    with pytest.raises(KeyError, match="no term"):
        tb.term("flux capacitor")


REQUIRED_IN_GLOSSARY = ["E4M3", "E5M2", "UE8M0", "MXFP8", "MXFP6", "MXFP4", "NVFP4", "fprop", "dgrad", "wgrad",
                        "WGMMA", "TMA", "roofline", "ridge point", "HBM", "binade", "normal number", "tie",
                        "clipping", "saturation", "truncation"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_glossary_has_one_row_per_term_with_the_required_terms(lang):
    text = tb.glossary_markdown(lang)
    rows = [r for r in text.splitlines()[2:]]
    assert len(rows) == len(tb.terms())
    cells = [[c.strip() for c in r.strip("|").split(" | ")] for r in rows]
    assert all(len(c) == 4 for c in cells)
    en_col = 0 if lang == "en" else 1
    have = {c[en_col].strip("*") for c in cells}  # the Chinese glossary sets its English column in italics
    assert set(REQUIRED_IN_GLOSSARY) <= have
    assert [c[3] for c in cells] == sorted(c[3] for c in cells)
    with pytest.raises(ValueError):
        tb.glossary_markdown("fr")


def test_welcome_glossary_cell_is_rendered_from_the_term_base():
    # regenerate with: .venv/bin/python tools/glossary_cell.py --write
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(ROOT / "notebooks" / "00_welcome.ipynb", as_version=4)
    (cell,) = [c for c in nb.cells if c.get("id") == "a00w0012"]
    assert cell.source == tb.glossary_cell("en")


def test_glossary_tool_checks_the_notebook(tmp_path, monkeypatch, capsys):
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import glossary_cell as tool
    finally:
        sys.path.remove(str(ROOT / "tools"))
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("old glossary", id="a00w0012"), nbformat.v4.new_code_cell("1", id="x")]
    path = tmp_path / "00_welcome.ipynb"
    nbformat.write(nb, path)
    monkeypatch.setattr(tool, "NOTEBOOK", path)
    assert tool.main(["--check"]) == 1
    assert tool.main(["--write"]) == 0
    assert tool.main(["--check"]) == 0
    after = nbformat.read(path, as_version=4)
    assert after.cells[0].source == tb.glossary_cell("en") and after.cells[1].source == "1"


@pytest.mark.parametrize("t", tb.terms(), ids=lambda t: t.en)
def test_a_meaning_has_the_same_digits_in_both_languages(t):
    # the Chinese edition's rule: every number written in digits in the English appears in the Chinese, no other
    num = re.compile(r"\d+(?:\.\d+)?")
    assert sorted(num.findall(t.meaning)) == sorted(num.findall(t.meaning_zh))


def test_the_two_glossary_cells_have_the_same_digits():
    num = re.compile(r"\d+(?:\.\d+)?")
    assert sorted(num.findall(tb.glossary_cell("en"))) == sorted(num.findall(tb.glossary_cell("zh")))


@pytest.mark.parametrize("text, found", [
    ("见 *NVIDIA H100 Tensor Core GPU Architecture* 白皮书（2022）", False),
    ("“TF32 Tensor Core operations” 一节", False),
    ("FP8 Tensor Core 的峰值", True), ("H100 的 Tensor Core 更快", True), ("在 CUDA core 上提升", True),
    ("Tensor Core GPU 白皮书", True),  # three words: still Chinese prose with an English term in it
])
def test_english_titles_are_not_renderings(text, found):
    assert bool(tb.check_zh(text)) is found, tb.check_zh(text)
