"""The exact GEMM on the CPU's BF16 matrix units: exact because every FP8 value is a BF16 value.

An FP8 (or FP6, FP4, INT8) value has at most 8 significant bits and an exponent inside BF16's range, so
it is a BF16 value, and so is every decoded operand of an exact scaled GEMM with one K-block (the
scales go to the epilogue). A BF16 x BF16 product is exact in FP32, and oneDNN's BF16 matmul
(AMX or AVX-512-BF16) accumulates in FP32: the result is an FP32-accumulated sum of the exact
products, what ``Accumulator()`` models ("exact FP32 accumulation, in any order"), in another
summation order than MKL's FP32 GEMM, and faster where the CPU has BF16 matrix units and the product
is large enough (``bench/gemm_units.py`` times both, shape by shape; the step times in
``bench/results/train.json`` were measured with them, ``bench/train_step_time.py --fp32-gemms``
measures without). Dequantized operands of a K-blocked GEMM are BF16 values too where
every scale is a power of two (MX's E8M0 scales) and the products stay in range
(:func:`operand_range` checks); with float32 scales (1x128 tiles) they keep the FP32 GEMM.

torch has no per-call switch for it, only oneDNN's process-wide FP32 precision
(``torch.backends.mkldnn.matmul.fp32_precision``), so inside :func:`bf16_units` each such product
sets it to ``"bf16"`` for the duration of that one matmul and restores it. An FP32 matmul that
another Python thread starts in that instant would run in BF16 too: the switch is off by default
and the training loop (``TrainConfig.bf16_units``) turns it on for its own steps.

>>> import torch
>>> a = torch.randn(64, 256).to(torch.float8_e4m3fn).float(); b = torch.randn(256, 128).to(torch.float8_e4m3fn).float()
>>> ref = a.double() @ b.double()
>>> r = operand_range(get_format("e4m3"))
>>> with bf16_units():
...     got = matmul(a, b, r, r)
>>> float((got.double() - ref).abs().max()) <= float((a @ b).double().sub(ref).abs().max()) * 4
True
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from typing import Any, Iterator

from ..codec.backend import torch
from ..formats import FloatFormat, Format, IntFormat
from ..registry import get_format  # noqa: F401 - the examples use it

__all__ = ["bf16_units", "bf16_units_enabled", "bf16_exact", "operand_range", "matmul", "MIN_WORK"]

#: Below this many multiply-adds (m * k * n) the FP32 GEMM is faster than the BF16 units' call overhead;
#: ``python bench/gemm_units.py`` times both, shape by shape, and says whether this threshold picks the faster.
MIN_WORK = 1 << 22

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


@functools.lru_cache(maxsize=128)
def _value_range(fmt: Format) -> tuple[float, float] | None:
    """(smallest nonzero, largest) magnitude of ``fmt``'s values if they are BF16 values, else None (once per format)."""
    if not bf16_exact(fmt):
        return None
    lo = fmt.min_subnormal if isinstance(fmt, FloatFormat) and fmt.subnormals else \
        (fmt.min_normal if isinstance(fmt, FloatFormat) else 1.0)
    return lo, float(fmt.max)


def operand_range(fmt: Format, scales: Any = None) -> tuple[float, float] | None:
    """(smallest nonzero, largest) magnitude of ``fmt``'s values times ``scales`` if every such product is a normal
    BF16 value, else None: the values themselves (no scales) for a :func:`bf16_exact` format, or with power-of-two
    scales (E8M0, MX) dequantized values, which keep the element's significant bits.

    >>> import torch
    >>> operand_range(get_format("e4m3")), operand_range(get_format("e4m3"), torch.tensor([2.0 ** -3, 4.0]))
    ((0.001953125, 448.0), (0.000244140625, 1792.0))
    >>> operand_range(get_format("e4m3"), torch.tensor([0.3])) is None  # not a power of two: 24 significant bits
    True
    """
    values = _value_range(fmt)
    if values is None or scales is None:
        return values
    lo, hi = values
    s = scales.detach().reshape(-1).float()
    if s.numel() == 0:
        return lo, hi
    mant, _ = torch.frexp(s)
    if not bool(((mant == 0.5) & (s > 0)).all()):
        return None  # a scale that is not a positive power of two adds significant bits
    lo, hi = lo * float(s.min()), hi * float(s.max())
    if math.log2(lo) < _BF16_MIN_NORMAL_EXP or hi >= 2.0 ** (_BF16_MAX_EXP + 1):
        return None
    return lo, hi


def matmul(a: Any, b: Any, ra: "tuple[float, float] | None", rb: "tuple[float, float] | None") -> Any:
    """``a @ b`` for float32 CPU matrices whose nonzero magnitudes lie in ``ra`` and ``rb`` (:func:`operand_range`,
    None: not BF16 values): on the BF16 matrix units where :func:`bf16_units` is on, both are BF16 values whose
    products and sums stay in FP32's normal range, and the product is large enough; else the FP32 GEMM.

    >>> import torch
    >>> r = operand_range(get_format("e4m3"))
    >>> matmul(torch.ones(2, 3), torch.ones(3, 1), r, r).tolist()
    [[3.0], [3.0]]
    """
    if not (_enabled.get() and ra is not None and rb is not None and a.is_cpu and a.dtype == torch.float32
            and b.dtype == torch.float32 and a.shape[0] * a.shape[1] * b.shape[1] >= MIN_WORK
            and ra[0] * rb[0] >= 2.0 ** _BF16_MIN_NORMAL_EXP  # products never subnormal (the units flush them)
            and ra[1] * rb[1] * a.shape[1] < 2.0 ** (_BF16_MAX_EXP + 1)):  # nor the sums beyond FP32's range
        return a @ b
    mk = torch.backends.mkldnn.matmul
    before = mk.fp32_precision
    mk.fp32_precision = "bf16"
    try:
        return a @ b
    finally:
        mk.fp32_precision = before
