"""Scaling recipes against independent references: float64 formulas written here, ml_dtypes casts, torch.

Each oracle is computed in this file from first principles (Python ``math``/float64, ml_dtypes
for element casts, torch's own FP8 cast for NVFP4's E4M3 block scale), never by calling the code
under test twice.
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import torch

import fp8lab as fl
from fp8lab.codec import decode
from fp8lab.qtensor import expand_blocks
from fp8lab.scaling import (AxisScaling, BlockScaling, DelayedScaling, IntScaling, MXScaling, NVFP4Scaling,
                            PercentileScaling, TensorScaling, compare_recipes, error_stats, get_recipe,
                            llm_activations, quantize_tensor, sqnr_db)

F32 = np.float32
ML = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2, "e2m3": ml_dtypes.float6_e2m3fn,
      "e3m2": ml_dtypes.float6_e3m2fn, "fp4": ml_dtypes.float4_e2m1fn}


def ref_cast(v: np.ndarray, name: str) -> np.ndarray:
    """Saturating round-to-nearest-even cast by ml_dtypes (clip first: ml_dtypes itself does not saturate FP8)."""
    m = float(fl.get_format(name).max)
    return np.clip(np.asarray(v, np.float32), -m, m).astype(ML[name]).astype(np.float64)


def block_amax_ref(x: np.ndarray, block: tuple[int, ...]) -> np.ndarray:
    """Per-block amax by explicit loops over block indices (small arrays only)."""
    nb = tuple(math.ceil(n / b) for n, b in zip(x.shape, block))
    out = np.zeros(nb)
    for idx in np.ndindex(*nb):
        sl = tuple(slice(i * b, (i + 1) * b) for i, b in zip(idx, block))
        out[idx] = np.abs(x[sl].astype(np.float64)).max()
    return out


def ulp_ref(v: np.ndarray, fmt) -> np.ndarray:
    """Spacing of ``fmt``'s values at magnitude ``v`` (subnormal spacing below the smallest normal)."""
    e = np.floor(np.log2(np.maximum(np.abs(v), fmt.min_normal)))
    return np.exp2(e - fmt.mantissa_bits)


# ------------------------------------------------------------------------------------------------
# layout and the public contract
RECIPES = [TensorScaling(), TensorScaling(pow2=True), AxisScaling(-1), AxisScaling(0), BlockScaling((1, 128)),
           BlockScaling((128, 128)), BlockScaling((1, 128), pow2=True), MXScaling(), NVFP4Scaling(), PercentileScaling(),
           IntScaling(), IntScaling(symmetric=False, axis=-1), IntScaling(bits=4, group_size=32), DelayedScaling()]


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda r: repr(r)[:40])
@pytest.mark.parametrize("shape", [(200,), (130, 300), (3, 5, 70)])
def test_layout_and_roundtrip(recipe, shape):
    x = llm_activations(shape, seed=1)
    if isinstance(recipe, DelayedScaling):  # one history per tensor: start afresh, prime with this tensor
        recipe.reset()
        recipe.quantize(x.reshape(-1), "e4m3")
    if len(shape) == 1 and getattr(recipe, "block", (1,))[0] != 1:
        with pytest.raises(ValueError, match="dimensions"):  # a 128x128 block does not fit a vector
            quantize_tensor(x, None, recipe)
        return
    q = quantize_tensor(x, None, recipe)
    block = q.block
    assert q.codes.shape == x.shape and q.shape == x.shape and len(block) == x.ndim
    assert q.scales.shape == tuple(math.ceil(n / b) for n, b in zip(x.shape, block))
    assert q.scales.dtype == np.float32
    y = q.dequantize()
    assert y.dtype == np.float32 and y.shape == x.shape
    ref = decode(q.codes, q.format).astype(np.float64)
    if q.zero_point is not None:
        ref = ref - expand_blocks(q.zero_point, block, x.shape)
    np.testing.assert_array_equal(y, (ref * expand_blocks(q.scales, block, x.shape)).astype(np.float32))
    assert np.all(np.abs(decode(q.codes, q.format)) <= q.format.max)
    assert sqnr_db(x, y) > 10


