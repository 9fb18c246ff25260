"""Random cases of lab 06_blockwise_gemm: fresh inputs from a seed, fp8lab's answer, the comparison.

One function per task, named by its id and called as ``task(fn, rng)``: it draws the cases from
``rng``, computes what fp8lab says, calls ``fn`` (the submission's function) and raises
AssertionError with the input, the expected value and what came back at the first difference.

>>> import numpy as np
>>> dequantize(lambda *args, **kwargs: 0, np.random.default_rng(0))  # answers 0: refused
Traceback (most recent call last):
...
AssertionError: dequantize(values of shape (3, 300), scales of shape (3, 3), (1, 128)): expected shape (3, 300), got shape () (0) / dequantize(values of shape (3, 300), scales of shape (3, 3), (1, 128))：期望形状 (3, 300)，得到形状 ()（0）
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import fp8lab as fl
from fp8lab.labs import expect_close, expect_equal, no_shortcut

__all__ = ['dequantize', 'blockwise_matmul', 'round_mantissa', 'limited_matmul']


def dequantize(dequantize: Callable[..., Any], rng: np.random.Generator) -> None:
    """1x128 tiles and 128x128 blocks on ragged shapes, NaN codes, zeros, scales that make products round in float32 or overflow, against fp8lab.QTensor.dequantize."""
    for shape, block in [((3, 300), (1, 128)), ((200, 130), (128, 128)), ((129, 257), (128, 128)), ((5, 7), (2, 3)), ((1, 1), (1, 128))]:
        codes = rng.integers(0, 256, shape).astype(np.uint8)
        nb = (-(-shape[0] // block[0]), -(-shape[1] // block[1]))
        scales = np.exp(rng.uniform(-80, 80, nb)).astype(np.float32)
        scales.flat[0] = 3.0e38  # products beyond float32's range: inf
        q = fl.QTensor(codes, scales, "e4m3", block=block)
        values = fl.decode(codes, "e4m3").astype(np.float32)
        with np.errstate(all="ignore"):
            want = q.dequantize()
        with no_shortcut(dequantize) as dq:
            got = dq(values.copy(), scales.copy(), block)
        expect_equal(got, want, what=f"dequantize(values of shape {shape}, scales of shape {nb}, {block})", inputs=values)


def blockwise_matmul(blockwise_matmul: Callable[..., Any], rng: np.random.Generator) -> None:
    """Random activations and weights quantized with fp8lab's BlockScaling (1x128 and 128x128), outlier channels, ragged K and N, against fp8lab.scaled_matmul with exact FP32 accumulation, within the float32 rounding of a K-long sum."""
    for m, k, n in [(4, 128, 128), (8, 384, 256), (5, 300, 130), (3, 129, 1), (1, 40, 7)]:
        x = rng.standard_normal((m, k)).astype(np.float32)
        x[:, rng.choice(k, 2)] *= 500.0
        w = (rng.standard_normal((k, n)) * 0.05).astype(np.float32)
        qa = fl.quantize_tensor(x, "e4m3", fl.BlockScaling((1, 128)))
        qb = fl.quantize_tensor(w, "e4m3", fl.BlockScaling((128, 128)))
        a, b = fl.decode(qa.codes, qa.format).astype(np.float32), fl.decode(qb.codes, qb.format).astype(np.float32)
        want = fl.scaled_matmul(qa, qb)
        magnitude = np.abs(qa.dequantize()).astype(np.float64) @ np.abs(qb.dequantize()).astype(np.float64)
        with no_shortcut(blockwise_matmul) as bm:
            got = bm(a.copy(), qa.scales.copy(), b.copy(), qb.scales.copy())
        what = f"blockwise_matmul for M, K, N = {m}, {k}, {n}"
        expect_equal(np.shape(got), want.shape, what=f"shape of {what}")
        expect_close(got, want, rel=0.0, abs=k * 2.0**-22 * magnitude + 1e-30, what=what)


def round_mantissa(round_mantissa: Callable[..., Any], rng: np.random.Generator) -> None:
    """Random float32 bit patterns (normal, subnormal, negative), zeros, infinities, NaN, every width from 1 to 23 mantissa bits, a 2-D array, against fp8lab.quantize(x, FloatFormat("e8m<bits>", 8, bits), rounding="toward_zero")."""
    bits = rng.integers(0, 2**32, 3000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x = x[~np.isnan(x)]  # NaN payloads aside
    x = np.concatenate([x, np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.0, 3.4028235e38], np.float32)])
    for m in range(1, 24):
        with np.errstate(all="ignore"):
            want = fl.quantize(x, fl.FloatFormat(f"e8m{m}", 8, m), rounding="toward_zero")
        with no_shortcut(round_mantissa) as rm:
            got = rm(x.copy(), m)
        expect_equal(got, want, what=f"round_mantissa(x, {m})", inputs=x)
    y = x[: (x.size // 100) * 100].reshape(-1, 100)
    with np.errstate(all="ignore"):
        want = fl.quantize(y, fl.FloatFormat("e8m13", 8, 13), rounding="toward_zero")
    with no_shortcut(round_mantissa) as rm:
        got = rm(y.copy(), 13)
    expect_equal(got, want, what=f"round_mantissa(x of shape {y.shape}, 13)")


def limited_matmul(limited_matmul: Callable[..., Any], rng: np.random.Generator) -> None:
    """E4M3 operands with values in [1, 8) and mixed signs (every float32 chunk sum is then exact, so the comparison can be bit for bit), zeros, long K where the 13-bit partial sums lose bits, ragged K, M and N, other widths and promotion intervals, random float32 scales, against fp8lab.scaled_matmul(qa, qb, accumulator=fp8lab.Accumulator(...))."""
    def operand(shape, signed):
        codes = rng.integers(0x38, 0x50, shape).astype(np.uint8)  # E4M3 codes of 1.0 ... 7.5
        if signed:
            codes |= (rng.integers(0, 2, shape) << 7).astype(np.uint8)
        codes[rng.random(shape) < 0.05] = 0
        return codes

    for (m, k, n), bits, every, signed in [((4, 1024, 8), 13, 128, False), ((3, 200, 130), 13, 128, True),
                                           ((2, 512, 5), 10, 64, False), ((5, 100, 3), 4, 32, True),
                                           ((1, 4096, 2), 13, 128, False), ((2, 384, 129), 7, 128, False)]:
        ca, cb = operand((m, k), signed), operand((k, n), signed)
        sa = np.exp(rng.uniform(-8, 3, (m, -(-k // 128)))).astype(np.float32)
        sb = np.exp(rng.uniform(-8, 3, (-(-k // 128), -(-n // 128)))).astype(np.float32)
        qa = fl.QTensor(ca, sa, "e4m3", block=(1, 128))
        qb = fl.QTensor(cb, sb, "e4m3", block=(128, 128))
        want = fl.scaled_matmul(qa, qb, accumulator=fl.Accumulator(mantissa_bits=bits, promote_every=every))
        a, b = fl.decode(ca, "e4m3").astype(np.float32), fl.decode(cb, "e4m3").astype(np.float32)
        with no_shortcut(limited_matmul) as lm:
            got = lm(a, sa.copy(), b, sb.copy(), mantissa_bits=bits, mma_k=32, promote_every=every)
        expect_equal(got, want, what=f"limited_matmul for M, K, N = {m}, {k}, {n}, mantissa_bits={bits}, promote_every={every}")
