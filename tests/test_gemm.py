"""FP8 GEMM emulation: exact accumulation against a float64 oracle, layouts, dtypes, and clear errors.

The operands are built by a small blockwise quantiser written here (amax per block / fmt.max, a
saturating encode): an oracle independent of ``fp8lab.scaling``. The reference product is computed
in float64 from the codes and scales.
"""

from __future__ import annotations

import dataclasses

import math

import ml_dtypes
import numpy as np
import pytest
import torch

import fp8lab as fl
from fp8lab.codec import decode, encode
from fp8lab.gemm import Accumulator, common_k_block, decode_values, fast_decode, scaled_matmul
from fp8lab.gemm.decode import shift_decodable
from fp8lab.qtensor import QTensor, expand_blocks

U = 2.0**-24  # unit roundoff of float32


def quantize_blocks(x, fmt="e4m3", block=None, kind="numpy") -> QTensor:
    """Blockwise absmax quantisation: the test's own oracle for building QTensors."""
    f = fl.get_format(fmt)
    x = np.asarray(x, np.float32)
    m, k = x.shape
    block = tuple(block) if block else (m, k)
    n0, n1 = math.ceil(m / block[0]), math.ceil(k / block[1])
    padded = np.zeros((n0 * block[0], n1 * block[1]), np.float32)
    padded[:m, :k] = np.abs(x)
    amax = padded.reshape(n0, block[0], n1, block[1]).max(axis=(1, 3))
    scales = np.where(amax > 0, amax / f.max, 1.0).astype(np.float32)
    codes = encode(x / expand_blocks(scales, block, x.shape), f, saturate=True)
    if kind == "torch":
        codes, scales = torch.from_numpy(codes), torch.from_numpy(scales)
    return QTensor(codes, scales, f, block=block)


def reference(qa: QTensor, qb: QTensor) -> tuple[np.ndarray, np.ndarray]:
    """float64 product of the dequantised operands, and the bound sum |a||b| for the error test."""
    def deq(q):
        codes = q.codes.numpy() if isinstance(q.codes, torch.Tensor) else q.codes
        scales = q.scales.numpy() if isinstance(q.scales, torch.Tensor) else q.scales
        return decode(codes, q.format).astype(np.float64) * expand_blocks(scales.astype(np.float64), q.block, q.shape)
    a, b = deq(qa), deq(qb)
    return a @ b, np.abs(a) @ np.abs(b)


def assert_fp32_close(out, qa: QTensor, qb: QTensor) -> None:
    """|out - ref| <= (K + 4) u sum|a||b|: the worst-case bound of FP32 accumulation in any order."""
    out = out.numpy() if isinstance(out, torch.Tensor) else out
    ref, mag = reference(qa, qb)
    k = qa.shape[1]
    err = np.abs(out.astype(np.float64) - ref)
    bound = (k + 4) * U * mag + 1e-30
    assert out.shape == ref.shape
    assert np.all(err <= bound), f"max error / bound = {np.max(err / bound):.3g}"


