"""The accumulator model of an FP8 GEMM: exact FP32, or a few mantissa bits promoted to FP32.

An FP8 tensor core multiplies FP8 operands exactly (the product of two E4M3 values has at most 8
significant bits) and adds the products into an accumulator. On H800 the DeepSeek-V3 report
(arXiv 2412.19437, section 3.3.2) measured that this accumulator keeps only about 14 bits, so it
promotes the partial sums to an FP32 register on the CUDA cores every ``N_C = 128`` elements of
``K`` (four WGMMAs of ``K = 32``) and applies the per-block scales there. :class:`Accumulator`
describes that datapath with named fields; :func:`round_mantissa` is the rounding it uses.

>>> Accumulator(mantissa_bits=13, promote_every=128)
Accumulator(mantissa_bits=13, promote_every=128, mma_k=32, rounding='toward_zero', model='round')
"""

from __future__ import annotations

from dataclasses import dataclass

from ..codec.backend import torch
from ..codec.wide import round_bits_torch
from ..formats import FloatFormat

__all__ = ["Accumulator", "round_mantissa", "ACCUMULATOR_MODELS", "ACCUMULATOR_ROUNDINGS"]

#: The two models of the limited accumulator, with what each one does per MMA chunk of ``mma_k``.
ACCUMULATOR_MODELS: dict[str, str] = {
    "round": "sum the chunk's products (FP32), add them to the partial sum, round the partial sum "
             "to a float with `mantissa_bits` mantissa bits",
    "align": "align the chunk's products and the partial sum to the largest exponent among them, "
             "drop the bits below `mantissa_bits` (a right shift), add, round the sum as in 'round'",
}
#: How the limited accumulator drops bits: DeepSeek-V3 describes truncation.
ACCUMULATOR_ROUNDINGS = ("toward_zero", "nearest")


