"""Figures and explorers for microscaling: where a block's max lands, floor vs rceil, MX vs NVFP4.

Every figure is built from :func:`~fp8lab.scaling.quantize_tensor` (nothing is re-implemented
here), as a matplotlib ``Figure`` without pyplot, with labelled axes and a title that states the
finding computed from the data. :func:`describe_mx_block` is the plain function behind the
:func:`mx_block_explorer` slider, so the chapter also works where widgets do not render.

Titles, axis labels, legends, the explorer's labels and the text of :func:`describe_mx_block` are in
the edition's language (:func:`fp8lab.lang.current`; each function takes ``lang=``): Chinese in a
kernel of ``make lab LANG=zh``, drawn in the CJK font of :mod:`fp8lab.course.figtext`. Format names,
rounding names (floor, rceil) and numbers stay as they are.

>>> rows = mx_rounding_comparison(np.full((4, 32), 957.0, np.float32), ["e4m3"])
>>> [(r["rounding"], r["clipped_fraction"]) for r in rows]
[('floor', 1.0), ('rceil', 0.0)]
"""

from __future__ import annotations

import html
import math
from typing import Any, Mapping, Sequence

import numpy as np
from .._optional import require

require("matplotlib", "fp8lab's plots")  # an ImportError that names the extra to install, if it is missing

from matplotlib.figure import Figure

from ..lang import check_lang, current, pick
from ..formats import Format
from ..registry import get_format
from ..tables import format_table
from .base import Recipe
from .blocks import block_reduce
from .metrics import sqnr_db
from .mx import MXScaling, emax_elem, mx_scale_exponents
from .nvfp4 import NVFP4Scaling
from .quantize import quantize_tensor
from .mx_analysis import (BLOCK_PROFILE, MX_ELEMENT_FORMATS, amax_over_scale, block_max_error,  # the numbers drawn
                          mx_name, mx_rounding_comparison)

__all__ = ["MX_ELEMENT_FORMATS", "BLOCK_PROFILE", "mx_name", "block_max_error", "mx_rounding_comparison", "amax_over_scale",
           "plot_block_max_error", "plot_scale_rounding", "plot_sqnr_vs_bits", "plot_fp4_error_distributions",
           "describe_mx_block", "mx_block_explorer"]

def _db(v: float) -> str:
    return f"{round(v, 1) + 0.0:+.1f}"  # + 0.0 turns -0.0 into 0.0


def _lang(lang: str | None) -> str:
    """``lang`` checked, or the edition's language."""
    return check_lang(lang) if lang is not None else current()


def _in_cjk(fig: Figure) -> Figure:
    """The figure, its Chinese texts given the CJK font of :mod:`fp8lab.course.figtext` (when it is installed)."""
    try:
        from ..course.figtext import use_cjk_font

        use_cjk_font(fig)
    except ImportError:  # without the course extra's font package the figure still draws, with missing glyphs
        pass
    return fig


