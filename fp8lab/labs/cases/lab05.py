"""Random cases of lab 05_mx_e8m0: fresh inputs from a seed, fp8lab's answer, the comparison.

One function per task, named by its id and called as ``task(fn, rng)``: it draws the cases from
``rng``, computes what fp8lab says, calls ``fn`` (the submission's function) and raises
AssertionError with the input, the expected value and what came back at the first difference.

>>> import numpy as np
>>> floor_exponents(lambda *args, **kwargs: 0, np.random.default_rng(0))  # answers 0: refused
Traceback (most recent call last):
...
AssertionError: floor_exponents(amax, 448.0)  (float8_e4m3fn): expected shape (2966,), got shape () (0) / floor_exponents(amax, 448.0)  (float8_e4m3fn)：期望形状 (2966,)，得到形状 ()（0）
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import fp8lab as fl
from fp8lab.labs import expect_equal, no_shortcut
from fp8lab.scaling.base import block_stats

__all__ = ['floor_exponents', 'rceil_exponents', 'mx_quantize', 'floor_clipping']


def floor_exponents(floor_exponents: Callable[..., Any], rng: np.random.Generator) -> None:
    """Powers of two and their neighbours, amax far outside E8M0's range (clamping), zeros, random amax, every MX element format, against fp8lab.mx_scale_exponents(..., "floor")."""
    p = np.ldexp(1.0, np.arange(-160, 160))
    amax = np.concatenate([p, np.nextafter(p, 0), np.nextafter(p, np.inf), [0.0, 957.0, 448.0, 1e-300, 1e300, 5e-324],
                           np.exp(rng.uniform(-110, 110, 2000))])
    for name in ("e4m3", "e5m2", "e2m3", "e3m2", "e2m1"):
        f = fl.get_format(name)
        fmax = float(f.max)
        want = fl.mx_scale_exponents(amax, f, "floor")
        with no_shortcut(floor_exponents) as fe:
            got = fe(amax.copy(), fmax)
        expect_equal(got, want, what=f"floor_exponents(amax, {fmax})  ({f.name})", inputs=amax)


def rceil_exponents(rceil_exponents: Callable[..., Any], rng: np.random.Generator) -> None:
    """Amax on and beside fmt_max * 2**j, float32 rounding of amax, descales in float32's subnormal range and beyond its range, zeros, random amax, every MX element format, against fp8lab.mx_scale_exponents(..., "rceil")."""
    for name in ("e4m3", "e5m2", "e2m3", "e3m2", "e2m1"):
        f = fl.get_format(name)
        fmax = float(f.max)
        edges = fmax * np.ldexp(1.0, np.arange(-150, 130))
        with np.errstate(all="ignore"):  # amax beyond float32's range: the float32 descale is inf
            amax = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, np.inf),
                                   np.nextafter(edges.astype(np.float32), np.float32(np.inf)).astype(np.float64),
                                   [0.0, 957.0, 1e-45, 3e-39, 1e-44, 3.4e38, 1e39, 1e300],
                                   np.exp(rng.uniform(-105, 89, 2000))])
            want = fl.mx_scale_exponents(amax, f, "rceil")
        with no_shortcut(rceil_exponents) as re_:
            got = re_(amax.copy(), fmax)
        expect_equal(got, want, what=f"rceil_exponents(amax, {fmax})  ({f.name})", inputs=amax)


def mx_quantize(mx_quantize: Callable[..., Any], rng: np.random.Generator) -> None:
    """MXFP8, MXFP6 and MXFP4, both rules, ragged rows (K = 1, 31, 33, 100), blocks of zeros, inf and NaN, values near float32's limits, outliers, random tensors, against fp8lab.quantize_tensor(x, fmt, fp8lab.MXScaling(scale_rounding=rule)).dequantize()."""
    fixed = np.zeros((4, 64), np.float32)
    fixed[1, :32] = 957.0
    fixed[1, 32] = np.inf
    fixed[2, :32] = 3e38
    fixed[2, 32:] = 1e-40
    fixed[3, :] = -0.0
    fixed[3, 5] = 2.0**-130
    tensors = [fixed]
    for shape in [(3, 1), (5, 31), (4, 33), (8, 100), (2, 256)]:
        x = (rng.standard_normal(shape) * np.exp(rng.uniform(-8, 8, shape))).astype(np.float32)
        x[rng.random(shape) < 0.01] *= 1e4
        x[rng.random(shape) < 0.005] = np.nan
        x[rng.random(shape) < 0.005] = -np.inf
        tensors.append(x)
    for x in tensors:
        for name in ("e4m3", "e5m2", "e2m3", "e3m2", "e2m1"):
            for rule in ("floor", "rceil"):
                with np.errstate(all="ignore"):
                    want = fl.quantize_tensor(x, name, fl.MXScaling(scale_rounding=rule)).dequantize()
                with no_shortcut(mx_quantize, allow=("fp8lab:quantize",)) as mxq:
                    got = mxq(x.copy(), name, rule)
                expect_equal(got, want, what=f"mx_quantize(x of shape {x.shape}, {name!r}, {rule!r})", inputs=x)


def floor_clipping(floor_clipping: Callable[..., Any], rng: np.random.Generator) -> None:
    """Amax on both sides of fmt_max * 2**j, blocks of inf/NaN and zeros, ragged rows, every MX element format, random tensors, against fp8lab's block amax and mx_scale_exponents, and the count against MXScaling's own saturated_blocks."""
    for name in ("e4m3", "e5m2", "e2m3", "e3m2", "e2m1"):
        f = fl.get_format(name)
        fmax = float(f.max)
        x = (rng.standard_normal((6, 70)) * np.exp(rng.uniform(-6, 6, (6, 70)))).astype(np.float32)
        x[0, :32] = 0.0
        x[0, 32:64] = fmax * 1.0001
        x[1, 0] = fmax
        x[1, 32] = np.nextafter(np.float32(2 * fmax), np.float32(0))
        x[2, 3] = np.nan
        x[3, 40] = np.inf
        stats = block_stats(x, (1, 32))
        ratio = stats.amax / np.ldexp(1.0, fl.mx_scale_exponents(stats.amax, f, "floor"))
        want = (ratio > fmax) & ~stats.nonfinite
        with np.errstate(all="ignore"):
            reported = fl.quantize_tensor(x, f, fl.MXScaling()).info["saturated_blocks"]
        with no_shortcut(floor_clipping, allow=("fp8lab:quantize",)) as fc:
            got = fc(x.copy(), name)
        expect_equal(got, want, what=f"floor_clipping(x of shape {x.shape}, {name!r})")
        expect_equal(int(np.sum(got)), int(reported), what=f"blocks clipped by the floor rule in {name} (MXScaling's count)")
