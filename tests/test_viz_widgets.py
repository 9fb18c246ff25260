"""The plain functions behind the widgets, the widgets themselves, and the figure helpers."""

from __future__ import annotations

import math
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import fp8lab as fl  # noqa: E402
from fp8lab import viz, widgets  # noqa: E402
from fp8lab.anatomy import bit_string  # noqa: E402

SMALL_FLOATS = [f for f in fl.list_formats("float") if f.bits <= 8]
ALL_FLOATS = fl.list_formats("float")


# ----------------------------------------------------------------------------------------------
# flip and field_of_bit
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "ue8m0", "fp4", "int8"])
def test_flip_is_an_involution_that_changes_exactly_one_bit(fmt: str) -> None:
    f = fl.get_format(fmt)
    for code in range(2**f.bits):
        for bit in range(f.bits):
            new = widgets.flip(code, bit, f)
            assert new ^ code == 1 << bit, f"flip({code:#x}, {bit}) gave {new:#x}"
            assert widgets.flip(new, bit, f) == code


def test_flip_hand_checked_cases() -> None:
    assert widgets.flip(0x38, 7, "e4m3") == 0xB8          # 1.0 -> -1.0
    assert float(fl.decode(widgets.flip(0x38, 3, "e4m3"), "e4m3")) == 0.5
    assert widgets.flip(0x7E, 0, "e4m3") == 0x7F          # 448 -> NaN
    assert widgets.flip(0x3F80, 15, "bf16") == 0xBF80


@pytest.mark.parametrize("code, bit, error", [(256, 0, ValueError), (-1, 0, ValueError), (0, 8, ValueError),
                                              (0, -1, ValueError), (1.0, 0, TypeError), (True, 0, TypeError)])
def test_flip_rejects_bad_input_with_a_clear_message(code, bit, error) -> None:
    with pytest.raises(error, match="code|bit"):
        widgets.flip(code, bit, "e4m3")


def test_field_of_bit() -> None:
    assert [widgets.field_of_bit(b, "e4m3") for b in range(7, -1, -1)] == (
        ["sign"] + ["exponent"] * 4 + ["mantissa"] * 3)
    assert {widgets.field_of_bit(b, "ue8m0") for b in range(8)} == {"exponent"}   # unsigned, no mantissa
    assert widgets.field_of_bit(31, "fp32") == "sign" and widgets.field_of_bit(23, "fp32") == "exponent"
    assert widgets.field_of_bit(22, "fp32") == "mantissa"
    assert widgets.field_of_bit(7, "int8") == "sign" and widgets.field_of_bit(3, "uint4") == "integer"


# ----------------------------------------------------------------------------------------------
# describe_code and describe_value
@pytest.mark.parametrize("fmt", SMALL_FLOATS, ids=[f.name for f in SMALL_FLOATS])
def test_describe_code_agrees_with_decode_for_every_code(fmt) -> None:
    for code in range(2**fmt.bits):
        text = widgets.describe_code(code, fmt)
        value = float(fl.decode(np.asarray(code, dtype=fmt.code_dtype), fmt))
        first, *rest = text.splitlines()
        assert first == f"0x{code:0{(fmt.bits + 3) // 4}X} = {bit_string(code, fmt)} in {fmt.name}"
        kind = [line for line in rest if line.lstrip().startswith("kind")][0].split()[-1]
        if math.isnan(value):
            assert kind == "NaN", text
        elif math.isinf(value):
            assert kind == "inf", text
        else:
            assert text.rstrip().endswith(f"= {value!r}"), text
            assert kind in {"normal", "subnormal", "zero"}


@pytest.mark.parametrize("code, fmt, ending", [
    (0x7E, "e4m3", "= 448.0"), (0x01, "e4m3", "= 0.001953125"), (0x7F, "e4m3fnuz", "= 240.0"),
    (0x7B, "e5m2", "= 57344.0"), (0x7F, "ue8m0", "= 1.0"), (0x7, "fp4", "= 6.0"),
    (0xD, "int4", "= -3.0"), (0x3C00, "fp16", "= 1.0"),
])
def test_describe_code_hand_checked(code: int, fmt: str, ending: str) -> None:
    assert widgets.describe_code(code, fmt).rstrip().endswith(ending)


@pytest.mark.parametrize("code, fmt, kind", [(0x7F, "e4m3", "NaN"), (0xFF, "e4m3", "NaN"), (0x80, "e4m3fnuz", "NaN"),
                                             (0x7C, "e5m2", "inf"), (0xFF, "ue8m0", "NaN"), (0x80, "e4m3", "zero")])
def test_describe_code_specials(code: int, fmt: str, kind: str) -> None:
    assert f"kind    {kind}" in widgets.describe_code(code, fmt)


