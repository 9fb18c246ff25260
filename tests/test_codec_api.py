"""The codec's behaviour at its edges: shapes, dtypes, errors, rounding modes, integer formats."""

from __future__ import annotations

import numpy as np
import pytest

import fp8lab as fl


def test_scalars_and_zero_d():
    assert fl.encode(0.8125, "e4m3") == 0x35 and isinstance(fl.encode(0.8125, "e4m3"), np.uint8)
    assert isinstance(fl.quantize(0.3, "e4m3"), float) and fl.quantize(0.3, "e4m3") == 0.3125
    assert fl.encode(np.float32(1.0), "bf16") == 0x3F80
    assert fl.decode(np.uint8(0x38), "e4m3") == 1.0
    assert fl.quantize(np.array(0.3), "e4m3").shape == ()


def test_empty_and_shapes_and_non_contiguous():
    assert fl.encode(np.empty((0, 4)), "e4m3").shape == (0, 4)
    assert fl.decode(np.empty(0, np.uint8), "e4m3").shape == (0,)
    x = np.arange(24, dtype=np.float64).reshape(4, 6)
    np.testing.assert_array_equal(fl.encode(x.T, "e4m3"), fl.encode(np.ascontiguousarray(x.T), "e4m3"))
    np.testing.assert_array_equal(fl.encode(x[:, ::2], "e5m2"), fl.encode(x[:, ::2].copy(), "e5m2"))


def test_input_dtypes():
    import ml_dtypes

    x = np.array([1.5, -2.25, 3.0])
    for dt in (np.float16, np.float32, np.float64, ml_dtypes.bfloat16, np.int32, np.int8):
        np.testing.assert_array_equal(fl.encode(x.astype(dt), "e4m3"), fl.encode(x.astype(dt).astype(np.float32), "e4m3"))
    assert fl.encode([1, 2, 3], "e4m3").tolist() == [0x38, 0x40, 0x44]
    assert fl.quantize(np.array([0.3], np.float16), "e4m3").dtype == np.float16
    assert fl.quantize(np.array([0.3], np.float64), "e4m3").dtype == np.float64
    assert fl.encode(np.array([1.0]), "bf16").dtype == np.uint16
    assert fl.encode(np.array([1.0]), "fp32").dtype == np.uint32


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: fl.encode(np.array([1 + 2j]), "e4m3"), TypeError, "complex"),
        (lambda: fl.encode(np.array(["a"]), "e4m3"), TypeError, "real numbers"),
        (lambda: fl.encode([1.0], "e9m9"), ValueError, "exponent_bits"),
        (lambda: fl.encode([1.0], "nope"), ValueError, "known names"),
        (lambda: fl.encode([1.0], "e4m3", rounding="up"), ValueError, "rounding"),
        (lambda: fl.decode([256], "e4m3"), ValueError, "out of range.*0..255"),
        (lambda: fl.decode([16], "fp4"), ValueError, "out of range"),
        (lambda: fl.decode([-1], "e4m3"), ValueError, "out of range"),
        (lambda: fl.decode(np.array([1.0]), "e4m3"), TypeError, "integer array"),
        (lambda: fl.encode([1.0], "e4m3", rounding="stochastic", generator="x"), TypeError, "generator"),
    ],
)
def test_clear_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_saturate_policy():
    x = np.array([500.0, -1e6, np.inf, -np.inf, np.nan], np.float32)
    assert fl.quantize(x, "e4m3", saturate=True)[:4].tolist() == [448, -448, 448, -448]
    assert np.isnan(fl.quantize(x, "e4m3", saturate=True)[4])
    assert fl.quantize(x, "e5m2")[:4].tolist() == [512, -np.inf, np.inf, -np.inf]
    assert fl.quantize(x, "e5m2", saturate=True)[:4].tolist() == [512, -57344, 57344, -57344]
    assert fl.quantize(x, "fp4")[:4].tolist() == [6, -6, 6, -6]  # FP4 always saturates


def test_stochastic_rounding_is_unbiased_and_seeded():
    x = np.full(200_000, 1.0 + 1 / 32, np.float32)  # a quarter of the way from 1.0 to 1.125 in E4M3
    q = fl.quantize(x, "e4m3", rounding="stochastic", generator=0)
    assert set(np.unique(q).tolist()) == {1.0, 1.125}
    assert abs(q.mean() - x[0]) < 4 * 0.125 * np.sqrt(0.25 * 0.75 / x.size)  # within 4 standard errors
    np.testing.assert_array_equal(q, fl.quantize(x, "e4m3", rounding="stochastic", generator=0))
    # unbiased in the subnormal range too, where nearest rounding would flush to zero
    tiny = np.full(100_000, 2.0**-11, np.float32)  # a quarter of E4M3's smallest subnormal
    assert fl.quantize(tiny, "e4m3").max() == 0
    assert fl.quantize(tiny, "e4m3", rounding="sr", generator=1).mean() == pytest.approx(2.0**-11, rel=0.05)


def test_stochastic_rounding_torch():
    import torch

    x = torch.full((100_000,), 1.0 + 1 / 32)
    q = fl.quantize(x, "e4m3", rounding="stochastic", generator=torch.Generator().manual_seed(0))
    assert float(q.mean()) == pytest.approx(1.03125, abs=0.002)


def test_integer_formats():
    x = np.array([2.5, 3.5, -2.5, 127.6, -200, np.nan, np.inf])
    assert fl.quantize(x, "int8").tolist() == [2, 4, -2, 127, -128, 0, 127]
    assert fl.encode([-1, -8, 7], "int4").tolist() == [15, 8, 7]
    assert fl.decode([15, 8, 7], "int4").tolist() == [-1, -8, 7]
    assert fl.quantize([-3.0, 300.0], "uint8").tolist() == [0, 255]
    assert fl.quantize([2.7], "int8", rounding="toward_zero").tolist() == [2]


def test_decode_table_is_read_only():
    t = fl.decode_table("e4m3")
    with pytest.raises(ValueError):
        t[0] = 1
