"""The exact GEMM on the BF16 matrix units (fp8lab.gemm.units): which formats are BF16-exact (ml_dtypes as the
oracle), the result within FP32 accumulation's bound of a float64 reference, the same bits whichever path made the
operands' values, oneDNN's precision restored, and nothing changed where the switch is off or the product small."""

from __future__ import annotations

import dataclasses
import threading

import ml_dtypes
import numpy as np
import pytest
import torch

import fp8lab as fl
from fp8lab.gemm import units
from fp8lab.scaling import AxisScaling, TensorScaling


def _values_are_normal_bf16(fmt) -> bool:
    """Every finite value of ``fmt`` round-trips through ml_dtypes' bfloat16 and is 0 or at least 2^-126."""
    if fmt.bits > 16:
        return False
    with np.errstate(invalid="ignore"):  # the NaN codes
        v = np.asarray(fl.decode(np.arange(1 << fmt.bits, dtype=np.uint32 if fmt.bits > 8 else np.uint8), fmt), np.float64)
    v = v[np.isfinite(v)]
    with np.errstate(invalid="ignore"):
        back = v.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)
    return bool(np.array_equal(back, v) and np.all((v == 0) | (np.abs(v) >= 2.0 ** -126)))


@pytest.mark.parametrize("fmt", [f for f in fl.list_formats() if f.bits <= 16], ids=lambda f: f.name)
def test_bf16_exact_is_what_ml_dtypes_says_of_every_value(fmt):
    assert units.bf16_exact(fmt) == _values_are_normal_bf16(fmt)


def _operands(m, k, n, seed, recipe):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, k, generator=g) * torch.exp2(torch.randint(-12, 6, (m, k), generator=g).float())
    w = torch.randn(n, k, generator=g)
    return (fl.quantize_tensor(x, "e4m3", recipe, keep_values="values"),
            fl.quantize_tensor(w, "e5m2", recipe, keep_values="values").transpose())


@pytest.mark.parametrize("recipe", [TensorScaling(), AxisScaling()], ids=["tensor", "row"])
@pytest.mark.parametrize("shape", [(256, 512, 128), (768, 128, 384), (64, 1024, 64)])
def test_the_units_accumulate_exactly_in_fp32(recipe, shape):
    """The product on the units is within FP32 accumulation's bound (gamma_k times sum |a||b|) of float64, as the FP32
    GEMM is; and the same bits whether the operands' values were held from the cast or decoded in the GEMM."""
    qa, qb = _operands(*shape, 0, recipe)
    with units.bf16_units():
        got = fl.scaled_matmul(qa, qb)
        decoded = fl.scaled_matmul(dataclasses.replace(qa), dataclasses.replace(qb))
    assert torch.equal(got, decoded)
    va, vb = qa.values().double(), qb.values().double()
    sa, sb = qa.expanded_scales().double()[:, :1], qb.expanded_scales().double()[:1, :]
    ref = (va @ vb) * sa * sb
    k = shape[1]
    bound = (k * 2.0 ** -24 / (1 - k * 2.0 ** -24)) * (va.abs() @ vb.abs()) * sa * sb + 3 * 2.0 ** -24 * ref.abs()
    assert bool(((got.double() - ref).abs() <= bound).all())
    plain = fl.scaled_matmul(qa, qb)  # the switch off: MKL's FP32 GEMM, within the same bound
    assert bool(((plain.double() - ref).abs() <= bound).all())


def test_off_small_or_inexact_products_are_the_fp32_gemm_bit_for_bit():
    """Off (the default), below MIN_WORK, or with an operand format that is not BF16-exact: the plain FP32 matmul."""
    mk = torch.backends.mkldnn.matmul
    e4, f16 = units.operand_range(fl.get_format("e4m3")), units.operand_range(fl.get_format("fp16"))
    a = torch.randn(256, 512).to(torch.float8_e4m3fn).float()
    b = torch.randn(512, 256).to(torch.float8_e4m3fn).float()
    assert torch.equal(units.matmul(a, b, e4, e4), a @ b)
    with units.bf16_units():
        assert torch.equal(units.matmul(a, b, e4, f16), a @ b)
        assert torch.equal(units.matmul(a[:4, :16], b[:16, :4], e4, e4), a[:4, :16] @ b[:16, :4])
        before = mk.fp32_precision
        units.matmul(a, b, e4, e4)
        assert mk.fp32_precision == before  # restored


