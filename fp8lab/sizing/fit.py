"""What fits on a GPU: the longest context or the largest batch after the weights are loaded.

The budget is ``num_gpus * gpu.budget_bytes * utilization - reserve_bytes`` (``budget_bytes``: the
driver's total, what a program can allocate); the weights take
``params * bits / 8`` in ``weights_dtype``; what is left holds the KV cache. Activations, the CUDA
context and allocator fragmentation are not modelled: pass ``utilization`` (vLLM's default
``gpu_memory_utilization`` is 0.9) or ``reserve_bytes`` to leave room for them. With several GPUs the
memory is simply pooled (tensor parallelism that shards weights and KV heads evenly).

>>> max_context("llama-3-8b", "h100")                       # bf16 weights, bf16 cache, batch 1
529939
>>> max_context("llama-3-70b", "h100", weights_dtype="fp8", kv_dtype="fp8")  # the model was trained for 8,192
91351
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

from ..formats import Format
from ..registry import get_format
from .gpus import GPU, get_gpu
from .kvcache import kv_cache_bytes
from .models import ModelConfig, get_model
from .params import weights_bytes
from .units import check_count, format_bytes

__all__ = ["FitReport", "max_context", "max_batch", "fit_report", "memory_budget"]


def memory_budget(gpu: "str | GPU" = "h100", *, num_gpus: int = 1, utilization: float = 1.0,
                  reserve_bytes: int = 0) -> int:
    """Bytes available for weights and KV cache: ``num_gpus * gpu.budget_bytes * utilization - reserve_bytes``.

    >>> memory_budget("h100", utilization=0.9)
    76968728985
    """
    g = get_gpu(gpu)
    num_gpus = check_count("num_gpus", num_gpus, minimum=1)
    reserve_bytes = check_count("reserve_bytes", reserve_bytes, minimum=0)
    if isinstance(utilization, bool) or not isinstance(utilization, Real) or not 0 < utilization <= 1:
        raise ValueError(f"utilization must be a fraction in (0, 1], got {utilization!r}")
    return max(0, math.floor(num_gpus * g.budget_bytes * utilization) - reserve_bytes)


def _largest(fits, start: int = 1) -> int:
    """Largest n >= 0 with fits(n), for a monotone predicate with fits(0) true."""
    if not fits(start):
        lo, hi = 0, start
    else:
        lo, hi = start, 2 * start
        while fits(hi):
            lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def _kv_kwargs(scale_granularity, scale_dtype, block_size) -> dict:
    return dict(scale_granularity=scale_granularity, scale_dtype=scale_dtype, block_size=block_size)


def max_context(model: "str | ModelConfig", gpu: "str | GPU" = "h100", *, weights_dtype: "str | Format" = "bf16",
                kv_dtype: "str | Format" = "bf16", batch: int = 1, num_gpus: int = 1, utilization: float = 1.0,
                reserve_bytes: int = 0, scale_granularity: str | None = None, scale_dtype: "str | Format" = "float32",
                block_size: int | None = None) -> "int | float":
    """Longest ``seq_len`` whose KV cache for ``batch`` sequences fits beside the weights (0 if none does).

    Returns ``math.inf`` when a sliding window stops the cache growing before it runs out of room.

    >>> max_context("mistral-7b", "h100")      # a 4096-token rolling buffer never fills 80 GiB
    inf
    >>> max_context("llama-3.1-405b", "h100")  # 810 GB of bf16 weights do not fit one H100
    0
    """
    c = get_model(model)
    free = memory_budget(gpu, num_gpus=num_gpus, utilization=utilization, reserve_bytes=reserve_bytes) \
        - weights_bytes(c, weights_dtype)
    kw = _kv_kwargs(scale_granularity, scale_dtype, block_size)

    def fits(n: int) -> bool:
        return kv_cache_bytes(c, seq_len=n, batch=batch, dtype=kv_dtype, **kw) <= free

    if free < 0 or not fits(1):
        return 0
    if c.sliding_window is not None and fits(c.sliding_window):
        return math.inf
    return _largest(fits, start=1)


def max_batch(model: "str | ModelConfig", gpu: "str | GPU" = "h100", seq_len: int = 4096, *,
              weights_dtype: "str | Format" = "bf16", kv_dtype: "str | Format" = "bf16", num_gpus: int = 1,
              utilization: float = 1.0, reserve_bytes: int = 0, scale_granularity: str | None = None,
              scale_dtype: "str | Format" = "float32", block_size: int | None = None) -> int:
    """Largest number of ``seq_len``-token sequences whose KV cache fits beside the weights (0 if none).

    >>> max_batch("llama-3-70b", "h200", seq_len=4096, weights_dtype="fp8", kv_dtype="fp8")
    119
    """
    c = get_model(model)
    seq_len = check_count("seq_len", seq_len, minimum=1)
    free = memory_budget(gpu, num_gpus=num_gpus, utilization=utilization, reserve_bytes=reserve_bytes) \
        - weights_bytes(c, weights_dtype)
    kw = _kv_kwargs(scale_granularity, scale_dtype, block_size)
    if free < 0:
        return 0
    return _largest(lambda b: b == 0 or kv_cache_bytes(c, seq_len=seq_len, batch=b, dtype=kv_dtype, **kw) <= free)


@dataclass(frozen=True)
class FitReport:
    """Budget, weights and KV cache of one deployment, and the largest context and batch that fit.

    >>> r = fit_report("llama-3-8b", "rtx-4090", seq_len=8192)
    >>> r.fits, r.max_batch
    (True, 9)
    """

    model: str
    gpu: str
    num_gpus: int
    weights_dtype: str
    kv_dtype: str
    seq_len: int
    batch: int
    budget_bytes: int
    weights_bytes: int
    kv_bytes: int
    max_context: "int | float"
    max_batch: int
    trained_context: int | None = None  #: the model's own limit (``max_position_embeddings``), if the preset has it

    @property
    def usable_context(self) -> "int | float":
        """The longer context that is both in memory and within the model's trained limit.

        >>> fit_report("llama-3-70b", "h100", num_gpus=2).usable_context
        8192
        """
        if self.trained_context is None:
            return self.max_context
        return min(self.max_context, self.trained_context)

    @property
    def free_bytes(self) -> int:
        """Budget left after weights and KV cache (negative when it does not fit).

        >>> fit_report("llama-2-7b", "a100-40gb", seq_len=4096).free_bytes
        27325358080
        """
        return self.budget_bytes - self.weights_bytes - self.kv_bytes

    @property
    def fits(self) -> bool:
        """Whether weights and KV cache fit in the budget.

        >>> fit_report("llama-2-70b", "a100-80gb", seq_len=4096).fits
        False
        """
        return self.free_bytes >= 0

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) pairs with units, for printing.

        >>> fit_report("llama-3-8b", "h100").rows()[0]
        ('GPU budget', '85.52 GB (79.65 GiB) = 1 x h100')
        """
        ctx = "unlimited (sliding window)" if self.max_context == math.inf else f"{self.max_context:,} tokens"
        ctx += " (memory bound)"
        limit = (f"{self.trained_context:,} tokens (max_position_embeddings)" if self.trained_context
                 else "not in the preset's config")
        return [
            ("GPU budget", f"{format_bytes(self.budget_bytes)} = {self.num_gpus} x {self.gpu}"),
            (f"weights ({self.weights_dtype})", format_bytes(self.weights_bytes)),
            (f"KV cache ({self.kv_dtype}, {self.seq_len:,} tokens x batch {self.batch})", format_bytes(self.kv_bytes)),
            ("left over" if self.fits else "short by", format_bytes(abs(self.free_bytes))),
            ("fits", "yes" if self.fits else "no"),
            (f"max context at batch {self.batch}", ctx),
            ("the model's own context limit", limit),
            (f"max batch at {self.seq_len:,} tokens", f"{self.max_batch:,}"),
        ]


