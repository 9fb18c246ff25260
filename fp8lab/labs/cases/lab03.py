"""Random cases of lab 03_encode_e4m3: fresh inputs from a seed, fp8lab's answer, the comparison.

One function per task, named by its id and called as ``task(fn, rng)``: it draws the cases from
``rng``, computes what fp8lab says, calls ``fn`` (the submission's function) and raises
AssertionError with the input, the expected value and what came back at the first difference.

>>> import numpy as np
>>> e4m3_round_normal(lambda *args, **kwargs: 0, np.random.default_rng(0))  # answers 0: refused  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
AssertionError: e4m3_round_normal(x): 5473 of 5473 values differ; the first:
...
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import fp8lab as fl
from fp8lab.labs import expect_equal, no_shortcut

__all__ = ['e4m3_round_normal', 'e4m3_quantize', 'encode_e4m3', 'encode_e4m3_array']


def e4m3_round_normal(e4m3_round_normal: Callable[..., Any], rng: np.random.Generator) -> None:
    """Every midpoint between neighbouring normal values and the FP32 numbers just around it, powers of two, random values over the whole normal range; against fp8lab."""
    values = fl.decode(np.arange(0x08, 0x7F, dtype=np.uint8), "e4m3").astype(np.float32)  # every positive normal
    mid = ((values[:-1].astype(np.float64) + values[1:]) / 2).astype(np.float32)
    x = np.concatenate([values, mid, np.nextafter(mid, np.float32(0)), np.nextafter(mid, np.float32(np.inf)),
                        (2.0 ** rng.uniform(-6, np.log2(448), 5000)).astype(np.float32)])
    x = x[(x >= 2.0**-6) & (x <= 448)]
    want = fl.quantize(x, "e4m3").astype(np.float64)
    inputs = [float(v) for v in x]
    with no_shortcut(e4m3_round_normal) as rnd:
        got = [rnd(v) for v in inputs]
    expect_equal(got, want, what="e4m3_round_normal(x)", inputs=[repr(v) for v in inputs])


def e4m3_quantize(e4m3_quantize: Callable[..., Any], rng: np.random.Generator) -> None:
    """Every subnormal tie, the underflow and overflow boundaries and the FP32 numbers around them, signed zeros, infinities, NaN, random values from 1e-5 to 1e4 of both signs, with and without saturation; against fp8lab.quantize."""
    sub_ties = (np.arange(0, 8) + 0.5) * 2.0**-9
    edges = np.array([2.0**-10, 2.0**-6, 448.0, 464.0, 480.0, 2.0**-9, 0.0], dtype=np.float32)
    around = np.concatenate([edges, np.nextafter(edges, np.float32(0)), np.nextafter(edges, np.float32(np.inf))])
    special = np.array([np.inf, -np.inf, np.nan, -0.0, 1e30, -1e30, 2.0**-149], dtype=np.float32)
    rand = (2.0 ** rng.uniform(np.log2(1e-5), np.log2(1e4), 6000) * rng.choice([-1, 1], 6000)).astype(np.float32)
    x = np.concatenate([sub_ties.astype(np.float32), around, -around, special, rand])
    inputs = [float(v) for v in x]
    for saturate in (False, True):
        want = fl.quantize(x, "e4m3", saturate=saturate).astype(np.float64)
        with no_shortcut(e4m3_quantize) as q:
            got = [q(v, saturate=saturate) for v in inputs]
        expect_equal(got, want, what=f"e4m3_quantize(x, saturate={saturate})", inputs=[repr(v) for v in inputs])


def encode_e4m3(encode_e4m3: Callable[..., Any], rng: np.random.Generator) -> None:
    """Every E4M3 value encoded back to its own code, ties, subnormals, signed zeros, overflow, infinities and NaNs of both signs, random values, with and without saturation; against fp8lab.encode."""
    every = fl.decode(np.arange(256, dtype=np.uint8), "e4m3")
    every = every[~np.isnan(every)]
    mid = ((every[:-1].astype(np.float64) + every[1:]) / 2).astype(np.float32)
    special = np.array([np.inf, -np.inf, np.nan, -np.nan, 464.0, -464.0, 465.0, 1e30, 2.0**-10, -2.0**-10], dtype=np.float32)
    rand = (2.0 ** rng.uniform(-12, 10, 4000) * rng.choice([-1, 1], 4000)).astype(np.float32)
    x = np.concatenate([every, np.sort(mid), special, rand])
    inputs = [float(v) for v in x]
    labels = [repr(v) for v in inputs]
    for saturate in (False, True):
        want = fl.encode(x, "e4m3", saturate=saturate).astype(np.int64)
        with no_shortcut(encode_e4m3) as enc:
            got = [enc(v, saturate=saturate) for v in inputs]
        nan = np.isnan(fl.decode(want.astype(np.uint8), "e4m3"))
        got_nan = np.array([g in (0x7F, 0xFF) for g in got])
        expect_equal(got_nan, nan, what=f"encode_e4m3(x, saturate={saturate}) is a NaN code", inputs=labels)
        keep = ~nan
        expect_equal([g for g, k in zip(got, keep) if k], want[keep], what=f"encode_e4m3(x, saturate={saturate})",
                     inputs=[lab for lab, k in zip(labels, keep) if k])


def encode_e4m3_array(encode_e4m3_array: Callable[..., Any], rng: np.random.Generator) -> None:
    """100,000 random FP32 bit patterns and values of every size, all E4M3 values and midpoints, infinities, NaNs, signed zeros, a 3-D array, with and without saturation; against fp8lab.encode."""
    every = fl.decode(np.arange(256, dtype=np.uint8), "e4m3")
    every = every[~np.isnan(every)]
    mid = ((np.sort(every)[:-1].astype(np.float64) + np.sort(every)[1:]) / 2).astype(np.float32)
    patterns = rng.integers(0, 2**32, 50000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    values = (2.0 ** rng.uniform(-14, 12, 50000) * rng.choice([-1, 1], 50000)).astype(np.float32)
    x = np.concatenate([every, mid, np.array([np.inf, -np.inf, np.nan, -0.0, 0.0], dtype=np.float32), patterns, values])
    for saturate in (False, True):
        want = fl.encode(x, "e4m3", saturate=saturate)
        with no_shortcut(encode_e4m3_array) as enc:
            got = enc(x.copy(), saturate=saturate)
            got3d = enc(x[:6000].reshape(10, 20, 30).copy(), saturate=saturate)
        labels = [repr(float(v)) for v in x]
        nan = np.isnan(fl.decode(want, "e4m3"))
        got = np.asarray(got)
        expect_equal(np.isin(got, [0x7F, 0xFF]), nan, what=f"encode_e4m3_array(x, saturate={saturate}) is a NaN code",
                     inputs=labels)
        expect_equal(np.where(nan, 0, got), np.where(nan, 0, want), exact_dtype=True, inputs=labels,
                     what=f"encode_e4m3_array(x, saturate={saturate})")
        got3d = np.asarray(got3d)
        expect_equal(np.where(nan[:6000].reshape(10, 20, 30), 0, got3d), np.where(nan[:6000], 0, want[:6000]).reshape(10, 20, 30),
                     exact_dtype=True, what=f"encode_e4m3_array(x, saturate={saturate}) for a 10x20x30 array")
