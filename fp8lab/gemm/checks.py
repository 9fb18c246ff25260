"""Validation of GEMM operands and their scale layouts, and the K-blocks the scales imply.

Both operands are :class:`~fp8lab.qtensor.QTensor` matrices, ``qa`` of shape (M, K) and ``qb``
of shape (K, N), both numpy-backed or both torch-backed. Their scales can be anything the
``QTensor`` layout rule allows; what matters for a GEMM is the *K-block*: how many elements of
``K`` share one scale. ``qa``'s K-block is ``qa.block[1]``, ``qb``'s is ``qb.block[0]``; the GEMM
works in chunks of the smaller one, so the larger must be a multiple of it (1x128 tiles with
128x128 blocks, as DeepSeek-V3), unless one of them spans all of ``K`` (per-tensor or per-row
scales).

>>> import numpy as np
>>> from fp8lab.qtensor import QTensor
>>> qa = QTensor(np.zeros((4, 256), np.uint8), np.ones((4, 2), np.float32), "e4m3", block=(1, 128))
>>> qb = QTensor(np.zeros((256, 8), np.uint8), np.ones((1, 1), np.float32), "e4m3")
>>> common_k_block(qa, qb)
128
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..codec.backend import is_torch, torch
from ..formats import Format
from ..qtensor import QTensor

__all__ = ["common_k_block", "prepare", "Problem", "parse_out_dtype", "OUT_DTYPES"]

#: Output dtypes of a scaled matmul, by name (what FP8 GEMM kernels write in their epilogue).
OUT_DTYPES = ("float32", "bfloat16", "float16")
_ALIASES = {"fp32": "float32", "f32": "float32", "single": "float32", "float": "float32",
            "bf16": "bfloat16", "fp16": "float16", "f16": "float16", "half": "float16"}


def parse_out_dtype(dtype: Any) -> str:
    """Normalise an output dtype given as a torch dtype, numpy dtype or name to one of ``OUT_DTYPES``.

    >>> parse_out_dtype("bf16"), parse_out_dtype(np.float32)
    ('bfloat16', 'float32')
    """
    if torch is not None and isinstance(dtype, torch.dtype):
        name = str(dtype).removeprefix("torch.")
    elif isinstance(dtype, str):
        name = dtype.strip().lower().removeprefix("torch.").removeprefix("np.").removeprefix("numpy.")
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
    name = _ALIASES.get(name, name)
    if name not in OUT_DTYPES:
        raise ValueError(f"out_dtype must be one of {OUT_DTYPES} (a torch dtype, numpy dtype or name), got {dtype!r}")
    return name


def common_k_block(qa: QTensor, qb: QTensor) -> int:
    """The K-block a scaled GEMM of ``qa @ qb`` works in: the finer of the two, checked to be compatible.

    >>> import numpy as np
    >>> qa = QTensor(np.zeros((2, 64), np.uint8), np.ones((2, 1), np.float32), "e4m3", block=(1, 64))
    >>> qb = QTensor(np.zeros((64, 3), np.uint8), np.ones((1, 3), np.float32), "e4m3", block=(64, 1))
    >>> common_k_block(qa, qb)
    64
    """
    return _common_k_block(qa.shape[1], qa.block, qb.block)


def _common_k_block(k: int, a_block: tuple[int, ...], b_block: tuple[int, ...]) -> int:
    """:func:`common_k_block` from K and the two blocks."""
    ka = min(a_block[1], k) if k else 1  # how many elements of K share one scale (clipped to K: per-tensor gives K)
    kb = min(b_block[0], k) if k else 1
    if ka >= k:
        return kb if k else 1
    if kb >= k:
        return ka
    if ka % kb == 0 or kb % ka == 0:
        return min(ka, kb)
    raise ValueError(
        f"incompatible K-blocks: qa shares one scale over {ka} elements of K (block {a_block}), qb over "
        f"{kb} (block {b_block}); one must be a multiple of the other (DeepSeek-V3: 1x128 tiles for A, "
        "128x128 blocks for B), or span all of K (per-tensor, per-row/column scales)")


def _check_operand(q: Any, name: str, dims: str) -> tuple[int, int]:
    """Raise a clear error unless ``q`` is a 2-D symmetric QTensor of up to 16 bits with one float scale per block; its shape."""
    if not isinstance(q, QTensor):
        raise TypeError(f"{name} must be a QTensor (codes + scales, e.g. from fp8lab.scaling.quantize_tensor), "
                        f"got {type(q).__name__}")
    shape = tuple(q.codes.shape)
    if len(shape) != 2:
        raise ValueError(f"{name} must be a 2-D QTensor of shape {dims}, got shape {shape}")
    if q.format.bits > 16:
        raise ValueError(f"{name} has format {q.format.name} ({q.format.bits} bits); scaled_matmul takes formats "
                         "up to 16 bits (FP8, FP6, FP4, INT8, ...)")
    if q.zero_point is not None:
        raise ValueError(f"{name} has a zero point (asymmetric quantization); scaled_matmul supports symmetric "
                         "scales only: x = decode(codes) * scales")
    block = q.block
    want = (-(-shape[0] // block[0]) if shape[0] else 0, -(-shape[1] // block[1]) if shape[1] else 0)  # ceil(n / b)
    got = tuple(q.scales.shape)
    if got != want:
        raise ValueError(f"{name}'s scales have shape {got}, but {shape} in blocks {block} needs {want} "
                         "(one scale per block: scales.shape[i] == ceil(shape[i] / block[i]))")
    dt = q.scales.dtype
    if (is_torch(q.scales) and not dt.is_floating_point) or (not is_torch(q.scales) and np.dtype(dt).kind != "f"):
        raise TypeError(f"{name}'s scales must be floating point (float32), got {dt}")
    return shape


@dataclass
class Problem:
    """A validated GEMM: torch codes, scales expanded to (M, n_kblocks) and (n_kblocks, N), the K-block.

    >>> import numpy as np
    >>> qa = QTensor(np.zeros((2, 256), np.uint8), np.ones((2, 2), np.float32), "e4m3", block=(1, 128))
    >>> p = prepare(qa, QTensor(np.zeros((256, 3), np.uint8), np.ones((1, 1), np.float32), "e4m3"))
    >>> (p.kind, p.m, p.k, p.n, p.n_kblocks, p.device.type)
    ('numpy', 2, 256, 3, 2, 'cpu')
    """

    kind: str            # "numpy" or "torch": what the caller gets back
    m: int
    k: int
    n: int
    k_block: int         # elements of K per scale block (== k when the scales do not change along K)
    a_codes: Any         # torch tensor (M, K), the caller's code dtype
    b_codes: Any         # torch tensor (K, N)
    a_format: Format
    b_format: Format
    sa: Any              # float32 (M, n_kblocks): A's scale for each row and K-block
    sb: Any              # float32 (n_kblocks, N): B's scale for each K-block and column
    a_block: tuple[int, int]
    b_block: tuple[int, int]
    a_scales: Any        # the operands' own blockwise scales, float32 torch on the device
    b_scales: Any

    @property
    def n_kblocks(self) -> int:
        """Number of K-blocks (1 for per-tensor and per-row/column scales; see the class example)."""
        return self.sa.shape[1]

    @property
    def device(self):
        """The torch device of the operands (see the class example)."""
        return self.a_codes.device


def _as_torch(x: Any):
    return x if is_torch(x) else torch.from_numpy(np.ascontiguousarray(x))


def _scales_on(s: Any, dev: Any):
    """Scales as float32 torch on ``dev`` (the tensor itself where it is one already)."""
    s = _as_torch(s)
    return s if s.dtype == torch.float32 and s.device == dev else s.to(device=dev, dtype=torch.float32)


def _gather(s, rows: int, row_block: int, own_k_block: int, g: int, n_kb: int):
    """Scales (rows/row_block, K/own_k_block) as one per row and one per K-chunk of ``g`` elements (maybe a broadcast view)."""
    shape = s.shape
    if shape == (1, 1):
        return s.expand(rows, n_kb)  # one scale for everything (per tensor): a view, no copy
    if max(row_block, 1) == 1 and max(own_k_block, 1) == g and shape == (rows, n_kb):
        return s.contiguous()  # already one per row and per K-chunk
    ri = torch.arange(rows, device=s.device) // max(row_block, 1)
    ci = (torch.arange(n_kb, device=s.device) * g) // max(own_k_block, 1)
    return s.index_select(0, ri).index_select(1, ci).contiguous()


def prepare(qa: QTensor, qb: QTensor) -> Problem:
    """Check ``qa`` (M, K) and ``qb`` (K, N) and bring them into the form the GEMM paths use.

    >>> import numpy as np
    >>> qa = QTensor(np.zeros((2, 256), np.uint8), np.ones((2, 2), np.float32), "e4m3", block=(1, 128))
    >>> qb = QTensor(np.zeros((256, 3), np.uint8), np.ones((2, 1), np.float32), "e4m3", block=(128, 128))
    >>> p = prepare(qa, qb); (p.k_block, tuple(p.sa.shape), tuple(p.sb.shape))
    (128, (2, 2), (2, 3))
    """
    if torch is None:  # pragma: no cover - torch is a dependency of the gemm layer
        raise ImportError("fp8lab.gemm needs torch (pip install torch)")
    (m, k) = _check_operand(qa, "qa", "(M, K)")
    (k2, n) = _check_operand(qb, "qb", "(K, N)")
    if k != k2:
        raise ValueError(f"inner dimensions do not match: qa is (M, K) = {qa.shape}, qb is (K, N) = {qb.shape}; "
                         f"qb must have {k} rows")
    ta, tb = is_torch(qa.codes), is_torch(qb.codes)
    if ta != tb:
        raise TypeError(f"qa is {'torch' if ta else 'numpy'}-backed but qb is {'torch' if tb else 'numpy'}-backed; "
                        "pass both as numpy arrays or both as torch tensors")
    if ta and qa.codes.device != qb.codes.device:
        raise ValueError(f"qa is on {qa.codes.device} but qb is on {qb.codes.device}; put both on one device")
    g = _common_k_block(k, qa.block, qb.block)
    n_kb = -(-k // g)
    a_codes, b_codes = _as_torch(qa.codes), _as_torch(qb.codes)
    dev = a_codes.device
    a_scales, b_scales = _scales_on(qa.scales, dev), _scales_on(qb.scales, dev)
    sa = _gather(a_scales, m, qa.block[0], qa.block[1], g, n_kb)            # (M, n_kb)
    sbt = _gather(b_scales.t(), n, qb.block[1], qb.block[0], g, n_kb)       # (N, n_kb)
    sb = sbt.t() if sbt.stride() == (0, 0) else sbt.t().contiguous()       # (n_kb, N); one scale stays a view
    return Problem("torch" if ta else "numpy", m, k, n, g, a_codes, b_codes, qa.format, qb.format,
                   sa, sb, tuple(qa.block), tuple(qb.block), a_scales, b_scales)