def fit_report(model: "str | ModelConfig", gpu: "str | GPU" = "h100", seq_len: int = 4096, batch: int = 1, *,
               weights_dtype: "str | Format" = "bf16", kv_dtype: "str | Format" = "bf16", num_gpus: int = 1,
               utilization: float = 1.0, reserve_bytes: int = 0, scale_granularity: str | None = None,
               scale_dtype: "str | Format" = "float32", block_size: int | None = None) -> FitReport:
    """Everything about fitting ``model`` on ``num_gpus`` x ``gpu``, as a :class:`FitReport`.

    >>> r = fit_report("llama-3-70b", "h100", num_gpus=2)
    >>> round(r.weights_bytes / 1e9, 1), r.fits
    (141.1, True)
    """
    c, g = get_model(model), get_gpu(gpu)
    common = dict(num_gpus=num_gpus, utilization=utilization, reserve_bytes=reserve_bytes,
                  scale_granularity=scale_granularity, scale_dtype=scale_dtype, block_size=block_size,
                  weights_dtype=weights_dtype, kv_dtype=kv_dtype)
    return FitReport(
        model=c.name, gpu=g.name, num_gpus=check_count("num_gpus", num_gpus, minimum=1),
        weights_dtype=get_format(weights_dtype).name, kv_dtype=get_format(kv_dtype).name,
        seq_len=check_count("seq_len", seq_len, minimum=1), batch=check_count("batch", batch, minimum=1),
        budget_bytes=memory_budget(g, num_gpus=num_gpus, utilization=utilization, reserve_bytes=reserve_bytes),
        weights_bytes=weights_bytes(c, weights_dtype),
        kv_bytes=kv_cache_bytes(c, seq_len, batch, kv_dtype, scale_granularity=scale_granularity,
                                scale_dtype=scale_dtype, block_size=block_size),
        max_context=max_context(c, g, batch=batch, **common),
        max_batch=max_batch(c, g, seq_len, **common),
        trained_context=c.max_position_embeddings,
    )

