"""The emulated scaled GEMM: decoded FP8 values, FP32 matmuls, and the accumulator model around them.

Two paths, chosen by the :class:`~fp8lab.gemm.accumulator.Accumulator`:

- **exact** (``Accumulator()``): with one K-block (per-tensor, per-row/column scales) it is one
  float32 matmul of the decoded values with the scales applied to the result, as the kernels'
  epilogue does: ``out = (A @ B) * sa[:, None] * sb[None, :]`` (one pass of the C kernels on the CPU).
  With K-blocks (1x128, 128x128)
  DeepGEMM applies each block's scales to that block's partial result when it promotes it; in real
  arithmetic that equals dequantising the operands first and doing *one* matmul, which is what this
  path does (the difference is float32 rounding, which the tests bound).
- **limited** (``Accumulator(mantissa_bits=...)``): needs the partial sums, so it walks ``K`` in MMA
  chunks: for a tile of rows, ``partial.addmm_(A[:, chunk], B[chunk])`` (the chunk's products summed
  in FP32 and added), the partial rounded to ``mantissa_bits`` in place, and every
  ``promote_every`` elements the partial is scaled, added to the FP32 output and reset. Row tiles
  keep the partial and output tiles in the CPU cache.

>>> import numpy as np, torch
>>> from fp8lab.codec import encode
>>> from fp8lab.qtensor import QTensor
>>> from fp8lab.gemm.checks import prepare
>>> q = QTensor(encode(torch.ones(2, 64), "e4m3"), torch.ones(1, 1), "e4m3")
>>> exact(prepare(q, QTensor(encode(torch.ones(64, 3), "e4m3"), torch.ones(1, 1), "e4m3"))).tolist()
[[64.0, 64.0, 64.0], [64.0, 64.0, 64.0]]
"""

from __future__ import annotations

import contextlib
import math

from ..codec import ckernels
from ..codec.backend import torch
from ..codec.paths import path_policy
from ..codec.wide import round_bits_torch
from .accumulator import Accumulator, round_mantissa
from .checks import Problem
from . import units
from .decode import decode_values

__all__ = ["exact", "exact_values", "limited", "check_accumulator"]

_CACHE_BYTES = 2 << 20   # model "round": a partial-sum tile this large stays in a core's L2 cache
_ALIGN_BYTES = 64 << 20  # model "align": float64 products of a row tile, (rows, mma_k, N), and copies


