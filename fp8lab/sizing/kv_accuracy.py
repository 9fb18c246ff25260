"""How much a quantized KV cache changes attention: FP8/FP4 K and V against FP32, on generated data.

The data imitate an LLM's cache: queries, keys and values are standard normal, and a few key
channels per head carry large outliers (as measured in real models' keys, e.g. KIVI, arXiv
2402.02750). K and V are quantized with scale = amax / format max per token and K/V head
(``granularity="head"``), per token shared by all heads (``"token"``) or for the whole tensor
(``"tensor"``) — the same words as ``kv_cache_size``'s ``scale_granularity``; attention
``softmax(q k^T / sqrt(d)) v`` is then computed in FP32 with the dequantized K and V and compared
with the FP32 result.

>>> rows = kv_cache_accuracy(["e4m3", "fp4"], seq_len=64)
>>> [(r["format"], r["snr_db"] > 20) for r in rows]
[('float8_e4m3fn', True), ('float4_e2m1fn', False)]
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from ..formats import Format
from ..registry import get_format
from .units import check_count, dtype_bits

__all__ = ["kv_cache_accuracy", "make_kv_data", "attention", "GRANULARITIES"]


def make_kv_data(*, kv_heads: int = 4, seq_len: int = 512, head_dim: int = 128, queries: int = 16,
                 outlier_channels: int = 4, outlier_scale: float = 10.0, seed: int = 0):
    """Seeded LLM-like ``(q, k, v)`` in float32, shapes ``(kv_heads, queries|seq_len, head_dim)``.

    Each head's keys have ``outlier_channels`` channels of size about ``outlier_scale``.

    >>> q, k, v = make_kv_data(kv_heads=1, seq_len=8, head_dim=16, queries=2)
    >>> q.shape, k.shape, v.dtype, bool(np.abs(k).max() > 5)
    ((1, 2, 16), (1, 8, 16), dtype('float32'), True)
    """
    kv_heads, seq_len = check_count("kv_heads", kv_heads, minimum=1), check_count("seq_len", seq_len, minimum=1)
    head_dim, queries = check_count("head_dim", head_dim, minimum=1), check_count("queries", queries, minimum=1)
    outlier_channels = check_count("outlier_channels", outlier_channels, minimum=0)
    if outlier_channels > head_dim:
        raise ValueError(f"outlier_channels ({outlier_channels}) cannot exceed head_dim ({head_dim})")
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((kv_heads, queries, head_dim))
    k = rng.standard_normal((kv_heads, seq_len, head_dim))
    v = rng.standard_normal((kv_heads, seq_len, head_dim))
    for h in range(kv_heads):
        channels = rng.choice(head_dim, size=outlier_channels, replace=False)
        sign = rng.choice([-1.0, 1.0], size=outlier_channels)
        k[h][:, channels] += sign * outlier_scale * (1 + 0.25 * rng.standard_normal((seq_len, outlier_channels)))
    return q.astype(np.float32), k.astype(np.float32), v.astype(np.float32)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Softmax attention per head in float32: ``softmax(q k^T / sqrt(d)) v``, no mask (decode step).

    >>> attention(np.ones((1, 1, 2)), np.ones((1, 3, 2)), np.arange(6.0).reshape(1, 3, 2)).tolist()
    [[[2.0, 3.0]]]
    """
    q, k, v = (np.asarray(a, dtype=np.float32) for a in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / np.float32(math.sqrt(q.shape[-1]))
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return p @ v


#: scale granularities of the accuracy study (a subset of kv_cache_size's), with what shares a scale
GRANULARITIES = {"head": "one scale per token and K/V head", "token": "one scale per token, shared by all K/V heads",
                 "tensor": "one scale for the whole K (and one for V)"}


def _rows(x: np.ndarray, granularity: str) -> np.ndarray:
    """``x`` (kv_heads, seq_len, head_dim) as a matrix whose rows share a scale (or all one scale)."""
    if granularity == "token":
        return np.ascontiguousarray(np.swapaxes(x, 0, 1)).reshape(x.shape[1], -1)
    return x.reshape(-1, x.shape[-1])


def _unrows(x2d: np.ndarray, shape: tuple[int, ...], granularity: str) -> np.ndarray:
    if granularity == "token":
        return np.ascontiguousarray(np.swapaxes(x2d.reshape(shape[1], shape[0], shape[2]), 0, 1))
    return x2d.reshape(shape)


def _quantize(x: np.ndarray, fmt: Format, granularity: str) -> np.ndarray:
    from ..scaling import AxisScaling, TensorScaling, quantize_tensor  # imported here: scaling never imports sizing

    x2d = _rows(x, granularity)
    recipe = AxisScaling(axis=-1) if granularity != "tensor" else TensorScaling()
    out = np.asarray(quantize_tensor(x2d, fmt, recipe).dequantize(), dtype=np.float32)
    return _unrows(out, x.shape, granularity)


def _rel(err: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(err.astype(np.float64)) / np.linalg.norm(ref.astype(np.float64)))


def kv_cache_accuracy(formats: Iterable["str | Format"] = ("e4m3", "e5m2", "fp4"), *, granularity: str = "head",
                      kv_heads: int = 4, seq_len: int = 512, head_dim: int = 128, queries: int = 16,
                      outlier_channels: int = 4, outlier_scale: float = 10.0, seed: int = 0) -> list[dict]:
    """Attention error with K and V quantized to each format, against FP32: one figures-ready row per format.

    Each row has the format, its bits, the scale granularity, the effective bits per cached element
    (FP32 scales included), the relative error of K, V and the attention output (Frobenius norm),
    the output's SNR in dB (``-20 log10(rel_error)``) and its largest absolute error. Quantization goes
    through :func:`fp8lab.scaling.quantize_tensor` (per-row or per-tensor amax scales).

    >>> rows = kv_cache_accuracy(seq_len=128)
    >>> rows[0]["snr_db"] > rows[1]["snr_db"] > rows[2]["snr_db"]   # e4m3 > e5m2 > fp4
    True
    """
    if granularity not in GRANULARITIES:
        raise ValueError(f"granularity must be one of {GRANULARITIES} , got {granularity!r}")
    q, k, v = make_kv_data(kv_heads=kv_heads, seq_len=seq_len, head_dim=head_dim, queries=queries,
                           outlier_channels=outlier_channels, outlier_scale=outlier_scale, seed=seed)
    ref = attention(q, k, v)
    rows = []
    for name in formats:
        fmt = get_format(name)
        kq = _quantize(k, fmt, granularity)
        vq = _quantize(v, fmt, granularity)
        out = attention(q, kq, vq)
        rel = _rel(out - ref, ref)
        bits = dtype_bits(fmt)
        rows.append({
            "format": fmt.name, "bits": bits, "granularity": granularity,
            "bits_per_element": bits + {"head": 32 / head_dim, "token": 32 / (kv_heads * head_dim)}.get(granularity, 0.0),
            "k_rel_error": _rel(kq - k, k), "v_rel_error": _rel(vq - v, v),
            "rel_error": rel, "snr_db": math.inf if rel == 0 else -20 * math.log10(rel),
            "max_abs_error": float(np.abs(out - ref).max()),
        })
    return rows
