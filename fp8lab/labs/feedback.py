"""Feedback for lab tests: each check says what was expected and what came back, never a bare assert.

Floats compare exactly by default, with NaN equal to NaN and -0.0 different from +0.0 (the sign of
zero is a bit of the format); arrays compare element by element and the message names the first
few elements that differ, with their inputs when the test passes ``inputs``. A failed check raises
``AssertionError`` carrying that message, which nbgrader shows in the feedback.

Every message is in English and Chinese in one string (one nbgrader assignment serves a class that
reads either edition); the texts are the templates of :mod:`fp8lab.labs.messages`.

>>> expect_equal(0.5 + 0.25, 0.75, what="0.5 + 0.25")
>>> expect_equal(-0.0, 0.0, what="decode(0x80)")
Traceback (most recent call last):
...
AssertionError: decode(0x80): expected 0.0, got -0.0 (the sign of zero differs) / decode(0x80)：期望 0.0，得到 -0.0（零的符号不同）
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .messages import Text, either, phrase, say, text_of

__all__ = ["expect_equal", "expect_close", "expect_raises", "describe"]

MAX_SHOWN = 5  # differing elements listed in a message


def describe(v: Any) -> str:
    """A short, exact description of a value for a feedback message (floats with their bits when float32).

    >>> describe(np.float32(1.5)), describe(3), describe(float("nan"))
    ('1.5 (float32 0x3FC00000)', '3', 'nan')
    """
    if isinstance(v, np.floating) and v.dtype == np.float32:
        return f"{float(v)!r} (float32 0x{int(np.asarray(v).view(np.uint32)):08X})"
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, (bool, np.bool_)):
        return repr(bool(v))
    if isinstance(v, (int, np.integer)):
        return repr(int(v))
    if isinstance(v, np.ndarray):
        text = np.array2string(v, threshold=12, max_line_width=100)
        return f"array({text}, dtype={v.dtype}, shape={v.shape})"
    text = repr(v)
    return text if len(text) <= 200 else text[:197] + "..."


def _same_float(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _scalar_problem(got: Any, want: Any) -> Text | str | None:
    """Why ``got`` is not ``want`` (both scalars), or None when they agree ("" when only the values differ)."""
    if isinstance(want, (bool, np.bool_)):
        if not isinstance(got, (bool, np.bool_)):
            return phrase("want_bool", type=type(got).__name__)
        return None if bool(got) == bool(want) else ""
    if isinstance(want, (int, np.integer)):
        if isinstance(got, (float, np.floating)) and float(got).is_integer():
            return None if int(got) == int(want) else ""
        if not isinstance(got, (int, np.integer)) or isinstance(got, (bool, np.bool_)):
            return phrase("want_integer", type=type(got).__name__)
        return None if int(got) == int(want) else ""
    if isinstance(want, (float, np.floating)):
        if not _is_number(got):
            return phrase("want_number", type=type(got).__name__)
        g, w = float(got), float(want)
        if _same_float(g, w):
            return None
        if g == w:
            return phrase("sign_of_zero")
        return ""
    return None if got == want else ""


def _message(what: str, got: Any, want: Any, why: Text | str) -> str:
    if why:
        return say("expected_got_because", what=what, want=describe(want), got=describe(got), why=why)
    return say("expected_got", what=what, want=describe(want), got=describe(got))


def _as_array(v: Any) -> np.ndarray | None:
    if isinstance(v, np.ndarray):
        return v
    if isinstance(v, (list, tuple)) and v and all(_is_number(x) for x in v):
        return np.asarray(v)
    return None


def _array_problem(got: Any, want: np.ndarray, what: str, inputs: Any, exact_dtype: bool) -> str | None:
    try:
        g = np.asarray(got)
    except Exception:  # noqa: BLE001 - anything that is not array-like
        return say("want_array_like", what=what, want=describe(want), type=type(got).__name__)
    if g.dtype == object or g.dtype.kind in "USV":
        for key in np.ndindex(g.shape):
            if not _is_number(g[key]) and not isinstance(g[key], (bool, np.bool_)):
                return say("want_numbers", what=what, got=describe(g[key]), type=type(g[key]).__name__,
                           at=_at(key), input=_input(inputs, key, want.shape))
        g = g.astype(np.float64)
    if g.shape != want.shape:
        return say("shape_differs", what=what, want=want.shape, got=g.shape, value=describe(got))
    if exact_dtype and g.dtype != want.dtype:
        return say("dtype_differs", what=what, want=want.dtype, got=g.dtype)
    if want.dtype.kind == "f" or g.dtype.kind == "f":
        gf, wf = g.astype(np.float64), want.astype(np.float64)
        both_nan = np.isnan(gf) & np.isnan(wf)
        same = (gf == wf) & (np.signbit(gf) == np.signbit(wf))
        bad = ~(both_nan | same)
    else:
        bad = g != want
    if not bad.any():
        return None
    idx = np.argwhere(bad)
    lines = [phrase("values_differ", what=what, n=len(idx), total=want.size)]
    for i in idx[:MAX_SHOWN]:
        key = tuple(int(k) for k in i)
        where = phrase("at_index", index=_index(key)) if key else phrase("at_the_value")
        lines.append(phrase("element_differs", where=where, input=_input(inputs, key, want.shape),
                            want=describe(want[key]), got=describe(g[key])))
    return _lines(lines)


def _what(what: Any) -> Any:
    """The label of the checked value: the default "result" in both languages, else as the test gave it."""
    return phrase("result") if isinstance(what, str) and not isinstance(what, Text) and what == "result" else what


def _item(what: Any, i: int) -> Any:
    """``what[i]``, in both languages when ``what`` is bilingual."""
    return Text(f"{what.en}[{i}]", f"{what.zh}[{i}]") if isinstance(what, Text) else f"{what}[{i}]"


def _lines(lines: list[Text]) -> Text:
    """Lines of bilingual texts as one message: the English block, then the Chinese block."""
    return Text("\n".join(t.en for t in lines), "\n".join(t.zh for t in lines))


def _index(key: tuple[int, ...]) -> str:
    return ", ".join(map(str, key))


def _at(key: tuple[int, ...]) -> Text | str:
    return phrase("at_index_suffix", index=_index(key)) if key else ""


def _input(inputs: Any, key: tuple[int, ...], shape: tuple[int, ...]) -> Text | str:
    """`` for input ...`` when ``inputs`` holds the input of the element at ``key`` (a list of labels or an array)."""
    if inputs is None or not key:
        return ""
    if isinstance(inputs, (list, tuple)) and len(inputs) == shape[0]:
        item = inputs[key[0]]
        return phrase("for_input", input=item if isinstance(item, str) else describe(item))
    arr = np.asarray(inputs)
    if arr.shape[: len(key)] == shape[: len(key)]:
        return phrase("for_input", input=describe(arr[key]))
    return ""


def expect_equal(got: Any, want: Any, *, what: str = "result", inputs: Any = None, exact_dtype: bool = False) -> None:
    """Raise ``AssertionError`` saying what was expected and what came back unless ``got`` equals ``want``.

    Scalars, tuples of scalars and numpy arrays are compared exactly (NaN equals NaN, the sign of zero
    counts); ``inputs`` (an array shaped like ``want``) lets the message show the input of each
    differing element; ``exact_dtype`` also requires the same array dtype. Returns None, so a test cell
    that ends with it gets nbgrader's full points rather than partial credit.

    >>> expect_equal(np.array([1.0, np.nan]), np.array([1.0, np.nan]), what="round trip")
    >>> expect_equal([1.0, 3.0], np.array([1.0, 2.0]), what="f(x)", inputs=np.array([0.9, 2.1]))
    Traceback (most recent call last):
    ...
    AssertionError: f(x): 1 of 2 values differ; the first:
      at [1] for input 2.1: expected 2.0, got 3.0
    中文：f(x)：2 个数值中有 1 个不同；前几个：
      位置 [1]，输入 2.1：期望 2.0，得到 3.0
    """
    what = _what(what)
    arr = want if isinstance(want, np.ndarray) else None
    if arr is None and isinstance(want, (list, tuple)) and isinstance(got, np.ndarray):
        arr = _as_array(want)
    if arr is not None:
        problem = _array_problem(got, arr, what, inputs, exact_dtype)
        if problem:
            raise AssertionError(problem)
        return None
    if isinstance(want, (list, tuple)):
        if isinstance(got, np.ndarray) and got.ndim == 1:
            got = got.tolist()
        if not isinstance(got, (list, tuple)) or len(got) != len(want):
            n = len(got) if isinstance(got, (list, tuple)) else None
            why = (phrase("want_items", n=len(want), type=type(got).__name__) if n is None
                   else phrase("want_items_of", n=len(want), type=type(got).__name__, m=n))
            raise AssertionError(_message(what, got, want, why))
        for i, (g, w) in enumerate(zip(got, want)):
            expect_equal(g, w, what=_item(_what(what), i))
        return None
    why = _scalar_problem(got, want)
    if why is not None:
        raise AssertionError(_message(what, got, want, why))
    return None


def expect_close(got: Any, want: Any, *, rel: float = 1e-6, abs: float = 0.0, what: str = "result") -> None:  # noqa: A002
    """Like :func:`expect_equal` for results that may differ by rounding: ``|got - want| <= abs + rel*|want|``.

    >>> expect_close(0.1 + 0.2, 0.3, rel=1e-12, what="0.1 + 0.2")
    >>> expect_close(0.31, 0.3, rel=0.01, what="mean error")
    Traceback (most recent call last):
    ...
    AssertionError: mean error: expected 0.3 within 0.003, got 0.31 (off by 0.01) / mean error：期望 0.3（容差 0.003），得到 0.31（相差 0.01）
    """
    what = _what(what)
    try:
        g = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        raise AssertionError(say("want_number_like", what=what, want=describe(want), type=type(got).__name__)) from None
    w = np.asarray(want, dtype=np.float64)
    if g.shape != w.shape:
        raise AssertionError(say("shape_differs", what=what, want=w.shape, got=g.shape, value=describe(got)))
    tol = abs + rel * np.abs(w)
    with np.errstate(invalid="ignore"):  # inf - inf
        diff = np.abs(g - w)
    ok = (diff <= tol) | (np.isnan(g) & np.isnan(w)) | ((g == w) & np.isinf(w))
    if ok.all():
        return None
    if w.ndim == 0:
        raise AssertionError(say("not_close", what=what, want=describe(float(w)), tol=f"{float(tol):.3g}",
                                 got=describe(float(g)), diff=f"{float(diff):.3g}"))
    idx = np.argwhere(~ok)
    lines = [phrase("values_off", what=what, n=len(idx), total=w.size)]
    for i in idx[:MAX_SHOWN]:
        key = tuple(int(k) for k in i)
        lines.append(phrase("element_off", index=list(key), want=describe(float(w[key])), tol=f"{float(tol[key]):.3g}",
                            got=describe(float(g[key]))))
    raise AssertionError(_lines(lines))


def expect_raises(exc: type[BaseException] | tuple[type[BaseException], ...], fn: Callable[..., Any],
                  *args: Any, what: str | None = None, **kwargs: Any) -> None:
    """Raise ``AssertionError`` unless ``fn(*args, **kwargs)`` raises ``exc``, saying what happened instead.

    >>> expect_raises(ValueError, int, "x")
    >>> expect_raises(ValueError, int, "7", what="int('7')")
    Traceback (most recent call last):
    ...
    AssertionError: int('7'): expected ValueError, but it returned 7 / int('7')：期望 ValueError，但它返回了 7
    """
    names = exc.__name__ if isinstance(exc, type) else either(e.__name__ for e in exc)
    name = getattr(fn, "__name__", None) or phrase("the_function")
    call = f"({', '.join(map(repr, args))})"
    label = what or (Text(name.en + call, name.zh + call) if isinstance(name, Text) else f"{name}{call}")
    try:
        result = fn(*args, **kwargs)
    except exc:
        return None
    except Exception as err:  # noqa: BLE001 - report whatever came instead
        raise AssertionError(say("raised_other", label=label, names=names, error=type(err).__name__, detail=text_of(err))) from None
    raise AssertionError(say("returned_instead", label=label, names=names, got=describe(result)))

