"""Figures in Chinese: the catalogue of figure texts, the CJK font from the pinned package, no tofu, the display hook.

Whether every figure of every chapter is translated is checked on the executed chapters
(tests/test_edition.py, kernel); here the pieces are checked without a kernel.
"""

from __future__ import annotations

import base64
import io

import matplotlib
import pytest

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from fp8lab.course import figtext  # noqa: E402
from fp8lab.course.figtext import FigureCatalogue, figure_catalogue, render_png  # noqa: E402


def test_the_catalogue_loads_and_every_chinese_text_renders_without_a_missing_glyph() -> None:
    cat = figure_catalogue()
    texts = list(cat.exact.values()) + [zh for _, zh in cat.patterns]
    assert len(texts) >= 100
    fig = Figure(figsize=(6, 0.25 * len(texts)))
    ax = fig.add_subplot()
    for i, t in enumerate(texts):
        ax.text(0, i / len(texts), t, fontsize=6)
    ax.set_title("正规数，±u ≈ 2^-9 → 448")
    png, left, missing = render_png(fig, cat)
    assert missing == [] and png[:4] == b"\x89PNG"


def test_a_glyph_the_font_lacks_is_reported_not_drawn_as_tofu() -> None:
    """The check is real: a Chinese character the cut-down font does not hold is named."""
    fig = Figure(figsize=(2, 1))
    fig.add_subplot().set_title("正规数")
    cat = FigureCatalogue.from_entries([("x", "次")])  # its font holds 次 only
    _, _, missing = render_png(fig, cat)
    assert missing and all("missing" in m or "dummy" in m for m in missing)
    assert any("6B63" in m or "正" in m for m in missing)


@pytest.mark.parametrize("en, zh, line, expected", [
    ("{a} per binade, {b} binades", "每个二进制区间 {a} 个值，共 {b} 个二进制区间", "2^7 per binade, 261 binades",
     "每个二进制区间 2^7 个值，共 261 个二进制区间"),
    ("{a} of {b} steps overflow", "{b} 步中有 {a} 步上溢", "19 of 60 steps overflow", "60 步中有 19 步上溢"),
    ("normal values", "正规数", "  normal values ", "  正规数 "),
])
def test_patterns_carry_computed_parts_over(en: str, zh: str, line: str, expected: str) -> None:
    assert FigureCatalogue.from_entries([(en, zh)]).translate(line) == expected


@pytest.mark.parametrize("en, zh", [("{a} of {b}", "{a} 的"), ("{a} and {a}", "{a}"), ("", "空"), ("x", " ")])
def test_a_malformed_entry_is_refused(en: str, zh: str) -> None:
    with pytest.raises(ValueError):
        FigureCatalogue.from_entries([(en, zh)])


def test_translated_texts_are_restored_and_tick_labels_are_translated() -> None:
    fig = Figure()
    ax = fig.add_subplot()
    ax.set_xticks([0, 1], ["per token", "per channel"])
    ax.set_xlabel("training step")
    ax.plot([0, 1], [0, 1], label="normal values")
    ax.legend()
    cat = FigureCatalogue.from_entries([("per token", "逐 token"), ("per channel", "逐通道"),
                                        ("training step", "训练步数"), ("normal values", "正规数")])
    with figtext.translated_texts(fig, cat) as left:
        png, _, missing = render_png(fig, cat)
        assert missing == []
        fig.canvas.draw()
        labels = [t.get_text() for t in ax.get_xticklabels()]
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert labels == ["逐 token", "逐通道"] and ax.get_xlabel() == "训练步数" and legend == ["正规数"] and left == []
    fig.canvas.draw()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["per token", "per channel"] and ax.get_xlabel() == "training step"


def test_the_display_hook_stores_the_chinese_figure_and_shows_it_in_a_chinese_kernel() -> None:
    from IPython.core.formatters import DisplayFormatter

    from fp8lab.lang import use

    class Shell:
        display_formatter = DisplayFormatter()

    shell = Shell()
    from IPython.core.pylabtools import print_figure

    shell.display_formatter.formatters["image/png"].for_type(Figure, lambda f: print_figure(f, "png"))
    assert figtext.install(shell) and figtext.install(shell)  # idempotent
    fig = Figure(figsize=(2, 1))
    fig.add_subplot().set_xlabel("training step")
    data, md = shell.display_formatter.format(fig)
    extra = md[figtext.META_KEY]
    assert extra["untranslated"] == [] and extra["missing_glyphs"] == []
    zh = base64.b64decode(extra["zh"]["image/png"])
    en = data["image/png"] if isinstance(data["image/png"], bytes) else base64.b64decode(data["image/png"])
    assert zh[:4] == en[:4] == b"\x89PNG" and zh != en
    with use("zh"):
        data_zh, md_zh = shell.display_formatter.format(fig)
    shown = data_zh["image/png"]
    shown = shown if isinstance(shown, bytes) else base64.b64decode(shown)
    assert shown != en and "en" in md_zh[figtext.META_KEY]


def test_the_font_comes_from_the_pinned_package_not_the_system() -> None:
    import justmytype_intl_cjk

    path, family = figtext.cjk_font("尾数")
    assert family.startswith(figtext.FONT_FAMILY)
    src = figtext._noto_sans_sc()
    assert src.is_relative_to(__import__("pathlib").Path(justmytype_intl_cjk.__file__).parent)
    assert (src.parent / "OFL.txt").is_file()
    from fontTools.ttLib import TTFont

    font = TTFont(str(path))
    assert {ord("尾"), ord("数")} <= set(font.getBestCmap()) and font["OS/2"].usWeightClass == 400
    assert "fvar" not in font  # an instance at weight 400, not the variable font's Thin default
    buf = io.BytesIO()
    font.save(buf)
    assert buf.tell() < 200_000


@pytest.mark.kernel
def test_one_execution_yields_both_editions_figures(tmp_path) -> None:
    """A chapter executed once by the course's runner carries, for each figure, its Chinese rendering."""
    import nbformat

    from fp8lab.course.edition import render
    from fp8lab.course.execute import execute_chapter

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "%matplotlib inline\nimport matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 2], label='normal values')\n"
        "ax.set_xlabel('training step'); ax.legend(); plt.show()\n"
        "from matplotlib.figure import Figure\nf = Figure(); f.add_subplot().set_title('an English sentence here'); f")])
    nbformat.write(nb, tmp_path / "00_x.ipynb")
    run = execute_chapter(tmp_path / "00_x.ipynb", cell_timeout=60)
    outs = [o for o in run.notebook.cells[0].outputs if "image/png" in o.get("data", {})]
    assert len(outs) == 2
    first, second = (o.metadata[figtext.META_KEY] for o in outs)
    assert first["untranslated"] == [] and first["missing_glyphs"] == [] and first["zh"]["image/png"]
    assert second["untranslated"] == ["an English sentence here"]  # reported, for the test over the chapters
    zh = render(run.notebook, None)
    assert [o.data["image/png"] for o in zh.cells[0].outputs if "image/png" in o.get("data", {})] == \
        [first["zh"]["image/png"], second["zh"]["image/png"]]