def test_torch_in_torch_out_matches_numpy():
    x = llm_activations((64, 96), seed=2)
    x[3, 4], x[10, 50] = np.nan, -np.inf
    for recipe in RECIPES[:-1]:
        qn = quantize_tensor(x, None, recipe)
        qt = quantize_tensor(torch.from_numpy(x), None, recipe)
        assert isinstance(qt.codes, torch.Tensor) and isinstance(qt.scales, torch.Tensor)
        assert qt.dequantize().dtype == torch.float32
        np.testing.assert_array_equal(qn.codes, qt.codes.numpy())
        np.testing.assert_array_equal(qn.scales, qt.scales.numpy())
        assert qn.info["nonfinite_blocks"] == qt.info["nonfinite_blocks"] >= 1


def test_contract_example_and_bits_per_element():
    x = llm_activations((512, 1024), seed=0)
    q = quantize_tensor(x, "e4m3", BlockScaling((1, 128)))
    assert q.bits_per_element == 8.25 and q.scales.shape == (512, 8)
    assert quantize_tensor(x, "e4m3", BlockScaling((128, 128))).scales.shape == (4, 8)
    assert quantize_tensor(x, "e4m3", BlockScaling((1, 128), pow2=True)).bits_per_element == 8 + 8 / 128
    assert quantize_tensor(x, "fp4", MXScaling()).bits_per_element == 4.25
    assert quantize_tensor(x, "e2m3", MXScaling()).bits_per_element == 6.25
    assert quantize_tensor(x, "fp4", NVFP4Scaling()).bits_per_element == pytest.approx(4.5 + 32 / x.size)
    assert quantize_tensor(x, "e4m3", AxisScaling(-1)).scales.shape == (512, 1)
    assert quantize_tensor(x, "e4m3", AxisScaling(0)).scales.shape == (1, 1024)
    assert quantize_tensor(x, "e4m3").scales.shape == (1, 1)  # default recipe: per tensor


# ------------------------------------------------------------------------------------------------
# float scales: formula and error bound
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "e2m3", "fp4"])
@pytest.mark.parametrize("block", [(1, 128), (128, 128), (1, 33), (7, 5)])
@pytest.mark.parametrize("pow2", [False, True])
def test_block_scales_and_half_ulp_bound(fmt, block, pow2):
    f = fl.get_format(fmt)
    x = llm_activations((150, 260), seed=3)
    q = quantize_tensor(x, fmt, BlockScaling(block, pow2=pow2))
    amax = block_amax_ref(x, block)
    s = q.scales.astype(np.float64)
    if pow2:  # smallest power of two with amax / s <= max, by exact frexp on each number
        want = [2.0 ** (math.frexp(a / f.max)[1] - (math.frexp(a / f.max)[0] == 0.5)) for a in amax.ravel()]
        np.testing.assert_array_equal(s.ravel(), want)
        assert np.all(np.frexp(s)[0] == 0.5)
        assert q.scale_format.name == "float8_e8m0fnu"
    else:  # amax / max rounded up to float32
        exact = amax / f.max
        assert np.all(s >= exact) and np.all(s <= exact * (1 + 2.0**-23))
    assert np.all(amax / s <= f.max) and q.info["overflow"] is False
    y = q.dequantize().astype(np.float64)
    s_el = expand_blocks(s, block, x.shape)
    err = np.abs(y - x)
    # half an ulp of the format at |x|/s, times s (plus float32 rounding of decode * scale)
    assert np.all(err <= 0.5 * ulp_ref(x / s_el, f) * s_el + np.abs(x) * 2.0**-23 + 1e-45)
    # ... which is at most amax * 2^-(m+1) relative to the block's amax
    assert np.all(err <= expand_blocks(amax, block, x.shape) * 2.0 ** -(f.mantissa_bits + 1) * (1 + 2.0**-20))