def test_the_switch_holds_per_thread_and_is_restored_after_an_error():
    seen = []
    with units.bf16_units():
        t = threading.Thread(target=lambda: seen.append(units.bf16_units_enabled()))
        t.start()
        t.join()
        assert units.bf16_units_enabled()
    assert seen == [False] and not units.bf16_units_enabled()
    mk = torch.backends.mkldnn.matmul
    before = mk.fp32_precision
    e4 = units.operand_range(fl.get_format("e4m3"))
    with units.bf16_units(), pytest.raises(RuntimeError):
        units.matmul(torch.ones(256, 256), torch.ones(255, 256), e4, e4)  # shapes that cannot multiply
    assert mk.fp32_precision == before


def test_a_training_step_on_the_units_is_the_step_of_the_fp32_gemm_within_rounding():
    """TrainConfig.bf16_units: the same first loss to float32 rounding, the gradients close, with and without."""
    from fp8lab.nn import LinearRecipe
    from fp8lab.train import TrainConfig
    from fp8lab.train.loop import Run

    cfg = dict(n_layer=1, n_embd=64, n_head=2, block_size=32, batch_size=8, steps=4)
    losses = {}
    for on in (True, False):
        run = Run(LinearRecipe.from_name("fp8-tensorwise-current"), TrainConfig(**cfg, bf16_units=on))
        losses[on] = [run.step(i)[0].item() for i in range(3)]
    assert losses[True] == pytest.approx(losses[False], rel=1e-4)


def test_k_blocked_gemms_use_the_units_only_with_power_of_two_scales_in_range():
    """MX (E8M0 scales along K): dequantized operands are BF16 values, so the product on the units is within FP32
    accumulation's bound of float64 and the same whichever path made the values; 1x128 tiles with float32 scales keep
    the FP32 GEMM bit for bit; a scale so small that a product would be subnormal keeps it too."""
    from fp8lab.scaling import BlockScaling, MXScaling

    g = torch.Generator().manual_seed(1)
    x, w = torch.randn(256, 512, generator=g) * 5, torch.randn(128, 512, generator=g)
    mx = MXScaling(scale_rounding="rceil")
    qa = fl.quantize_tensor(x, "e4m3", mx, keep_values="dequantized")
    qb = fl.quantize_tensor(w, "e4m3", MXScaling(scale_rounding="rceil", axis=-1), keep_values="dequantized").transpose()
    with units.bf16_units():
        got = fl.scaled_matmul(qa, qb)
        again = fl.scaled_matmul(dataclasses.replace(qa), dataclasses.replace(qb))
    assert torch.equal(got, again)
    da, db = qa.dequantize().double(), qb.dequantize().double()
    ref = da @ db
    bound = 512 * 2.0 ** -24 / (1 - 512 * 2.0 ** -24) * (da.abs() @ db.abs())
    assert bool(((got.double() - ref).abs() <= bound).all())
    assert units.operand_range(fl.get_format("e4m3"), qa.scales) is not None

    tiles = BlockScaling((1, 128))
    ta = fl.quantize_tensor(x, "e4m3", tiles)
    tb = fl.quantize_tensor(w, "e4m3", tiles).transpose()
    with units.bf16_units():
        on = fl.scaled_matmul(ta, tb)
    assert torch.equal(on, fl.scaled_matmul(ta, tb))
    assert units.operand_range(fl.get_format("e4m3"), torch.tensor([2.0 ** -120])) is None  # below BF16's normals
