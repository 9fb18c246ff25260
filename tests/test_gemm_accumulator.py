"""The limited-precision accumulator: rounding against our codec, the model against a scalar
reference written here, and the DeepSeek-V3 effect (error grows with K; promotion cuts it)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import fp8lab as fl
from fp8lab.gemm import Accumulator, accumulation_error_vs_k, round_mantissa, scaled_matmul
from fp8lab.qtensor import QTensor


# ------------------------------------------------------------------------------------------------
# rounding the partial sum: bit masking == our codec with an e8mX format
@pytest.mark.parametrize("bits", [1, 3, 7, 10, 13, 22])
@pytest.mark.parametrize("rounding", ["toward_zero", "nearest"])
def test_round_mantissa_equals_codec(bits, rounding):
    rng = np.random.default_rng(bits)
    x = np.concatenate([
        rng.standard_normal(20000) * np.exp(rng.uniform(-80, 80, 20000)),
        rng.standard_normal(2000) * 1e-40,                     # float32 subnormals
        [0.0, -0.0, 1.0, -1.0, 3.0e38, -3.0e38],
        1.0 + np.arange(1, 200) * 2.0**-23,                    # every tie pattern near 1
    ]).astype(np.float32)
    want = fl.quantize(x, fl.FloatFormat(f"acc_e8m{bits}", 8, bits), rounding=rounding)
    got = round_mantissa(torch.from_numpy(x), bits, rounding).numpy()
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))


def test_round_mantissa_inplace_and_errors():
    x = torch.tensor([1.0 + 2**-20])
    y = round_mantissa(x, 10)
    assert y.item() == 1.0 and x.item() != 1.0
    round_mantissa(x, 10, inplace=True)
    assert x.item() == 1.0
    with pytest.raises(TypeError, match="float32"):
        round_mantissa(torch.ones(2, dtype=torch.float64), 10)
    with pytest.raises(ValueError, match="rounding must be one of"):
        round_mantissa(torch.ones(2), 10, "up")


def test_accumulator_fields_and_errors():
    acc = Accumulator(mantissa_bits=13, promote_every=128)
    assert not acc.exact and acc.format.mantissa_bits == 13 and acc.format.exponent_bits == 8
    assert Accumulator().exact and Accumulator().format is None
    assert "never promoted" in Accumulator(13, None).describe()
    for kwargs, msg in [({"mantissa_bits": 0}, "mantissa_bits must be None .* 1..23, got 0"),
                        ({"mantissa_bits": 13, "promote_every": 48}, "promote_every=48 must be a multiple of mma_k=32"),
                        ({"mantissa_bits": 13, "promote_every": 0}, "promote_every must be None .* positive int"),
                        ({"mma_k": 0}, "mma_k must be a positive int"),
                        ({"rounding": "stochastic"}, "rounding must be one of"),
                        ({"model": "exact"}, "model must be one of")]:
        with pytest.raises(ValueError, match=msg):
            Accumulator(**kwargs)


# ------------------------------------------------------------------------------------------------
# the model against a scalar reference
def _codes_in_binade(rng, shape, lo_code=0x30, hi_code=0x40):
    """E4M3 codes for values in [0.5, 2): every partial sum below is exact in float32."""
    return rng.integers(lo_code, hi_code, size=shape).astype(np.uint8)


def _scalar_round(v: float, bits: int, rounding: str) -> float:
    return float(fl.quantize(np.float32(v), fl.FloatFormat("acc", 8, bits), rounding=rounding))


def _scalar_limited(a, b, sa, sb, k_block, acc: Accumulator) -> np.ndarray:
    """A loop-by-loop reading of the Accumulator docstring, one output element at a time."""
    m, k = a.shape
    n = b.shape[1]
    pe = acc.promote_every or k
    out = np.zeros((m, n), np.float32)
    for i in range(m):
        for j in range(n):
            total = np.float32(0.0)
            for p0 in range(0, k, pe):
                part = 0.0
                for c0 in range(p0, min(p0 + pe, k), acc.mma_k):
                    prods = [float(a[i, t]) * float(b[t, j]) for t in range(c0, min(c0 + acc.mma_k, p0 + pe, k))]
                    if acc.model == "round":
                        s = part + math.fsum(prods)
                    else:
                        terms = [part, *prods]
                        e = math.frexp(max(abs(t) for t in terms))[1]
                        q = math.ldexp(1.0, e - 1 - acc.mantissa_bits)
                        cut = math.trunc if acc.rounding == "toward_zero" else round
                        s = math.fsum(cut(t / q) * q for t in terms)
                    part = _scalar_round(s, acc.mantissa_bits, acc.rounding)
                kb = p0 // k_block
                total = np.float32(total + np.float32(np.float32(part) * sa[i, kb]) * sb[kb, j])
            out[i, j] = total
    return out


@pytest.mark.parametrize("acc", [Accumulator(13, 128), Accumulator(13, None), Accumulator(5, 64),
                                 Accumulator(6, 32, rounding="nearest"), Accumulator(5, 128, model="align"),
                                 Accumulator(4, None, model="align", rounding="nearest")], ids=str)
def test_limited_matches_scalar_reference(acc):
    rng = np.random.default_rng(7)
    m, k, n = 3, 300, 4                       # ragged: 300 = 2 * 128 + 44, and 44 = 32 + 12
    a, b = _codes_in_binade(rng, (m, k)), _codes_in_binade(rng, (k, n))
    if acc.promote_every is None:             # scales constant along K
        block_a, block_b = (1, k), (k, 1)
    else:
        block_a, block_b = (1, 128), (128, 128)
    sa = np.exp2(rng.integers(-3, 3, (m, math.ceil(k / block_a[1])))).astype(np.float32) * 1.5
    sb = np.exp2(rng.integers(-3, 3, (math.ceil(k / block_b[0]), math.ceil(n / block_b[1])))).astype(np.float32) * 0.75
    qa, qb = QTensor(a, sa, "e4m3", block=block_a), QTensor(b, sb, "e4m3", block=block_b)
    va, vb = fl.decode(a, "e4m3"), fl.decode(b, "e4m3")
    sbn = np.repeat(sb, block_b[1], axis=1)[:, :n]
    want = _scalar_limited(va, vb, sa, sbn, block_a[1] if acc.promote_every else k, acc)
    got = scaled_matmul(qa, qb, accumulator=acc)
    np.testing.assert_array_equal(got, want)


def test_limited_fp32_accumulator_is_close_to_exact():
    rng = np.random.default_rng(8)
    qa = QTensor(rng.integers(0, 0x7E, (16, 512)).astype(np.uint8), np.full((16, 4), 0.01, np.float32), "e4m3",
                 block=(1, 128))
    qb = QTensor(rng.integers(0, 0xFE, (512, 8)).astype(np.uint8) & 0xF7, np.full((4, 1), 3.0, np.float32), "e4m3",
                 block=(128, 128))
    exact = scaled_matmul(qa, qb)
    fp32 = scaled_matmul(qa, qb, accumulator=Accumulator(23, 128, rounding="nearest"))
    np.testing.assert_allclose(fp32, exact, rtol=1e-5, atol=1e-5 * np.abs(exact).max())


def test_limited_torch_in_torch_out_and_tile_independence():
    from fp8lab.gemm.checks import prepare
    from fp8lab.gemm.emulated import limited
    rng = np.random.default_rng(9)
    qa = QTensor(torch.from_numpy(_codes_in_binade(rng, (10, 256))), torch.ones(10, 2), "e4m3", block=(1, 128))
    qb = QTensor(torch.from_numpy(_codes_in_binade(rng, (256, 6))), torch.ones(2, 1), "e4m3", block=(128, 128))
    acc = Accumulator(10, 64)
    out = scaled_matmul(qa, qb, accumulator=acc)
    assert isinstance(out, torch.Tensor) and out.shape == (10, 6)
    p = prepare(qa, qb)
    for tile in (1, 3, 10):
        assert torch.equal(limited(p, acc, tile_rows=tile), out)


# ------------------------------------------------------------------------------------------------
# the DeepSeek-V3 effect, measured
@pytest.mark.parametrize("model", ["round", "align"])
def test_error_grows_with_k_and_promotion_cuts_it(model):
    rows = accumulation_error_vs_k(ks=(256, 1024, 4096), m=16, n=16, mantissa_bits=13, model=model, seed=0)
    err = {(r["k"], r["setting"]): r["max_rel_error"] for r in rows}
    none = [err[k, "no promotion"] for k in (256, 1024, 4096)]
    assert none[0] < none[1] < none[2] and none[2] > 4 * none[0]           # grows with K
    assert err[4096, "no promotion"] >= 10 * err[4096, "promoted every 128"]  # promotion: an order of magnitude
    assert all(err[k, "exact FP32"] < 1e-6 for k in (256, 1024, 4096))
    assert {r["mantissa_bits"] for r in rows} == {None, 13}


def test_accumulation_error_rows_and_errors():
    rows = accumulation_error_vs_k(ks=(64,), m=2, n=3, promote_every=(None, 32, 64), distribution="normal")
    assert [r["setting"] for r in rows] == ["exact FP32", "no promotion", "promoted every 32", "promoted every 64"]
    assert set(rows[0]) >= {"k", "setting", "promote_every", "mantissa_bits", "max_rel_error", "rel_error"}
    with pytest.raises(ValueError, match="distribution must be one of"):
        accumulation_error_vs_k(ks=(64,), distribution="cauchy")
    with pytest.raises(ValueError, match="ks must be positive"):
        accumulation_error_vs_k(ks=())


# ------------------------------------------------------------------------------------------------
# the accumulator loop's fast rounding (no NaN fix-up) and its finiteness check
@pytest.mark.parametrize("bits", [0, 1, 7, 13, 22, 23])
@pytest.mark.parametrize("rounding", ["toward_zero", "nearest"])
def test_rounding_without_the_nan_fixup_agrees_on_every_non_nan(bits, rounding):
    from fp8lab.codec.wide import round_bits_torch
    rng = np.random.default_rng(bits)
    pats = np.concatenate([rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32),
                           np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7F7FFFFF, 0xFF7FFFFF, 1, 0x807FFFFF], np.uint32)])
    x = torch.from_numpy(pats.view(np.float32).copy())
    x = x[~torch.isnan(x)]
    fast = round_bits_torch(x, bits, rounding, keep_nan=False)
    careful = round_bits_torch(x, bits, rounding)
    assert torch.equal(fast.view(torch.int32), careful.view(torch.int32))


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
@pytest.mark.parametrize("acc", [Accumulator(1, 64), Accumulator(1, None, rounding="nearest"), Accumulator(3, 32),
                                 Accumulator(13, 128), Accumulator(13, None), Accumulator(23, 64, rounding="nearest")],
                         ids=str)
def test_the_fast_accumulator_loop_equals_the_nan_keeping_loop(fmt, acc):
    """Operands with NaN, inf and huge values (partials that overflow, inf - inf): the GEMM's fast loop
    and its finiteness check give what the NaN-keeping loop gives, bit for bit and NaN for NaN."""
    from fp8lab.gemm.checks import prepare
    from fp8lab.gemm.emulated import check_accumulator, limited, _limited_into
    f = fl.get_format(fmt)
    rng = np.random.default_rng(11)
    special = [c for c in range(256) if f.is_nan_code(c) or f.is_inf_code(c)]
    cases = {"finite": [], "special": special, "huge": [f.max_code, f.max_code | f.sign_mask]}
    for name, extra in cases.items():
        a = rng.integers(0, 256, (7, 256)).astype(np.uint8)
        b = rng.integers(0, 256, (256, 5)).astype(np.uint8)
        for arr in (a, b):  # only finite codes, then sprinkle the case's codes
            bad = np.isnan(fl.decode(arr, f)) | np.isinf(fl.decode(arr, f))
            arr[bad] = 0x38
            if extra:
                idx = rng.integers(0, arr.size, 12)
                arr.reshape(-1)[idx] = rng.choice(extra, 12)
        big = 2.0**100 if name == "huge" else 1.0
        qa = QTensor(torch.from_numpy(a), torch.full((7, 1), big), f, block=(1, 256))
        qb = QTensor(torch.from_numpy(b), torch.full((1, 1), big), f)
        p = prepare(qa, qb)
        got = limited(p, acc)
        want = torch.zeros(7, 5)
        _limited_into(want, p, acc, check_accumulator(acc, p), None, keep_nan=True)
        assert torch.equal(torch.isnan(got), torch.isnan(want)), name
        ok = ~torch.isnan(want)
        assert torch.equal(got[ok].view(torch.int32), want[ok].view(torch.int32)), name
        if name != "finite":
            assert not torch.isfinite(want).all(), f"the {name} case should reach a NaN or inf"
