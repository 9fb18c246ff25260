"""Random cases of lab 04_block_scaling: fresh inputs from a seed, fp8lab's answer, the comparison.

One function per task, named by its id and called as ``task(fn, rng)``: it draws the cases from
``rng``, computes what fp8lab says, calls ``fn`` (the submission's function) and raises
AssertionError with the input, the expected value and what came back at the first difference.

>>> import numpy as np
>>> block_amax(lambda *args, **kwargs: 0, np.random.default_rng(0))  # answers 0: refused
Traceback (most recent call last):
...
AssertionError: block_amax(x of shape (2, 2), (1, 2)): expected shape (2, 1), got shape () (0) / block_amax(x of shape (2, 2), (1, 2))：期望形状 (2, 1)，得到形状 ()（0）
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from fp8lab.scaling.base import block_stats
from fp8lab.labs import expect_close, expect_equal, no_shortcut
import fp8lab as fl

__all__ = ['block_amax', 'block_scales', 'saturating_cast', 'quantize_blocks', 'compare_scaling']


def block_amax(block_amax: Callable[..., Any], rng: np.random.Generator) -> None:
    """Ragged shapes, 1x128 and 128x128 blocks, blocks of only inf/NaN or zeros, negative zeros, subnormals, random tensors, against fp8lab's per-block statistics."""
    cases = [
        (np.array([[np.nan, np.inf], [-np.inf, np.nan]], np.float32), (1, 2)),
        (np.array([[-0.0, 0.0, 1e-45, -3e-39]], np.float32), (1, 2)),
        (np.array([[-7.0, 2.0, np.nan], [0.0, -np.inf, 3.0]], np.float32), (2, 2)),
        (np.full((3, 5), -2.5, np.float32), (4, 8)),  # one block larger than the tensor
    ]
    for shape, block in [((4, 256), (1, 128)), ((3, 300), (1, 128)), ((130, 200), (128, 128)),
                         ((257, 129), (128, 128)), ((7, 11), (2, 3)), ((1, 1), (1, 128))]:
        x = (rng.standard_normal(shape) * np.exp(rng.uniform(-12, 12, shape))).astype(np.float32)
        x[rng.random(shape) < 0.02] = np.nan
        x[rng.random(shape) < 0.02] = np.inf
        x[rng.random(shape) < 0.02] = -np.inf
        cases.append((x, block))
    for x, block in cases:
        want = block_stats(x, tuple(block)).amax
        with no_shortcut(block_amax) as amax:
            got = amax(x.copy(), block)
        expect_equal(got, want, what=f"block_amax(x of shape {x.shape}, {block})")


def block_scales(block_scales: Callable[..., Any], rng: np.random.Generator) -> None:
    """Amax spread over float32's range, exact multiples, values whose nearest float32 is below the quotient, zeros, tiny and huge amax, E4M3 and E5M2, against fp8lab."""
    special = np.array([0.0, 448.0, 896.0, 300.0, 1.0, 1e-45, 1e-40, 2.0**-126 * 448, 3.0e38, 3.4028234663852886e38,
                        57344.0, 7.0 / 3.0], np.float64)
    random_amax = np.exp(rng.uniform(-100, 88, 3000)).astype(np.float32).astype(np.float64)
    for fmt_max in (448.0, 57344.0):
        for amax in (special, random_amax, random_amax.reshape(30, 100)):
            want = fl.float_scales(amax, fmt_max)
            with no_shortcut(block_scales) as scales:
                got = scales(amax.copy(), fmt_max)
            expect_equal(got, want, what=f"block_scales(amax, {fmt_max})", inputs=amax)


def saturating_cast(saturating_cast: Callable[..., Any], rng: np.random.Generator) -> None:
    """Every value of E4M3, E5M2, FP6 and FP4 and every midpoint between neighbours (ties), values just beside them, subnormals, saturation, inf, NaN, signed zeros, random float32, against fp8lab.quantize(v, fmt, saturate=True)."""
    for name in ("e4m3", "e5m2", "e2m3", "e3m2", "e2m1"):
        f = fl.get_format(name)
        grid = np.unique(np.abs(fl.decode_table(f)[np.isfinite(fl.decode_table(f))])).astype(np.float64)
        mids = (grid[1:] + grid[:-1]) / 2
        v = np.concatenate([grid, mids, np.nextafter(mids, 0), np.nextafter(mids, np.inf), [f.max * 1.03, f.max * 1e6, 3e38]])
        v = np.concatenate([v, -v, [np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45]])
        v = np.concatenate([v, rng.standard_normal(2000) * np.exp(rng.uniform(-20, 12, 2000))])
        if f.has_nan:
            v = np.concatenate([v, [np.nan]])
        v = v.astype(np.float32)
        want = fl.quantize(v, f, saturate=True)
        mbits, emin, fmax = int(f.mantissa_bits), int(math.log2(f.min_normal)), float(f.max)
        with no_shortcut(saturating_cast) as cast:
            got = cast(v.copy(), mbits, emin, fmax)
        expect_equal(got, want, what=f"saturating_cast(v, {mbits}, {emin}, {fmax}) for {f.name}", inputs=v)


