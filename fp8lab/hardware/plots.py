"""Figures for the hardware chapter: tensor-core rates by format, the roofline, and FP8's speed-up against tokens.

Each function builds a matplotlib ``Figure`` without pyplot (nothing is shown or left open), labels
its axes with units and puts the finding, computed from the data, in the title. Pass ``ax=`` to
draw into an axes of your own figure.

>>> fig = plot_tensor_throughput(["h100", "a100"]); type(fig).__name__
'Figure'
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .._optional import require

require("matplotlib", "fp8lab's plots")  # an ImportError that names the extra to install, if it is missing
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..viz import figure_and_axes
from .roofline import RooflinePoint, roofline, speedup
from .specs import GPUSpec, _format_key, get_gpu_spec

__all__ = ["plot_tensor_throughput", "plot_roofline", "plot_speedup_vs_tokens", "FORMAT_COLORS"]

#: One colour per tensor-core format, shared by the figures of this module.
FORMAT_COLORS = {"fp64": "#7f7f7f", "tf32": "#8c564b", "bf16": "#1f77b4", "fp16": "#17becf", "fp8": "#d62728",
                 "fp6": "#ff7f0e", "fp4": "#9467bd", "int8": "#2ca02c", "int4": "#bcbd22"}


def _specs(gpus: "str | GPUSpec | Sequence[str | GPUSpec]") -> list[GPUSpec]:
    items = [gpus] if isinstance(gpus, (str, GPUSpec)) else list(gpus)
    if not items:
        raise ValueError("give at least one GPU")
    return [get_gpu_spec(g) for g in items]


def plot_tensor_throughput(gpus: "str | GPUSpec | Sequence[str | GPUSpec]",
                           formats: Sequence[str] = ("tf32", "bf16", "fp8", "fp4", "int8"), *,
                           ax: Axes | None = None) -> Figure:
    """Grouped bars per GPU: the dense rate of each format (solid) and the sparse figure (hatched outline), log scale.

    Missing bars mean the tensor cores do not take that format. The title gives the FP8/BF16 ratio
    of dense rates, computed per GPU.

    >>> fig = plot_tensor_throughput(["h100", "a100"], ["bf16", "fp8"])
    >>> fig.axes[0].get_title().splitlines()[0]
    'Dense FP8 = 2x dense BF16 on every GPU here with FP8 (1 of 2)'
    """
    specs = _specs(gpus)
    fmts = [_format_key(f) for f in formats]
    fig, ax = figure_and_axes(ax, (max(7.0, 1.2 * len(specs) + 3), 4.4))
    width = 0.8 / len(fmts)
    for j, f in enumerate(fmts):
        xs = np.arange(len(specs)) + (j - (len(fmts) - 1) / 2) * width
        for x, s in zip(xs, specs):
            if not s.supports(f):
                continue
            t = s.throughput(f)
            if t.sparse is not None:
                ax.bar(x, t.sparse, width * 0.9, fill=False, hatch="///", edgecolor=FORMAT_COLORS[f], lw=0.8)
            ax.bar(x, t.dense, width * 0.9, color=FORMAT_COLORS[f], alpha=0.9)
    ax.set_xticks(np.arange(len(specs)), [s.name for s in specs], rotation=20, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("peak tensor-core rate (TFLOP/s; TOPS for INT, log scale)")
    handles = [Patch(color=FORMAT_COLORS[f], label=f"{f} dense") for f in fmts]
    handles.append(Patch(fill=False, hatch="///", edgecolor="0.3", label="with 2:4 sparsity"))
    ax.legend(handles=handles, fontsize=8, ncol=2, loc="upper left")
    if "bf16" in fmts and "fp8" in fmts:
        with_fp8 = [s for s in specs if s.supports("fp8") and s.supports("bf16")]
        ratios = sorted({round(s.throughput("fp8").dense / s.throughput("bf16").dense, 2) for s in with_fp8})
        ratio = " to ".join(f"{r:g}x" for r in (ratios[0], ratios[-1])) if len(ratios) > 1 else (
            f"{ratios[0]:g}x" if ratios else "n/a")
        head = (f"Dense FP8 = {ratio} dense BF16 on every GPU here with FP8 "
                f"({len(with_fp8)} of {len(specs)})")
    else:
        head = "Peak tensor-core rates by format"
    ax.set_title(head + "\nhatched: the datasheets' headline figures, with 2:4 structured sparsity (2x dense)",
                 fontsize=10)
    return fig


def plot_roofline(gpu: "str | GPUSpec", formats: Sequence[str] = ("bf16", "fp8"),
                  points: Sequence[tuple[str, RooflinePoint]] = (), *, ax: Axes | None = None) -> Figure:
    """The roofline of ``gpu`` for each format (attainable TFLOP/s against FLOP/byte, log-log), with GEMMs as points.

    ``points`` are ``(label, RooflinePoint)`` pairs from :func:`fp8lab.hardware.roofline`. The title
    states where the ridge points lie and which roof each point meets.

    >>> p = roofline("h100", "fp8", 1, 8192, 8192)
    >>> plot_roofline("h100", points=[("decode", p)]).axes[0].get_title().splitlines()[0]
    'H100 SXM5 roofline: ridge at 295 FLOP/byte (bf16), 591 (fp8)'
    """
    spec = get_gpu_spec(gpu)
    fmts = [_format_key(f) for f in formats]
    fig, ax = figure_and_axes(ax, (8, 4.8))
    lo = min([0.5] + [p.cost.intensity / 2 for _, p in points])
    hi = max([4 * max(spec.ridge_point(f) for f in fmts)] + [p.cost.intensity * 2 for _, p in points])
    x = np.geomspace(lo, hi, 200)
    for f in fmts:
        peak = spec.peak_flops(f) / 1e12
        ax.plot(x, np.minimum(peak, x * spec.memory_bandwidth / 1e12), color=FORMAT_COLORS[f], lw=2,
                label=f"{f}: {peak:g} TFLOP/s dense")
        ax.axvline(spec.ridge_point(f), color=FORMAT_COLORS[f], ls=":", lw=1)
    for label, p in points:
        ax.plot(p.cost.intensity, p.attainable_flops / 1e12, "o", color=FORMAT_COLORS[p.format], ms=7, mec="k")
        ax.annotate(f"{label}\n{p.bound}-bound", (p.cost.intensity, p.attainable_flops / 1e12),
                    textcoords="offset points", xytext=(6, -22), fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per byte of memory traffic, log scale)")
    ax.set_ylabel("attainable rate (TFLOP/s, log scale)")
    ax.legend(fontsize=8, loc="lower right")
    ridges = ", ".join(f"{spec.ridge_point(f):.0f}" + (f" ({f})" if i else f" FLOP/byte ({f})") for i, f in enumerate(fmts))
    short = spec.full_name.replace("NVIDIA ", "").split(" 80GB")[0].split(" 141GB")[0]
    ax.set_title(f"{short} roofline: ridge at {ridges}\nmemory bandwidth "
                 f"{spec.memory_bandwidth_gb_s:g} GB/s; left of a dotted line the memory roof binds", fontsize=10)
    return fig


def plot_speedup_vs_tokens(gpus: "str | GPUSpec | Sequence[str | GPUSpec]", n: int, k: int,
                           tokens: Sequence[int] = tuple(2**i for i in range(15)), *,
                           cases: Sequence[tuple[str, dict[str, Any]]] = (("W8A8 FP8, BF16 out", {}),),
                           ax: Axes | None = None) -> Figure:
    """Ideal roofline speed-up of an FP8 GEMM over BF16 against the number of tokens M, per GPU and case.

    Each case is ``(label, keyword arguments for fp8lab.hardware.speedup)``.

    >>> fig = plot_speedup_vs_tokens("h100", 8192, 8192, [1, 4096]); fig.axes[0].get_title().splitlines()[0]
    'FP8 over BF16 on a (M, 8192) x (8192, 8192) GEMM: 2x at every M'
    """
    specs = _specs(gpus)
    ms = sorted({int(t) for t in tokens})
    fig, ax = figure_and_axes(ax, (8, 4.2))
    values = []
    styles = ["-", "--", ":", "-."]
    for s in specs:
        for i, (label, kw) in enumerate(cases):
            sp = [speedup(s, m, n, k, **kw) for m in ms]
            values += sp
            ax.plot(ms, sp, styles[i % len(styles)], marker="o", ms=3, label=f"{s.name}: {label}")
    ax.axhline(1, color="0.4", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("tokens in the GEMM, M (decode: batch size; prefill: batch x prompt length; log scale)")
    ax.set_ylabel("roofline time BF16 / FP8 (x)")
    ax.legend(fontsize=8)
    span = (f"{min(values):.3g}x at every M" if round(min(values), 2) == round(max(values), 2)
            else f"{min(values):.3g}x to {max(values):.3g}x")
    ax.set_title(f"FP8 over BF16 on a (M, {k}) x ({k}, {n}) GEMM: {span}"
                 "\nideal roofline: both roofs at their datasheet peaks, each operand moved once", fontsize=10)
    return fig
