"""The native path: torch._scaled_mm on the CPU (and on a GPU when one is present) against the emulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import fp8lab as fl
from fp8lab.codec import encode
from fp8lab.gemm import Accumulator, native_available, scaled_matmul
from fp8lab.qtensor import QTensor, expand_blocks

U = 2.0**-24
CUDA = torch.cuda.is_available()


def quantize_blocks(x, fmt="e4m3", block=None, device=None) -> QTensor:
    """Blockwise absmax quantisation into a torch-backed QTensor (the test's own oracle)."""
    f = fl.get_format(fmt)
    x = torch.as_tensor(np.asarray(x, np.float32))
    m, k = x.shape
    block = tuple(block) if block else (m, k)
    n0, n1 = math.ceil(m / block[0]), math.ceil(k / block[1])
    padded = torch.zeros(n0 * block[0], n1 * block[1])
    padded[:m, :k] = x.abs()
    amax = padded.reshape(n0, block[0], n1, block[1]).amax(dim=(1, 3))
    scales = torch.where(amax > 0, amax / f.max, torch.ones(())).float()
    codes = encode(x / expand_blocks(scales, block, x.shape), f, saturate=True)
    if device is not None:
        codes, scales = codes.to(device), scales.to(device)
    return QTensor(codes, scales, f, block=block)


def operands(m, k, n, ba, bb, fa="e4m3", fb="e4m3", device=None, seed=0):
    rng = np.random.default_rng(seed)
    return (quantize_blocks(rng.standard_normal((m, k)) * np.exp(rng.uniform(-2, 2, (m, 1))), fa, ba, device),
            quantize_blocks(rng.standard_normal((k, n)) * np.exp(rng.uniform(-2, 2, (1, n))), fb, bb, device))


def assert_same_within_fp32(native, emulated, qa, qb):
    """Both are FP32 sums of the same exact products: they differ by summation order only."""
    mag = (qa.dequantize().abs().double() @ qb.dequantize().abs().double()).to(native.device)
    bound = (2 * qa.shape[1] + 8) * U * mag + 1e-30
    err = (native.double() - emulated.double()).abs()
    assert bool((err <= bound).all()), f"max error / bound {float((err / bound).max()):.3g}"


def test_native_available_on_cpu():
    assert native_available() is None
    assert native_available("cpu") is None
    assert native_available(torch.device("cpu")) is None


@pytest.mark.skipif(CUDA, reason="checks the message given when there is no CUDA device")
def test_native_unavailable_says_why():
    why = native_available("cuda")
    assert isinstance(why, str) and "CUDA" in why


SHAPES = [(64, 256, 32), (33, 100, 17)]
SCALINGS = {"per-tensor": lambda m, k, n: (None, None), "row-wise": lambda m, k, n: ((1, k), (k, 1)),
            "per-tensor A, per-column B": lambda m, k, n: (None, (k, 1))}


@pytest.mark.parametrize("scaling", sorted(SCALINGS))
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("formats", [("e4m3", "e4m3"), ("e5m2", "e4m3"), ("e4m3", "e5m2")])
def test_native_cpu_equals_emulation(scaling, shape, formats):
    m, k, n = shape
    qa, qb = operands(m, k, n, *SCALINGS[scaling](m, k, n), *formats)
    native = scaled_matmul(qa, qb, backend="native")
    emulated = scaled_matmul(qa, qb)
    assert native.dtype == torch.float32 and native.shape == (m, n)
    assert_same_within_fp32(native, emulated, qa, qb)


@pytest.mark.parametrize("scaling", sorted(SCALINGS))
def test_native_cpu_is_bitwise_dequantise_then_float32_matmul(scaling):
    """torch 2.13's fast CPU path (row-wise scale shapes) equals dequantise-then-float32-matmul bit for bit."""
    m, k, n = 96, 384, 80
    qa, qb = operands(m, k, n, *SCALINGS[scaling](m, k, n), seed=1)
    assert torch.equal(scaled_matmul(qa, qb, backend="native"), qa.dequantize() @ qb.dequantize())


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, "float16"])
def test_native_out_dtype(out_dtype):
    qa, qb = operands(32, 128, 16, (1, 128), (128, 1), seed=2)
    native = scaled_matmul(qa, qb, out_dtype=out_dtype, backend="native")
    emulated = scaled_matmul(qa, qb, out_dtype=out_dtype)
    assert native.dtype == emulated.dtype == (torch.bfloat16 if out_dtype is torch.bfloat16 else torch.float16)
    eps = torch.finfo(native.dtype).eps
    torch.testing.assert_close(native.float(), emulated.float(), rtol=eps, atol=eps * float(emulated.abs().max()))


