"""Random cases of lab 09_int8_asymmetric: fresh inputs from a seed, fp8lab's answer, the comparison.

One function per task, named by its id and called as ``task(fn, rng)``: it draws the cases from
``rng``, computes what fp8lab says, calls ``fn`` (the submission's function) and raises
AssertionError with the input, the expected value and what came back at the first difference.

>>> import numpy as np
>>> int8_symmetric(lambda *args, **kwargs: 0, np.random.default_rng(0))  # answers 0: refused
Traceback (most recent call last):
...
AssertionError: int8_symmetric([ 127.     0.5    1.5 ...   -0.5   -1.5 -126.5]): expected a pair (codes, scale), got int
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import fp8lab as fl
from fp8lab.labs import DEFAULT_FORBID, expect_close, expect_equal, no_shortcut

__all__ = ['int8_symmetric', 'int8_asymmetric', 'int8_per_channel', 'int8_error']


def int8_symmetric(int8_symmetric: Callable[..., Any], rng: np.random.Generator) -> None:
    """Ties, ±inf (saturation to 127 and -128), NaN (NaN scale, zero codes), all zeros, subnormal amax (the smallest-normal floor), float32's largest values, 2-D and 0-d inputs, random tensors over many magnitudes; against fp8lab.quantize_tensor(x, "int8", IntScaling())."""
    f32 = np.finfo(np.float32)
    xs = [np.array(v, np.float32) for v in (
        [127.0, 0.5, 1.5, 2.5, -0.5, -1.5, -126.5], [1.0, np.inf, -np.inf], [1.0, np.nan, -3.0], [np.nan],
        [np.inf, -np.inf], [0.0, -0.0], [1e-40, -3e-41], [f32.max, -f32.max, 1.0], [f32.tiny, 5.0 * f32.tiny],
        [[1.0, -2.0], [3.0, 0.25]], 7.5)]
    for _ in range(40):
        x = (rng.standard_normal(tuple(int(n) for n in rng.integers(1, 40, int(rng.integers(1, 3))))) * 10.0 ** rng.uniform(-30, 30)).astype(np.float32)
        if rng.random() < 0.2:
            x.flat[int(rng.integers(x.size))] = rng.choice([np.inf, -np.inf, np.nan])
        xs.append(x)
    want = []
    for x in xs:
        q = fl.quantize_tensor(x, "int8", fl.IntScaling())
        want.append((np.asarray(q.values()).astype(np.int64), float(q.scales.ravel()[0])))
    with no_shortcut(int8_symmetric, forbid=DEFAULT_FORBID + ("torch.ao", "torch:quantize_per_*", "torch:fake_quantize_*", "torch:_fake_quantize_*")) as sym:
        got = [sym(x.copy()) for x in xs]
    for x, g, (w_codes, w_scale) in zip(xs, got, want):
        label = f"int8_symmetric({np.array2string(x, threshold=6)})"
        try:
            g_codes, g_scale = g
        except (TypeError, ValueError):
            raise AssertionError(f"{label}: expected a pair (codes, scale), got {type(g).__name__}") from None
        expect_equal(float(g_scale), w_scale, what=label + " scale")
        expect_equal(np.asarray(g_codes), w_codes, what=label + " codes", inputs=x)


def int8_asymmetric(int8_asymmetric: Callable[..., Any], rng: np.random.Generator) -> None:
    """All-negative and all-positive tensors (zero point 255 and 0), ties, ±inf (saturation), NaN (NaN scale), all zeros, subnormal ranges, float32's largest values, 2-D and 0-d inputs, random skewed tensors; against fp8lab.quantize_tensor(x, "uint8", IntScaling(symmetric=False))."""
    f32 = np.finfo(np.float32)
    xs = [np.array(v, np.float32) for v in (
        [0.0, 255.0, 127.5, 0.5, 1.5, 2.5], [-1.0, -3.0, -0.5], [2.0, 1.0, 0.5], [-4.0, 4.0, 0.0], [-1.0, 0.0, 2.0, np.inf, -np.inf],
        [1.0, np.nan, -3.0], [np.nan, np.nan], [np.inf], [0.0, -0.0, 0.0], [1e-40, -2e-40, 0.0], [f32.max, -f32.max],
        [f32.max, 0.0], [[-1.0, 2.0], [3.0, 0.25]], -2.5)]
    for _ in range(50):
        shape = tuple(int(n) for n in rng.integers(1, 40, int(rng.integers(1, 3))))
        x = (rng.standard_normal(shape) + rng.uniform(-3, 3)) * 10.0 ** rng.uniform(-20, 20)
        if rng.random() < 0.3:
            x = np.maximum(x, 0.0)  # ReLU output
        x = x.astype(np.float32)
        if rng.random() < 0.2:
            x.flat[int(rng.integers(x.size))] = rng.choice([np.inf, -np.inf, np.nan])
        xs.append(x)
    want = []
    for x in xs:
        q = fl.quantize_tensor(x, "uint8", fl.IntScaling(symmetric=False))
        want.append((np.asarray(q.values()).astype(np.int64), float(q.scales.ravel()[0]), int(q.zero_point.ravel()[0])))
    with no_shortcut(int8_asymmetric, forbid=DEFAULT_FORBID + ("torch.ao", "torch:quantize_per_*", "torch:fake_quantize_*", "torch:_fake_quantize_*")) as asym:
        got = [asym(x.copy()) for x in xs]
    for x, g, (w_codes, w_scale, w_zp) in zip(xs, got, want):
        label = f"int8_asymmetric({np.array2string(x, threshold=6)})"
        try:
            g_codes, g_scale, g_zp = g
        except (TypeError, ValueError):
            raise AssertionError(f"{label}: expected a triple (codes, scale, zero_point), got {type(g).__name__}") from None
        expect_equal(float(g_scale), w_scale, what=label + " scale")
        expect_equal(g_zp, w_zp, what=label + " zero_point")
        expect_equal(np.asarray(g_codes), w_codes, what=label + " codes", inputs=x)


