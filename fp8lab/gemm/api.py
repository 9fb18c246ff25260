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
from .emulated import exact, limited
from .native import native

__all__ = ["scaled_matmul", "BACKENDS"]

#: The two ways to compute a scaled matmul.
BACKENDS = ("emulated", "native")


def _to_numpy(t, dtype: str) -> np.ndarray:
    t = t.detach().cpu()
    if dtype == "bfloat16":  # numpy has no bfloat16: hand back ml_dtypes' bfloat16, bit for bit
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def scaled_matmul(qa: QTensor, qb: QTensor, out_dtype: Any = "float32", *,
                  accumulator: Accumulator | None = None, backend: str = "emulated"):
    """The product ``qa @ qb`` of two quantized matrices (M, K) and (K, N), with their scales applied.

    ``out_dtype`` (float32, bfloat16 or float16; a torch dtype, numpy dtype or name) is what the
    FP32 result is rounded to at the end, as a kernel's epilogue does. ``accumulator`` chooses the
    accumulator model (default :class:`Accumulator()`: exact FP32); ``backend="native"`` calls
    ``torch._scaled_mm`` instead (E4M3FN/E5M2 operands, the hardware's own accumulator, so only the
    default ``Accumulator()``). numpy operands give a numpy array (bfloat16 as ``ml_dtypes.bfloat16``),
    torch operands a tensor on their device.

    >>> import torch
    >>> from fp8lab.codec import encode
    >>> q = QTensor(encode(torch.ones(1, 256), "e4m3"), torch.ones(1, 1), "e4m3")
    >>> scaled_matmul(q, QTensor(encode(torch.ones(256, 1), "e4m3"), torch.ones(1, 1), "e4m3"), torch.bfloat16)
    tensor([[256.]], dtype=torch.bfloat16)
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    acc = Accumulator() if accumulator is None else accumulator
    if not isinstance(acc, Accumulator):
        raise TypeError(f"accumulator must be an fp8lab Accumulator, got {type(acc).__name__}")
    dtype = parse_out_dtype(out_dtype)
    p = prepare(qa, qb)
    if backend == "native":
        if not acc.exact:
            raise ValueError(f"backend='native' runs the hardware's accumulator; an accumulator model ({acc.describe()}) "
                             "only applies to backend='emulated'. Pass accumulator=Accumulator() (the default)")
        out = native(p, dtype)
    else:
        out = exact(p) if acc.exact else limited(p, acc)
        if dtype != "float32":
            out = out.to(getattr(torch, dtype))
    return out if p.kind == "torch" else _to_numpy(out, dtype)