LAYOUTS = {  # name: (A block, B block) as functions of (M, K, N)
    "per-tensor": lambda m, k, n: ((m, k), (k, n)),
    "row-wise": lambda m, k, n: ((1, k), (k, 1)),
    "deepseek 1x128 / 128x128": lambda m, k, n: ((1, 128), (128, 128)),
    "1x128 / 128x1": lambda m, k, n: ((1, 128), (128, 1)),
    "per-tensor A / 128x128 B": lambda m, k, n: ((m, k), (128, 128)),
    "1x256 / 128x128": lambda m, k, n: ((1, 256), (128, 128)),
    "128x128 / per-column": lambda m, k, n: ((128, 128), (k, 1)),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("shape", [(64, 512, 48), (70, 300, 50)])
@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_exact_matches_float64_within_fp32_rounding(layout, shape, kind):
    m, k, n = shape
    rng = np.random.default_rng(1)
    ba, bb = LAYOUTS[layout](m, k, n)
    qa = quantize_blocks(rng.standard_normal((m, k)) * np.exp(rng.uniform(-3, 3, (m, 1))), "e4m3", ba, kind)
    qb = quantize_blocks(rng.standard_normal((k, n)) * np.exp(rng.uniform(-3, 3, (1, n))), "e4m3", bb, kind)
    out = scaled_matmul(qa, qb)
    assert isinstance(out, torch.Tensor if kind == "torch" else np.ndarray)
    assert out.dtype in (np.float32, torch.float32)
    assert_fp32_close(out, qa, qb)


@pytest.mark.parametrize("fa,fb", [("e5m2", "e4m3"), ("e5m2", "e5m2"), ("e4m3fnuz", "e4m3fnuz"),
                                   ("e3m4", "fp6"), ("fp4", "e2m3"), ("int8", "int8")])
def test_exact_any_format(fa, fb):
    rng = np.random.default_rng(2)
    qa = quantize_blocks(rng.standard_normal((40, 256)), fa, (1, 128), "torch")
    qb = quantize_blocks(rng.standard_normal((256, 24)), fb, (128, 128), "torch")
    assert_fp32_close(scaled_matmul(qa, qb), qa, qb)


def test_per_tensor_is_matmul_then_epilogue_scale():
    """One K-block: one float32 matmul of decoded values, scales applied to the result (the kernels' epilogue)."""
    rng = np.random.default_rng(3)
    qa = quantize_blocks(rng.standard_normal((32, 64)), "e4m3", (1, 64), "torch")
    qb = quantize_blocks(rng.standard_normal((64, 16)), "e4m3", (64, 1), "torch")
    want = (qa.values() @ qb.values()) * qa.scales * qb.scales
    assert torch.equal(scaled_matmul(qa, qb), want)


@pytest.mark.parametrize("name,want_dtype", [
    ("bfloat16", ml_dtypes.bfloat16), ("bf16", ml_dtypes.bfloat16), (torch.bfloat16, ml_dtypes.bfloat16),
    (ml_dtypes.bfloat16, ml_dtypes.bfloat16), ("float16", np.float16), (np.float16, np.float16),
    (torch.float16, np.float16), ("float32", np.float32), (np.float32, np.float32)])
def test_out_dtype_rounds_the_fp32_result(name, want_dtype):
    rng = np.random.default_rng(4)
    qa = quantize_blocks(rng.standard_normal((16, 256)), "e4m3", (1, 128))
    qb = quantize_blocks(rng.standard_normal((256, 8)), "e4m3", (128, 128))
    f32 = scaled_matmul(qa, qb)
    out = scaled_matmul(qa, qb, out_dtype=name)
    assert out.dtype == np.dtype(want_dtype)
    np.testing.assert_array_equal(out, f32.astype(want_dtype))
    tq = [QTensor(torch.from_numpy(q.codes), torch.from_numpy(q.scales), q.format, block=q.block) for q in (qa, qb)]
    tout = scaled_matmul(*tq, out_dtype=name)
    assert str(tout.dtype).removeprefix("torch.") == np.dtype(want_dtype).name
    np.testing.assert_array_equal(tout.float().numpy(), out.astype(np.float32))


def test_empty_dimensions():
    e = encode(np.zeros((3, 0)), "e4m3")
    qa = QTensor(e, np.ones((1, 0), np.float32), "e4m3", block=(3, 1))
    qb = QTensor(encode(np.zeros((0, 2)), "e4m3"), np.ones((0, 1), np.float32), "e4m3", block=(1, 2))
    out = scaled_matmul(qa, qb)
    assert out.shape == (3, 2) and not out.any()
    out = scaled_matmul(QTensor(encode(np.zeros((0, 4)), "e4m3"), np.ones((0, 1), np.float32), "e4m3", block=(1, 4)),
                        quantize_blocks(np.ones((4, 5))), accumulator=Accumulator(13, 32))
    assert out.shape == (0, 5)


SHIFT_FORMATS = ["e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "float8_e4m3", "e4m3b11fnuz", "e3m4"]


def _same_values(x: torch.Tensor, y: torch.Tensor) -> None:
    assert torch.equal(torch.isnan(x), torch.isnan(y))
    ok = ~torch.isnan(y)
    assert torch.equal(x[ok].view(torch.int32), y[ok].view(torch.int32))  # -0.0 and inf included


@pytest.mark.parametrize("fmt", SHIFT_FORMATS + ["my_e2m5", "my_e5m2_finite"])
def test_fast_decode_every_code_equals_codec(fmt):
    if fmt == "my_e2m5":
        f = fl.FloatFormat("my_e2m5", 2, 5, special="fn")
    elif fmt == "my_e5m2_finite":
        f = fl.FloatFormat("my_e5m2_finite", 5, 2, special="finite")
    else:
        f = fl.get_format(fmt)
    codes = torch.arange(256, dtype=torch.uint8)
    assert shift_decodable(f)
    _same_values(fast_decode(codes, f), decode(codes, f))
    for c in (0, 1, 0x7F, 0x80, 0xFF):  # a special code alone, and ordinary codes around it
        one = torch.full((3,), c, dtype=torch.uint8)
        _same_values(fast_decode(one, f), decode(one, f))


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz"])
def test_fast_decode_equals_torch_float8_cast(fmt):
    f = fl.get_format(fmt)
    codes = torch.arange(256, dtype=torch.uint8)
    _same_values(decode_values(codes, f), codes.view(getattr(torch, f.name)).to(torch.float32))


def test_decode_values_falls_back_to_the_codec():
    for fmt in ("fp4", "e8m0", "int8", "bf16"):
        f = fl.get_format(fmt)
        assert not shift_decodable(f)
        codes = torch.arange(min(2**f.bits, 300)).to(torch.uint8 if f.bits <= 8 else torch.int32)
        _same_values(decode_values(codes, f), decode(codes, f))
    with pytest.raises(ValueError, match="cannot be decoded by shifting bits"):
        fast_decode(torch.zeros(2, dtype=torch.uint8), fl.get_format("fp4"))
    with pytest.raises(TypeError, match="uint8"):
        fast_decode(torch.zeros(2, dtype=torch.int32), fl.get_format("e4m3"))


def test_common_k_block():
    qa = quantize_blocks(np.ones((2, 512)), "e4m3", (1, 256))
    assert common_k_block(qa, quantize_blocks(np.ones((512, 2)), "e4m3", (128, 128))) == 128
    assert common_k_block(qa, quantize_blocks(np.ones((512, 2)), "e4m3", (512, 1))) == 256
    assert common_k_block(quantize_blocks(np.ones((2, 512))), quantize_blocks(np.ones((512, 2)))) == 512


# ------------------------------------------------------------------------------------------------
# clear errors
def _pair(m=4, k=256, n=8, ba=(1, 128), bb=(128, 128), kind="numpy"):
    rng = np.random.default_rng(5)
    return (quantize_blocks(rng.standard_normal((m, k)), "e4m3", ba, kind),
            quantize_blocks(rng.standard_normal((k, n)), "e4m3", bb, kind))


def test_error_inner_dimensions():
    qa, _ = _pair(k=256)
    _, qb = _pair(k=384)
    with pytest.raises(ValueError, match=r"inner dimensions do not match: qa is \(M, K\) = \(4, 256\), qb is .*\(384, 8\)"):
        scaled_matmul(qa, qb)


def test_error_not_2d_and_not_qtensor():
    qa, qb = _pair()
    q1 = QTensor(encode(np.ones(8), "e4m3"), np.ones(1, np.float32), "e4m3")
    with pytest.raises(ValueError, match=r"qa must be a 2-D QTensor of shape \(M, K\), got shape \(8,\)"):
        scaled_matmul(q1, qb)
    with pytest.raises(TypeError, match="qb must be a QTensor .* got ndarray"):
        scaled_matmul(qa, np.ones((256, 8)))


def test_error_mixed_numpy_and_torch():
    qa, _ = _pair()
    _, qb = _pair(kind="torch")
    with pytest.raises(TypeError, match="qa is numpy-backed but qb is torch-backed"):
        scaled_matmul(qa, qb)


def test_error_incompatible_k_blocks():
    qa, qb = _pair(k=384, ba=(1, 96), bb=(128, 128))
    with pytest.raises(ValueError, match=r"incompatible K-blocks: qa shares one scale over 96 .* qb over 128"):
        scaled_matmul(qa, qb)


def test_error_scale_layout():
    qa, qb = _pair()
    with pytest.raises(dataclasses.FrozenInstanceError):
        qa.scales = qa.scales[:, :1]  # a QTensor is frozen...
    object.__setattr__(qa, "scales", qa.scales[:, :1])  # ...but if someone forces it, the GEMM still checks
    with pytest.raises(ValueError, match=r"qa's scales have shape \(4, 1\), but \(4, 256\) in blocks \(1, 128\) needs \(4, 2\)"):
        scaled_matmul(qa, qb)


def test_error_zero_point_out_dtype_backend():
    qa, qb = _pair()
    with pytest.raises(ValueError, match="out_dtype must be one of .*float32.*got 'int8'"):
        scaled_matmul(qa, qb, out_dtype="int8")
    with pytest.raises(ValueError, match="backend must be one of"):
        scaled_matmul(qa, qb, backend="cuda")
    with pytest.raises(TypeError, match="accumulator must be an fp8lab Accumulator"):
        scaled_matmul(qa, qb, accumulator=13)
    qz = QTensor(qa.codes, qa.scales, "e4m3", block=qa.block, zero_point=np.zeros_like(qa.scales))
    with pytest.raises(ValueError, match="zero point"):
        scaled_matmul(qz, qb)


def test_error_accumulator_meaningless_with_block_scales():
    qa, qb = _pair()
    with pytest.raises(ValueError, match="promote_every=None .* scales change every 128 elements of K"):
        scaled_matmul(qa, qb, accumulator=Accumulator(13, promote_every=None))
    with pytest.raises(ValueError, match="promote_every=256 does not divide the K-block of 128"):
        scaled_matmul(qa, qb, accumulator=Accumulator(13, promote_every=256))
    with pytest.raises(ValueError, match="promote_every=100 must be a multiple of mma_k=32"):
        Accumulator(13, promote_every=100)


# ------------------------------------------------------------------------------------------------
# QTensors from fp8lab.scaling: every recipe's layout works with scaled_matmul
def _recipes():
    from fp8lab import scaling as sc
    return {
        "tensor": (sc.TensorScaling(), sc.TensorScaling(), "e4m3"),
        "row / column": (sc.AxisScaling(axis=-1), sc.AxisScaling(axis=0), "e4m3"),
        "deepseek": (sc.BlockScaling(block=(1, 128)), sc.BlockScaling(block=(128, 128)), "e4m3"),
        "deepseek ue8m0": (sc.BlockScaling(block=(1, 128), pow2=True), sc.BlockScaling(block=(128, 128), pow2=True), "e4m3"),
        "mxfp8": (sc.MXScaling(), sc.MXScaling(axis=0), "e4m3"),
        "mxfp4": (sc.MXScaling(), sc.MXScaling(axis=0), "fp4"),
        "nvfp4": (sc.NVFP4Scaling(), sc.NVFP4Scaling(axis=0), "fp4"),
        "int8 per channel": (sc.IntScaling(axis=-1), sc.IntScaling(axis=0), "int8"),
    }


@pytest.mark.parametrize("name", ["tensor", "row / column", "deepseek", "deepseek ue8m0", "mxfp8", "mxfp4", "nvfp4",
                                  "int8 per channel"])
@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_scaling_recipes_feed_scaled_matmul(name, kind):
    from fp8lab.scaling import llm_activations, quantize_tensor
    ra, rb, fmt = _recipes()[name]
    x = llm_activations((48, 256), seed=0)
    w = np.random.default_rng(6).standard_normal((256, 40)).astype(np.float32) * 0.05
    if kind == "torch":
        x, w = torch.from_numpy(np.asarray(x)), torch.from_numpy(w)
    qa, qb = quantize_tensor(x, fmt, ra), quantize_tensor(w, fmt, rb)
    assert_fp32_close(scaled_matmul(qa, qb), qa, qb)
    if common_k_block(qa, qb) % 32 == 0:  # a limited accumulator promoted every 32 fits every K-block here
        out = scaled_matmul(qa, qb, accumulator=Accumulator(13, promote_every=32))
        ref, _ = reference(qa, qb)
        assert np.linalg.norm(np.asarray(out, np.float64) - ref) <= 1e-3 * np.linalg.norm(ref)
