"""Roofline arithmetic for GEMMs: FLOP per byte of an M x N x K GEMM by operand format, against a GPU's ridge point.

An ``(M, K) @ (K, N)`` GEMM does ``2·M·N·K`` FLOP (a multiply and an add per term) and must move
at least both operands and the result once: ``(M·K·a + K·N·b + M·N·c) / 8`` bytes for ``a``, ``b``,
``c`` bits per element (scales included when the operand is block-scaled). Its *arithmetic
intensity* is FLOP per byte. A GPU with peak rate ``P`` (FLOP/s) and memory bandwidth ``W``
(bytes/s) needs at least ``max(FLOP / P, bytes / W)`` seconds: below the *ridge point* ``P / W``
the memory roof binds, above it the compute roof. This is the ideal model (no cache reuse beyond one
pass, kernels at peak); real kernels reach a fraction of both roofs.

Decode-time GEMMs (one or a few tokens, ``M`` small) are matrix-vector products whose intensity
is about ``2·M / (b / 8)``: far below any ridge, so FP8 weights pay by halving bytes. Prefill GEMMs
(``M`` = thousands of tokens) sit above the ridge, where FP8 pays through the doubled tensor rate.

>>> p = roofline("h100", "bf16", m=1, n=8192, k=8192)
>>> p.bound, round(p.cost.intensity, 3), round(p.ridge)
('memory', 1.0, 295)
>>> round(speedup("h100", m=1, n=8192, k=8192), 2)   # FP8 weights and activations against BF16, decode
2.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .specs import GPUSpec, _format_key, get_gpu_spec

__all__ = ["operand_bits", "GemmCost", "gemm_cost", "RooflinePoint", "roofline", "speedup", "compute_bound_m",
           "activation_cast_bytes"]

#: fp8lab format whose width is the storage width of each tensor-core input (TF32 operands are stored as FP32).
_STORAGE = {"tf32": "fp32", "bf16": "bf16", "fp16": "fp16", "fp8": "e4m3", "fp6": "e2m3", "fp4": "fp4",
            "int8": "int8", "int4": "int4"}


def operand_bits(x: Any) -> float:
    """Bits per stored element of an operand: a number, a format name, or a QTensor (its ``bits_per_element``).

    Tensor-core names use their storage width (``tf32`` is stored as FP32: 32 bits); any other
    name goes through :func:`fp8lab.get_format`. A QTensor counts its scales too.

    >>> operand_bits("bf16"), operand_bits("fp8"), operand_bits("tf32"), operand_bits(4.5)
    (16.0, 8.0, 32.0, 4.5)
    """
    if isinstance(x, bool):
        raise TypeError("bits per element is a number, a format name or a QTensor, got a bool")
    if isinstance(x, (int, float)):
        if not x > 0 or not math.isfinite(x):
            raise ValueError(f"bits per element must be a positive finite number, got {x!r}")
        return float(x)
    if isinstance(x, str):
        from ..registry import get_format

        name = x.strip().lower()
        if name == "fp64":
            return 64.0
        try:
            name = _STORAGE[_format_key(name)]
        except ValueError:
            pass
        return float(get_format(name).bits)
    if hasattr(x, "bits_per_element"):
        return float(x.bits_per_element)
    raise TypeError(f"bits per element is a number, a format name or a QTensor, got {type(x).__name__}")


def _dim(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"{name} must be a positive int, got {v!r}")
    return v


@dataclass(frozen=True)
class GemmCost:
    """FLOP and minimum bytes of an ``(m, k) @ (k, n)`` GEMM with operands of ``a_bits``, ``b_bits`` and result ``c_bits``.

    >>> c = GemmCost(2, 3, 4, 16, 16, 16); c.flops, c.bytes, round(c.intensity, 3)
    (48, 52.0, 0.923)
    """

    m: int
    n: int
    k: int
    a_bits: float
    b_bits: float
    c_bits: float

    def __post_init__(self) -> None:
        for name in "mnk":
            _dim(name, getattr(self, name))
        for name in ("a_bits", "b_bits", "c_bits"):
            object.__setattr__(self, name, operand_bits(getattr(self, name)))

    @property
    def flops(self) -> int:
        """``2·m·n·k``: one multiply and one add per term.

        >>> GemmCost(4096, 8192, 8192, 8, 8, 16).flops
        549755813888
        """
        return 2 * self.m * self.n * self.k

    @property
    def bytes(self) -> float:
        """Minimum bytes moved: each operand read once and the result written once.

        >>> GemmCost(1, 8192, 8192, 16, 16, 16).bytes == (8192 + 8192 * 8192 + 8192) * 2
        True
        """
        return (self.m * self.k * self.a_bits + self.k * self.n * self.b_bits + self.m * self.n * self.c_bits) / 8

    @property
    def intensity(self) -> float:
        """Arithmetic intensity in FLOP per byte.

        >>> round(GemmCost(1, 8192, 8192, 8, 8, 16).intensity, 3)
        1.999
        """
        return self.flops / self.bytes


def activation_cast_bytes(m: int, k: int, from_bits: Any = "bf16", to_bits: Any = "fp8") -> float:
    """Bytes of a separate pass that reads ``(m, k)`` activations and writes them in a narrower format.

    A dynamic FP8 GEMM whose cast is not fused into the previous kernel pays this on top.

    >>> activation_cast_bytes(1, 8192)
    24576.0
    """
    _dim("m", m), _dim("k", k)
    return m * k * (operand_bits(from_bits) + operand_bits(to_bits)) / 8


def gemm_cost(m: int, n: int, k: int, a: Any = "bf16", b: Any = None, c: Any = "bf16") -> GemmCost:
    """The :class:`GemmCost` of a GEMM; ``b`` defaults to ``a``'s format, the result to BF16.

    >>> gemm_cost(1, 8192, 8192, "fp8").b_bits
    8.0
    """
    return GemmCost(m, n, k, operand_bits(a), operand_bits(a if b is None else b), operand_bits(c))


@dataclass(frozen=True)
class RooflinePoint:
    """One GEMM on one GPU's roofline: its cost, the roofs, the time it needs and which roof binds.

    ``prologue_bytes`` is traffic of a separate, unfused pass before the GEMM (a BF16-to-FP8 cast of
    the activations, :func:`activation_cast_bytes`): it adds ``prologue_bytes / bandwidth`` seconds.

    >>> p = roofline("h100", "fp8", m=4096, n=8192, k=8192); p.bound, round(p.fraction_of_peak, 2)
    ('compute', 1.0)
    """

    gpu: GPUSpec
    format: str
    sparse: bool
    cost: GemmCost
    peak_flops: float
    bandwidth: float
    prologue_bytes: float = 0.0

    def __post_init__(self) -> None:
        v = self.prologue_bytes
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
            raise ValueError(f"prologue_bytes must be a non-negative number, got {v!r}")

    @property
    def ridge(self) -> float:
        """The ridge point in FLOP/byte: ``peak_flops / bandwidth``.

        >>> round(roofline("a100", "bf16", 1, 1, 1).ridge)
        153
        """
        return self.peak_flops / self.bandwidth

    @property
    def compute_time(self) -> float:
        """Seconds at the peak rate: ``flops / peak_flops``.

        >>> roofline("h100", "bf16", 1, 1, 1).compute_time > 0
        True
        """
        return self.cost.flops / self.peak_flops

    @property
    def memory_time(self) -> float:
        """Seconds at full memory bandwidth: ``bytes / bandwidth``.

        >>> roofline("h100", "bf16", 1, 1, 1).memory_time == 6 / 3.35e12
        True
        """
        return self.cost.bytes / self.bandwidth

    @property
    def time(self) -> float:
        """The roofline time: the larger of :attr:`compute_time` and :attr:`memory_time`, plus any prologue pass.

        >>> p = roofline("h100", "bf16", 1, 8192, 8192); p.time == p.memory_time
        True
        """
        return max(self.compute_time, self.memory_time) + self.prologue_bytes / self.bandwidth

    @property
    def bound(self) -> str:
        """``"memory"`` below the ridge point, ``"compute"`` at or above it (the GEMM itself, without a prologue).

        >>> roofline("h100", "bf16", 8192, 8192, 8192).bound
        'compute'
        """
        return "compute" if self.compute_time >= self.memory_time else "memory"

    @property
    def attainable_flops(self) -> float:
        """FLOP/s the roofline allows: ``min(peak, intensity x bandwidth)`` (less with a prologue pass).

        >>> p = roofline("h100", "bf16", 1, 8192, 8192); round(p.attainable_flops / 1e12, 2)
        3.35
        """
        return self.cost.flops / self.time

    @property
    def fraction_of_peak(self) -> float:
        """:attr:`attainable_flops` as a share of the peak tensor rate.

        >>> round(roofline("h100", "fp8", 1, 8192, 8192).fraction_of_peak, 4)
        0.0034
        """
        return self.attainable_flops / self.peak_flops


def roofline(gpu: "str | GPUSpec", fmt: str, m: int, n: int, k: int, a: Any = None, b: Any = None, c: Any = "bf16",
             sparse: bool = False, prologue_bytes: float = 0.0) -> RooflinePoint:
    """Place an ``(m, k) @ (k, n)`` GEMM run on ``fmt`` tensor cores on ``gpu``'s roofline.

    Operands default to ``fmt``'s storage width (pass ``a``/``b`` as bits, names or QTensors for
    scaled or mixed operands: W4A16 is ``a="bf16", b=4.25`` on ``"bf16"`` tensor cores); the result
    defaults to BF16.

    >>> roofline("h100", "fp8", 1, 8192, 8192).cost.a_bits
    8.0
    """
    spec = get_gpu_spec(gpu)
    key = _format_key(fmt)
    default = "fp64" if key == "fp64" else key
    cost = gemm_cost(m, n, k, default if a is None else a, (default if a is None else a) if b is None else b, c)
    return RooflinePoint(spec, key, bool(sparse), cost, spec.peak_flops(key, sparse), spec.memory_bandwidth,
                         float(prologue_bytes))


def speedup(gpu: "str | GPUSpec", m: int, n: int, k: int, fast: str = "fp8", base: str = "bf16",
            fast_operands: tuple[Any, Any] | None = None, c: Any = "bf16", prologue_bytes: float = 0.0) -> float:
    """Roofline time with ``base`` tensor cores over the time with ``fast`` ones (above 1: ``fast`` wins).

    ``fast_operands`` overrides the fast GEMM's operand widths (for example ``(8.25, 8.0)`` for
    1x128-scaled activations, or ``("bf16", "fp8")`` for FP8 weights on BF16 tensor cores);
    ``prologue_bytes`` is a separate pass the fast GEMM alone pays (an unfused activation cast).

    >>> round(speedup("h100", 8192, 8192, 8192), 2)
    2.0
    >>> round(speedup("h100", 8192, 8192, 8192, prologue_bytes=activation_cast_bytes(8192, 8192)), 2)
    1.8
    """
    a, b = fast_operands if fast_operands is not None else (None, None)
    t_fast = roofline(gpu, fast, m, n, k, a, b, c, prologue_bytes=prologue_bytes).time
    return roofline(gpu, base, m, n, k, c=c).time / t_fast


def compute_bound_m(gpu: "str | GPUSpec", fmt: str, n: int, k: int, a: Any = None, b: Any = None, c: Any = "bf16",
                    sparse: bool = False, m_max: int = 2**24) -> int | None:
    """The smallest number of rows (tokens) ``M`` at which an ``(M, k) @ (k, n)`` GEMM becomes compute-bound.

    Intensity grows with ``M``, so a bisection finds it; None if even ``m_max`` stays memory-bound.

    >>> compute_bound_m("h100", "bf16", 8192, 8192), compute_bound_m("h100", "fp8", 8192, 8192)
    (319, 332)
    """
    _dim("m_max", m_max)

    def bound(m: int) -> bool:
        return roofline(gpu, fmt, m, n, k, a, b, c, sparse).bound == "compute"

    if not bound(m_max):
        return None
    lo, hi = 1, m_max
    if bound(lo):
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if bound(mid) else (mid, hi)
    return hi