def plot_block_max_error(formats: Sequence["str | Format"] = ("e4m3", "fp4"),
                         roundings: Sequence[str] = ("floor", "rceil"), *, binades: int = 2,
                         points: int = 1500, lang: str | None = None) -> Figure:
    """Plot the relative error of a block's largest element against amax, one panel per format, one line per rounding.

    >>> fig = plot_block_max_error(["fp4"], points=64); len(fig.axes)
    1
    """
    lang = _lang(lang)
    fmts = [get_format(f) for f in formats]
    fig = Figure(figsize=(5.2 * len(fmts), 3.8), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(fmts)))
    worst = []
    for ax, f in zip(axes, fmts):
        lo = 2.0 ** emax_elem(f)  # amax from 2^emax_elem over `binades` binades; the pattern repeats every binade
        amax = (lo * 2.0 ** np.linspace(0, binades, points, endpoint=False)).astype(np.float32)
        for rounding in roundings:
            err = block_max_error(amax, f, rounding)
            ax.plot(amax, 100 * err, lw=1.2, label=rounding)
            worst.append(f"{mx_name(f)} {rounding} {100 * err[np.argmax(np.abs(err))]:+.1f}%")
        ax.axhline(0, color="0.5", lw=0.6)
        ax.set_xscale("log", base=2)
        ax.set_xlabel(pick("block amax (log2 scale)", "块 amax（log2 刻度）", lang))
        ax.set_ylabel(pick("error of the block max (%)", "块最大值的误差 (%)", lang))
        ax.set_title(pick(f"{mx_name(f)} (element max {f.max:g})", f"{mx_name(f)}（元素最大值 {f.max:g}）", lang), fontsize=10)
        ax.legend(fontsize=8)
    fig.suptitle(pick("Largest error of the block maximum: " + ", ".join(worst)
                      + "\n(floor clips the max when amax / X exceeds the element max; rceil only rounds it)",
                      "块最大值的最大误差：" + ", ".join(worst)
                      + "\n（amax / X 超过元素最大值时 floor 会裁剪最大值；rceil 只做舍入）", lang), fontsize=10)
    return _in_cjk(fig)


def plot_scale_rounding(datasets: Mapping[str, np.ndarray], formats: Sequence["str | Format"] = MX_ELEMENT_FORMATS,
                        roundings: Sequence[str] = ("floor", "rceil"), block_size: int = 32, *,
                        lang: str | None = None) -> Figure:
    """Bar charts of the clipped-block fraction (first dataset) and of the SQNR per dataset, for each format and rounding.

    >>> x = np.linspace(1, 7, 64, dtype=np.float32).reshape(2, 32)
    >>> fig = plot_scale_rounding({"ramp": x}, ["fp4"]); len(fig.axes)
    2
    """
    if not datasets:
        raise ValueError("give at least one dataset, e.g. {'random': x}")
    lang = _lang(lang)
    results = {name: mx_rounding_comparison(x, formats, roundings, block_size) for name, x in datasets.items()}
    labels = [mx_name(get_format(f)) for f in formats]
    fig = Figure(figsize=(4.6 * (1 + len(datasets)), 3.9), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, 1 + len(datasets)))
    width = 0.8 / len(roundings)
    pos = np.arange(len(formats))
    first = next(iter(results.values()))
    gains = []
    for j, rounding in enumerate(roundings):
        rows = [r for r in first if r["rounding"] == rounding]
        axes[0].bar(pos + j * width, [100 * r["clipped_fraction"] for r in rows], width, label=rounding)
    axes[0].set_ylabel(pick("blocks whose max was clipped (%)", "最大值被裁剪的块 (%)", lang))
    axes[0].set_title(pick(f"Clipped blocks ({next(iter(datasets))})", f"被裁剪的块（{next(iter(datasets))}）", lang),
                      fontsize=10)
    for ax, (name, rows_all) in zip(axes[1:], results.items()):
        for j, rounding in enumerate(roundings):
            rows = [r for r in rows_all if r["rounding"] == rounding]
            ax.bar(pos + j * width, [r["sqnr_db"] for r in rows], width, label=rounding)
        ax.set_ylabel(pick("SQNR (dB, higher is better)", "SQNR（dB，越高越好）", lang))
        ax.set_title(pick(f"SQNR ({name})", f"SQNR（{name}）", lang), fontsize=10)
        if len(roundings) >= 2:
            by = {(r["label"], r["rounding"]): r["sqnr_db"] for r in rows_all}
            d = [by[(lab, roundings[1])] - by[(lab, roundings[0])] for lab in labels]
            gains.append(pick(f"{name}: {_db(min(d))} to {_db(max(d))} dB", f"{name}：{_db(min(d))} 至 {_db(max(d))} dB",
                              lang))
    for ax in axes:
        ax.set_xticks(pos + width * (len(roundings) - 1) / 2, [lab.replace(" ", "\n") for lab in labels])
        ax.set_xlabel(pick(f"element format (blocks of {block_size}, E8M0 scale)",
                           f"元素格式（{block_size} 个一块，E8M0 缩放因子）", lang))
        ax.legend(fontsize=8)
    clip = []
    for rounding in roundings:
        c = [100 * r["clipped_fraction"] for r in first if r["rounding"] == rounding]
        upto = round(max(c)) != round(min(c))
        clip.append(f"{rounding} {min(c):.0f}%" + (pick(f" to {max(c):.0f}%", f" 至 {max(c):.0f}%", lang) if upto else ""))
    title = pick("Clipped blocks: " + ", ".join(clip), "被裁剪的块：" + "，".join(clip), lang)
    if gains:
        title += pick(f"\nSQNR of {roundings[1]} minus {roundings[0]} per format: " + "; ".join(gains),
                      f"\n各格式 {roundings[1]} 与 {roundings[0]} 的 SQNR 之差：" + "；".join(gains), lang)
    fig.suptitle(title, fontsize=10)
    return _in_cjk(fig)


