"""The MX figures, the block explorer and its text in the edition's language (fp8lab.lang).

Under ``fp8lab.lang.use("zh")`` every title, axis label and legend of ``fp8lab.scaling.mx_plots`` is
Chinese (no English word left but format and rounding names), keeps to the term base, carries the same
numbers as its English text and is drawn with the CJK font (no missing glyphs); under ``"en"`` the texts
are the English ones, unchanged.
"""

from __future__ import annotations

import io
import re
import warnings
from collections import Counter

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

import fp8lab as fl  # noqa: E402
from fp8lab.course.figtext import FONT_FAMILY, needs_translation  # noqa: E402
from fp8lab.lang import use  # noqa: E402
from fp8lab.scaling import mx_plots  # noqa: E402
from fp8lab.terms import check_zh  # noqa: E402

_CJK = re.compile(r"[\u3400-\u9fff]")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_NAMES = re.compile(r"\b(floor|rceil)\b")  # rounding names stay as they are in both editions


def _data() -> np.ndarray:
    return fl.llm_activations((8, 64), seed=0)


FIGURES = {
    "plot_block_max_error": lambda: mx_plots.plot_block_max_error(["e4m3", "fp4"], points=64),
    "plot_scale_rounding": lambda: mx_plots.plot_scale_rounding({"D1": _data(), "D2": _data()[:4]}, ["e4m3", "fp4"]),
    "plot_sqnr_vs_bits": lambda: mx_plots.plot_sqnr_vs_bits(_data(), {"MXFP4": ("fp4", fl.MXScaling()),
                                                                     "NVFP4": ("fp4", fl.NVFP4Scaling())}),
    "plot_fp4_error_distributions": lambda: mx_plots.plot_fp4_error_distributions(_data()),
}

#: the English texts the figures had before they took a language (axis labels and titles without numbers)
ENGLISH = {
    "plot_block_max_error": ["block amax (log2 scale)", "error of the block max (%)"],
    "plot_scale_rounding": ["blocks whose max was clipped (%)", "SQNR (dB, higher is better)", "Clipped blocks (D1)",
                            "SQNR (D1)", "element format (blocks of 32, E8M0 scale)"],
    "plot_sqnr_vs_bits": ["storage (bits per element, scales included)", "SQNR (dB, higher is better)"],
    "plot_fp4_error_distributions": ["density of blocks", "fraction of elements with error <= x",
                                     "Where the block maximum lands on the E2M1 grid",
                                     "Cumulative distribution of the relative error"],
}


def _texts(fig) -> list:
    """The figure's text objects a reader sees: suptitle, titles, axis labels, legend entries."""
    out = [fig._suptitle] if fig._suptitle is not None else []
    for ax in fig.axes:
        out += [ax.title, ax.xaxis.label, ax.yaxis.label]
        legend = ax.get_legend()
        if legend is not None:
            out += list(legend.get_texts())
    return [t for t in out if t.get_text()]


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_under_en_the_figure_texts_are_the_english_ones(name):
    with use("en"):
        texts = [t.get_text() for t in _texts(FIGURES[name]())]
    assert not any(_CJK.search(t) for t in texts), texts
    for expected in ENGLISH[name]:
        assert expected in texts, (expected, texts)


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_under_zh_every_figure_text_is_chinese_keeps_the_terms_and_the_numbers(name):
    with use("en"):
        english = [t.get_text() for t in _texts(FIGURES[name]())]
    with use("zh"):
        fig = FIGURES[name]()
    chinese = _texts(fig)
    assert len(chinese) == len(english)
    assert any(_CJK.search(t.get_text()) for t in chinese)
    for t, en in zip(chinese, english):
        zh = t.get_text()
        assert not any(needs_translation(_NAMES.sub(" ", line)) for line in zh.split("\n")), (en, zh)
        assert check_zh(zh, en) == [], (en, zh)
        assert Counter(_NUMBER.findall(zh)) == Counter(_NUMBER.findall(en)), (en, zh)
        if _CJK.search(zh):
            assert any(f.startswith(FONT_FAMILY) for f in t.get_fontfamily()), (zh, t.get_fontfamily())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.savefig(io.BytesIO(), format="png")
    assert not [str(w.message) for w in caught if "missing from font" in str(w.message)]


def test_describe_mx_block_in_chinese_has_the_english_numbers():
    en = mx_plots.describe_mx_block(957.0, "e4m3", lang="en")
    with use("en"):
        assert mx_plots.describe_mx_block(957.0, "e4m3") == en
        assert en.splitlines()[0].startswith("MX block of 32 float8_e4m3fn elements")
    with use("zh"):
        zh = mx_plots.describe_mx_block(957.0, "e4m3")
    assert zh == mx_plots.describe_mx_block(957.0, "e4m3", lang="zh") != en
    assert zh.startswith("MX 块：32 个 float8_e4m3fn 元素") and "前几个元素" in zh and "floor 数值" in zh
    assert check_zh(zh, en) == []
    assert Counter(_NUMBER.findall(zh)) == Counter(_NUMBER.findall(en))
    words = {w for line in zh.splitlines() for w in re.findall(r"\b[A-Za-z]{3,}\b", _NAMES.sub(" ", line))}
    assert words <= {"amax", "SQNR"}, words
    rows = [line.split() for line in zh.splitlines()]
    assert ["floor", "1", "0x80", "2^1", "478.5", "0x7E", "896", "-6.37%", "是", "27.5", "dB"] in rows


def test_the_explorer_takes_the_language_it_was_built_in():
    pytest.importorskip("ipywidgets")
    with use("zh"):
        box = mx_plots.mx_block_explorer(957.0, "e4m3")
    assert (box.amax.description, box.format.description) == ("块 amax", "元素格式")
    assert "MX 块" in box.text.value and "478.5" in box.text.value
    box.amax.value = 7.0  # it stays Chinese after the language is gone
    assert "MX 块" in box.text.value
    with use("en"):
        box = mx_plots.mx_block_explorer(957.0, "e4m3")
    assert (box.amax.description, box.format.description) == ("amax", "elements")
    assert "MX block of 32" in box.text.value