def test_native_numpy_in_numpy_out():
    qa, qb = operands(8, 64, 4, (1, 64), (64, 1))
    na, nb = (QTensor(q.codes.numpy(), q.scales.numpy(), q.format, block=q.block) for q in (qa, qb))
    out = scaled_matmul(na, nb, backend="native")
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    np.testing.assert_array_equal(out, scaled_matmul(qa, qb, backend="native").numpy())


def test_native_cpu_uses_row_wise_scale_shapes(monkeypatch):
    """Per-tensor scales go to torch as (M, 1) and (1, N): scalar scales hit a ~0.03 GFLOP/s reference kernel."""
    seen = []
    real = torch._scaled_mm

    def spy(a, b, scale_a, scale_b, **kw):
        seen.append((tuple(scale_a.shape), tuple(scale_b.shape)))
        return real(a, b, scale_a, scale_b, **kw)

    qa, qb = operands(24, 64, 40, None, None)
    scaled_matmul(qa, qb, backend="native")  # the first native call probes torch once (its own small GEMM): not watched
    monkeypatch.setattr(torch, "_scaled_mm", spy)
    scaled_matmul(qa, qb, backend="native")
    assert seen == [((24, 1), (1, 40))]


def test_native_errors():
    qa, qb = operands(16, 256, 8, (1, 128), (128, 128))
    with pytest.raises(NotImplementedError, match=r"does not support block scales \(1, 128\) x \(128, 128\).*"
                                                  r"per-tensor and row-wise.*backend='emulated'"):
        scaled_matmul(qa, qb, backend="native")
    qa6, qb6 = operands(16, 256, 8, None, None, fa="e3m4")
    with pytest.raises(ValueError, match="needs qa in float8_e4m3fn or float8_e5m2 .* got float8_e3m4"):
        scaled_matmul(qa6, qb6, backend="native")
    qa1, qb1 = operands(16, 256, 8, None, None)
    with pytest.raises(ValueError, match="backend='native' runs the hardware's accumulator"):
        scaled_matmul(qa1, qb1, backend="native", accumulator=Accumulator(13, 128))
    qa2, qb2 = operands(16, 256, 8, (1, 64), (256, 1))
    with pytest.raises(NotImplementedError, match=r"no kernel for blocks \(1, 64\) x \(256, 1\)"):
        scaled_matmul(qa2, qb2, backend="native")


# ------------------------------------------------------------------------------------------------
# on a GPU (skipped without one)
gpu = pytest.mark.skipif(not CUDA, reason="needs a CUDA device")


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("scaling", ["per-tensor", "row-wise"])
def test_native_gpu_equals_emulation(scaling):
    if native_available("cuda") is not None:
        pytest.skip(native_available("cuda"))
    torch.backends.cuda.matmul.allow_tf32 = False
    m, k, n = 256, 512, 128
    qa, qb = operands(m, k, n, *SCALINGS[scaling](m, k, n), device="cuda")
    native = scaled_matmul(qa, qb, backend="native")
    assert native.device.type == "cuda"
    assert_same_within_fp32(native, scaled_matmul(qa, qb), qa, qb)


@pytest.mark.gpu
@gpu
def test_native_gpu_blockwise_or_clear_error():
    if native_available("cuda") is not None:
        pytest.skip(native_available("cuda"))
    torch.backends.cuda.matmul.allow_tf32 = False
    qa, qb = operands(256, 512, 256, (1, 128), (128, 128), device="cuda")
    try:
        native = scaled_matmul(qa, qb, backend="native", out_dtype=torch.bfloat16)
    except NotImplementedError as e:
        assert "does not support block scales" in str(e)
        return
    emulated = scaled_matmul(qa, qb, out_dtype=torch.bfloat16)
    eps = torch.finfo(torch.bfloat16).eps
    torch.testing.assert_close(native.float(), emulated.float(), rtol=2 * eps, atol=2 * eps * float(emulated.abs().max()))