def test_describe_code_rejects_out_of_range_codes() -> None:
    with pytest.raises(ValueError, match="0..255"):
        widgets.describe_code(256, "e4m3")


@pytest.mark.parametrize("x, fmt, saturate", [(0.1, "fp32", False), (500, "e4m3", False), (500, "e4m3", True),
                                              (1e-5, "e5m2", False), (-3, "int4", False)])
def test_describe_value_is_the_explain_text(x: float, fmt: str, saturate: bool) -> None:
    assert widgets.describe_value(x, fmt, saturate=saturate) == str(fl.explain(x, fmt, saturate=saturate))


def test_widgets_module_imports_without_ipywidgets() -> None:
    code = ("import sys; sys.modules['ipywidgets'] = None\n"
            "import fp8lab.widgets as w\n"
            "print(w.describe_code(0x38, 'e4m3').splitlines()[-1])\n"
            "try:\n    w.bit_flipper('e4m3')\nexcept ImportError:\n    print('ImportError')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["  value   (-1)^0 x 2^(7-7) x (1 + 0/8) = 1.0", "ImportError"]


# ----------------------------------------------------------------------------------------------
# the widgets (built, not rendered)
def test_bit_flipper_buttons_drive_the_description() -> None:
    pytest.importorskip("ipywidgets")
    box = widgets.bit_flipper("e4m3", code=0x38)
    assert len(box.buttons) == 8
    assert [b.value for b in box.buttons] == [bool(int(c)) for c in format(0x38, "08b")]
    assert [b.button_style for b in box.buttons[:2]] == ["danger", "info"] and box.buttons[-1].button_style == "success"
    assert "= 1.0" in box.text.value
    box.buttons[0].value = True                       # sign bit
    assert "= -1.0" in box.text.value and box.buttons[0].description == "1"
    for b in box.buttons:                             # all ones: the negative NaN
        b.value = True
    assert "0xFF" in box.text.value and "NaN" in box.text.value


def test_value_explorer_follows_its_controls() -> None:
    pytest.importorskip("ipywidgets")
    box = widgets.value_explorer(0.1, "e4m3")
    assert "0.1 in float8_e4m3fn" in box.text.value
    box.number.value = 500.0
    assert "nan" in box.text.value
    box.saturate.value = True
    assert "448.0" in box.text.value
    box.format.value = "float8_e5m2"
    assert "512.0" in box.text.value
    assert set(box.format.options) == {f.name for f in fl.list_formats()}


# ----------------------------------------------------------------------------------------------
# figures
@pytest.mark.parametrize("fmt", ALL_FLOATS, ids=[f.name for f in ALL_FLOATS])
def test_positive_values_are_values_of_the_format(fmt) -> None:
    v = viz.positive_values(fmt, max_points=512)
    assert v.size and np.all(v > 0) and np.all(np.diff(v) > 0)
    assert v[0] == fmt.min_subnormal and v[-1] <= fmt.max
    assert np.array_equal(fl.quantize(v.astype(np.float32), fmt).astype(np.float64), v)
    if (fmt.num_finite - int(fmt.has_zero)) // (2 if fmt.signed else 1) <= 512:
        every = fmt.values()
        assert np.array_equal(v, every[every > 0])


@pytest.mark.parametrize("fmt", ALL_FLOATS, ids=[f.name for f in ALL_FLOATS])
def test_every_plot_returns_a_figure_for_every_float_format(fmt) -> None:
    assert isinstance(viz.plot_value_grid([fmt]), Figure)
    assert isinstance(viz.plot_relative_spacing(fmt), Figure)
    x = np.random.default_rng(0).lognormal(0.0, 2.0, 2000)
    assert isinstance(viz.plot_rounding_error(x, fmt), Figure)
    assert isinstance(viz.plot_bits(fmt.max_code, fmt), Figure)


def test_relative_spacing_title_states_the_epsilon_of_each_format() -> None:
    title = viz.plot_relative_spacing(["e4m3", "e5m2", "fp16", "bf16"]).axes[0].get_title()
    for name, k in [("float8_e4m3fn", 3), ("float8_e5m2", 2), ("float16", 10), ("bfloat16", 7)]:
        assert f"{name} 2^-{k}" in title


def test_value_grid_title_names_the_widest_and_densest() -> None:
    title = viz.plot_value_grid(["e4m3", "e5m2"]).axes[0].get_title()
    span = math.log2(57344 / 2.0**-16)
    assert f"Range: float8_e5m2 spans {span:.0f} binades" in title
    assert "Precision: float8_e4m3fn has 8 values per binade, float8_e5m2 4" in title


def test_rounding_error_title_counts_underflow_and_overflow() -> None:
    x = np.array([1e-6, 1.0, 1.1, 1000.0], dtype=np.float32)
    fig = viz.plot_rounding_error(x, "e4m3")
    title = fig.axes[0].get_title()
    assert "2 of 2 nonzero results (100.00%) within ±u" in title
    assert "1 flushed to 0" in title and "1 overflowed" in title
    assert "overflowed" not in viz.plot_rounding_error(x, "e4m3", saturate=True).axes[0].get_title()


def test_plot_bits_title_and_bad_codes() -> None:
    assert viz.plot_bits(0x7F, "e4m3").axes[0].get_title() == "0x7F = 0 1111 111 in float8_e4m3fn is nan (NaN)"
    assert viz.plot_bits(0xD, "int4").axes[0].get_title() == "0xD = 1101 in int4 is -3.0 (integer)"
    with pytest.raises(ValueError, match="0..255"):
        viz.plot_bits(256, "e4m3")


def test_plots_draw_into_a_given_axes_and_reject_integer_formats() -> None:
    fig = Figure()
    left, right = fig.subplots(1, 2)
    assert viz.plot_value_grid("fp4", ax=left) is fig
    assert viz.plot_bits(0x1, "fp4", ax=right) is fig
    with pytest.raises(TypeError, match="integer format"):
        viz.plot_value_grid(["int8"])
    with pytest.raises(ValueError, match="at least one"):
        viz.plot_relative_spacing([])


def test_compare_formats_at_and_the_magnitude_slider() -> None:
    text = widgets.compare_formats_at(2.0**-8 * 1.3)
    assert "float8_e4m3fn" in text and "subnormal" in text and "float8_e5m2" in text
    assert "NaN" in widgets.compare_formats_at(1e6) and "inf" in widgets.compare_formats_at(1e6)
    box = widgets.magnitude_explorer(("e4m3", "e5m2"), exponent=-8)
    slider = box.children[0]
    e5m2 = fl.get_format("e5m2")
    assert slider.min < math.log2(fl.get_format("e4m3").min_subnormal) and slider.max > math.log2(e5m2.max)
    slider.value = 17  # above E5M2's max (2^15.8): both overflow
    assert slider.value == 17


# ----------------------------------------------------------------------------------------------
# the edition's language (fp8lab.lang): the same numbers, the words in Chinese
def _numbers(text: str) -> list[str]:
    import re

    return re.findall(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?%?", text)


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "ue8m0", "fp4", "int8", "e3m2"])
def test_describe_code_in_chinese_states_the_same_numbers_for_every_code(fmt: str) -> None:
    f = fl.get_format(fmt)
    for code in range(2**f.bits):
        en, zh = widgets.describe_code(code, f, lang="en"), widgets.describe_code(code, f, lang="zh")
        assert _numbers(en) == _numbers(zh), (hex(code), en, zh)
        assert "类型" in zh and not any(w in zh for w in ("fields", "kind", "exponent", "mantissa", " in "))


