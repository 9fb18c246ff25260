"""FP8 GEMM: an emulation with an explicit accumulator model, and the native ``torch._scaled_mm`` path.

``scaled_matmul(qa, qb)`` multiplies two :class:`~fp8lab.qtensor.QTensor` matrices with per-tensor,
per-row/column or block scales (1x128 and 128x128 as in DeepSeek-V3). ``backend="emulated"``
decodes the codes and computes in float32 under an :class:`Accumulator` model: exact FP32
(default), or a limited-precision accumulator (``mantissa_bits``) promoted to FP32 every
``promote_every`` elements of K, or never. ``backend="native"`` runs ``torch._scaled_mm`` (on the
CPU with row-wise scale shapes, its fast path; on CUDA devices of capability 8.9/9.0).
``accumulation_error_vs_k`` measures the error DeepSeek-V3 describes in words. Inside
``bf16_units()`` the exact GEMM of FP8 operands runs on the CPU's BF16 matrix units (exact: every FP8
value is a BF16 value; see :mod:`fp8lab.gemm.units`).

>>> import torch
>>> from fp8lab.codec import encode
>>> from fp8lab.qtensor import QTensor
>>> qa = QTensor(encode(torch.ones(2, 128), "e4m3"), torch.ones(1, 1), "e4m3")
>>> qb = QTensor(encode(torch.ones(128, 2), "e4m3"), torch.ones(1, 1), "e4m3")
>>> scaled_matmul(qa, qb, backend="native").tolist() == scaled_matmul(qa, qb).tolist() == [[128.0] * 2] * 2
True
"""

from .accumulator import ACCUMULATOR_MODELS, ACCUMULATOR_ROUNDINGS, Accumulator, round_mantissa
from .api import BACKENDS, scaled_matmul
from .checks import OUT_DTYPES, common_k_block
from .decode import decode_values, fast_decode, release_workspace
from .experiments import DISTRIBUTIONS, accumulation_error_vs_k, relative_errors
from .native import NATIVE_FORMATS, native_available
from .units import bf16_units, bf16_units_enabled

__all__ = [
    "scaled_matmul", "Accumulator", "native_available", "accumulation_error_vs_k", "bf16_units", "bf16_units_enabled",
    "relative_errors", "round_mantissa", "common_k_block", "decode_values", "fast_decode", "release_workspace",
    "ACCUMULATOR_MODELS", "ACCUMULATOR_ROUNDINGS", "BACKENDS", "OUT_DTYPES", "NATIVE_FORMATS", "DISTRIBUTIONS",
]
