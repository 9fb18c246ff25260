"""Figures for the scaling chapter: where a tensor falls in a format's window, scale sweeps, scale maps,
amax histories, the recipe trade-off and loss-scale trajectories.

Each ``plot_*`` function builds a matplotlib ``Figure`` without pyplot (nothing is shown or left
open; a notebook displays the returned figure), labels its axes with units and states the finding,
computed from the data, in the title. Pass ``ax=`` to draw into an axes of your own figure.

>>> import numpy as np
>>> window_fractions(np.array([1000.0, 1.0, 1e-3, 1e-9], np.float32), "e4m3")
{'overflow': 0.25, 'normal': 0.25, 'subnormal': 0.25, 'underflow': 0.25}
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
from .._optional import require

require("matplotlib", "fp8lab's plots")  # an ImportError that names the extra to install, if it is missing

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..codec import quantize
from ..formats import FloatFormat, Format
from ..registry import get_format
from ..viz import COLORS, figure_and_axes
from .blocks import to_numpy
from .metrics import sqnr_db
from .quantize import quantize_tensor
from .recipes import TensorScaling
from .analysis import _nonzero, scale_sweep, window_fractions  # the numbers these plots draw

__all__ = ["window_fractions", "plot_magnitude_window", "scale_sweep", "plot_scale_sweep", "plot_scale_map",
           "plot_amax_history", "plot_recipe_tradeoff", "plot_loss_scale"]

_REGION_COLORS = {"overflow": COLORS["sign"], "normal": COLORS["normal"], "subnormal": COLORS["subnormal"],
                  "underflow": "#7f7f7f"}


def _pct(v: float) -> str:
    """A fraction as a percentage that never shows a non-zero share as 0% or a partial one as 100%."""
    if v in (0.0, 1.0):
        return f"{100 * v:.0f}%"
    if v < 0.01:
        return f"{100 * v:.2g}%"
    return f"{100 * v:.3f}%" if v > 0.99 else f"{100 * v:.1f}%"


def plot_magnitude_window(x: Any, fmt: "str | Format", scale: Any = 1.0, *, ax: Axes | None = None,
                          bins: int = 100, label: str | None = None) -> Figure:
    """Histogram of ``log2 |x / scale|`` over the format's regions: flushed to 0, subnormal, normal, above max.

    >>> fig = plot_magnitude_window(np.geomspace(1e-4, 1e3, 500), "e4m3", scale=2.0); type(fig).__name__
    'Figure'
    """
    f = get_format(fmt)
    v = _nonzero(x, scale)
    fig, ax = figure_and_axes(ax, (8, 3.6))
    logs = np.log2(np.abs(v.astype(np.float64))) if v.size else np.zeros(0)
    top = math.log2(f.max)
    if isinstance(f, FloatFormat):
        flush, normal_lo = math.log2(f.min_subnormal) - 1, math.log2(f.min_normal)
    else:
        flush = normal_lo = -1.0  # integers: |v| < 0.5 rounds to 0, above it the grid step is 1
    lo = min(float(logs.min()) if logs.size else flush, flush) - 1
    hi = max(float(logs.max()) if logs.size else top, top) + 1
    spans = [("underflow", lo, flush, "rounds to 0"), ("subnormal", flush, normal_lo, "subnormal"),
             ("normal", normal_lo, top, "normal" if isinstance(f, FloatFormat) else "representable"),
             ("overflow", top, hi, f"above max {f.max:g}")]
    for key, a, b, text in spans:
        if b > a:
            ax.axvspan(a, b, color=_REGION_COLORS[key], alpha=0.12, lw=0, label=text)
    ax.hist(logs, bins=bins, range=(lo, hi), color="black", alpha=0.75)
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel(f"log2(|x| / scale)   (x = k means 2^k in units of the scale)")
    ax.set_ylabel("number of elements (log scale)")
    ax.legend(fontsize=7, loc="upper left")
    fr = window_fractions(x, f, scale)
    head = f"{label} in {f.name}" if label else f.name
    sub = f"{_pct(fr['subnormal'])} subnormal, " if isinstance(f, FloatFormat) else ""
    ax.set_title(f"{head}\n{_pct(fr['overflow'])} above max, {sub}{_pct(fr['underflow'])} round to 0", fontsize=10)
    return fig


def plot_scale_sweep(x: Any, formats: "Sequence[str | Format]", margins: Sequence[int], *,
                     ax: Axes | None = None, tolerance_db: float = 1.0) -> Figure:
    """SQNR against the scale's headroom ``2^margin`` (per-tensor), one line per format, with each plateau's width.

    A plateau that reaches either end of ``margins`` is reported as "at least" its width: the sweep, not
    the format, ends it.

    >>> fig = plot_scale_sweep(np.linspace(-3, 3, 200, dtype=np.float32), ["e4m3", "int8"], range(-2, 4)); type(fig).__name__
    'Figure'
    """
    fig, ax = figure_and_axes(ax, (8, 3.8))
    m = np.asarray(list(margins), dtype=int)
    widths = []
    for fmt in formats:
        f = get_format(fmt)
        s = scale_sweep(x, f, m)
        ax.plot(m, s, marker="o", ms=3, label=f.name)
        flat = m[s >= np.nanmax(s) - tolerance_db]
        edge = flat.max() == m.max() or flat.min() == m.min()   # the plateau runs into the sweep's end: a lower bound
        widths.append(f"{f.name} {'at least ' if edge else ''}{flat.max() - flat.min() + 1} binades"
                      + (" (to the sweep's edge)" if edge else ""))
    ax.axvline(0, color="0.4", ls="--", lw=1)
    step = max(1, math.ceil((m.max() - m.min()) / 12)) if m.size else 1
    ax.set_xticks(range(int(m.min()), int(m.max()) + 1, step) if m.size else [])
    ax.set_xlabel("margin m (binades of headroom): scale = amax / fmt.max x 2^m   (m < 0 clips the largest values)")
    ax.set_ylabel("SQNR (dB)")
    ax.legend(fontsize=8)
    ax.set_title(f"Scales within {tolerance_db:g} dB of the best: " + ", ".join(widths), fontsize=10)
    return fig


def plot_scale_map(q: Any, *, ax: Axes | None = None, title: str | None = None, max_pixels: int = 256,
                   vmin: float | None = None, vmax: float | None = None, colorbar: bool = True,
                   mark_columns: Sequence[int] = ()) -> Figure:
    """Image of ``log2`` of each element's scale for a 2-D QTensor: the shape of the recipe's blocks.

    Tensors larger than ``max_pixels`` per side are shown by the largest scale in each pixel.

    ``vmin``/``vmax`` fix the colour range (in log2 of the scale) so that several maps share one scale;
    ``colorbar=False`` leaves the colour bar to the caller; ``mark_columns`` draws a red triangle above
    each of those columns (outlier channels, say).

    >>> from fp8lab.scaling import BlockScaling, llm_activations
    >>> fig = plot_scale_map(quantize_tensor(llm_activations((64, 256)), "e4m3", BlockScaling((1, 128)))); type(fig).__name__
    'Figure'
    """
    if len(q.shape) != 2:
        raise ValueError(f"plot_scale_map draws 2-D tensors, got shape {q.shape}")
    s = np.log2(np.asarray(to_numpy(q.expanded_scales()), dtype=np.float64))
    step = [max(1, math.ceil(n / max_pixels)) for n in s.shape]
    # shrink to at most max_pixels per side by the largest scale in each pixel (a striding sample
    # would drop single outlier columns); edges are padded with the minimum
    pad = [(0, -n % k) for n, k in zip(s.shape, step)]
    p = np.pad(s, pad, constant_values=np.nanmin(s)) if any(b for _, b in pad) else s
    pooled = p.reshape(p.shape[0] // step[0], step[0], p.shape[1] // step[1], step[1]).max(axis=(1, 3))
    fig, ax = figure_and_axes(ax, (4.5, 3.6))
    im = ax.imshow(pooled, aspect="auto", interpolation="nearest", cmap="viridis",
                   extent=(0, s.shape[1], s.shape[0], 0), vmin=vmin, vmax=vmax)
    if colorbar:
        fig.colorbar(im, ax=ax, label="log2(scale)")
    cols = [int(c) for c in mark_columns]
    if cols:
        ax.plot([c + 0.5 for c in cols], [0] * len(cols), "v", color=COLORS["sign"], ms=5, clip_on=False)
    ax.set_xlabel("column (hidden channel)")
    ax.set_ylabel("row (token)")
    n = int(np.prod(q.scales.shape))
    name = title or f"{type(q.scaling).__name__} block {tuple(q.block)}"
    ax.set_title(f"{name}\n{n} scales, {q.bits_per_element:.3f} bits/element", fontsize=9)
    return fig


def plot_amax_history(amax: Sequence[float], scales: Sequence[float], fmt: "str | Format", *,
                      overflow: "Sequence[bool] | None" = None, ax: Axes | None = None,
                      label: str = "range = scale x fmt.max") -> Figure:
    """Per step: the tensor's amax (dots) and the range its scale allowed (line), overflowing steps in red.

    >>> fig = plot_amax_history([100, 120, 500], [1.0, 0.23, 0.27], "e4m3"); type(fig).__name__
    'Figure'
    """
    f = get_format(fmt)
    a = np.asarray(amax, dtype=np.float64)
    r = np.asarray(scales, dtype=np.float64) * f.max
    over = np.asarray(overflow, dtype=bool) if overflow is not None else a > r
    steps = np.arange(a.size)
    fig, ax = figure_and_axes(ax, (8, 3.6))
    ax.step(steps, r, where="mid", color=COLORS["normal"], lw=1.5, label=label)
    ax.plot(steps[~over], a[~over], "o", ms=3.5, color="black", label="amax of the tensor")
    ax.plot(steps[over], a[over], "o", ms=6, color=COLORS["sign"], label="amax above the range: clipped")
    ax.set_yscale("log", base=2)
    ax.set_xlabel("training step")
    ax.set_ylabel("absolute value (log2 scale)")
    ax.legend(fontsize=8)
    wide = float(np.max(r / a)) if a.size else math.nan
    ax.set_title(f"{int(over.sum())} of {a.size} steps overflow (red); at the widest the range is "
                 f"{wide:.1f}x the amax", fontsize=10)
    return fig


def _spread(y: np.ndarray, gap: float) -> np.ndarray:
    """Label heights for points at heights ``y`` (any order), at least ``gap`` apart, as close to ``y`` as a push allows."""
    order = np.argsort(y)
    out = np.asarray(y, dtype=np.float64)[order].copy()
    for i in range(1, out.size):
        out[i] = max(out[i], out[i - 1] + gap)
    shift = (out - np.asarray(y, dtype=np.float64)[order]).mean()  # centre the pushed stack on the points
    out -= max(shift, 0.0) / 2
    for i in range(1, out.size):
        out[i] = max(out[i], out[i - 1] + gap)
    res = np.empty_like(out)
    res[order] = out
    return res


def plot_recipe_tradeoff(rows: Sequence[Mapping[str, Any]], *, ax: Axes | None = None,
                         metric: str = "sqnr_db") -> Figure:
    """SQNR (dB) against storage (bits per element), one labelled point per row of ``compare_recipes``.

    >>> rows = [{"recipe": "a", "format": "e4m3", "bits_per_element": 8.0, "sqnr_db": 30.0},
    ...         {"recipe": "b", "format": "int4", "bits_per_element": 4.25, "sqnr_db": 17.0}]
    >>> plot_recipe_tradeoff(rows).axes[0].get_xlabel()
    'storage (bits per element, scales included)'
    """
    if not rows:
        raise ValueError("give at least one row (from compare_recipes)")
    x = np.array([float(r["bits_per_element"]) for r in rows])
    y = np.array([float(r[metric]) for r in rows])
    fmts = list(dict.fromkeys(str(r["format"]) for r in rows))
    cmap = {f: f"C{i % 10}" for i, f in enumerate(fmts)}
    fig, ax = figure_and_axes(ax, (10, 6))
    for f in fmts:
        idx = [i for i, r in enumerate(rows) if str(r["format"]) == f]
        ax.scatter(x[idx], y[idx], s=30, color=cmap[f], label=f, zorder=3)
    span_x = max(float(np.ptp(x)), 1.0)
    span_y = max(float(np.nanmax(y) - np.nanmin(y)), 1.0)
    # cluster points whose storage cost is nearly equal; label each cluster in a column to its right
    order = np.argsort(x)
    clusters, cur = [], [int(order[0])]
    for i in order[1:]:
        if x[i] - x[cur[-1]] < 0.08 * span_x:
            cur.append(int(i))
        else:
            clusters.append(cur)
            cur = [int(i)]
    clusters.append(cur)
    for c in clusters:
        ly = _spread(y[c], 0.045 * span_y)
        lx = x[c].max() + 0.06 * span_x
        for i, yy in zip(c, ly):
            ax.annotate(f"{rows[i]['recipe']} ({rows[i]['format']})", (x[i], y[i]), xytext=(lx, yy),
                        fontsize=7.5, va="center", color=cmap[str(rows[i]["format"])],
                        arrowprops=dict(arrowstyle="-", color="0.6", lw=0.6))
    ax.set_xlim(x.min() - 0.1 * span_x, x.max() + 0.55 * span_x)
    ax.set_xlabel("storage (bits per element, scales included)")
    ax.set_ylabel("SQNR (dB)" if metric == "sqnr_db" else metric)
    ax.grid(alpha=0.3)
    ax.legend(title="element format", fontsize=8, loc="lower right")
    best, worst = int(np.nanargmax(y)), int(np.nanargmin(y))
    ax.set_title(f"Highest: {rows[best]['recipe']} ({rows[best]['format']}), {y[best]:.1f} dB at "
                 f"{x[best]:.3f} bits/element; lowest: {rows[worst]['recipe']} ({rows[worst]['format']}), "
                 f"{y[worst]:.1f} dB", fontsize=10)
    return fig


def plot_loss_scale(scales: Sequence[float], skipped: Sequence[bool], *,
                    underflow: "Mapping[str, Sequence[float]] | None" = None, ax: Axes | None = None) -> Figure:
    """The loss scale per step (log2 axis), skipped (overflowing) steps in red, optionally named underflow fractions.

    >>> fig = plot_loss_scale([2.0**16, 2.0**17, 2.0**16], [False, True, False], underflow={"unscaled": [0.5, 0.5, 0.6]})
    >>> fig.axes[1].get_ylabel()
    'fraction of gradients flushed to 0'
    """
    s = np.log2(np.asarray(scales, dtype=np.float64))
    bad = np.asarray(skipped, dtype=bool)
    steps = np.arange(s.size)
    fig, ax = figure_and_axes(ax, (9, 3.8))
    ax.step(steps, s, where="post", color=COLORS["normal"], lw=1.5, label="log2(loss scale)")
    ax.plot(steps[bad], s[bad], "x", ms=7, mew=2, color=COLORS["sign"], label="inf/NaN: step skipped, scale halved")
    ax.set_xlabel("training step")
    ax.set_ylabel("log2(loss scale)")
    handles, labels = ax.get_legend_handles_labels()
    if underflow is not None:
        tw = ax.twinx()
        for i, (name, frac) in enumerate(underflow.items()):
            tw.plot(steps, np.asarray(frac, dtype=np.float64), color=("#9467bd", "0.45", "#8c564b")[i % 3], lw=1.4,
                    ls=("-", "--", ":")[i % 3], label=f"flushed to 0: {name}", zorder=3)
        tw.set_ylabel("fraction of gradients flushed to 0")
        tw.set_ylim(-0.04, 1)  # a series that stays at 0 shows above the axis line
        h2, l2 = tw.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
    ax.legend(handles, labels, fontsize=8, loc="lower right")
    if s.size:
        title = (f"{int(bad.sum())} of {s.size} steps skipped (red); the scale ranged from "
                 f"2^{s.min():g} to 2^{s.max():g}")
    else:
        title = "no steps"
    ax.set_title(title, fontsize=10)
    return fig
