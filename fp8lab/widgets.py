"""Interactive explorers for the notebooks, each with a plain function behind it that works without widgets.

``bit_flipper`` (one toggle button per bit) is backed by :func:`flip` and :func:`describe_code`;
``value_explorer`` (a number and a format) is backed by :func:`describe_value`. ipywidgets is
imported only when a widget is built, so this module imports without it.

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

from ._optional import require
from .codec import decode
from .anatomy import bit_string, explain, fields
from .formats import FloatFormat, Format
from .registry import get_format, list_formats

__all__ = ["flip", "field_of_bit", "describe_code", "describe_value", "bit_flipper", "value_explorer"]

#: ipywidgets button styles for the three fields (sign, exponent, mantissa; integer bits).
_STYLES = {"sign": "danger", "exponent": "info", "mantissa": "success", "integer": ""}


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


def describe_code(code: int, fmt: "str | Format") -> str:
    """The bits, fields, kind and value of one code, with the arithmetic written out.

    >>> print(describe_code(0x01, "e4m3"))
    0x01 = 0 0000 001 in float8_e4m3fn
      fields  sign 0, exponent 0, mantissa 1
      kind    subnormal
      value   (-1)^0 x 2^(1-7) x (1/8) = 0.001953125
    """
    f = get_format(fmt)
    code = _check_code(code, f)
    value = float(decode(np.asarray(code, dtype=f.code_dtype), f))
    e = explain(value, f)  # a decoded value is exact, so it explains the same code (NaN: the same kind)
    width = (f.bits + 3) // 4
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
    buttons = [w.ToggleButton(value=bool(code >> b & 1), description=str(code >> b & 1),
                              button_style=_STYLES[field_of_bit(b, f)],
                              tooltip=f"bit {b}: {field_of_bit(b, f)}",
                              layout=w.Layout(width="2.4em", padding="0")) for b in bits]
    text = w.HTML(_pre(describe_code(code, f)))

    def refresh(change: dict) -> None:
        change["owner"].description = "1" if change["new"] else "0"
        current = sum(1 << b for b, btn in zip(bits, buttons) if btn.value)
        text.value = _pre(describe_code(current, f))

    for btn in buttons:
        btn.observe(refresh, names="value")
    swatch = lambda var, text: f"<span style='color:var({var})'><b>{text}</b></span>"
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
    menu = w.Dropdown(options=[g.name for g in list_formats()], value=get_format(fmt).name, description="format")
    saturate = w.Checkbox(value=False, description="saturate")
    text = w.HTML()

    def refresh(_: object = None) -> None:
        text.value = _pre(describe_value(number.value, menu.value, saturate=saturate.value))

    for widget in (number, menu, saturate):
        widget.observe(refresh, names="value")
    refresh()
    box = w.VBox([w.HBox([number, menu, saturate]), text])
    box.number, box.format, box.saturate, box.text = number, menu, saturate, text
    return box


def compare_formats_at(x: float, formats=("e4m3", "e5m2")) -> str:
    """What ``x`` becomes in each format: the stored value, the relative error and the kind of code.

    >>> print(compare_formats_at(2.0**-8 * 1.3))
    x = 0.005078125
      float8_e4m3fn  0.005859375  error +15.38%  subnormal
      float8_e5m2    0.0048828125  error -3.85%  normal
    """
    x = float(x)
    lines = [f"x = {x!r}"]
    for name in formats:
        e = explain(x, name)
        err = f"error {e.relative_error:+.2%}" if e.relative_error == e.relative_error else "error -"
        lines.append(f"  {get_format(name).name:14s} {e.value!r}  {err}  {e.kind}")
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
    return w.interactive(lambda e: print(compare_formats_at(mantissa * 2.0**e, formats)), e=slider)