def plot_sqnr_vs_bits(x: np.ndarray, entries: Mapping[str, "tuple[str | Format, Recipe]"], *,
                      title: str | None = None, lang: str | None = None) -> Figure:
    """Scatter of SQNR against storage (bits per element, scales included), one labelled point per (format, recipe).

    >>> x = np.linspace(-3, 3, 64, dtype=np.float32).reshape(2, 32)
    >>> fig = plot_sqnr_vs_bits(x, {"MXFP4": ("fp4", MXScaling()), "MXFP8": ("e4m3", MXScaling())})
    >>> fig.axes[0].get_xlabel()
    'storage (bits per element, scales included)'
    """
    lang = _lang(lang)
    x = np.asarray(x, np.float32)
    pts = []
    for label, (fmt, recipe) in entries.items():
        q = quantize_tensor(x, fmt, recipe)
        pts.append((label, q.bits_per_element, sqnr_db(x, q.dequantize())))
    fig = Figure(figsize=(9.5, 4.4), layout="constrained")
    ax = fig.add_subplot()
    markers = "osD^vP*Xh<>"
    for i, (label, bits, s) in enumerate(pts):
        ax.scatter(bits, s, s=40, marker=markers[i % len(markers)],
                   label=pick(f"{label}: {bits:.2f} bits, {s:.1f} dB", f"{label}：{bits:.2f} 位，{s:.1f} dB", lang))
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_xlabel(pick("storage (bits per element, scales included)", "存储（每元素位数，含缩放因子）", lang))
    ax.set_ylabel(pick("SQNR (dB, higher is better)", "SQNR（dB，越高越好）", lang))
    ax.grid(alpha=0.3)
    if title is None:
        lo, hi = min(pts, key=lambda p: p[2]), max(pts, key=lambda p: p[2])
        title = pick(f"SQNR from {lo[2]:.1f} dB ({lo[0]}, {lo[1]:.2f} bits) to {hi[2]:.1f} dB ({hi[0]}, {hi[1]:.2f} bits)"
                     f"\non {x.shape} float32 data",
                     f"SQNR 从 {lo[2]:.1f} dB（{lo[0]}，{lo[1]:.2f} 位）到 {hi[2]:.1f} dB（{hi[0]}，{hi[1]:.2f} 位）"
                     f"\n{x.shape} 的 float32 数据", lang)
    ax.set_title(title, fontsize=10)
    return _in_cjk(fig)