def test_tensor_scaling_margin_and_ints():
    x = np.array([[3.0, -448.0]], F32)
    assert quantize_tensor(x, "e4m3", TensorScaling(margin=2)).scales.item() == 4.0
    q = quantize_tensor(np.array([-254.0, 1.0, 100.0], F32), "int8", TensorScaling())
    assert q.scales.item() == 2.0 and decode(q.codes, "int8").tolist() == [-127.0, 0.0, 50.0]
    with pytest.raises(ValueError, match="IntScaling"):
        quantize_tensor(x, "uint8", TensorScaling())


def test_axis_scaling_axes():
    x = np.arange(1, 13, dtype=F32).reshape(3, 4)
    row = quantize_tensor(x, "e4m3", AxisScaling(axis=-1))
    col = quantize_tensor(x, "e4m3", AxisScaling(axis=0))
    np.testing.assert_allclose(row.scales.ravel(), np.array([4, 8, 12]) / 448, rtol=2**-23)
    np.testing.assert_allclose(col.scales.ravel(), np.array([9, 10, 11, 12]) / 448, rtol=2**-23)
    with pytest.raises(ValueError, match="axis=2"):
        quantize_tensor(x, "e4m3", AxisScaling(axis=2))


# ------------------------------------------------------------------------------------------------
# MX
def test_mx_microxcaling_issue_4():
    """Floor clips a block whose amax is 957 (E4M3): 957 -> X = 2 -> 478.5 saturates to 448 -> 896."""
    block = np.concatenate([[957.0], np.linspace(-3, 3, 31)]).astype(F32)
    emax = math.floor(math.log2(448.0))  # 8
    x_floor = 2.0 ** (math.floor(math.log2(957.0)) - emax)  # 2^(9 - 8)
    x_ceil = 2.0 ** math.ceil(math.log2(957.0 / 448.0))  # 2^2
    assert (x_floor, x_ceil) == (2.0, 4.0)
    floor = quantize_tensor(block, "e4m3", MXScaling())
    ceil = quantize_tensor(block, "e4m3", MXScaling(scale_rounding="ceil"))
    assert floor.scales.item() == x_floor and ceil.scales.item() == x_ceil
    top_floor = float(floor.dequantize()[0])
    top_ceil = float(ceil.dequantize()[0])
    assert top_floor == ref_cast(np.array([957.0 / x_floor]), "e4m3")[0] * x_floor == 896.0
    assert top_ceil == ref_cast(np.array([957.0 / x_ceil]), "e4m3")[0] * x_ceil == 960.0
    assert floor.info["overflow"] and floor.info["saturated_blocks"] == 1 and not ceil.info["overflow"]
    assert abs(top_ceil - 957) < abs(top_floor - 957)
    assert floor.info["scale_codes"].tolist() == [128] and ceil.info["scale_codes"].tolist() == [129]


HAND_BLOCKS = [  # (format, block amax, OCP floor exponent worked by hand)
    ("e4m3", 1.0, 0 - 8), ("e4m3", 448.0, 8 - 8), ("e4m3", 0.01, -7 - 8),  # 2^-7 = 0.0078 <= 0.01 < 2^-6
    ("e5m2", 30000.0, 14 - 15), ("e5m2", 1.0, 0 - 15),
    ("e2m3", 7.5, 2 - 2), ("e3m2", 28.0, 4 - 4), ("e3m2", 100.0, 6 - 4),
    ("fp4", 6.0, 2 - 2), ("fp4", 5.0, 2 - 2), ("fp4", 0.75, -1 - 2), ("fp4", 1e-40, -127),
]


