"""Is torch's CPU bfloat16 matmul fast here? Its speed depends on the processor, so measure before relying on it.

On a CPU with AVX-512 BF16 or AMX torch's bfloat16 matmul runs at several times float32's speed; on
one with only AVX2 it falls back to a conversion loop hundreds of times slower (a 2048^3 product took
48 s, 441x float32, on such a machine here). Benchmarks call :func:`bf16_matmul_slowdown` on a small
product first and skip (with the reason) what would otherwise stall for minutes; the course and the
training recipes never depend on it (they round operands through the codec and multiply in float32).

>>> bf16_matmul_slowdown(64, repeats=2) > 0
True
"""

from __future__ import annotations

import time
from functools import lru_cache

from ..codec.backend import torch

__all__ = ["bf16_matmul_slowdown", "bf16_matmul_is_slow", "SLOW_BF16_RATIO"]

#: A bfloat16 matmul slower than float32 by more than this factor is "the slow path".
SLOW_BF16_RATIO = 4.0


def _best(fn, repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


@lru_cache(maxsize=None)
def bf16_matmul_slowdown(size: int = 256, repeats: int = 5) -> float:
    """Time of a ``size``^3 bfloat16 matmul over a float32 one on this CPU (best of ``repeats``).

    >>> bf16_matmul_slowdown(32, repeats=1) > 0
    True
    """
    a = torch.randn(size, size)
    b = torch.randn(size, size)
    a16, b16 = a.bfloat16(), b.bfloat16()
    return _best(lambda: a16 @ b16, repeats) / _best(lambda: a @ b, repeats)


def bf16_matmul_is_slow(threshold: float = SLOW_BF16_RATIO) -> bool:
    """Whether torch's CPU bfloat16 matmul is more than ``threshold`` times slower than float32 here.

    >>> isinstance(bf16_matmul_is_slow(), bool)
    True
    """
    return bf16_matmul_slowdown() > threshold
