"""Hypothesis properties of the scaling recipes: idempotence, power-of-two equivariance, bounds, numpy == torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fp8lab as fl
from fp8lab.codec import decode
from fp8lab.qtensor import expand_blocks
from fp8lab.scaling import (AxisScaling, BlockScaling, IntScaling, MXScaling, NVFP4Scaling, PercentileScaling,
                            TensorScaling, quantize_tensor)

SETTINGS = settings(max_examples=30, deadline=None)

# (recipe, format, exact): exact means dequantize∘quantize is idempotent bit for bit (power-of-two scales)
POW2 = [
    (TensorScaling(pow2=True), "e4m3"), (AxisScaling(-1, pow2=True), "e5m2"), (AxisScaling(0, pow2=True), "e4m3"),
    (BlockScaling((1, 16), pow2=True), "e4m3"), (BlockScaling((3, 8), pow2=True), "fp4"),
    (MXScaling(block_size=8), "e4m3"), (MXScaling(block_size=8), "fp4"), (MXScaling(block_size=8), "e3m2"),
    (MXScaling(block_size=8, scale_rounding="ceil"), "e2m3"), (MXScaling(block_size=8, scale_rounding="rceil"), "fp4"),
    (MXScaling(block_size=8, scale_rounding="even"), "e4m3"), (MXScaling(block_size=8, scale_rounding="even"), "e5m2"),
    (IntScaling(axis=-1, pow2=True), "int8"),
]
FLOAT = [
    (TensorScaling(), "e4m3"), (AxisScaling(-1), "e4m3"), (BlockScaling((1, 16)), "e5m2"), (BlockScaling((2, 8)), "fp4"),
    (NVFP4Scaling(block_size=8), "fp4"), (IntScaling(axis=-1), "int8"), (IntScaling(bits=4, group_size=8), "int4"),
    (IntScaling(symmetric=False, axis=-1), "uint8"),  # not idempotent: [1, -1] -> zero point 128 clips 1
]
ids = lambda p: f"{type(p[0]).__name__}-{p[1]}"  # noqa: E731



@st.composite
def matrices(draw) -> np.ndarray:
    """Heavy-tailed float32 matrices: hypothesis picks shape, seed, magnitude, zero fraction and an outlier.

    (Drawing each element through hypothesis is ~100x slower; a drawn seed keeps the search and
    shrinking meaningful while numpy fills the array.)
    """
    rows, cols = draw(st.integers(1, 40)), draw(st.integers(1, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_t(3, (rows, cols)) * 10.0 ** draw(st.floats(-3, 3))
    x[rng.random((rows, cols)) < draw(st.sampled_from([0.0, 0.0, 0.3, 1.0]))] = 0.0
    if draw(st.booleans()):
        x[rng.integers(rows), rng.integers(cols)] *= draw(st.sampled_from([50.0, 1000.0]))
    return x.astype(np.float32)


matrices = matrices()


@pytest.mark.parametrize("case", POW2, ids=ids)
@SETTINGS
@given(x=matrices)
def test_idempotent_exact_for_power_of_two_scales(case, x):
    recipe, fmt = case
    y = quantize_tensor(x, fmt, recipe).dequantize()
    np.testing.assert_array_equal(quantize_tensor(y, fmt, recipe).dequantize(), y)


@pytest.mark.parametrize("case", FLOAT[:-1], ids=ids)
@SETTINGS
@given(x=matrices)
def test_idempotent_up_to_float32_rounding(case, x):
    recipe, fmt = case
    q = quantize_tensor(x, fmt, recipe)
    y = q.dequantize()
    q2 = quantize_tensor(y, fmt, recipe)
    np.testing.assert_allclose(q2.dequantize(), y, rtol=2.0**-20, atol=0)


@pytest.mark.parametrize("case", POW2 + FLOAT + [(PercentileScaling(p=90.0), "e4m3")], ids=ids)
@SETTINGS
@given(x=matrices, k=st.integers(-30, 30))
def test_power_of_two_commutes_with_quantization(case, x, k):
    recipe, fmt = case
    y = quantize_tensor(x, fmt, recipe).dequantize()
    y2 = quantize_tensor(x * np.float32(2.0**k), fmt, recipe).dequantize()
    np.testing.assert_array_equal(y2, y * np.float32(2.0**k))


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "e2m3", "e3m2", "fp4"])
@SETTINGS
@given(x=matrices, b0=st.integers(1, 5), b1=st.integers(1, 17), pow2=st.booleans())
def test_error_within_half_ulp_of_block_amax(fmt, x, b0, b1, pow2):
    f = fl.get_format(fmt)
    q = quantize_tensor(x, fmt, BlockScaling((b0, b1), pow2=pow2))
    assert not q.info["overflow"]
    codes = decode(q.codes, f)
    assert np.all(np.abs(codes) <= f.max)
    xp = np.pad(np.abs(x.astype(np.float64)), [(0, (-x.shape[0]) % b0), (0, (-x.shape[1]) % b1)])
    amax = xp.reshape(xp.shape[0] // b0, b0, xp.shape[1] // b1, b1).max(axis=(1, 3))
    bound = expand_blocks(amax, (b0, b1), x.shape) * 2.0 ** -(f.mantissa_bits + 1) * (1 + 2.0**-20)
    assert np.all(np.abs(q.dequantize().astype(np.float64) - x) <= bound)


@pytest.mark.parametrize("case", POW2[:8] + FLOAT, ids=ids)
@settings(max_examples=15, deadline=None)
@given(x=hnp.arrays(np.float32, (6, 24), elements=st.floats(width=32)))
def test_numpy_and_torch_agree_on_any_input(case, x):
    recipe, fmt = case
    qn = quantize_tensor(x, fmt, recipe)
    qt = quantize_tensor(torch.from_numpy(x.copy()), fmt, recipe)
    np.testing.assert_array_equal(qn.codes, qt.codes.numpy())
    np.testing.assert_array_equal(qn.scales, qt.scales.numpy())
    assert qn.info["nonfinite_blocks"] == qt.info["nonfinite_blocks"]
    if np.all(np.abs(x) < 1e38):  # nearer float32's max, a value may round up past it and dequantise to inf
        assert np.isfinite(qn.dequantize()).all()


@settings(max_examples=200, deadline=None)
@given(history_len=st.integers(1, 12),
       pushes=st.lists(st.one_of(st.sampled_from([0.0, -0.0, 1.0, 2.0, float("inf"), float("nan")]),
                                 st.floats(0, 1e6, allow_nan=False)), max_size=60),
       reset_at=st.integers(-1, 60))
def test_the_running_window_max_is_the_max_over_the_history(history_len, pushes, reset_at):
    """AmaxHistory keeps the window's max as it goes (no pass over the history each step): after every push it is
    the max of the recorded amaxes, NaN while one is recorded, None for an empty history, across resets."""
    from fp8lab.scaling.delayed import AmaxHistory

    h = AmaxHistory(history_len)
    assert h.window_max() is None
    for i, a in enumerate(pushes):
        if i == reset_at:
            h.reset()
        h.push(a)
        got, window = h.window_max(), h.amaxes
        if any(np.isnan(window)):
            assert np.isnan(got)
        else:
            assert got == max(window)