@pytest.mark.parametrize("fmt,amax,k", HAND_BLOCKS)
def test_mx_scale_matches_spec_by_hand(fmt, amax, k):
    rng = np.random.default_rng(0)
    blk = (rng.uniform(-1, 1, 32) * amax * 0.9).astype(F32)
    blk[7] = -amax
    q = quantize_tensor(blk, fmt, MXScaling())
    assert q.scales.item() == 2.0**k and q.info["scale_codes"].item() == k + 127
    np.testing.assert_array_equal(q.dequantize().astype(np.float64), ref_cast(blk / F32(2.0**k), fmt) * 2.0**k)


def _exact_log2_bounds(q: "float | Fraction") -> tuple[int, int]:
    """floor and ceil of log2(q), exactly (rational comparisons, no float log rounding)."""
    fq = Fraction(q)
    k = math.floor(math.log2(float(q)))
    while Fraction(2) ** k > fq:
        k -= 1
    while Fraction(2) ** (k + 1) <= fq:
        k += 1
    return k, (k if Fraction(2) ** k == fq else k + 1)


def _ref_rceil(a: float, mx: float) -> int:
    d = float(F32(a) * F32(1.0 / mx))  # float32 product, as torchao/cuBLAS compute it
    m, e = math.frexp(d)
    return e - 1 if m == 0.5 else e


def _ref_even(a: float, mbits: int, emax: int) -> int:
    m, e = math.frexp(a)  # a = m 2^e, m in [0.5, 1): round m to mbits+1 bits, half up
    r = math.floor(m * 2 ** (mbits + 1) + 0.5)
    return (e if r == 2 ** (mbits + 1) else e - 1) - emax


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "e2m3", "e3m2", "fp4"])
def test_mx_roundings_against_scalar_references(fmt):
    f = fl.get_format(fmt)
    emax = math.floor(math.log2(f.max))
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((64, 32 * 8)) * np.exp(rng.uniform(-8, 8, (64, 1)))).astype(F32)
    amax = block_amax_ref(x, (1, 32)).ravel()
    for mode, ref in [("floor", lambda a: _exact_log2_bounds(a)[0] - emax),
                      ("ceil", lambda a: _exact_log2_bounds(Fraction(a) / Fraction(f.max))[1]),
                      ("rceil", lambda a: _ref_rceil(a, f.max)),
                      ("even", lambda a: _ref_even(a, f.mantissa_bits, emax))]:
        q = quantize_tensor(x, fmt, MXScaling(scale_rounding=mode))
        want = np.array([2.0 ** ref(float(a)) for a in amax])
        np.testing.assert_array_equal(q.scales.ravel().astype(np.float64), want, err_msg=mode)
        if mode in ("ceil", "rceil"):
            assert not q.info["overflow"]


def test_mx_rceil_equals_ceil_for_normal_descales():
    a = np.arange(0x3F800000, 0x40000000, 97, dtype=np.int64).astype(np.int32).view(F32)  # amax in [1, 2)
    for fmt in ["e4m3", "e5m2", "e2m3", "e3m2", "fp4"]:
        blocks = np.repeat(a[:, None], 32, axis=1)
        c = quantize_tensor(blocks, fmt, MXScaling(scale_rounding="ceil")).scales
        r = quantize_tensor(blocks, fmt, MXScaling(scale_rounding="rceil")).scales
        np.testing.assert_array_equal(c, r)


def test_mx_nonfinite_block_gets_nan_scale_and_zero_block_smallest_scale():
    x = np.ones((2, 96), F32)
    x[0, 40] = np.inf
    x[1, 64:] = 0.0
    q = quantize_tensor(x, "e4m3", MXScaling())
    assert q.info["nonfinite_blocks"] == 1 and q.info["nonfinite_mask"].tolist() == [[False, True, False], [False] * 3]
    assert q.info["scale_codes"][0, 1] == 0xFF and np.isnan(q.scales[0, 1])
    y = q.dequantize()
    assert np.isnan(y[0, 32:64]).all() and (y[0, :32] == 1).all() and (y[0, 64:] == 1).all()
    assert q.scales[1, 2] == 2.0**-127 and q.info["scale_codes"][1, 2] == 0 and (q.codes[1, 64:] == 0).all()


