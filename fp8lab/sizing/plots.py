"""Figures for the KV-cache and memory chapter: cache per token, cache against context, what fits, cache accuracy, training memory.

Each function builds a matplotlib ``Figure`` without pyplot (nothing is shown, nothing is left
open; a notebook displays the returned figure), labels its axes with units and puts the finding,
computed from the data, in the title. Pass ``ax=`` to draw into an axes of your own figure instead.
Byte axes are binary (KiB, GiB) and say so; the text beside them gives decimal units where useful.

>>> fig = plot_kv_per_token(["llama-2-7b", "llama-3-8b"]); type(fig).__name__
'Figure'
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from .._optional import require

require("matplotlib", "fp8lab's plots")  # an ImportError that names the extra to install, if it is missing

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..formats import Format
from ..registry import get_format
from ..viz import figure_and_axes
from .fit import max_context
from .gpus import GPU, get_gpu
from .kvcache import kv_cache_size, kv_elements_per_token
from .memory import MemoryPlan, get_memory_plan, list_memory_plans
from .models import ModelConfig, get_model
from .units import GiB, KiB

__all__ = ["plot_kv_per_token", "plot_kv_vs_context", "plot_max_context", "plot_kv_accuracy",
           "plot_training_memory", "ATTENTION_COLORS"]

#: One colour per attention kind, shared by the figures of this module.
ATTENTION_COLORS = {"mha": "#d62728", "gqa": "#1f77b4", "mqa": "#2ca02c", "mla": "#9467bd"}
_KIND_COLORS = {"weights": "#1f77b4", "gradients": "#ff7f0e", "optimizer": "#2ca02c"}


def _models(models: "str | ModelConfig | Sequence[str | ModelConfig]") -> list[ModelConfig]:
    items = [models] if isinstance(models, (str, ModelConfig)) else list(models)
    if not items:
        raise ValueError("give at least one model")
    return [get_model(m) for m in items]


def plot_kv_per_token(models: "str | ModelConfig | Sequence[str | ModelConfig]", dtype: "str | Format" = "bf16", *,
                      ax: Axes | None = None) -> Figure:
    """Draw the KV-cache bytes per token (all layers, one sequence) of each model as a bar, coloured by attention kind.

    >>> fig = plot_kv_per_token(["llama-2-7b", "falcon-7b"]); fig.axes[0].get_title().splitlines()[0]
    'KV cache per token in bfloat16: llama-2-7b caches 64x more than falcon-7b'
    """
    cfgs = _models(models)
    fmt = get_format(dtype)
    per_token = [kv_cache_size(c, seq_len=1, dtype=fmt).total_bytes for c in cfgs]
    fig, ax = figure_and_axes(ax, (9, 0.8 + 0.45 * len(cfgs)))
    y = np.arange(len(cfgs))[::-1]
    kib = np.array(per_token, dtype=float) / KiB
    ax.barh(y, kib, color=[ATTENTION_COLORS[c.attention] for c in cfgs], alpha=0.85)
    for yi, c, v in zip(y, cfgs, kib):
        ax.text(v, yi, f" {v:,.4g} KiB = {kv_elements_per_token(c):,} elements x {c.layers} layers",
                va="center", fontsize=8)
    ax.set_yticks(y, [f"{c.name} ({c.attention.upper()})" for c in cfgs])
    ax.set_xscale("log")
    ax.set_xlim(kib.min() / 2, kib.max() * 40)
    ax.set_xlabel(f"KV cache per token, all layers, {fmt.name} (KiB = 2^10 bytes, log scale)")
    kinds = [k for k in ATTENTION_COLORS if any(c.attention == k for c in cfgs)]
    ax.legend(handles=[Patch(color=ATTENTION_COLORS[k], alpha=0.85, label=k.upper()) for k in kinds],
              loc="lower right", fontsize=8)
    big, small = int(np.argmax(per_token)), int(np.argmin(per_token))
    ratio = per_token[big] / per_token[small]
    ax.set_title(f"KV cache per token in {fmt.name}: {cfgs[big].name} caches {ratio:.3g}x more than "
                 f"{cfgs[small].name}\n(per layer: 2 x kv_heads x head_dim elements; MLA: kv_lora_rank + "
                 "qk_rope_head_dim)", fontsize=10)
    return fig


def plot_kv_vs_context(models: "str | ModelConfig | Sequence[str | ModelConfig]", max_seq_len: int = 32768,
                       dtype: "str | Format" = "bf16", *, batch: int = 1, ax: Axes | None = None) -> Figure:
    """Plot each model's KV-cache size against the context length: a line that grows, or stops at a sliding window.

    >>> fig = plot_kv_vs_context(["mistral-7b", "llama-3-8b"]); fig.axes[0].get_title().splitlines()[0]
    'At 32,768 tokens (bfloat16, batch 1): llama-3-8b 4 GiB, mistral-7b 0.5 GiB'
    """
    cfgs = _models(models)
    fmt = get_format(dtype)
    if isinstance(max_seq_len, bool) or not isinstance(max_seq_len, int) or max_seq_len < 1:
        raise ValueError(f"max_seq_len must be a positive int, got {max_seq_len!r}")
    seq = np.unique(np.linspace(0, max_seq_len, 257).astype(int))
    fig, ax = figure_and_axes(ax, (8, 4))
    at_end = {}
    for c in cfgs:
        gib = [kv_cache_size(c, int(n), batch, fmt).total_bytes / GiB for n in seq]
        window = f", window {c.sliding_window:,}" if c.sliding_window else ""
        ax.plot(seq, gib, lw=1.8, label=f"{c.name} ({c.attention.upper()}{window})")
        at_end[c.name] = gib[-1]
        if c.sliding_window and c.sliding_window < max_seq_len:
            ax.axvline(c.sliding_window, color="0.5", ls=":", lw=1)
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel(f"KV cache, batch {batch} (GiB = 2^30 bytes)")
    ax.set_xlim(0, max_seq_len)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    order = sorted(at_end, key=at_end.get, reverse=True)
    ax.set_title(f"At {max_seq_len:,} tokens ({fmt.name}, batch {batch}): "
                 + ", ".join(f"{n} {at_end[n]:.3g} GiB" for n in order)
                 + "\n(a sliding window caps the cache at the window; dotted line)", fontsize=10)
    return fig


def _setup_label(weights_dtype: str, kv_dtype: str) -> str:
    return f"weights {get_format(weights_dtype).name}, cache {get_format(kv_dtype).name}"


def _short(setup: tuple[str, str]) -> str:
    return f"{setup[0]} weights + {setup[1]} cache"


def plot_max_context(model: "str | ModelConfig", gpu: "str | GPU" = "h100",
                     setups: Sequence[tuple[str, str]] = (("bf16", "bf16"), ("bf16", "fp8"), ("fp8", "fp8")),
                     batches: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256), *, num_gpus: int = 1,
                     utilization: float = 1.0, ax: Axes | None = None) -> Figure:
    """Plot the longest context that fits against the batch size, one line per (weights dtype, KV dtype) setup.

    The dashed line is the model's trained context (``max_position_embeddings``) where the config gives it.

    >>> fig = plot_max_context("llama-3-8b", "h100", setups=[("bf16", "bf16"), ("bf16", "fp8")], batches=[1, 4])
    >>> fig.axes[0].get_title().splitlines()[0]
    'llama-3-8b on 1 x h100, batch 1: bf16 weights + fp8 cache fits 2x'
    """
    c, g = get_model(model), get_gpu(gpu)
    setups = [tuple(s) for s in setups]
    batches = sorted({int(b) for b in batches})
    if not setups or not batches or batches[0] < 1:
        raise ValueError("give at least one (weights_dtype, kv_dtype) setup and batch sizes >= 1")
    fig, ax = figure_and_axes(ax, (8, 4.6))
    first = {}
    for w, kv in setups:
        ctx = [max_context(c, g, weights_dtype=w, kv_dtype=kv, batch=b, num_gpus=num_gpus, utilization=utilization)
               for b in batches]
        first[(w, kv)] = ctx[0]
        pts = [(b, n) for b, n in zip(batches, ctx) if 0 < n < math.inf]
        if pts:
            label = _setup_label(w, kv)
        elif math.isinf(ctx[0]):
            label = _setup_label(w, kv) + "  (sliding window: never runs out)"
        else:
            label = _setup_label(w, kv) + "  (no room left after the weights)"
        if pts:
            ax.plot(*zip(*pts), marker="o", ms=3, lw=1.6, label=label)
        else:
            ax.plot([], [], marker="x", ls="", label=label)
    if c.max_position_embeddings:
        ax.axhline(c.max_position_embeddings, color="0.3", ls="--", lw=1,
                   label=f"trained context of {c.name}: {c.max_position_embeddings:,}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("batch (sequences decoded together)")
    ax.set_ylabel("longest context that fits (tokens, log2 scale)")
    ax.legend(fontsize=8)
    base, best = setups[0], max(setups, key=lambda s: first[s])
    head = f"{c.name} on {num_gpus} x {g.name}, batch {batches[0]}: {_short(best)} fits"
    if math.isinf(first[best]):
        title = (f"{c.name} on {num_gpus} x {g.name}, batch {batches[0]}: the cache stops growing at the\n"
                 f"{c.sliding_window:,}-token sliding window, so memory never limits the context")
    elif first[base] > 0:
        title = f"{head} {first[best] / first[base]:.3g}x\nthe context of {_short(base)}"
    else:
        title = f"{head} {first[best]:,} tokens;\n{_short(base)} leaves no room for a cache"
    util = f"; {utilization:.0%} of memory usable" if utilization < 1 else ""
    ax.set_title(title + f"\n(context x batch is constant along each line{util})", fontsize=10)
    return fig


def plot_kv_accuracy(rows: Sequence[dict], *, ax: Axes | None = None) -> Figure:
    """Draw the attention-output SNR (dB) of each cache format as bars grouped by scale granularity, from :func:`fp8lab.kv_cache_accuracy` rows.

    Each row needs ``format``, ``granularity``, ``snr_db`` and ``bits_per_element``.

    >>> rows = [{"format": "e4m3", "granularity": "head", "snr_db": 26.0, "bits_per_element": 8.25},
    ...         {"format": "fp4", "granularity": "head", "snr_db": 9.0, "bits_per_element": 4.25}]
    >>> plot_kv_accuracy(rows).axes[0].get_title().splitlines()[0]
    'Attention output SNR with a quantized KV cache: best e4m3 (head) 26.0 dB,'
    """
    rows = list(rows)
    if not rows:
        raise ValueError("give at least one row (from fp8lab.kv_cache_accuracy)")
    formats = list(dict.fromkeys(r["format"] for r in rows))
    grans = list(dict.fromkeys(r["granularity"] for r in rows))
    fig, ax = figure_and_axes(ax, (8.5, 4.2))
    width = 0.8 / len(grans)
    for j, gran in enumerate(grans):
        labelled = False
        for i, f in enumerate(formats):
            r = next((r for r in rows if r["format"] == f and r["granularity"] == gran), None)
            if r is None:
                continue
            x = i + (j - (len(grans) - 1) / 2) * width
            ax.bar(x, r["snr_db"], width * 0.95, color=f"C{j}", label=None if labelled else gran)
            labelled = True
            ax.text(x, r["snr_db"], f"{r['bits_per_element']:.3g}\nbits", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(formats)), formats, fontsize=8)
    ax.set_ylabel("SNR of the attention output (dB, higher is better)")
    ax.set_xlabel("cache format (label on each bar: bits per cached element, scales included)")
    top = max(r["snr_db"] for r in rows if math.isfinite(r["snr_db"]))
    ax.set_ylim(0, top * 1.25)
    ax.legend(title="scale per", fontsize=8)
    best = max(rows, key=lambda r: r["snr_db"])
    worst = min(rows, key=lambda r: r["snr_db"])
    ax.set_title(f"Attention output SNR with a quantized KV cache: best {best['format']} ({best['granularity']}) "
                 f"{best['snr_db']:.1f} dB,\nworst {worst['format']} ({worst['granularity']}) {worst['snr_db']:.1f} dB"
                 " (6 dB is about one bit; FP32 attention is the reference)", fontsize=10)
    return fig


def plot_training_memory(recipes: "Sequence[str | MemoryPlan] | None" = None, *,
                         ax: Axes | None = None) -> Figure:
    """Draw the training bytes per parameter of each recipe as a bar stacked by working weights, FP32 master weights, gradients and moments.

    >>> plot_training_memory(["fp32", "deepseek-v3"]).axes[0].get_title().splitlines()[0]
    'Bytes per parameter: from 12 (deepseek-v3) to 16 (fp32)'
    """
    recs = [get_memory_plan(r) for r in (list_memory_plans() if recipes is None else recipes)]
    if not recs:
        raise ValueError("give at least one memory plan")
    fig, ax = figure_and_axes(ax, (8, 4))
    x = np.arange(len(recs))
    bottom = np.zeros(len(recs))
    # the FP32 master weights get their own segment: where they are the only copy (DeepSeek-V3's plan) the bar
    # still shows the weights, and where a low-precision working copy exists both are visible
    master = lambda r: sum(c.bytes_per_param for c in r.components if c.name == "master_weights")
    segments = [("weights", "weights (working copy)", lambda r: r.bytes_per_param_of("weights"), _KIND_COLORS["weights"], None),
                ("master", "FP32 master weights", master, _KIND_COLORS["optimizer"], "//"),
                ("gradients", "gradients", lambda r: r.bytes_per_param_of("gradients"), _KIND_COLORS["gradients"], None),
                ("optimizer", "optimizer moments", lambda r: r.bytes_per_param_of("optimizer") - master(r),
                 _KIND_COLORS["optimizer"], None)]
    for _, label, of, color, hatch in segments:
        vals = np.array([of(r) for r in recs])
        ax.bar(x, vals, 0.6, bottom=bottom, color=color, alpha=0.85, hatch=hatch, label=label)
        for xi, b, v in zip(x, bottom, vals):
            if v:
                ax.text(xi, b + v / 2, f"{v:g}", ha="center", va="center", fontsize=8, color="white")
        bottom += vals
    for xi, t in zip(x, bottom):
        ax.text(xi, t, f"{t:g}", ha="center", va="bottom", fontsize=9)
    ax.set_xticks(x, [r.name for r in recs])
    ax.set_xlabel("training recipe (fp8lab.get_training_recipe name)")
    ax.set_ylabel("bytes per parameter")
    ax.set_ylim(0, bottom.max() * 1.12)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    lo, hi = int(np.argmin(bottom)), int(np.argmax(bottom))
    ax.set_title(f"Bytes per parameter: from {bottom[lo]:g} ({recs[lo].name}) to {bottom[hi]:g} ({recs[hi].name})"
                 "\n(weights, gradients and optimizer states; activations not included)", fontsize=10)
    return fig