def int8_per_channel(int8_per_channel: Callable[..., Any], rng: np.random.Generator) -> None:
    """Ragged shapes (1 x 1, 1 x n, n x 1, odd sizes), rows of zeros, rows with inf or NaN (only that channel gets a NaN scale), one outlier row, both axes, both schemes, random weights; against fp8lab.quantize_tensor with IntScaling(symmetric=..., axis=...)."""
    xs = [np.array([[0.0, 1.0, 2.0, 3.0], [-4.0, 4.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [1.0, np.nan, 2.0, 3.0], [np.inf, -1.0, 0.5, 2.0]], np.float32),
          np.array([[7.0]], np.float32), np.array([[1.0, -2.0, 3.0]], np.float32), np.array([[1.0], [-2.0], [3.0]], np.float32)]
    for _ in range(20):
        x = (rng.standard_normal((int(rng.integers(1, 40)), int(rng.integers(1, 70)))) * 10.0 ** rng.uniform(-5, 5)).astype(np.float32)
        if rng.random() < 0.5:
            x[int(rng.integers(x.shape[0]))] *= np.float32(1000.0)  # an outlier channel
        if rng.random() < 0.3:
            x[int(rng.integers(x.shape[0])), int(rng.integers(x.shape[1]))] = rng.choice([np.inf, -np.inf, np.nan])
        xs.append(x)
    cases = [(x, sym, axis) for x in xs for sym in (True, False) for axis in (-1, 0)]
    want = []
    for x, sym, axis in cases:
        q = fl.quantize_tensor(x, "int8" if sym else "uint8", fl.IntScaling(symmetric=sym, axis=axis))
        want.append((q.values().astype(np.int64), q.scales, None if sym else q.zero_point.astype(np.int64)))
    with no_shortcut(int8_per_channel, forbid=DEFAULT_FORBID + ("torch.ao", "torch:quantize_per_*", "torch:fake_quantize_*", "torch:_fake_quantize_*")) as per:
        got = [per(x.copy(), sym, axis) for x, sym, axis in cases]
    for (x, sym, axis), g, (w_codes, w_scales, w_zps) in zip(cases, got, want):
        label = f"int8_per_channel(<{x.shape[0]} x {x.shape[1]} array>, symmetric={sym}, axis={axis})"
        try:
            g_codes, g_scales, g_zps = g
        except (TypeError, ValueError):
            raise AssertionError(f"{label}: expected a triple (codes, scales, zero_points), got {type(g).__name__}") from None
        expect_equal(np.asarray(g_scales, dtype=np.float32), w_scales, what=label + " scales")
        if sym:
            expect_equal(g_zps is None, True, what=label + " zero_points is None")
        else:
            expect_equal(np.asarray(g_zps), w_zps, what=label + " zero_points")
        expect_equal(np.asarray(g_codes), w_codes, what=label + " codes", inputs=x)


def int8_error(int8_error: Callable[..., Any], rng: np.random.Generator) -> None:
    """Per tensor and per channel, both schemes, inf and NaN elements and channels, all zeros, ReLU-like and symmetric random data, outlier channels (per-channel error far below per-tensor), ragged shapes; against fp8lab.quantize_tensor(...).dequantize()."""
    def reference(x, sym, axis):
        q = fl.quantize_tensor(x, "int8" if sym else "uint8", fl.IntScaling(symmetric=sym, axis=axis))
        x_hat = q.dequantize()
        keep = np.isfinite(x) & ~np.isnan(x_hat)
        e = float(np.max(np.abs(x_hat[keep].astype(np.float64) - x[keep].astype(np.float64)))) if keep.any() else 0.0
        return x_hat, e

    xs = [np.array(v, np.float32) for v in ([0.0, 0.25, 0.5, 1.0], [0.0, 0.0], [1.0, np.inf, -2.0], [1.0, np.nan],
                                            [[1.0, 2.0], [np.nan, 3.0], [-1e6, 5.0]], [[0.0, 0.0, 0.0]])]
    for _ in range(20):
        x = rng.standard_normal((int(rng.integers(1, 30)), int(rng.integers(1, 50)))) * 10.0 ** rng.uniform(-4, 4)
        if rng.random() < 0.4:
            x = np.maximum(x, 0.0)
        x = x.astype(np.float32)
        if rng.random() < 0.5:
            x[int(rng.integers(x.shape[0]))] *= np.float32(100.0)
        xs.append(x)
    cases = [(x, sym, axis) for x in xs for sym in (True, False) for axis in ((None,) if x.ndim == 1 else (None, -1, 0))]
    want = [reference(x, sym, axis) for x, sym, axis in cases]
    with no_shortcut(int8_error, forbid=DEFAULT_FORBID + ("torch.ao", "torch:quantize_per_*", "torch:fake_quantize_*", "torch:_fake_quantize_*")) as err:
        got = [err(x.copy(), sym, axis) for x, sym, axis in cases]
    for (x, sym, axis), g, (w_hat, w_err) in zip(cases, got, want):
        label = f"int8_error({np.array2string(x, threshold=6)}, symmetric={sym}, axis={axis})"
        try:
            g_hat, g_err = g
        except (TypeError, ValueError):
            raise AssertionError(f"{label}: expected a pair (x_hat, error), got {type(g).__name__}") from None
        expect_equal(np.asarray(g_hat), w_hat, what=label + " x_hat", inputs=x, exact_dtype=True)
        expect_close(g_err, w_err, rel=1e-12, what=label + " error")
