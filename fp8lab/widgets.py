"""Interactive explorers for the notebooks, each with a plain function behind it that works without widgets.

``bit_flipper`` (one toggle button per bit) is backed by :func:`flip` and :func:`describe_code`;
``value_explorer`` (a number and a format) is backed by :func:`describe_value`. ipywidgets is
imported only when a widget is built, so this module imports without it.

Labels, tooltips and the text a widget shows are in the edition's language (:func:`fp8lab.lang.current`:
Chinese in a kernel of ``make lab LANG=zh``); the plain functions take ``lang=`` (default: the same).

>>> hex(flip(0x7E, 0, "e4m3"))
'0x7f'
>>> print(describe_code(0x7F, "e4m3"))
0x7F = 0 1111 111 in float8_e4m3fn
  fields  sign 0, exponent 15, mantissa 7
  kind    NaN
  value   NaN (the all-ones code)
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from . import lang as _lang
from ._optional import require
from .codec import decode
from .anatomy import bit_string, explain, fields
from .formats import FloatFormat, Format
from .registry import get_format, list_formats

__all__ = ["flip", "field_of_bit", "describe_code", "describe_value", "bit_flipper", "value_explorer"]

#: ipywidgets button styles for the three fields (sign, exponent, mantissa; integer bits).
_STYLES = {"sign": "danger", "exponent": "info", "mantissa": "success", "integer": ""}

#: the widgets' words in Chinese (terms from fp8lab/data/termbase.toml)
ZH = {"sign": "符号位", "exponent": "指数", "mantissa": "尾数", "integer": "整数位", "fields": "字段", "kind": "类型",
      "value": "值", "error": "误差", "zero": "零", "subnormal": "次正规数", "normal": "正规数", "inf": "无穷大",
      "NaN": "非数（NaN）", "format": "格式", "saturate": "饱和", "bit": "位", "in": "格式", "red": "红色",
      "teal": "青色", "green": "绿色"}


#: the words of :func:`fp8lab.explain`'s formulas for inf and NaN codes, in Chinese
_ZH_FORMULA = {" (top exponent, mantissa 0)": "（最大指数，尾数 0）", " (top exponent, mantissa != 0)": "（最大指数，尾数 != 0）",
               " (the all-ones code)": "（全一编码）", " (the negative-zero code)": "（负零编码）",
               " (none: every code is a number)": "（无：每个编码都是数）"}


def _word(word: str, lang: str | None = None) -> str:
    """``word`` in the language ``lang`` (default: the edition's).

    >>> _word("mantissa", "zh"), _word("mantissa", "en")
    ('尾数', 'mantissa')
    """
    return _lang.pick(word, ZH.get(word, word), lang)


def _check_code(code: int, f: Format) -> int:
    if isinstance(code, bool) or not isinstance(code, (int, np.integer)):
        raise TypeError(f"a code is an int, got {type(code).__name__}")
    if not 0 <= int(code) < 2**f.bits:
        raise ValueError(f"code {code} is out of range for {f.name}: codes are 0..{2**f.bits - 1} ({f.bits} bits)")
    return int(code)


def field_of_bit(bit: int, fmt: "str | Format") -> str:
    """Which field bit number ``bit`` (0 = least significant) belongs to: sign, exponent, mantissa or integer.

    >>> [field_of_bit(b, "e5m2") for b in (7, 6, 2, 1, 0)]
    ['sign', 'exponent', 'exponent', 'mantissa', 'mantissa']
    """
    f = get_format(fmt)
    if isinstance(bit, bool) or not isinstance(bit, (int, np.integer)) or not 0 <= bit < f.bits:
        raise ValueError(f"bit must be an int in 0..{f.bits - 1} for {f.name}, got {bit!r}")
    if f.signed and bit == f.bits - 1:
        return "sign"
    if not isinstance(f, FloatFormat):
        return "integer"
    return "mantissa" if bit < f.mantissa_bits else "exponent"


def flip(code: int, bit: int, fmt: "str | Format") -> int:
    """Flip bit number ``bit`` (0 = least significant) of a code of ``fmt`` and return the new code.

    >>> flip(0x38, 7, "e4m3"), flip(0x38, 3, "e4m3")  # 1.0 -> -1.0, and 1.0 -> 0.5
    (184, 48)
    """
    f = get_format(fmt)
    code = _check_code(code, f)
    field_of_bit(bit, f)  # validates the bit number
    return code ^ (1 << int(bit))


def describe_code(code: int, fmt: "str | Format", lang: str | None = None) -> str:
    """The bits, fields, kind and value of one code, with the arithmetic written out (in ``lang``, default the edition's).

    >>> print(describe_code(0x01, "e4m3", lang="en"))
    0x01 = 0 0000 001 in float8_e4m3fn
      fields  sign 0, exponent 0, mantissa 1
      kind    subnormal
      value   (-1)^0 x 2^(1-7) x (1/8) = 0.001953125
    >>> print(describe_code(0x01, "e4m3", lang="zh"))
    0x01 = 0 0000 001（float8_e4m3fn）
      字段  符号位 0，指数 0，尾数 1
      类型  次正规数
      值    (-1)^0 x 2^(1-7) x (1/8) = 0.001953125
    """
    f = get_format(fmt)
    code = _check_code(code, f)
    value = float(decode(np.asarray(code, dtype=f.code_dtype), f))
    e = explain(value, f)  # a decoded value is exact, so it explains the same code (NaN: the same kind)
    width = (f.bits + 3) // 4
    zh = (_lang.check_lang(lang) if lang is not None else _lang.current()) == "zh"
    if zh:
        lines = [f"0x{code:0{width}X} = {bit_string(code, f)}（{f.name}）"]
        if isinstance(f, FloatFormat):
            s, ex, m = fields(code, f)
            lines.append(f"  字段  {'符号位 ' + str(s) + '，' if f.signed else ''}指数 {ex}，尾数 {m}")
        formula = e.formula
        for en_words, zh_words in _ZH_FORMULA.items():
            formula = formula.replace(en_words, zh_words)
        return "\n".join(lines + [f"  类型  {ZH.get(e.kind, e.kind)}", f"  值    {formula}"])
    lines = [f"0x{code:0{width}X} = {bit_string(code, f)} in {f.name}"]
    if isinstance(f, FloatFormat):
        s, ex, m = fields(code, f)
        lines.append(f"  fields  {'sign ' + str(s) + ', ' if f.signed else ''}exponent {ex}, mantissa {m}")
    lines += [f"  kind    {e.kind}", f"  value   {e.formula}"]
    return "\n".join(lines)


def describe_value(x: float, fmt: "str | Format", saturate: bool = False) -> str:
    """What ``x`` becomes in ``fmt``: the text of :func:`fp8lab.explain` (code, fields, rounding, notes).

    >>> print(describe_value(500, "e4m3", saturate=True).splitlines()[1])
      code    0x7E = 0 1111 110
    """
    return str(explain(x, fmt, saturate=saturate))


def _pre(text: str) -> str:
    return f"<pre style='line-height:1.3'>{html.escape(text)}</pre>"


def bit_flipper(fmt: "str | Format" = "e4m3", code: int = 0x38) -> Any:
    """A row of toggle buttons, one per bit of ``fmt`` (most significant first), above :func:`describe_code`.

    Needs ipywidgets; the returned ``VBox`` has ``.buttons`` (most significant first) and ``.text``.
    """
    w = require("ipywidgets", "fp8lab's widgets")

    f = get_format(fmt)
    code = _check_code(code, f)
    bits = list(range(f.bits - 1, -1, -1))
    lang = _lang.current()  # the widget keeps the language it was built in
    def tip(b: int) -> str:
        return f"第 {b} 位：{ZH[field_of_bit(b, f)]}" if lang == "zh" else f"bit {b}: {field_of_bit(b, f)}"

    buttons = [w.ToggleButton(value=bool(code >> b & 1), description=str(code >> b & 1),
                              button_style=_STYLES[field_of_bit(b, f)],
                              tooltip=tip(b),
                              layout=w.Layout(width="2.4em", padding="0")) for b in bits]
    text = w.HTML(_pre(describe_code(code, f, lang)))

    def refresh(change: dict) -> None:
        change["owner"].description = "1" if change["new"] else "0"
        current = sum(1 << b for b, btn in zip(bits, buttons) if btn.value)
        text.value = _pre(describe_code(current, f, lang))

    for btn in buttons:
        btn.observe(refresh, names="value")
    swatch = lambda var, text: f"<span style='color:var({var})'><b>{text}</b></span>"
    if lang == "zh":
        legend = w.HTML(f"<small>{f.name}：{swatch('--jp-error-color1', '红色')} = 符号位，"
                        f"{swatch('--jp-info-color1', '青色')} = 指数，"
                        f"{swatch('--jp-success-color1', '绿色')} = 尾数（按钮的颜色）；点击某一位即可翻转它</small>")
    else:
        legend = w.HTML(f"<small>{f.name}: {swatch('--jp-error-color1', 'red')} = sign, "
                        f"{swatch('--jp-info-color1', 'teal')} = exponent, "
                        f"{swatch('--jp-success-color1', 'green')} = mantissa (the button colours); "
                        "click a bit to flip it</small>")
    box = w.VBox([legend, w.HBox(buttons), text])
    box.buttons, box.text = buttons, text
    return box


def value_explorer(x: float = 0.1, fmt: "str | Format" = "e4m3") -> Any:
    """A number box, a format menu and a saturate switch above :func:`describe_value`.

    Needs ipywidgets; the returned ``VBox`` has ``.number``, ``.format``, ``.saturate`` and ``.text``.
    """
    w = require("ipywidgets", "fp8lab's widgets")

    number = w.FloatText(value=float(x), description="x")
    menu = w.Dropdown(options=[g.name for g in list_formats()], value=get_format(fmt).name,
                      description=_word("format"))
    saturate = w.Checkbox(value=False, description=_word("saturate"))
    text = w.HTML()

    def refresh(_: object = None) -> None:
        text.value = _pre(describe_value(number.value, menu.value, saturate=saturate.value))

    for widget in (number, menu, saturate):
        widget.observe(refresh, names="value")
    refresh()
    box = w.VBox([w.HBox([number, menu, saturate]), text])
    box.number, box.format, box.saturate, box.text = number, menu, saturate, text
    return box


def compare_formats_at(x: float, formats=("e4m3", "e5m2"), lang: str | None = None) -> str:
    """What ``x`` becomes in each format: the stored value, the relative error and the kind of code (in ``lang``).

    >>> print(compare_formats_at(2.0**-8 * 1.3, lang="en"))
    x = 0.005078125
      float8_e4m3fn  0.005859375  error +15.38%  subnormal
      float8_e5m2    0.0048828125  error -3.85%  normal
    >>> print(compare_formats_at(2.0**-8 * 1.3, lang="zh").splitlines()[1])
      float8_e4m3fn  0.005859375  误差 +15.38%  次正规数
    """
    x = float(x)
    lines = [f"x = {x!r}"]
    for name in formats:
        e = explain(x, name)
        word = _word("error", lang)
        err = f"{word} {e.relative_error:+.2%}" if e.relative_error == e.relative_error else f"{word} -"
        lines.append(f"  {get_format(name).name:14s} {e.value!r}  {err}  {_word(e.kind, lang)}")
    return "\n".join(lines)


def magnitude_explorer(formats=("e4m3", "e5m2"), exponent: int = 0, mantissa: float = 1.3) -> Any:
    """A slider over ``log2 |x|`` above :func:`compare_formats_at`: walk a value from overflow down to zero.

    Needs ipywidgets; returns an ``interactive`` widget whose slider is ``.children[0]``.
    """
    w = require("ipywidgets", "fp8lab's widgets")
    fs = [get_format(f) for f in formats]
    lo = min(int(np.floor(np.log2(f.min_subnormal))) for f in fs) - 2
    hi = max(int(np.ceil(np.log2(f.max))) for f in fs) + 1
    slider = w.IntSlider(value=int(exponent), min=lo, max=hi, step=1, description="log2 |x|", continuous_update=False)
    lang = _lang.current()
    return w.interactive(lambda e: print(compare_formats_at(mantissa * 2.0**e, formats, lang)), e=slider)