def plot_fp4_error_distributions(x: np.ndarray, entries: "Mapping[str, Recipe] | None" = None,
                                 fmt: "str | Format" = "fp4", *, lang: str | None = None) -> Figure:
    """Two panels per FP4 recipe: where each block's amax lands on the E2M1 grid, and the CDF of the relative error.

    >>> x = np.linspace(-3, 3, 64, dtype=np.float32).reshape(2, 32)
    >>> fig = plot_fp4_error_distributions(x); len(fig.axes)
    2
    """
    if entries is None:
        entries = {"MXFP4 (floor)": MXScaling(), "MXFP4 (rceil)": MXScaling(scale_rounding="rceil"),
                   "NVFP4": NVFP4Scaling()}
    lang = _lang(lang)
    f = get_format(fmt)
    x = np.asarray(x, np.float32)
    fig = Figure(figsize=(12, 4.2), layout="constrained")
    left, right = fig.subplots(1, 2)
    bins = np.linspace(f.max / 4, f.max * 1.5, 121)
    summary = []
    nz = x != 0
    for label, recipe in entries.items():
        q = quantize_tensor(x, f, recipe)
        y = q.dequantize()
        land = amax_over_scale(x, q)
        left.hist(np.clip(land, bins[0], bins[-1]), bins=bins, histtype="step", lw=1.4, density=True,
                  label=pick(f"{label}: {land.min():.4g} to {land.max():.4g}", f"{label}：{land.min():.4g} 至 {land.max():.4g}",
                             lang))
        rel = np.sort((np.abs(y[nz] - x[nz]) / np.abs(x[nz])).astype(np.float64))
        flushed = float(np.mean(y[nz] == 0))
        s = sqnr_db(x, y)
        right.plot(np.clip(rel, 1e-4, None), np.arange(1, rel.size + 1) / rel.size, lw=1.4,
                   label=pick(f"{label}: SQNR {s:.1f} dB, {100 * flushed:.1f}% flushed to 0",
                              f"{label}：SQNR {s:.1f} dB，{100 * flushed:.1f}% 清零为 0", lang))
        summary.append(f"{label} {s:.1f} dB")
    left.axvline(f.max, color="0.3", ls="--", lw=1)
    left.set_xlabel(pick(f"block amax / block scale (E2M1 units; dashed: max {f.max:g})",
                         f"块 amax / 块缩放因子（E2M1 单位；虚线：最大值 {f.max:g}）", lang))
    left.set_ylabel(pick("density of blocks", "块的密度", lang))
    left.set_title(pick("Where the block maximum lands on the E2M1 grid", "块最大值落在 E2M1 网格的哪里", lang), fontsize=10)
    left.legend(fontsize=8)
    right.set_xscale("log")
    right.set_xlabel(pick("relative error |q(x) - x| / |x| per nonzero element (log scale; 1 = flushed to 0)",
                          "每个非零元素的相对误差 |q(x) - x| / |x|（对数刻度；1 = 清零为 0）", lang))
    right.set_ylabel(pick("fraction of elements with error <= x", "误差 <= x 的元素比例", lang))
    right.set_title(pick("Cumulative distribution of the relative error", "相对误差的累积分布", lang), fontsize=10)
    right.legend(fontsize=8, loc="upper left")
    fig.suptitle(pick(f"FP4 on {x.shape} data: ", f"FP4 用于 {x.shape} 数据：", lang) + ", ".join(summary), fontsize=10)
    return _in_cjk(fig)