@dataclass(frozen=True)
class Accumulator:
    """How an FP8 GEMM accumulates: exact FP32 (the default) or a limited accumulator promoted to FP32.

    ``mantissa_bits=None`` is the FP32 model: products are exact and summed in FP32 in any order
    (the fast path: one float32 matmul), which is what a kernel with full FP32 accumulation does
    up to summation order. With ``mantissa_bits`` set, the accumulator works like this:

    - ``K`` is cut into MMA chunks of ``mma_k`` elements (32: one Hopper WGMMA of FP8). Each chunk's
      products are summed (in FP32; the error of that sum, about ``2**-24`` relative, is far below
      the accumulator's) and added to the running *partial sum*, which is then rounded to a float
      with ``mantissa_bits`` mantissa bits and FP32's 8 exponent bits (``model="round"``), or the
      chunk's products and the partial sum are first aligned to their largest exponent and cut to
      ``mantissa_bits`` bits below it, as a shifter-based adder does (``model="align"``).
      ``rounding="toward_zero"`` truncates (DeepSeek-V3's description), ``"nearest"`` rounds
      half to even.
    - Every ``promote_every`` elements of ``K`` (a multiple of ``mma_k``) the partial sum is
      multiplied by the scales of its K-block, added to an FP32 accumulator (rounded to FP32), and
      reset. ``promote_every`` must divide the operands' K-block, because a tensor core cannot
      change scales in the middle of an accumulation.
    - ``promote_every=None`` never promotes: the partial sum spans all of ``K`` and the scales are
      applied at the end. That is only possible when the scales do not change along ``K``
      (per-tensor and per-row/column scales); with block scales it is an error.

    Assumptions of the model: products are exact (true for FP8 x FP8 in FP32); the accumulator has
    FP32's exponent range (no overflow or underflow of its own); the order of the chunk sums is the
    order of ``K``; the FP32 promotion is an ordinary float32 multiply-add. The DeepSeek-V3 report
    measured "about 14 bits" on H800: 13 mantissa bits plus the implicit leading bit.

    >>> Accumulator().exact, Accumulator(mantissa_bits=13).exact
    (True, False)
    """

    mantissa_bits: int | None = None
    promote_every: int | None = 128
    mma_k: int = 32
    rounding: str = "toward_zero"
    model: str = "round"

    def __post_init__(self) -> None:
        m = self.mantissa_bits
        if m is not None and (not isinstance(m, int) or isinstance(m, bool) or not 1 <= m <= 23):
            raise ValueError(f"mantissa_bits must be None (exact FP32) or an int in 1..23, got {m!r}")
        if not isinstance(self.mma_k, int) or isinstance(self.mma_k, bool) or self.mma_k < 1:
            raise ValueError(f"mma_k must be a positive int (32 for a Hopper FP8 WGMMA), got {self.mma_k!r}")
        p = self.promote_every
        if p is not None:
            if not isinstance(p, int) or isinstance(p, bool) or p < 1:
                raise ValueError(f"promote_every must be None (never promote) or a positive int, got {p!r}")
            if p % self.mma_k:
                raise ValueError(f"promote_every={p} must be a multiple of mma_k={self.mma_k}: "
                                 "the partial sum can only be promoted between MMA chunks")
        if self.rounding not in ACCUMULATOR_ROUNDINGS:
            raise ValueError(f"rounding must be one of {ACCUMULATOR_ROUNDINGS}, got {self.rounding!r}")
        if self.model not in ACCUMULATOR_MODELS:
            raise ValueError(f"model must be one of {tuple(ACCUMULATOR_MODELS)}, got {self.model!r}")

    @property
    def exact(self) -> bool:
        """Whether this is the exact FP32 model (no limited accumulator).

        >>> Accumulator(mantissa_bits=23).exact
        False
        """
        return self.mantissa_bits is None

    @property
    def format(self) -> FloatFormat | None:
        """The number format of the limited partial sum (8 exponent bits, ``mantissa_bits``), or None.

        >>> Accumulator(mantissa_bits=13).format.name
        'acc_e8m13'
        """
        if self.mantissa_bits is None:
            return None
        return FloatFormat(f"acc_e8m{self.mantissa_bits}", 8, self.mantissa_bits)

    def describe(self) -> str:
        """A one-line description for tables and plot legends.

        >>> Accumulator(mantissa_bits=13, promote_every=None).describe()
        '14-bit accumulator (e8m13, toward_zero), never promoted'
        """
        if self.exact:
            return "exact FP32 accumulation"
        promo = "never promoted" if self.promote_every is None else f"promoted to FP32 every {self.promote_every}"
        model = "" if self.model == "round" else ", aligned products"
        return f"{self.mantissa_bits + 1}-bit accumulator (e8m{self.mantissa_bits}, {self.rounding}{model}), {promo}"


def round_mantissa(x, mantissa_bits: int, rounding: str = "toward_zero", *, inplace: bool = False):
    """Round a float32 tensor to ``mantissa_bits`` mantissa bits by bit masking (the fast path).

    It is the codec's in-place path for tensors (:func:`fp8lab.codec.wide.round_bits_torch`), so it equals
    ``fp8lab.quantize(x, FloatFormat("e8m<bits>", 8, mantissa_bits), rounding=...)``, subnormals and NaN
    included (tests check it against our codec); ``inplace=True`` rounds ``x`` itself.

    >>> round_mantissa(torch.tensor([1.0 + 2**-12 + 2**-14]), 13).tolist()
    [1.000244140625]
    """
    if x.dtype != torch.float32:
        raise TypeError(f"round_mantissa works on float32 tensors, got {x.dtype}")
    if not 0 <= mantissa_bits <= 23:
        raise ValueError(f"mantissa_bits must be 0..23, got {mantissa_bits}")
    if rounding not in ACCUMULATOR_ROUNDINGS:
        raise ValueError(f"rounding must be one of {ACCUMULATOR_ROUNDINGS}, got {rounding!r}")
    return round_bits_torch(x, mantissa_bits, rounding, inplace=inplace)
