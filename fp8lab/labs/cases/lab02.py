"""Random cases of lab 02_bf16_rounding: fresh inputs from a seed, fp8lab's answer, the comparison.

One function per task, named by its id and called as ``task(fn, rng)``: it draws the cases from
``rng``, computes what fp8lab says, calls ``fn`` (the submission's function) and raises
AssertionError with the input, the expected value and what came back at the first difference.

>>> import numpy as np
>>> bf16_truncate(lambda *args, **kwargs: 0, np.random.default_rng(0))  # answers 0: refused
Traceback (most recent call last):
...
AssertionError: bf16_truncate(x): expected shape (20016,), got shape () (0) / bf16_truncate(x)：期望形状 (20016,)，得到形状 ()（0）
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import fp8lab as fl
from fp8lab.labs import DEFAULT_FORBID, expect_close, expect_equal, no_shortcut

__all__ = ['bf16_truncate', 'bf16_round', 'bf16_accumulate', 'rounding_bias']


def bf16_truncate(bf16_truncate: Callable[..., Any], rng: np.random.Generator) -> None:
    """Signed zeros, infinities, NaNs with low payloads, subnormals, the largest value, random bit patterns of every kind, a 2-D input; against fp8lab.quantize."""
    special = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7F800001, 0xFF800001, 0x7FC00001, 0x7FBFFFFF,
               0x00000001, 0x0000FFFF, 0x00010000, 0x807FFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F80FFFF, 0xBF80FFFF]
    bits = np.concatenate([np.array(special, dtype=np.uint32), rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)])
    x = bits.view(np.float32)
    want = fl.quantize(x, "bf16", rounding="toward_zero")
    with no_shortcut(bf16_truncate, forbid=DEFAULT_FORBID + ("torch:bfloat16",)) as trunc:
        got = trunc(x.copy())
        got2d = trunc(x[:1000].reshape(25, 40).copy())
    labels = [f"0x{b:08X}" for b in bits]
    expect_equal(got, want, what="bf16_truncate(x)", inputs=labels, exact_dtype=True)
    expect_equal(np.asarray(got).view(np.uint32) & 0xFFFF, np.zeros(len(x), dtype=np.uint32),
                 what="the low 16 bits of bf16_truncate(x) (every result must be a BF16 value)", inputs=labels)
    expect_equal(got2d, want[:1000].reshape(25, 40), what="bf16_truncate(x) for a 25x40 array", exact_dtype=True)


def bf16_round(bf16_round: Callable[..., Any], rng: np.random.Generator) -> None:
    """Ties at every exponent, one bit either side of a tie, NaNs that the addition would break, overflow, subnormals, random bit patterns, a 2-D input; against fp8lab.quantize."""
    special = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7F800001, 0xFF800001, 0x7FFFFFFF, 0xFFFFFFFF,
               0x7FC00000, 0x7F80FFFF, 0x00008000, 0x00018000, 0x0000FFFF, 0x807FFFFF, 0x7F7FFFFF, 0x7F7F7FFF,
               0x7F7F8000, 0xFF7F8000, 0x3F7FFFFF, 0x3F80FFFF]
    high = rng.integers(0, 2**16, 3000, dtype=np.uint64).astype(np.uint32) << 16
    ties = np.concatenate([high | 0x8000, high | 0x7FFF, high | 0x8001])
    bits = np.concatenate([np.array(special, dtype=np.uint32), ties,
                           rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)])
    x = bits.view(np.float32)
    want = fl.quantize(x, "bf16")
    with no_shortcut(bf16_round, forbid=DEFAULT_FORBID + ("torch:bfloat16",)) as rne:
        got = rne(x.copy())
        got2d = rne(x[:1200].reshape(30, 40).copy())
    labels = [f"0x{b:08X}" for b in bits]
    expect_equal(got, want, what="bf16_round(x)", inputs=labels, exact_dtype=True)
    expect_equal(np.asarray(got).view(np.uint32) & 0xFFFF, np.zeros(len(x), dtype=np.uint32),
                 what="the low 16 bits of bf16_round(x) (every result must be a BF16 value)", inputs=labels)
    expect_equal(got2d, want[:1200].reshape(30, 40), what="bf16_round(x) for a 30x40 array", exact_dtype=True)


def bf16_accumulate(bf16_accumulate: Callable[..., Any], rng: np.random.Generator) -> None:
    """Random sequences of several scales and signs (small terms that stagnate, cancellation), with both roundings; against sums rounded by fp8lab.quantize at every step."""
    sequences = [np.full(1000, 0.01, dtype=np.float32), rng.random(400).astype(np.float32),
                 (rng.standard_normal(400) * 10).astype(np.float32), (rng.random(300) * 1e-3 + 1).astype(np.float32),
                 np.concatenate([[np.float32(2.0**20)], rng.random(200).astype(np.float32)]),
                 (rng.standard_normal(300) * 2.0 ** rng.integers(-20, 20, 300)).astype(np.float32)]
    for rounding, mode in (("truncate", "toward_zero"), ("nearest", "nearest")):
        for k, seq in enumerate(sequences):
            s = np.zeros(1, dtype=np.float32)
            for v in seq:
                s = fl.quantize(s + v, "bf16", rounding=mode)
            want = np.float32(s[0])
            with no_shortcut(bf16_accumulate, forbid=DEFAULT_FORBID + ("torch:bfloat16",)) as acc:
                got = acc(seq.copy(), rounding)
            expect_equal(got, want, what=f"bf16_accumulate(sequence {k} of {len(seq)} values, {rounding!r})")


def rounding_bias(rounding_bias: Callable[..., Any], rng: np.random.Generator) -> None:
    """Uniform, normal, log-uniform and mixed-sign data with zeros, infinities and NaNs mixed in; against the same means computed with fp8lab.quantize."""
    data = [rng.random(5000).astype(np.float32), rng.standard_normal(5000).astype(np.float32),
            (2.0 ** rng.uniform(-30, 30, 5000)).astype(np.float32),
            np.concatenate([rng.random(3000), [0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(np.float32)]
    for k, x in enumerate(data):
        keep = x[np.isfinite(x) & (x != 0)].astype(np.float32)
        ref = keep.astype(np.float64)
        want_t = float(((fl.quantize(keep, "bf16", rounding="toward_zero").astype(np.float64) - ref) / ref).mean())
        want_n = float(((fl.quantize(keep, "bf16").astype(np.float64) - ref) / ref).mean())
        with no_shortcut(rounding_bias, forbid=DEFAULT_FORBID + ("torch:bfloat16",)) as bias:
            t, n = bias(x.copy())
        expect_close(t, want_t, rel=1e-9, what=f"rounding_bias(data set {k})[0]  (truncation)")
        expect_close(n, want_n, rel=1e-9, abs=1e-15, what=f"rounding_bias(data set {k})[1]  (nearest)")