# ------------------------------------------------------------------------------------------------
# NVFP4 against torchao's recipe written with torch's own E4M3 cast and ml_dtypes' E2M1
def test_nvfp4_matches_two_level_reference():
    x = torch.from_numpy(llm_activations((32, 256), seed=5))
    xr = x.reshape(32, 16, 16)
    per_tensor = x.abs().max() / (448.0 * 6.0)
    block = xr.abs().amax(-1) / 6.0 / per_tensor
    block_fp8 = block.clamp(2.0**-6, 448.0).to(torch.float8_e4m3fn)
    total = (block_fp8.float() * per_tensor)
    elems = (xr / total.unsqueeze(-1)).clamp(-6, 6).numpy().astype(ml_dtypes.float4_e2m1fn)
    ref = torch.from_numpy(elems.astype(np.float32)) * total.unsqueeze(-1)
    q = quantize_tensor(x, "fp4", NVFP4Scaling())
    assert q.tensor_scale == per_tensor.item() and q.scale_format.name == "float8_e4m3fn"
    assert torch.equal(q.scales, total)
    assert torch.equal(torch.from_numpy(q.info["scale_codes"]), block_fp8.view(torch.uint8))
    assert torch.equal(q.dequantize(), ref.reshape(32, 256))
    assert q.info["nonfinite_blocks"] == 0


# ------------------------------------------------------------------------------------------------
# integers
def test_int_symmetric_and_asymmetric_against_formulas():
    x = llm_activations((40, 64), seed=6)
    q = quantize_tensor(x, "int8", IntScaling(axis=-1))
    s = np.abs(x.astype(np.float64)).max(axis=1, keepdims=True) / 127
    np.testing.assert_allclose(q.scales, s, rtol=2**-23)
    want = np.clip(np.rint(x / q.scales), -128, 127)
    np.testing.assert_array_equal(decode(q.codes, "int8"), want)

    qa = quantize_tensor(x, "uint8", IntScaling(symmetric=False, axis=-1))
    lo = np.minimum(x.min(axis=1, keepdims=True), 0).astype(np.float64)
    hi = np.maximum(x.max(axis=1, keepdims=True), 0).astype(np.float64)
    np.testing.assert_allclose(qa.scales, (hi - lo) / 255, rtol=2**-23)
    zp = np.clip(0 - np.rint(lo / qa.scales), 0, 255)
    np.testing.assert_array_equal(qa.zero_point, zp)
    np.testing.assert_array_equal(decode(qa.codes, "uint8"), np.clip(np.rint((x / qa.scales) + zp.astype(F32)), 0, 255))
    assert qa.dequantize().min() >= lo.min() - qa.scales.max()
    z = quantize_tensor(np.array([0.0, 5.0], F32), "uint8", IntScaling(symmetric=False))
    assert z.dequantize()[0] == 0.0  # zero is exact with a zero point


def test_int_groups_and_errors():
    x = llm_activations((8, 300), seed=7)
    q = quantize_tensor(x, "int4", IntScaling(bits=4, group_size=128))
    assert q.block == (1, 128) and q.scales.shape == (8, 3) and q.bits_per_element == pytest.approx(4 + 32 * 3 / 300)
    assert quantize_tensor(x, "int8", IntScaling(axis=0, group_size=4)).scales.shape == (2, 300)
    assert quantize_tensor(x, None, IntScaling(bits=4, symmetric=False)).format.name == "uint4"
    with pytest.raises(ValueError, match="integer format"):
        quantize_tensor(x, "e4m3", IntScaling())
    with pytest.raises(ValueError, match="bits=8"):
        quantize_tensor(x, "int4", IntScaling(bits=8))
    with pytest.raises(ValueError, match="signed"):
        quantize_tensor(x, "uint8", IntScaling())