def _scale_k_blocks_(va, vb, p: Problem) -> None:
    """Multiply A's columns and B's rows, K-block by K-block, by their scales (in place; None: leave that operand)."""
    g, nkb = p.k_block, p.n_kblocks
    full = (p.k // g) * g
    nfull = full // g
    if nfull:
        if va is not None:
            va[:, :full].view(p.m, nfull, g).mul_(p.sa[:, :nfull, None])
        if vb is not None:
            vb[:full].view(nfull, g, p.n).mul_(p.sb[:nfull, None, :])
    if full < p.k:
        if va is not None:
            va[:, full:].mul_(p.sa[:, nkb - 1:nkb])
        if vb is not None:
            vb[full:].mul_(p.sb[nkb - 1:nkb])


def _epilogue(out, p: Problem, bias=None):
    """``out * sa * sb`` (``+ bias``) in place: row scales, then column scales, then the bias, each a float32 operation
    per element, in that order.

    On the CPU the C kernels do it in one pass over ``out`` (the same bits: the codec's path switches
    turn them off, as for decoding), elsewhere torch's in-place operations.
    """
    if out.is_cpu and out.is_contiguous() and "ckernel" not in path_policy()[1] and ckernels.available() and \
            (bias is None or (bias.is_cpu and bias.is_contiguous() and bias.dtype == torch.float32)):
        # out is this GEMM's float32 result; sa (M, 1) and sb (1, N) float32 on its device (checks.prepare)
        return ckernels.scale_epilogue(out, p.sa, p.sb, bias, check=False)
    out.mul_(p.sa)
    out.mul_(p.sb)
    return out if bias is None else out.add_(bias)


def exact(p: Problem):
    """``qa @ qb`` with exact FP32 accumulation (any summation order), as float32 (M, N).

    >>> import numpy as np
    >>> from fp8lab.qtensor import QTensor
    >>> from fp8lab.gemm.checks import prepare
    >>> q = QTensor(np.full((1, 2), 56, np.uint8), np.full((1, 1), 0.5, np.float32), "e4m3")
    >>> exact(prepare(q, QTensor(np.full((2, 1), 56, np.uint8), np.ones((1, 1), np.float32), "e4m3"))).tolist()
    [[1.0]]
    """
    return exact_values(p)


def exact_values(p: Problem, va=None, vb=None, *, consume: tuple[bool, bool] = (False, False),
                 dequantized: tuple[bool, bool] = (False, False), bias=None):
    """:func:`exact` with either operand's float32 values given (decoded by the caller, who may reuse them).

    Given values are read, never modified, unless ``consume`` says so for that operand (A, B): then
    the caller hands them over and a K-blocked GEMM scales them in place instead of on a copy. For a
    K-blocked problem ``dequantized`` says which given operands already hold decoded value times
    scale (``QTensor.dequantize()``, what the scaling here computes). The others are decoded here.
    The result is the same as :func:`exact`'s, bit for bit. ``bias`` (float32 (N,), on the device) is
    added to the FP32 result last, in the epilogue's pass where there is one.

    >>> import torch
    >>> from fp8lab.codec import encode
    >>> from fp8lab.qtensor import QTensor
    >>> from fp8lab.gemm.checks import prepare
    >>> qa = QTensor(encode(torch.ones(2, 64), "e4m3"), torch.full((1, 1), 0.5), "e4m3")
    >>> p = prepare(qa, QTensor(encode(torch.ones(64, 3), "e4m3"), torch.ones(1, 1), "e4m3"))
    >>> exact_values(p, va=qa.values()).tolist() == exact(p).tolist() == [[32.0] * 3] * 2
    True
    """
    if p.k == 0 or p.m == 0 or p.n == 0:
        out = torch.zeros(p.m, p.n, dtype=torch.float32, device=p.device)
        return out if bias is None else out.add_(bias)
    own_a, own_b = va is None, vb is None
    deq_a, deq_b = (bool(dequantized[0]) and not own_a), (bool(dequantized[1]) and not own_b)
    va = decode_values(p.a_codes, p.a_format, slot="a") if own_a else va
    vb = decode_values(p.b_codes, p.b_format, slot="b") if own_b else vb
    if p.n_kblocks == 1:  # scales constant along K: the epilogue applies them to the result
        if deq_a or deq_b:
            raise ValueError("dequantized operands are for K-blocked GEMMs; with one K-block the scales are applied "
                             "to the result, so give the decoded values")
        out = units.matmul(va, vb, units.operand_range(p.a_format), units.operand_range(p.b_format))
        return _epilogue(out, p, bias)
    # K-blocks: scale the operands; our own buffers (workspace or fresh) in place, a caller's values on a copy
    va = va if own_a or consume[0] or deq_a else va.clone()
    vb = vb if own_b or consume[1] or deq_b else vb.clone()
    _scale_k_blocks_(None if deq_a else va, None if deq_b else vb, p)
    if units.bf16_units_enabled():  # power-of-two scales keep the dequantized operands BF16 values
        out = units.matmul(va, vb, units.operand_range(p.a_format, p.a_scales),
                           units.operand_range(p.b_format, p.b_scales))
    else:
        out = va @ vb
    return out if bias is None else out.add_(bias)


def check_accumulator(acc: Accumulator, p: Problem) -> int:
    """The promotion interval for this problem, or a clear error if ``acc`` cannot work with its scales.

    >>> import numpy as np
    >>> from fp8lab.qtensor import QTensor
    >>> from fp8lab.gemm.checks import prepare
    >>> q = QTensor(np.zeros((1, 256), np.uint8), np.ones((1, 2), np.float32), "e4m3", block=(1, 128))
    >>> check_accumulator(Accumulator(13, 64), prepare(q, QTensor(np.zeros((256, 1), np.uint8), np.ones((1, 1), np.float32), "e4m3")))
    64
    """
    pe = acc.promote_every
    if p.n_kblocks > 1:
        if pe is None:
            raise ValueError(
                f"promote_every=None (never promote) needs scales that are constant along K, but the scales change "
                f"every {p.k_block} elements of K (blocks {p.a_block} and {p.b_block}); a tensor core cannot apply "
                f"a new scale in the middle of an accumulation. Use promote_every dividing {p.k_block} "
                f"(DeepSeek-V3: 128), or per-tensor / per-row scales")
        if p.k_block % pe:
            raise ValueError(
                f"promote_every={pe} does not divide the K-block of {p.k_block}: a partial sum would span two scale "
                f"blocks. Use a promote_every that divides {p.k_block} (and is a multiple of mma_k={acc.mma_k})")
        if p.k_block % acc.mma_k:
            raise ValueError(f"the K-block of {p.k_block} is not a multiple of mma_k={acc.mma_k}")
    return pe if pe is not None else max(p.k, 1)


def _align_step(part, a_c, b_c, acc: Accumulator) -> None:
    """Model (b): align the chunk's products and the partial to their largest exponent, cut, add (in place)."""
    prods = a_c.double()[:, :, None] * b_c.double()[None, :, :]           # (rows, kc, N), exact
    terms = torch.cat([part.double()[:, None, :], prods], dim=1)
    _, e = torch.frexp(terms.abs().amax(dim=1, keepdim=True))              # largest |term| < 2**e
    quantum = torch.ldexp(torch.ones_like(terms[:, :1]), e - 1 - acc.mantissa_bits)
    cut = torch.trunc(terms / quantum) if acc.rounding == "toward_zero" else torch.round(terms / quantum)
    part.copy_((cut * quantum).sum(dim=1))
    round_mantissa(part, acc.mantissa_bits, acc.rounding, inplace=True)


def limited(p: Problem, acc: Accumulator, tile_rows: int | None = None):
    """``qa @ qb`` through a limited-precision accumulator promoted to FP32, as float32 (M, N).

    >>> import torch
    >>> from fp8lab.codec import encode
    >>> from fp8lab.qtensor import QTensor
    >>> from fp8lab.gemm.checks import prepare
    >>> qa = QTensor(encode(torch.ones(1, 4096), "e4m3"), torch.ones(1, 1), "e4m3")
    >>> qb = QTensor(encode(torch.full((4096, 1), 1.0 + 2**-3), "e4m3"), torch.ones(1, 1), "e4m3")
    >>> p = prepare(qa, qb)
    >>> limited(p, Accumulator(4, promote_every=None)).item(), limited(p, Accumulator(4, 128)).item()  # exact: 4608
    (1024.0, 4608.0)
    """
    pe = check_accumulator(acc, p)
    out = torch.zeros(p.m, p.n, dtype=torch.float32, device=p.device)
    if p.k == 0 or p.m == 0 or p.n == 0:
        return out
    small = torch.device(p.device).type == "cpu" and p.m * p.n < _SMALL_ELEMENTS
    with _single_thread(small):  # many tiny ops: waking torch's worker threads costs more than the work
        _limited_into(out, p, acc, pe, tile_rows, keep_nan=False)
        if not math.isfinite(float(out.sum())):  # finite sum <=> every element finite (or a sum overflow: redo too)
            # a NaN or inf arose somewhere (it would persist to the output): the fast loop may have turned a
            # NaN into inf, so redo the GEMM with the NaN-keeping rounding
            out.zero_()
            _limited_into(out, p, acc, pe, tile_rows, keep_nan=True)
    return out


_SMALL_ELEMENTS = 1 << 16


@contextlib.contextmanager
def _single_thread(enabled: bool):
    """Run the block with one torch CPU thread (restored afterwards) when ``enabled``."""
    if not enabled:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _limited_into(out, p: Problem, acc: Accumulator, pe: int, tile_rows: int | None, *, keep_nan: bool = True) -> None:
    """The chunk loop of :func:`limited`, accumulating into ``out``.

    ``keep_nan=False`` rounds the partial sums without the NaN fix-up: exact for every finite
    partial, and a partial that is ever NaN or inf leaves the output non-finite (inf and NaN persist
    through sums, roundings and scalings), which :func:`limited` checks and then redoes carefully.
    """
    va = decode_values(p.a_codes, p.a_format, slot="a")
    vb = decode_values(p.b_codes, p.b_format, slot="b")
    mk, g = acc.mma_k, p.k_block
    if tile_rows is None:
        budget, per_row = (_CACHE_BYTES, p.n * 4) if acc.model == "round" else (_ALIGN_BYTES, p.n * 8 * (mk + 1) * 4)
        tile_rows = max(1, min(p.m, budget // per_row))
    for r0 in range(0, p.m, tile_rows):
        r1 = min(r0 + tile_rows, p.m)
        a, o = va[r0:r1], out[r0:r1]
        part = torch.zeros(r1 - r0, p.n, dtype=torch.float32, device=p.device)
        for p0 in range(0, p.k, pe):
            p1 = min(p0 + pe, p.k)
            for c0 in range(p0, p1, mk):
                c1 = min(c0 + mk, p1)
                if acc.model == "round":
                    part.addmm_(a[:, c0:c1], vb[c0:c1])
                    round_bits_torch(part, acc.mantissa_bits, acc.rounding, inplace=True, keep_nan=keep_nan)
                else:
                    _align_step(part, a[:, c0:c1], vb[c0:c1], acc)
            kb = p0 // g
            part.mul_(p.sa[r0:r1, kb:kb + 1]).mul_(p.sb[kb:kb + 1])   # promotion: scale, add in FP32
            o.add_(part)
            part.zero_()
