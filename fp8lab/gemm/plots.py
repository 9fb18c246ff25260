"""Figures for the FP8 GEMM chapter: accumulation error against K, and the scale blocks of a GEMM.

Each function builds a matplotlib ``Figure`` without pyplot (nothing is shown, nothing is left
open; a notebook displays the returned figure), labels its axes with units and puts the finding,
computed from the data, in the title. Pass ``ax=`` to draw into an axes of your own figure.

>>> from fp8lab.gemm import accumulation_error_vs_k
>>> fig = plot_accumulation_error(accumulation_error_vs_k(ks=(256, 1024), m=4, n=4)); type(fig).__name__
'Figure'
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from .._optional import require

require("matplotlib", "fp8lab's plots")  # an ImportError that names the extra to install, if it is missing

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..viz import figure_and_axes
from .experiments import METRICS, _check_metric, _series, loglog_slope  # the numbers these plots draw

__all__ = ["loglog_slope", "plot_accumulation_error", "plot_scale_blocks", "METRICS"]

_STYLE = {"exact FP32": dict(color="#7f7f7f", marker="s", linestyle=":"),
          "no promotion": dict(color="#d62728", marker="o", linestyle="-")}


def plot_accumulation_error(rows: Sequence[dict[str, Any]], metric: str = "max_rel_error", *,
                            ax: Axes | None = None, title: str | None = None,
                            unit_roundoff: bool = True) -> Figure:
    """Error against K on log-log axes, one line per accumulator setting, with the growth in the title.

    ``rows`` are what :func:`~fp8lab.gemm.accumulation_error_vs_k` returns. With ``unit_roundoff``
    a dashed line marks the limited accumulator's unit roundoff ``2**-(mantissa_bits + 1)``.

    >>> rows = [{"k": k, "setting": s, "max_rel_error": e * k ** p, "mantissa_bits": 13}
    ...         for k in (256, 4096) for s, e, p in (("no promotion", 1e-6, 1), ("promoted every 128", 1e-4, 0))]
    >>> plot_accumulation_error(rows).axes[0].get_title().splitlines()
    ['no promotion: error ~ K^1.00, x16.0 from K=256 to 4096', 'promoted every 128: x1.00 over the same range']
    """
    series = _series(rows, metric)
    fig, ax = figure_and_axes(ax, (6.4, 4.2))
    others = iter(["#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"])
    for setting, (ks, errs) in series.items():
        style = _STYLE.get(setting) or dict(color=next(others, None), marker="^", linestyle="-")
        keep = errs > 0
        ax.plot(ks[keep], errs[keep], label=setting, **style)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("K, length of each dot product (elements)")
    ax.set_ylabel(f"{METRICS[metric]} vs float64")
    bits = {r.get("mantissa_bits") for r in rows if r.get("mantissa_bits") is not None}
    if unit_roundoff and len(bits) == 1:
        m = bits.pop()
        ax.axhline(2.0 ** -(m + 1), color="black", linestyle="--", linewidth=0.8,
                   label=f"unit roundoff of a {m + 1}-bit accumulator, 2^-{m + 1}")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    if title is None:
        parts = []
        for setting, (ks, errs) in series.items():
            if setting == "exact FP32" or len(ks) < 2 or not (errs[0] > 0 and errs[-1] > 0):
                continue
            growth = errs[-1] / errs[0]
            if setting == "no promotion":
                slope = loglog_slope(rows, setting, metric)
                parts.append(f"no promotion: error ~ K^{slope:.2f}, x{growth:.1f} from K={ks[0]} to {ks[-1]}")
            else:
                parts.append(f"{setting}: x{growth:.2f} over the same range")
        title = "\n".join(parts) or f"{METRICS[metric]} against K"
    ax.set_title(title, fontsize="medium")
    return fig


def _draw_blocks(ax: Axes, scales: np.ndarray, block: tuple[int, int], shape: tuple[int, int], name: str):
    expanded = np.repeat(np.repeat(np.log2(scales), block[0], axis=0), block[1], axis=1)[:shape[0], :shape[1]]
    vmin, vmax = float(expanded.min()), float(expanded.max())
    if vmax == vmin:
        vmin, vmax = vmin - 0.5, vmax + 0.5
    im = ax.imshow(expanded, aspect="auto", interpolation="nearest", cmap="viridis", vmin=vmin, vmax=vmax,
                   extent=(0, shape[1], shape[0], 0))
    for x in range(block[1], shape[1], block[1]):
        if block[1] > 1:
            ax.axvline(x, color="white", linewidth=0.8)
    for y in range(block[0], shape[0], block[0]):
        if block[0] > 1:
            ax.axhline(y, color="white", linewidth=0.8)
    kind = "one scale" if block == shape else f"{block[0]}x{block[1]} blocks"
    ax.set_title(f"{name} {shape[0]}x{shape[1]}: {kind}, {scales.size} scales", fontsize="medium")
    return im


def plot_scale_blocks(qa: Any, qb: Any, *, fig: Figure | None = None) -> Figure:
    """log2 of each element's scale in the two operands of a GEMM (a colour scale each), block edges in white.

    ``qa`` (M, K) and ``qb`` (K, N) are :class:`~fp8lab.qtensor.QTensor` matrices (numpy or torch).
    The title says how many elements of K share one scale in each, which is where a
    block-scaled GEMM must apply the scales.

    >>> import numpy as np
    >>> from fp8lab.qtensor import QTensor
    >>> qa = QTensor(np.zeros((4, 256), np.uint8), np.ones((4, 2), np.float32), "e4m3", block=(1, 128))
    >>> qb = QTensor(np.zeros((256, 8), np.uint8), np.ones((2, 1), np.float32), "e4m3", block=(128, 8))
    >>> plot_scale_blocks(qa, qb).get_suptitle().endswith("a GEMM applies the scales every 128 elements of K")
    True
    """
    a_s, b_s = (np.asarray(q.scales.detach().cpu() if hasattr(q.scales, "detach") else q.scales, dtype=np.float64)
                for q in (qa, qb))
    if len(qa.shape) != 2 or len(qb.shape) != 2 or qa.shape[1] != qb.shape[0]:
        raise ValueError(f"need qa (M, K) and qb (K, N) with the same K, got {qa.shape} and {qb.shape}")
    if (a_s <= 0).any() or (b_s <= 0).any():
        raise ValueError("scales must be positive to draw log2(scale)")
    k = qa.shape[1]
    ka, kb = min(qa.block[1], k), min(qb.block[0], k)
    if fig is None:
        fig = Figure(figsize=(11, 3.8), layout="constrained")
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [max(k, 1), max(qb.shape[1], 1)]})
    for ax, s, q, name in ((left, a_s, qa, "A"), (right, b_s, qb, "B")):
        im = _draw_blocks(ax, s, tuple(q.block), tuple(q.shape), name)
        fig.colorbar(im, ax=ax, label=f"log2(scale of {name})")
    left.set_xlabel("k (column of A)")
    left.set_ylabel("m (row of A)")
    right.set_xlabel("n (column of B)")
    right.set_ylabel("k (row of B)")
    def along_k(name: str, kblock: int) -> str:
        return f"{name} changes scale every {kblock} elements of K" if kblock < k else f"{name} has one scale along K"

    when = "at the end (scales constant along K)" if min(ka, kb) >= k else f"every {min(ka, kb)} elements of K"
    fig.suptitle(f"{along_k('A', ka)}, {along_k('B', kb)}: a GEMM applies the scales {when}", fontsize="medium")
    return fig