# ------------------------------------------------------------------------------------------------
# percentile calibration
def test_percentile_matches_numpy_and_clips():
    x = llm_activations((64, 512), seed=8)
    for xx in (x, torch.from_numpy(x)):
        q = quantize_tensor(xx, "e4m3", PercentileScaling(p=99.0))
        want = np.percentile(np.abs(x.astype(np.float64)), 99.0) / 448
        assert float(q.scales.reshape(-1)[0]) == pytest.approx(want, rel=1e-6)
        assert q.info["overflow"]
    full = quantize_tensor(x, "e4m3", PercentileScaling(p=100))
    assert full.scales.item() == quantize_tensor(x, "e4m3", TensorScaling()).scales.item()
    sparse = np.zeros(1000, F32)
    sparse[0] = 3.0  # the 99th percentile is 0: fall back to amax
    assert quantize_tensor(sparse, "e4m3", PercentileScaling(p=99)).dequantize()[0] == 3.0


# ------------------------------------------------------------------------------------------------
# delayed scaling: a trajectory worked by hand
def test_delayed_scaling_history_trajectory():
    # amaxes chosen as 448 * 2^k so every scale is exact
    amaxes = [448.0, 1792.0, 896.0, 3584.0, 224.0, 112.0]
    r = DelayedScaling(history_len=2, algo="max")
    got = []
    for a in amaxes:
        x = np.array([a, -a / 3, 0.5], F32)
        q = r.quantize(x, "e4m3")
        got.append((q.scales.item(), q.info["overflow"], r.history))
    # step: scale from history of earlier steps (TE starts at 1); history keeps the last 2 amaxes
    assert got == [
        (1.0, False, (448.0,)),                  # no history: scale 1, 448 fits exactly
        (1.0, True, (448.0, 1792.0)),            # max(448) -> 1: 1792 overflows (clips to 448)
        (4.0, False, (1792.0, 896.0)),           # max(448, 1792) / 448 = 4
        (4.0, True, (896.0, 3584.0)),            # max(1792, 896) -> 4: 3584 > 4 * 448 overflows
        (8.0, False, (3584.0, 224.0)),           # max(896, 3584) / 448 = 8
        (8.0, False, (224.0, 112.0)),            # 3584 still in the window of 2
    ]
    mr = DelayedScaling(algo="most_recent", margin=1)
    scales = [mr.quantize(np.array([a], F32), "e4m3").scales.item() for a in amaxes]
    assert scales == [1.0, 2.0, 8.0, 4.0, 16.0, 1.0]  # previous amax * 2 / 448
    clipped = DelayedScaling()
    clipped.quantize(np.array([10.0], F32), "e4m3")
    q = clipped.quantize(np.array([1000.0, 5.0], F32), "e4m3")
    assert q.dequantize()[0] == pytest.approx(448 * 10 / 448) and q.info["amax_used"] == 10.0
    clipped.reset()
    assert clipped.history == () and clipped.scale == 1.0
    assert DelayedScaling() == DelayedScaling()  # the state is not compared


