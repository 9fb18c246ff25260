"""A tiny array-library shim so one codec algorithm serves numpy arrays and torch tensors.

>>> import numpy as np
>>> NUMPY.ldexp(np.array([3]), np.array([-1])).tolist()
[1.5]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._optional import torch, torch_loaded

__all__ = ["Backend", "NUMPY", "TORCH", "is_torch", "transposed_layout"]


def is_torch(x: Any) -> bool:
    """Whether ``x`` is a torch tensor (False when torch is not installed).

    >>> is_torch([1.0])
    False
    """
    global _TENSOR
    if _TENSOR is None:
        if not torch_loaded():
            return False  # no torch imported: no tensor can exist
        _TENSOR = torch.Tensor
    return isinstance(x, _TENSOR)


_TENSOR: Any = None  #: torch.Tensor, once torch is imported


def transposed_layout(t: Any) -> bool:
    """Whether the torch matrix ``t`` is laid out transposed: a transposed view of a contiguous matrix (not contiguous itself).

    The codec, the scaling fast paths and the GEMM keep such a matrix's layout instead of copying it.

    >>> import torch
    >>> transposed_layout(torch.zeros(2, 3).t()), transposed_layout(torch.zeros(2, 3)), transposed_layout(torch.zeros(1, 3).t())
    (True, False, False)
    """
    return t.ndim == 2 and not t.is_contiguous() and t.t().is_contiguous()


class Backend:
    """The handful of array operations the codec needs, for numpy or torch."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.np = name == "numpy"

    # dtypes --------------------------------------------------------------------------------
    def int32(self):  # noqa: D102 - trivial accessors
        return np.int32 if self.np else torch.int32

    def int64(self):  # noqa: D102
        return np.int64 if self.np else torch.int64

    def uint_dtype(self, bits: int):
        """The unsigned code dtype for ``bits`` (torch has only uint8 natively, so wider codes use int32)."""
        if self.np:
            return np.uint8 if bits <= 8 else np.uint16 if bits <= 16 else np.uint32
        return torch.uint8 if bits <= 8 else torch.uint16 if bits <= 16 else torch.uint32

    # operations ---------------------------------------------------------------------------
    def where(self, cond, a, b):  # noqa: D102
        if self.np:
            return np.where(cond, a, b)
        return torch.where(cond, a, b)

    def maximum(self, a, c: int):  # noqa: D102
        return np.maximum(a, c) if self.np else torch.clamp(a, min=c)

    def minimum(self, a, c: int):  # noqa: D102
        return np.minimum(a, c) if self.np else torch.clamp(a, max=c)

    def astype(self, a, dtype):  # noqa: D102
        return a.astype(dtype, copy=False) if self.np else a.to(dtype)

    def bits_of_float32(self, x):
        """Reinterpret float32 values as int32 bit patterns."""
        return x.view(np.int32) if self.np else x.view(torch.int32)

    def float32_of_bits(self, u):
        """Reinterpret int32 bit patterns as float32 values."""
        return u.view(np.float32) if self.np else u.view(torch.float32)

    def ldexp(self, mant, exp):
        """``mant * 2^exp`` in float64 (exact for every code of a format up to 32 bits)."""
        if self.np:
            return np.ldexp(mant.astype(np.float64), exp.astype(np.int32))
        return torch.ldexp(mant.to(torch.float64), exp.to(torch.float64))

    def frexp(self, x):
        """Mantissas in [0.5, 1) and int exponents with ``x = mant * 2^exp`` (0 gives 0, 0)."""
        if self.np:
            return np.frexp(x)
        return torch.frexp(x)

    def nonzero(self, mask):
        """Index tuple of the True elements of a boolean mask."""
        return np.nonzero(mask) if self.np else torch.nonzero(mask, as_tuple=True)

    def full_like_int(self, a, value: int):
        """An int array/tensor shaped like ``a`` filled with ``value``."""
        return np.full(np.shape(a), value, dtype=np.int64) if self.np else torch.full(tuple(a.shape), value, dtype=torch.int64, device=a.device)

    def random_bits(self, shape, nbits, generator, like):
        """Uniform random integers in ``[0, 2^nbits)`` (nbits may be an array), as int64."""
        if self.np:
            r = generator.integers(0, 1 << 62, size=shape, dtype=np.int64)
            return r >> (62 - np.asarray(nbits, dtype=np.int64))
        r = torch.randint(0, 1 << 62, tuple(shape), generator=generator, dtype=torch.int64, device=like.device)
        return r >> (62 - nbits.to(torch.int64))


NUMPY = Backend("numpy")
TORCH = Backend("torch")
