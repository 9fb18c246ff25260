"""``scaled_matmul``: one entry point for the emulated and the native FP8 GEMM.

>>> import numpy as np
>>> from fp8lab.codec import encode
>>> from fp8lab.qtensor import QTensor
>>> qa = QTensor(encode(np.ones((2, 4)), "e4m3"), np.full((2, 1), 0.5, np.float32), "e4m3", block=(1, 4))
>>> qb = QTensor(encode(np.ones((4, 3)), "e4m3"), np.ones((1, 1), np.float32), "e4m3")
>>> scaled_matmul(qa, qb).tolist()
[[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..codec.backend import torch
from ..qtensor import QTensor
from .accumulator import Accumulator
from .checks import parse_out_dtype, prepare
from .decode import values_like_codes
from .emulated import exact_values, limited
from .native import native

__all__ = ["scaled_matmul", "BACKENDS"]

#: The two ways to compute a scaled matmul.
BACKENDS = ("emulated", "native")

_EXACT = Accumulator()  #: the default accumulator (frozen: one instance serves every call)


def _to_numpy(t, dtype: str) -> np.ndarray:
    t = t.detach().cpu()
    if dtype == "bfloat16":  # numpy has no bfloat16: hand back ml_dtypes' bfloat16, bit for bit
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _exact_held(p, qa: QTensor, qb: QTensor, consume: tuple[bool, bool], bias=None):
    """:func:`exact_values` with the values the operands hold (``QTensor.held_values``) instead of decoding their codes.

    Decoded values serve every GEMM; dequantized ones (value times scale) a K-blocked GEMM only
    (with one K-block the scales go to the result). A consumed operand's values are scaled in place
    where the GEMM scales K-blocks, and dropped from the QTensor (and its transposes) afterwards.
    """
    vals, deq, used = [None, None], [False, False], [False, False]
    if p.kind == "torch":
        for i, q in enumerate((qa, qb)):
            h = q.held_values()
            if h is not None and (not h[1] or p.n_kblocks > 1):
                vals[i], deq[i], used[i] = values_like_codes(h[0], q.codes), h[1], True
    out = exact_values(p, vals[0], vals[1], consume=(consume[0] and used[0], consume[1] and used[1]),
                       dequantized=(deq[0], deq[1]), bias=bias)
    for q, c, u in zip((qa, qb), consume, used):
        if c and u:
            q.drop_values()
    return out


def _check_bias(bias: Any, p) -> Any:
    """``bias`` as a float32 torch vector of N on the operands' device (numpy accepted), or a clear error."""
    b = bias if torch.is_tensor(bias) else torch.from_numpy(np.ascontiguousarray(bias))
    if b.ndim != 1 or b.shape[0] != p.n or not b.dtype.is_floating_point:
        raise ValueError(f"bias is a floating-point vector of N = {p.n} elements (one per output column), got "
                         f"{b.dtype} of shape {tuple(b.shape)}")
    return b.to(device=p.device, dtype=torch.float32).contiguous()


def scaled_matmul(qa: QTensor, qb: QTensor, out_dtype: Any = "float32", *,
                  accumulator: Accumulator | None = None, backend: str = "emulated",
                  consume: tuple[bool, bool] = (False, False), bias: Any = None):
    """The product ``qa @ qb`` of two quantized matrices (M, K) and (K, N), with their scales applied.

    ``out_dtype`` (float32, bfloat16 or float16; a torch dtype, numpy dtype or name) is what the
    FP32 result is rounded to at the end, as a kernel's epilogue does. ``accumulator`` chooses the
    accumulator model (default :class:`Accumulator()`: exact FP32); ``backend="native"`` calls
    ``torch._scaled_mm`` instead (E4M3FN/E5M2 operands, the hardware's own accumulator, so only the
    default ``Accumulator()``). numpy operands give a numpy array (bfloat16 as ``ml_dtypes.bfloat16``),
    torch operands a tensor on their device.

    Where an operand holds the float32 values its cast computed (``QTensor.hold_values``), the
    exact GEMM reads them instead of decoding its codes (the same bits). ``consume=(a, b)`` hands
    an operand's held values over: a K-blocked GEMM may scale them in place, and they are dropped
    from the QTensor afterwards (the training layer does this for operands no other GEMM reads).
    ``bias`` (N,) is added to the FP32 result before the rounding to ``out_dtype``, as the
    epilogue of ``torch._scaled_mm`` and cuBLASLt add it (in the emulated exact GEMM, in the same
    pass that applies the scales).

    >>> import torch
    >>> from fp8lab.codec import encode
    >>> q = QTensor(encode(torch.ones(1, 256), "e4m3"), torch.ones(1, 1), "e4m3")
    >>> scaled_matmul(q, QTensor(encode(torch.ones(256, 1), "e4m3"), torch.ones(1, 1), "e4m3"), torch.bfloat16)
    tensor([[256.]], dtype=torch.bfloat16)
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    acc = _EXACT if accumulator is None else accumulator
    if not isinstance(acc, Accumulator):
        raise TypeError(f"accumulator must be an fp8lab Accumulator, got {type(acc).__name__}")
    dtype = "float32" if out_dtype == "float32" else parse_out_dtype(out_dtype)
    if not (type(consume) is tuple and len(consume) == 2 and type(consume[0]) is bool and type(consume[1]) is bool):
        raise TypeError(f"consume is a pair of bools (for qa, qb), got {consume!r}")
    p = prepare(qa, qb)
    b = None if bias is None else _check_bias(bias, p)
    if backend == "native":
        if not acc.exact:
            raise ValueError(f"backend='native' runs the hardware's accumulator; an accumulator model ({acc.describe()}) "
                             "only applies to backend='emulated'. Pass accumulator=Accumulator() (the default)")
        if b is None:
            out = native(p, dtype)
        else:  # the FP32 result, the bias added, then the rounding to out_dtype
            out = native(p, "float32").add_(b)
            out = out if dtype == "float32" else out.to(getattr(torch, dtype))
    else:
        if acc.exact:
            out = _exact_held(p, qa, qb, consume, b)
        else:
            out = limited(p, acc)
            out = out if b is None else out.add_(b)
        if dtype != "float32":
            out = out.to(getattr(torch, dtype))
    return out if p.kind == "torch" else _to_numpy(out, dtype)