# ------------------------------------------------------------------------------------------------
# bad and edge input
@pytest.mark.parametrize("recipe", RECIPES, ids=lambda r: repr(r)[:40])
def test_zero_nan_inf_edges(recipe):
    x = llm_activations((4, 256), seed=9)
    x[0, :] = 0.0
    if isinstance(recipe, DelayedScaling):
        recipe.reset()
    clean = quantize_tensor(x, None, recipe).dequantize()
    assert np.isfinite(clean).all() and (clean[0] == 0).all()
    assert np.isfinite(quantize_tensor(x, None, recipe).scales).all()
    bad = x.copy()
    bad[2, 200] = np.nan
    bad[3, 10] = np.inf
    if isinstance(recipe, DelayedScaling):
        recipe.reset()
    q = quantize_tensor(bad, None, recipe)
    y = q.dequantize()
    assert 1 <= q.info["nonfinite_blocks"] <= 2 and q.info["nonfinite_mask"].sum() == q.info["nonfinite_blocks"]
    assert np.isnan(y[2, 200])
    blocks_bad = expand_blocks(q.info["nonfinite_mask"], q.block, x.shape)
    np.testing.assert_array_equal(y[~blocks_bad], clean[~blocks_bad])  # other blocks untouched
    if q.format.has_nan and not recipe.nonfinite_scale_nan and not isinstance(recipe, PercentileScaling):
        others = np.ones(x.shape, bool)
        others[2, 200] = others[3, 10] = False
        np.testing.assert_array_equal(y[others], clean[others])  # even inside the bad block
        assert y[3, 10] == q.format.max * float(expand_blocks(q.scales, q.block, x.shape)[3, 10])  # inf saturates
    assert np.all(np.abs(decode(q.codes, q.format)[np.isfinite(decode(q.codes, q.format))]) <= q.format.max)


def test_ragged_shapes_pad_and_crop():
    x = llm_activations((130, 200), seed=10)
    for recipe in (BlockScaling((128, 128)), MXScaling(scale_rounding="ceil"), IntScaling(bits=4, group_size=64)):
        q = quantize_tensor(x, None, recipe)
        assert q.dequantize().shape == x.shape
        # the padding repeats edge values, so a ragged block's scale fits its own elements only
        amax = block_amax_ref(x, q.block)
        want = {BlockScaling: amax / 448, IntScaling: amax / 7}.get(type(recipe))
        if want is None:  # MX ceil: smallest power of two with amax / X <= 448
            want = np.array([2.0 ** _exact_log2_bounds(Fraction(a) / 448)[1] for a in amax.ravel()]).reshape(amax.shape)
        np.testing.assert_allclose(q.scales, want, rtol=2**-23)


def test_scalars_empty_and_nd():
    q = quantize_tensor(np.float32(3.0), "e4m3")
    assert q.shape == () and q.scales.shape == () and float(q.dequantize()) == 3.0
    for shape in [(0,), (0, 8), (4, 0)]:
        for r in ("tensor", "1x128", "mx", "nvfp4", "int_asym"):
            q = quantize_tensor(np.zeros(shape, F32), None, r)
            assert q.dequantize().shape == shape
    x = llm_activations((2, 3, 256), seed=11)
    q = quantize_tensor(x, "e4m3", BlockScaling((128, 128)))
    assert q.block == (1, 128, 128) and q.scales.shape == (2, 1, 2)
    assert quantize_tensor(x[0, 0], "e4m3", BlockScaling((1, 128))).scales.shape == (2,)
    assert quantize_tensor(np.array([1.0, 2.0], F32), "e4m3").dequantize().tolist() == [1.0, 2.0]
    q = quantize_tensor([1.0, 2.0], "e4m3")  # a list is float64: scaled and dequantized in float64
    assert q.dequantize().dtype == np.float64
    assert q.dequantize().tolist() == (decode(q.codes, q.format).astype(np.float64) * np.float64(q.scales[0])).tolist()


