"""The exact GEMM on the CPU's BF16 matrix units: exact because every FP8 value is a BF16 value.

An FP8 (or FP6, FP4, INT8) value has at most 8 significant bits and an exponent inside BF16's range, so
it is a BF16 value, and so is every decoded operand of an exact scaled GEMM with one K-block (the
scales go to the epilogue). A BF16 x BF16 product is exact in FP32, and oneDNN's BF16 matmul
(AMX or AVX-512-BF16) accumulates in FP32: the result is an FP32-accumulated sum of the exact
products, what ``Accumulator()`` models ("exact FP32 accumulation, in any order"), in another
summation order than MKL's FP32 GEMM, and two to three times faster on this machine (see
``bench/results/train.json``). Dequantized operands (K-blocked GEMMs) are not BF16 values; they
keep the FP32 GEMM.

torch has no per-call switch for it, only oneDNN's process-wide FP32 precision
(``torch.backends.mkldnn.matmul.fp32_precision``), so inside :func:`bf16_units` each such product
sets it to ``"bf16"`` for the duration of that one matmul and restores it. An FP32 matmul that
another Python thread starts in that instant would run in BF16 too: the switch is off by default
and the training loop (``TrainConfig.bf16_units``) turns it on for its own steps.

>>> import torch
>>> a = torch.randn(64, 256).to(torch.float8_e4m3fn).float(); b = torch.randn(256, 128).to(torch.float8_e4m3fn).float()
>>> ref = a.double() @ b.double()
>>> with bf16_units():
...     got = matmul(a, b, get_format("e4m3"), get_format("e4m3"))
>>> float((got.double() - ref).abs().max()) <= float((a @ b).double().sub(ref).abs().max()) * 4
True
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from typing import Any, Iterator

from ..codec.backend import torch
from ..formats import FloatFormat, Format, IntFormat
from ..registry import get_format  # noqa: F401 - the examples use it

__all__ = ["bf16_units", "bf16_units_enabled", "bf16_exact", "matmul", "MIN_WORK"]

#: Below this many multiply-adds (m * k * n) the FP32 GEMM is faster than the BF16 units' call overhead
#: (measured on this machine: 16 x 512 x 128 breaks even, 128^3 is faster in BF16).
MIN_WORK = 1 << 21

_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar("fp8lab_bf16_units", default=False)
_BF16_MIN_NORMAL_EXP = -126  #: BF16's smallest normal is 2^-126 (its matmul flushes subnormal inputs)
_BF16_MAX_EXP = 127


@contextlib.contextmanager
def bf16_units(enabled: bool = True) -> Iterator[None]:
    """Within the block (this thread), exact GEMMs of BF16-exact operands run on the BF16 matrix units.

    >>> with bf16_units():
    ...     bf16_units_enabled()
    True
    >>> bf16_units_enabled()
    False
    """
    token = _enabled.set(bool(enabled))
    try:
        yield
    finally:
        _enabled.reset(token)


def bf16_units_enabled() -> bool:
    """Whether :func:`bf16_units` is on in this thread.

    >>> bf16_units_enabled()
    False
    """
    return _enabled.get()


def bf16_exact(fmt: Format) -> bool:
    """Whether every value of ``fmt`` is a normal BF16 value (at most 8 significant bits, exponents within BF16's).

    BF16 itself is not: the matrix units flush its subnormals to zero.

    >>> [bf16_exact(get_format(f)) for f in ("e4m3", "e5m2", "fp4", "int8", "fp16", "bf16")]
    [True, True, True, True, False, False]
    """
    if isinstance(fmt, IntFormat):
        return fmt.bits <= 8  # |v| <= 255: 8 significant bits
    if not isinstance(fmt, FloatFormat) or fmt.mantissa_bits > 7:
        return False
    smallest = fmt.min_subnormal if fmt.subnormals else fmt.min_normal
    return math.log2(smallest) >= _BF16_MIN_NORMAL_EXP and math.log2(fmt.max) < _BF16_MAX_EXP + 1


def matmul(a: Any, b: Any, fa: Format, fb: Format) -> Any:
    """``a @ b`` for float32 CPU matrices holding values of ``fa`` and ``fb``: on the BF16 matrix units where
    :func:`bf16_units` is on, both formats are :func:`bf16_exact` and the product is large enough, else FP32.

    >>> import torch
    >>> matmul(torch.ones(2, 3), torch.ones(3, 1), get_format("e4m3"), get_format("e4m3")).tolist()
    [[3.0], [3.0]]
    """
    if not (_enabled.get() and a.is_cpu and a.dtype == torch.float32 and b.dtype == torch.float32
            and a.shape[0] * a.shape[1] * b.shape[1] >= MIN_WORK and bf16_exact(fa) and bf16_exact(fb)):
        return a @ b
    mk = torch.backends.mkldnn.matmul
    before = mk.fp32_precision
    mk.fp32_precision = "bf16"
    try:
        return a @ b
    finally:
        mk.fp32_precision = before