def test_compare_formats_at_in_chinese_states_the_same_numbers() -> None:
    for x in (2.0**-8 * 1.3, 1e6, 0.0, -3.3, 1e-9):
        en, zh = widgets.compare_formats_at(x, lang="en"), widgets.compare_formats_at(x, lang="zh")
        assert _numbers(en) == _numbers(zh) and "误差" in zh and "error" not in zh


def test_the_widgets_speak_the_language_they_are_built_in(capsys) -> None:
    pytest.importorskip("ipywidgets")
    from fp8lab.lang import use

    with use("zh"):
        flipper = widgets.bit_flipper("e4m3", code=0x38)
        explorer = widgets.value_explorer(0.1, "e4m3")
        slider = widgets.magnitude_explorer(("e4m3", "e5m2"), exponent=-8)
    legend = flipper.children[0].value
    assert "符号位" in legend and "尾数" in legend and "sign" not in legend
    assert [b.tooltip for b in flipper.buttons[:2]] == ["第 7 位：符号位", "第 6 位：指数"]
    assert "尾数" in flipper.text.value
    flipper.buttons[0].value = True  # a change after the block: the widget keeps its language
    assert "尾数" in flipper.text.value and "= -1.0" in flipper.text.value
    assert (explorer.format.description, explorer.saturate.description) == ("格式", "饱和")
    capsys.readouterr()
    slider.children[0].value = -9  # outside a kernel the interactive's output goes to stdout
    shown = capsys.readouterr().out + "".join(o.get("text", "") for o in slider.children[-1].outputs)
    assert "误差" in shown and "次正规数" in shown
    english = widgets.bit_flipper("e4m3", code=0x38)
    assert "sign" in english.children[0].value and english.buttons[0].tooltip == "bit 7: sign"


def test_a_chinese_kernel_gets_chinese_texts_from_the_environment() -> None:
    import os

    code = "from fp8lab import widgets; print(widgets.describe_code(0x38, 'e4m3'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "FP8LAB_LANG": "zh"}).stdout
    assert "字段  符号位 0，指数 7，尾数 0" in out and "正规数" in out