def test_clear_errors():
    x = np.ones((4, 8), F32)
    with pytest.raises(ValueError, match="block"):
        quantize_tensor(np.ones(8, F32), "e4m3", BlockScaling((128, 128)))
    with pytest.raises(ValueError, match="positive ints"):
        BlockScaling((0, 128))
    with pytest.raises(TypeError, match="tuple"):
        BlockScaling(128)
    with pytest.raises(ValueError, match="floating-point"):
        quantize_tensor(x, "int8", MXScaling())
    with pytest.raises(ValueError, match="floating-point"):
        quantize_tensor(x, "int4", NVFP4Scaling())
    with pytest.raises(ValueError, match="scale_rounding"):
        MXScaling(scale_rounding="up")
    with pytest.raises(ValueError, match="unknown recipe"):
        quantize_tensor(x, "e4m3", "per_galaxy")
    with pytest.raises(TypeError, match="recipe object"):
        quantize_tensor(x, "e4m3", BlockScaling)
    with pytest.raises(TypeError, match="Recipe object"):
        quantize_tensor(x, "e4m3", 3)
    with pytest.raises(ValueError, match="unknown format"):
        quantize_tensor(x, "e9m9x", TensorScaling())
    with pytest.raises(TypeError, match="real numbers"):
        quantize_tensor(x.astype(np.complex64), "e4m3")
    with pytest.raises(TypeError, match="real numbers"):
        quantize_tensor(np.array(["a"]), "e4m3")
    with pytest.raises(ValueError, match="percentile"):
        PercentileScaling(p=0)
    with pytest.raises(ValueError, match="algo"):
        DelayedScaling(algo="mean")
    with pytest.raises(ValueError, match="history_len"):
        DelayedScaling(history_len=0)
    with pytest.raises(TypeError, match="margin"):
        TensorScaling(margin=0.5)


def test_get_recipe_names_and_frozen():
    assert get_recipe("1x128") == BlockScaling((1, 128))
    assert get_recipe("MX-RCEIL") == MXScaling(scale_rounding="rceil")
    with pytest.raises(Exception):
        BlockScaling().block = (1, 32)  # frozen


# ------------------------------------------------------------------------------------------------
# data, metrics, comparison table
def test_llm_activations_and_metrics():
    x = llm_activations((256, 1024), seed=0, outlier_channels=4, outlier_scale=40.0)
    assert x.dtype == np.float32 and np.array_equal(x, llm_activations((256, 1024), seed=0, outlier_channels=4, outlier_scale=40.0))
    col = np.abs(x).max(axis=0)
    top = np.sort(col)[-4:]
    assert top.min() > 8 * np.median(col)  # the outlier channels stand out in every row
    assert not np.array_equal(x, llm_activations((256, 1024), seed=1))
    st = error_stats(x, x * 1.01)
    assert st["max_rel_err"] == pytest.approx(0.01, rel=1e-5) and st["sqnr_db"] == pytest.approx(40.0, abs=1e-3)
    assert sqnr_db(x, x) == math.inf


def test_compare_recipes_rows():
    rows = compare_recipes(llm_activations((128, 256)), repeats=1)
    assert len(rows) >= 20
    by = {(r["recipe"], r["format"]): r for r in rows}
    assert by[("MXFP4 floor", "fp4")]["bits_per_element"] == 4.25
    assert by[("1x128", "e4m3")]["sqnr_db"] > by[("tensor", "e4m3")]["sqnr_db"]
    assert by[("MXFP8 floor", "e4m3")]["saturated_blocks"] > 0 == by[("MXFP8 rceil", "e4m3")]["saturated_blocks"]
    for r in rows:
        assert r["seconds"] > 0 and r["ratio_to_cast"] > 0 and 0 <= r["mean_rel_err"] <= 1


def test_mx_scale_codes_are_what_the_codec_encodes_for_every_exponent():
    """MXScaling writes E8M0 codes as k + bias; the codec's encode of 2^k agrees for every reachable k."""
    from fp8lab.scaling.scales import E8M0_MAX_EXP, E8M0_MIN_EXP
    emax = 2  # FP4 (E2M1): max 6 = 1.5 * 2^2, so amax 2^(k+2) gives the scale 2^k (floor)
    k = np.arange(E8M0_MIN_EXP, E8M0_MAX_EXP - 1)  # up to 125: a float32 amax reaches no higher scale
    amax = np.ldexp(1.0, k + emax)
    ss = fl.MXScaling(32, scale_rounding="floor").compute_scales(amax, fl.get_format("fp4"))
    assert np.array_equal(np.log2(ss.scales.astype(np.float64)), k)
    assert np.array_equal(ss.info["scale_codes"], np.asarray(fl.encode(ss.scales, "e8m0")))