def quantize_blocks(quantize_blocks: Callable[..., Any], rng: np.random.Generator) -> None:
    """1x128 activation tiles and 128x128 weight blocks on ragged shapes, outliers, inf and NaN, all-zero blocks, subnormal-sized values, against fp8lab.quantize_tensor(x, "e4m3", fp8lab.BlockScaling(block))."""
    cases = [(np.zeros((3, 5), np.float32), (2, 2)),
             (np.array([[np.nan, np.inf, 1e-30, -2.0]], np.float32), (1, 2)),
             (np.array([[3e38, -3.4e38, 1.0, 1e-38]], np.float32), (1, 4))]
    for shape, block in [((4, 256), (1, 128)), ((5, 300), (1, 128)), ((200, 300), (128, 128)), ((9, 13), (4, 5))]:
        x = (rng.standard_normal(shape) * np.exp(rng.uniform(-6, 6, shape))).astype(np.float32)
        x[rng.random(shape) < 0.01] *= 1000.0  # outliers
        x[rng.random(shape) < 0.005] = np.nan
        x[rng.random(shape) < 0.005] = -np.inf
        x[: shape[0] // 2, : min(shape[1], 128)][rng.random((shape[0] // 2, min(shape[1], 128))) < 0.5] = 0.0
        cases.append((x, block))
    for x, block in cases:
        q = fl.quantize_tensor(x, "e4m3", fl.BlockScaling(block))
        with np.errstate(over="ignore"):
            want = q.dequantize()
        with no_shortcut(quantize_blocks) as qb:
            got, scales = qb(x.copy(), block)
        expect_equal(scales, q.scales, what=f"scales of quantize_blocks(x of shape {x.shape}, {block})")
        expect_equal(got, want, what=f"dequantized quantize_blocks(x of shape {x.shape}, {block})", inputs=x)


def compare_scaling(compare_scaling: Callable[..., Any], rng: np.random.Generator) -> None:
    """Activations with a few outlier channels (per-block scaling must win), ragged 128x128 and 1x128 blocks, all-zero blocks (inf), blocks of NaN and inf, against fp8lab's BlockScaling, TensorScaling and sqnr_db."""
    cases = []
    x = rng.standard_normal((16, 300)).astype(np.float32)
    x[:, rng.choice(300, 3, replace=False)] *= 3000.0  # outlier channels, as in LLM activations
    cases.append((x, (1, 128)))
    w = (rng.standard_normal((200, 260)) * 0.02).astype(np.float32)
    w[:128, :128] *= 1e4
    w[128:, 128:] = 0.0
    cases.append((w, (128, 128)))
    z = rng.standard_normal((4, 6)).astype(np.float32)
    z[0, :3] = [np.nan, np.inf, -np.inf]
    z[1, 3:] = 0.0
    cases.append((z, (1, 3)))
    for x, block in cases:
        xb = fl.quantize_tensor(x, "e4m3", fl.BlockScaling(block)).dequantize()
        xt = fl.quantize_tensor(x, "e4m3", fl.TensorScaling()).dequantize()
        bm, bk = block
        nm, nk = -(-x.shape[0] // bm), -(-x.shape[1] // bk)
        want_blocks = np.array([[fl.sqnr_db(x[i * bm:(i + 1) * bm, j * bk:(j + 1) * bk], xb[i * bm:(i + 1) * bm, j * bk:(j + 1) * bk])
                                 for j in range(nk)] for i in range(nm)])
        with no_shortcut(compare_scaling) as cmp:
            per_block, blockwise, per_tensor = cmp(x.copy(), block)
        what = f"compare_scaling(x of shape {x.shape}, {block})"
        expect_equal(np.shape(per_block), want_blocks.shape, what=f"shape of per_block from {what}")
        expect_close(per_block, want_blocks, rel=1e-9, what=f"per_block from {what}")
        expect_close(blockwise, fl.sqnr_db(x, xb), rel=1e-9, what=f"blockwise SQNR from {what}")
        expect_close(per_tensor, fl.sqnr_db(x, xt), rel=1e-9, what=f"per-tensor SQNR from {what}")
