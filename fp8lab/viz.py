"""Figures for the course: value grids, relative spacing, rounding-error histograms and bit boxes.

Each function builds a matplotlib ``Figure`` without pyplot (nothing is shown, nothing is left open;
a notebook displays the returned figure), labels its axes with units and puts the finding, computed
from the data, in the title. Pass ``ax=`` to draw into an axes of your own figure instead.

>>> fig = plot_value_grid(["e4m3", "e5m2"]); type(fig).__name__
'Figure'
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from ._optional import require

require("matplotlib", "fp8lab's plots")  # an ImportError that names the extra to install, if it is missing

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .codec import decode, encode, quantize
from .anatomy import bit_string, explain, fields
from .formats import FloatFormat, Format, IntFormat
from .registry import get_format

__all__ = ["figure_and_axes", "plot_value_grid", "plot_relative_spacing", "plot_rounding_error", "plot_bits",
           "positive_values", "COLORS"]

#: One colour per bit field (and for subnormal values), shared by every figure and the widgets.
COLORS = {"sign": "#d62728", "exponent": "#1f77b4", "mantissa": "#2ca02c", "integer": "#7f7f7f",
          "subnormal": "#ff7f0e", "normal": "#1f77b4"}


def _float_formats(formats: "str | Format | Sequence[str | Format]") -> list[FloatFormat]:
    items = [formats] if isinstance(formats, (str, FloatFormat, IntFormat)) else list(formats)
    out = [get_format(f) for f in items]
    for f in out:
        if not isinstance(f, FloatFormat):
            raise TypeError(f"{f.name} is an integer format; these plots are for floating-point formats")
    if not out:
        raise ValueError("give at least one format")
    return out


def figure_and_axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    """The figure of ``ax``, or a new pyplot-free figure with one axes of ``figsize`` inches.

    >>> fig, ax = figure_and_axes(None, (4, 3)); fig.get_size_inches().tolist()
    [4.0, 3.0]
    """
    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def _pow2(x: float) -> str:
    """``2^k`` when x is a power of two, else x in a short general format."""
    k = math.log2(x) if x > 0 else math.nan
    return f"2^{int(k)}" if k == int(k) else f"{x:.3g}"


def positive_values(fmt: "str | Format", max_points: int = 2048) -> np.ndarray:
    """The positive finite values of ``fmt``: all of them when there are at most ``max_points``, else a sample.

    The sample takes the same number of evenly spaced significands in every binade and rounds them
    into the format with the codec, so every returned number is a value of the format.

    >>> positive_values("fp4").tolist()
    [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    >>> v = positive_values("fp32"); bool(v.min() == 2.0**-149 and v.max() < 2.0**128)
    True
    """
    f = _float_formats(fmt)[0]
    count = (f.num_finite - int(f.has_zero)) // (2 if f.signed else 1)
    if count <= max_points:
        v = f.values()
        return v[v > 0]
    lo, hi = math.floor(math.log2(f.min_subnormal)), math.floor(math.log2(f.max))
    per = max(2, 2 ** int(math.log2(max(2, max_points // (hi - lo + 1)))))
    grid = np.ldexp(1.0 + np.arange(per) / per, np.arange(lo, hi + 1)[:, None]).ravel()
    q = quantize(grid[grid <= f.max].astype(np.float32), f).astype(np.float64)
    return np.unique(q[np.isfinite(q) & (q > 0)])


def _next_up(v: np.ndarray, f: FloatFormat) -> np.ndarray:
    """The next larger value of each positive value ``v`` (code + 1; positive codes are ordered)."""
    codes = encode(v.astype(np.float32), f)
    return decode(codes + np.ones_like(codes), f).astype(np.float64)


def plot_value_grid(formats: "str | Format | Sequence[str | Format]", *, ax: Axes | None = None,
                    max_ticks: int = 2048) -> Figure:
    """Draw every positive value of each format as a tick on a log2 axis, one row per format, subnormals marked.

    Formats with more than ``max_ticks`` positive values (BF16, FP16, FP32) are drawn as bands.

    >>> fig = plot_value_grid(["e4m3"]); type(fig).__name__
    'Figure'
    """
    fmts = _float_formats(formats)
    fig, ax = figure_and_axes(ax, (9, 0.9 + 0.75 * len(fmts)))
    for row, f in enumerate(fmts):
        y = len(fmts) - 1 - row
        lo, top = math.log2(f.min_subnormal), math.log2(f.max)
        normal_lo = math.log2(f.min_normal)
        count = (f.num_finite - int(f.has_zero)) // (2 if f.signed else 1)
        if count <= max_ticks:
            v = positive_values(f, max_ticks)
            sub = v < f.min_normal
            ax.vlines(np.log2(v[~sub]), y - 0.3, y + 0.3, color=COLORS["normal"], lw=0.8)
            ax.vlines(np.log2(v[sub]), y - 0.3, y + 0.3, color=COLORS["subnormal"], lw=0.8)
        else:  # too many values to draw one by one: a band, as dense as the ticks would be
            ax.fill_between([normal_lo, top], y - 0.3, y + 0.3, color=COLORS["normal"], alpha=0.85, lw=0)
            if lo < normal_lo:
                ax.fill_between([lo, normal_lo], y - 0.3, y + 0.3, color=COLORS["subnormal"], alpha=0.85, lw=0)
        ax.text(top, y + 0.34, f" max {f.max:.6g}", fontsize=8, va="bottom", ha="right")
    span = {f.name: math.log2(f.max / f.min_subnormal) for f in fmts}
    per = lambda f: f"2^{f.mantissa_bits}" if f.mantissa_bits > 4 else f"{2 ** f.mantissa_bits}"
    ax.set_yticks(range(len(fmts)), [f"{f.name}\n{per(f)} per binade, {span[f.name]:.1f} binades"
                                     for f in reversed(fmts)], fontsize=8)
    ax.set_ylim(-0.6, len(fmts) - 0.3)
    ax.set_xlabel("log2(value)   (x = k means the value 2^k; one unit = one binade, a factor of 2)")
    ax.grid(axis="x", alpha=0.3)
    ax.plot([], [], color=COLORS["normal"], lw=4, label="normal values")
    ax.plot([], [], color=COLORS["subnormal"], lw=4, label="subnormal values")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    if len(fmts) == 1:
        f = fmts[0]
        title = f"{f.name}: {count} positive values over {span[f.name]:.1f} binades, {per(f)} per binade"
    else:
        wide = max(fmts, key=lambda f: span[f.name])
        narrow = min(fmts, key=lambda f: span[f.name])
        dense = max(fmts, key=lambda f: f.mantissa_bits)
        sparse = min(fmts, key=lambda f: f.mantissa_bits)
        title = (f"Range: {wide.name} spans {span[wide.name]:.0f} binades, {narrow.name} {span[narrow.name]:.1f}\n"
                 f"Precision: {dense.name} has {per(dense)} values per binade, {sparse.name} {per(sparse)}")
    ax.set_title(title, fontsize=10)
    return fig


def plot_relative_spacing(formats: "str | Format | Sequence[str | Format]", *, ax: Axes | None = None,
                          max_points: int = 4096) -> Figure:
    """Plot the relative gap to the next value, ``(next - v) / v``, against ``v``: a sawtooth per format.

    >>> fig = plot_relative_spacing(["e4m3", "e5m2"]); type(fig).__name__
    'Figure'
    """
    fmts = _float_formats(formats)
    fig, ax = figure_and_axes(ax, (9, 4.2))
    worst = []
    for f in fmts:
        v = positive_values(f, max_points)
        v = v[v < f.max]
        rel = (_next_up(v, f) - v) / v
        ax.plot(v, rel, drawstyle="steps-post", lw=1.2, label=f"{f.name} (epsilon {_pow2(f.epsilon)})")
        normal = v >= f.min_normal
        worst.append(f"{f.name} {_pow2(float(rel[normal].max()))}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("value v (log2 scale)")
    ax.set_ylabel("relative gap (next - v) / v")
    ax.legend(fontsize=8)
    ax.set_title("Largest relative gap among normal values: " + ", ".join(worst)
                 + "\n(it halves across each binade and climbs toward 1 in the subnormals)", fontsize=10)
    return fig


def plot_rounding_error(x: "np.ndarray | Sequence[float]", fmt: "str | Format", *, ax: Axes | None = None,
                        bins: int = 80, saturate: bool = False, rounding: str = "nearest") -> Figure:
    """Histogram of the relative error ``(quantize(x) - x) / x`` of rounding ``x`` into ``fmt``.

    >>> fig = plot_rounding_error(np.linspace(0.1, 10, 1000), "e4m3"); type(fig).__name__
    'Figure'
    """
    f = _float_formats(fmt)[0]
    x32 = np.asarray(x, dtype=np.float32).ravel()
    x32 = x32[np.isfinite(x32) & (x32 != 0)]
    q = quantize(x32, f, saturate=saturate, rounding=rounding).astype(np.float64)
    xs = x32.astype(np.float64)
    finite, zero = np.isfinite(q), q == 0
    kept = finite & ~zero  # underflow (error -1) and overflow are counted in the title, not drawn
    rel = (q[kept] - xs[kept]) / xs[kept]
    u = f.epsilon / 2
    edge = 4 * u  # the axis shows ±4u: the normal range's errors and a margin; larger ones are counted
    beyond = int(np.sum(np.abs(rel) > edge))
    fig, ax = figure_and_axes(ax, (8, 3.8))
    ax.hist(np.clip(rel, -edge, edge), bins=bins, range=(-edge, edge), color=COLORS["normal"], alpha=0.8)
    for s in (-u, u):
        ax.axvline(s, color=COLORS["sign"], ls="--", lw=1, label="±u = ±2^-%d (half of epsilon)" % (f.mantissa_bits + 1)
                   if s > 0 else None)
    ax.set_xlim(-edge, edge)
    ax.set_xlabel("relative error (quantize(x) - x) / x   (dimensionless; errors beyond ±4u piled at the edges)")
    ax.set_yscale("log")
    ax.set_ylabel("number of inputs (log scale)")
    ax.legend(fontsize=7, loc="upper right")
    within = int(np.sum(np.abs(rel) <= u))
    share = within / rel.size if rel.size else 0.0
    title = f"{f.name} ({rounding}): {within} of {rel.size} nonzero results ({share:.2%}) within ±u"
    extra = [f"{beyond} beyond ±4u (max |error| {np.abs(rel).max():.3g})"] if beyond else []
    if zero.any():
        extra.append(f"{int(zero.sum())} flushed to 0")
    if (~finite).any():
        extra.append(f"{int((~finite).sum())} overflowed")
    ax.set_title(title + ("\n" + "; ".join(extra) if extra else ""), fontsize=9)
    return fig


def _field_names(f: Format) -> list[str]:
    """The field each bit belongs to, most significant bit first."""
    if isinstance(f, IntFormat):
        return (["sign"] if f.signed else []) + ["integer"] * (f.bits - int(f.signed))
    return (["sign"] if f.signed else []) + ["exponent"] * f.exponent_bits + ["mantissa"] * f.mantissa_bits


def plot_bits(code: int, fmt: "str | Format", *, ax: Axes | None = None) -> Figure:
    """Draw a code as one coloured box per bit (sign, exponent, mantissa) with each field's value below.

    >>> fig = plot_bits(0x7E, "e4m3"); fig.axes[0].get_title()
    '0x7E = 0 1111 110 in float8_e4m3fn is 448.0 (normal)'
    """
    f = get_format(fmt)
    if not isinstance(code, (int, np.integer)) or not 0 <= int(code) < 2**f.bits:
        raise ValueError(f"code must be an int in 0..{2**f.bits - 1} for {f.name}, got {code!r}")
    code = int(code)
    names = _field_names(f)
    fig, ax = figure_and_axes(ax, (max(3.0, 0.45 * f.bits + 1), 1.9))
    raw = format(code, f"0{f.bits}b")
    for i, (bit, name) in enumerate(zip(raw, names)):
        ax.add_patch(Rectangle((i, 0), 1, 1, facecolor=COLORS[name], alpha=0.35 + 0.5 * (bit == "1"),
                               edgecolor="black"))
        ax.text(i + 0.5, 0.5, bit, ha="center", va="center", fontsize=12, family="monospace")
        ax.text(i + 0.5, 1.08, str(f.bits - 1 - i), ha="center", va="bottom", fontsize=7, color="0.4")
    value = float(decode(np.asarray(code, dtype=f.code_dtype), f))
    if isinstance(f, FloatFormat):
        s, e, m = fields(code, f)
        labels = {"sign": f"sign {s}", "exponent": f"exponent {e} (2^({e}-{f.bias}))",
                  "mantissa": f"mantissa {m} ({m}/{2 ** f.mantissa_bits})"}
        kind = explain(value, f).kind
    else:
        labels = {"sign": "sign", "integer": "two's complement" if f.signed else "unsigned"}
        kind = "integer"
    for name in dict.fromkeys(names):
        idx = [i for i, n in enumerate(names) if n == name]
        ax.text((idx[0] + idx[-1] + 1) / 2, -0.12, labels[name], ha="center", va="top", fontsize=8,
                color=COLORS[name])
    ax.set_xlim(-0.2, f.bits + 0.2)
    ax.set_ylim(-0.6, 1.45)
    ax.set_aspect("equal")
    ax.axis("off")
    width = (f.bits + 3) // 4
    ax.set_title(f"0x{code:0{width}X} = {bit_string(code, f)} in {f.name} is {value!r} ({kind})", fontsize=10)
    return fig