def describe_mx_block(amax: float, fmt: "str | Format" = "e4m3", roundings: Sequence[str] = ("floor", "rceil"),
                      show: int = 6, lang: str | None = None) -> str:
    """Quantise ``amax * BLOCK_PROFILE`` (one 32-element MX block) and report, per rounding, the scale and the codes
    (in ``lang``, default the edition's).

    >>> print(describe_mx_block(957.0, "e4m3", lang="en").splitlines()[0])
    MX block of 32 float8_e4m3fn elements, amax 957 = 1.869 x 2^9; element max 448 = 1.75 x 2^8 (emax_elem 8)
    >>> print(describe_mx_block(957.0, "e4m3", lang="zh").splitlines()[0])
    MX 块：32 个 float8_e4m3fn 元素，amax 957 = 1.869 x 2^9；元素最大值 448 = 1.75 x 2^8（emax_elem 8）
    """
    lang = _lang(lang)
    f = get_format(fmt)
    amax = float(amax)
    if not (math.isfinite(amax) and amax > 0):
        raise ValueError(f"amax must be a positive finite number, got {amax!r}")
    x = (BLOCK_PROFILE * np.float32(amax)).astype(np.float32)
    a = float(np.abs(x).max())
    m, e = math.frexp(a)
    fm, fe = math.frexp(f.max)
    lines = [pick(f"MX block of {x.size} {f.name} elements, amax {a:.6g} = {2 * m:.4g} x 2^{e - 1}; "
                  f"element max {f.max:g} = {2 * fm:.4g} x 2^{fe - 1} (emax_elem {emax_elem(f)})",
                  f"MX 块：{x.size} 个 {f.name} 元素，amax {a:.6g} = {2 * m:.4g} x 2^{e - 1}；"
                  f"元素最大值 {f.max:g} = {2 * fm:.4g} x 2^{fe - 1}（emax_elem {emax_elem(f)}）", lang)]
    rows, codes = [], []
    for rounding in roundings:
        k = int(mx_scale_exponents(np.array([a]), f, rounding)[0])
        q = quantize_tensor(x, f, MXScaling(scale_rounding=rounding))
        y = q.dequantize()
        c = np.asarray(q.codes).ravel()
        width = (f.bits + 3) // 4
        err = (float(y[0]) - a) / a
        clipped = bool(q.info["overflow"])
        rows.append([rounding, k, f"0x{k + 127:02X}", f"2^{k}", f"{a / 2.0 ** k:.6g}", f"0x{int(c[0]):0{width}X}",
                     f"{float(y[0]):.6g}", f"{100 * err:+.2f}%", pick("yes" if clipped else "no", "是" if clipped else "否", lang),
                     f"{sqnr_db(x, y):.1f} dB"])
        codes.append([rounding + pick(" codes", " 编码", lang)] + [f"0x{int(v):0{width}X}" for v in c[:show]])
        codes.append([rounding + pick(" values", " 数值", lang)] + [f"{float(v):.4g}" for v in y[:show]])
    headers = (["rounding", "k", "E8M0", "X", "amax/X", "max code", "max ->", "error", "clipped", "block SQNR"] if lang == "en"
               else ["舍入", "k", "E8M0", "X", "amax/X", "最大值编码", "最大值 ->", "误差", "被裁剪", "块 SQNR"])
    lines.append(format_table(headers, rows))
    lines.append("")
    lines.append(format_table([pick("first elements", "前几个元素", lang)] + [f"x[{i}]" for i in range(show)],
                              [["x"] + [f"{float(v):.4g}" for v in x[:show]]] + codes))
    return "\n".join(lines)


def mx_block_explorer(amax: float = 957.0, fmt: "str | Format" = "e4m3", *, lang: str | None = None) -> Any:
    """A log slider for the block amax and a format menu above :func:`describe_mx_block` (needs ipywidgets).

    The returned ``VBox`` has ``.amax``, ``.format`` and ``.text``; its labels and text keep the language
    it was built in (``lang``, default the edition's).
    """
    w = require("ipywidgets", "fp8lab's widgets")
    lang = _lang(lang)

    slider = w.FloatLogSlider(value=float(amax), base=2, min=-4, max=16, step=1 / 64,
                              description=pick("amax", "块 amax", lang), readout_format=".4g", continuous_update=False,
                              layout=w.Layout(width="32em"))
    menu = w.Dropdown(options=[get_format(n).name for n in MX_ELEMENT_FORMATS], value=get_format(fmt).name,
                      description=pick("elements", "元素格式", lang))
    text = w.HTML()

    def refresh(_: object = None) -> None:
        report = describe_mx_block(slider.value, menu.value, lang=lang)
        text.value = f"<pre style='line-height:1.3'>{html.escape(report)}</pre>"

    slider.observe(refresh, names="value")
    menu.observe(refresh, names="value")
    refresh()
    box = w.VBox([w.HBox([slider, menu]), text])
    box.amax, box.format, box.text = slider, menu, text
    return box
