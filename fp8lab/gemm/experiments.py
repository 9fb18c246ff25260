"""Figures-ready experiments on FP8 GEMM accumulation: the error against K, with and without promotion.

DeepSeek-V3 (arXiv 2412.19437, section 3.3.2) states in words that a ~14-bit accumulator loses
accuracy as K grows and that promoting partial sums to FP32 every 128 elements fixes it; here the
effect is measured. Rows are plain dicts, ready for ``pandas.DataFrame(rows)`` or a plot of
``max_rel_error`` against ``k`` per ``setting``.

>>> rows = accumulation_error_vs_k(ks=(256,), m=4, n=4)
>>> [r["setting"] for r in rows]
['exact FP32', 'no promotion', 'promoted every 128']
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from ..codec.backend import torch
from ..qtensor import QTensor
from ..registry import get_format
from ..scaling import TensorScaling, quantize_tensor
from .accumulator import Accumulator
from .api import scaled_matmul

__all__ = ["accumulation_error_vs_k", "relative_errors", "loglog_slope", "DISTRIBUTIONS", "METRICS"]

#: The error columns of :func:`~fp8lab.gemm.accumulation_error_vs_k` rows, with an axis label for each.
METRICS = {"max_rel_error": "largest elementwise relative error",
           "rel_error": "relative error (Frobenius norm)"}


#: Input distributions for the experiments: positive-mean data is where truncation errors add up.
DISTRIBUTIONS = {
    "uniform": "U[0, 1): every product positive, so the partial sum grows with K (like activations after "
               "a ReLU times positive weights) and truncation errors all point the same way",
    "normal": "N(0, 1): zero mean, the partial sum grows like sqrt(K) and rounding errors partly cancel",
}


def relative_errors(out, ref) -> dict[str, float]:
    """Maximum elementwise relative error and relative Frobenius error of ``out`` against ``ref``.

    >>> {k: round(v, 4) for k, v in relative_errors(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5])).items()}
    {'max_rel_error': 0.2, 'rel_error': 0.1857}
    """
    out, ref = out.double(), ref.double()
    err = (out - ref).abs()
    nz = ref != 0
    max_rel = float((err[nz] / ref[nz].abs()).max()) if bool(nz.any()) else float(err.max()) if err.numel() else 0.0
    denom = float(torch.linalg.vector_norm(ref))
    rel = float(torch.linalg.vector_norm(out - ref)) / denom if denom else float(torch.linalg.vector_norm(err))
    return {"max_rel_error": max_rel, "rel_error": rel}


def _sample(distribution: str, shape: tuple[int, int], gen) -> Any:
    if distribution == "uniform":
        return torch.rand(shape, generator=gen)
    if distribution == "normal":
        return torch.randn(shape, generator=gen)
    raise ValueError(f"distribution must be one of {tuple(DISTRIBUTIONS)}, got {distribution!r}")


def accumulation_error_vs_k(ks: Iterable[int] = (256, 512, 1024, 2048, 4096, 8192, 16384), *, m: int = 64,
                            n: int = 64, mantissa_bits: int = 13,
                            promote_every: Iterable[int | None] = (None, 128), model: str = "round",
                            rounding: str = "toward_zero", fmt: str = "e4m3", distribution: str = "uniform",
                            seed: int = 0) -> list[dict[str, Any]]:
    """Relative error of an FP8 GEMM against float64, per K and accumulator setting (rows for a plot).

    The operands (M x K and K x N, per-tensor scaled to ``fmt``) are the first K columns/rows of one
    random draw, so the curves are nested. The reference is the float64 product of the *quantized*
    operands, so the error is the accumulation's alone. Each row: ``k``, ``setting`` ("exact FP32",
    "no promotion", "promoted every 128"), ``promote_every``, ``mantissa_bits``, ``model``,
    ``max_rel_error`` (largest elementwise relative error, DeepSeek-V3's measure) and ``rel_error``
    (relative Frobenius norm).

    >>> rows = accumulation_error_vs_k(ks=(4096,), m=8, n=8, mantissa_bits=10)
    >>> none, every = rows[1]["max_rel_error"], rows[2]["max_rel_error"]
    >>> none > 10 * every
    True
    """
    ks = [int(k) for k in ks]
    if not ks or min(ks) < 1:
        raise ValueError(f"ks must be positive lengths of K, got {ks}")
    f = get_format(fmt)
    gen = torch.Generator().manual_seed(seed)
    kmax = max(ks)
    qa_full = quantize_tensor(_sample(distribution, (m, kmax), gen), f, TensorScaling())
    qb_full = quantize_tensor(_sample(distribution, (kmax, n), gen), f, TensorScaling())
    settings: list[tuple[str, Accumulator]] = [("exact FP32", Accumulator())]
    for pe in promote_every:
        label = "no promotion" if pe is None else f"promoted every {pe}"
        settings.append((label, Accumulator(mantissa_bits, pe, rounding=rounding, model=model)))
    rows = []
    for k in ks:
        qa = QTensor(qa_full.codes[:, :k], qa_full.scales, f)
        qb = QTensor(qb_full.codes[:k], qb_full.scales, f)
        ref = qa.dequantize().double() @ qb.dequantize().double()
        for label, acc in settings:
            out = scaled_matmul(qa, qb, accumulator=acc)
            rows.append({"k": k, "setting": label, "promote_every": acc.promote_every if not acc.exact else None,
                         "mantissa_bits": acc.mantissa_bits, "model": acc.model if not acc.exact else None,
                         "accumulator": acc.describe(), **relative_errors(out, ref)})
    return rows


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {tuple(METRICS)}, got {metric!r}")


def _series(rows: Sequence[dict[str, Any]], metric: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{setting: (ks, errors)}`` sorted by K, in the order the settings first appear."""
    _check_metric(metric)
    rows = list(rows)
    if not rows:
        raise ValueError("no rows to plot: pass the list that fp8lab.accumulation_error_vs_k returns")
    out: dict[str, list[tuple[int, float]]] = {}
    for r in rows:
        try:
            out.setdefault(str(r["setting"]), []).append((int(r["k"]), float(r[metric])))
        except KeyError as e:
            raise ValueError(f"each row needs 'k', 'setting' and {metric!r} (as accumulation_error_vs_k "
                             f"returns), a row lacks {e}") from None
    return {s: (np.array([k for k, _ in sorted(v)]), np.array([e for _, e in sorted(v)])) for s, v in out.items()}


def loglog_slope(rows: Sequence[dict[str, Any]], setting: str, metric: str = "max_rel_error") -> float:
    """The least-squares slope of log(error) against log(K) for one setting: 1 means error proportional to K.

    >>> rows = [{"k": k, "setting": "s", "max_rel_error": 1e-6 * k} for k in (256, 1024, 4096)]
    >>> round(loglog_slope(rows, "s"), 6)
    1.0
    """
    series = _series(rows, metric)
    if setting not in series:
        raise ValueError(f"no rows with setting {setting!r}; the rows have {list(series)}")
    ks, errs = series[setting]
    keep = errs > 0
    if keep.sum() < 2 or len(np.unique(ks[keep])) < 2:
        raise ValueError(f"setting {setting!r} needs positive errors at two or more values of K for a slope")
    return float(np.polyfit(np.log(ks[keep]), np.log(errs[keep]), 1)[0])
