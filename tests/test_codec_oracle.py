"""The codec against ml_dtypes (and numpy for float16): every code, every tie, a million random bit patterns."""

from __future__ import annotations

import numpy as np
import pytest

import fp8lab as fl
from fp8lab.codec.backend import NUMPY
from fp8lab.codec.core import encode_bits

from .conftest import ML_DTYPES

NAMES = sorted(ML_DTYPES)


def oracle_codes(x: np.ndarray, name: str) -> np.ndarray:
    fmt = fl.get_format(name)
    with np.errstate(all="ignore"):
        return x.astype(ML_DTYPES[name]).view(np.uint8 if fmt.bits <= 8 else np.uint16)


def e8m0_quirk(x: np.ndarray) -> np.ndarray:
    """Inputs where ml_dtypes' E8M0 cast is not round-to-nearest (float32 subnormals in (2^-127, 1.5*2^-127))."""
    a = np.abs(x.astype(np.float32))
    return (a > 2.0**-127) & (a < 1.5 * 2.0**-127)


def assert_same_codes(x: np.ndarray, ours: np.ndarray, name: str) -> None:
    fmt = fl.get_format(name)
    ref = oracle_codes(x, name)
    diff = ours != ref
    if fmt.bits <= 16 and diff.any():  # NaN codes may differ in payload (or sign), never in NaN-ness
        both_nan = np.isnan(fl.decode(ours, fmt)) & np.isnan(fl.decode(ref, fmt))
        diff &= ~both_nan
    assert not diff.any(), (
        f"{name}: {int(diff.sum())} mismatches, e.g. x={x[diff][:4]!r} ours={ours[diff][:4]} ml_dtypes={ref[diff][:4]}"
    )


@pytest.mark.parametrize("name", NAMES)
def test_decode_every_code(name):
    fmt = fl.get_format(name)
    codes = np.arange(2**fmt.bits, dtype=fmt.code_dtype)
    ours = fl.decode(codes, fmt)
    ref = codes.view(ML_DTYPES[name]).astype(np.float32)
    assert ours.dtype == np.float32
    np.testing.assert_array_equal(ours, ref)  # NaN == NaN here
    assert np.array_equal(np.signbit(ours[~np.isnan(ours)]), np.signbit(ref[~np.isnan(ref)]))


@pytest.mark.parametrize("source", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", NAMES)
def test_encode_every_16bit_pattern(name, source):
    x = np.arange(2**16, dtype=np.uint16).view(ML_DTYPES[source]).astype(np.float32)
    assert_same_codes(x, fl.encode(x, name), name)


@pytest.mark.parametrize("name", NAMES)
def test_encode_a_million_random_float32_patterns(name):
    u = np.random.default_rng(7).integers(0, 2**32, size=1_000_000, dtype=np.uint64).astype(np.uint32)
    x = u.view(np.float32)
    if name == "float8_e8m0fnu":
        x = x[~e8m0_quirk(x)]
    assert_same_codes(x, fl.encode(x, name), name)


def edge_inputs(name: str) -> np.ndarray:
    """Ties between neighbours, values just beside them, +-max and beyond, tiny values, zeros, inf, NaN."""
    fmt = fl.get_format(name)
    v = fmt.values()
    mids = (v[1:] + v[:-1]) / 2  # exact in float64; float32 holds them for every format here
    nxt = lambda a, d: np.nextafter(a.astype(np.float32), np.float32(d))  # noqa: E731
    m32 = mids.astype(np.float32)
    sub = fmt.min_subnormal
    extra = [fmt.max, -fmt.max, fmt.max * 1.0001, fmt.max * 2, sub / 2, -sub / 2, sub * 0.75, sub * 0.25,
             0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e30, -1e30, 1e-30]
    return np.concatenate([v.astype(np.float32), m32, nxt(m32, np.inf), nxt(m32, -np.inf), np.array(extra, np.float32)])


@pytest.mark.parametrize("name", NAMES)
def test_encode_ties_and_edges(name):
    x = edge_inputs(name)
    if name == "float8_e8m0fnu":
        x = x[~e8m0_quirk(x)]
    assert np.all(np.float64(x[: len(fl.get_format(name).values())]) == fl.get_format(name).values())
    assert_same_codes(x, fl.encode(x, name), name)


@pytest.mark.parametrize("name", NAMES)
def test_generic_bit_path_matches_oracle(name):
    """The table and in-place fast paths are built from encode_bits; check encode_bits itself too."""
    u = np.random.default_rng(3).integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([u.view(np.float32), edge_inputs(name)])
    if name == "float8_e8m0fnu":
        x = x[~e8m0_quirk(x)]
    fmt = fl.get_format(name)
    codes = encode_bits(x.view(np.int32), fmt, NUMPY, "nearest", False, None).astype(fmt.code_dtype)
    assert_same_codes(x, codes, name)


def test_e8m0_quirk_is_followed_and_documented():
    """ml_dtypes rounds float32 subnormals in (2^-127, 2^-126) up to 2^-126; we follow it by default."""
    x = np.array([1.2 * 2.0**-127, 1.4 * 2.0**-127], np.float32)
    np.testing.assert_array_equal(fl.encode(x, "e8m0"), oracle_codes(x, "float8_e8m0fnu"))
    assert fl.encode(x, "e8m0").tolist() == [1, 1]  # true nearest would be code 0 (2^-127)


def test_float32_format_is_the_identity_on_bits():
    u = np.random.default_rng(1).integers(0, 2**32, size=100_000, dtype=np.uint64).astype(np.uint32)
    x = u.view(np.float32)
    codes = fl.encode(x, "fp32")
    finite = np.isfinite(x)
    np.testing.assert_array_equal(codes[finite], u[finite])
    np.testing.assert_array_equal(fl.decode(codes, "fp32")[finite].view(np.uint32), u[finite])


def test_float64_inputs_are_rounded_to_float32_first_like_ml_dtypes():
    x = np.array([1.0625 + 2.0**-30, -(1.0625 + 2.0**-30), 1.0625 + 2.0**-20])
    np.testing.assert_array_equal(fl.encode(x, "e4m3"), oracle_codes(x, "float8_e4m3fn"))
    assert fl.quantize(x, "e4m3").tolist() == [1.0, -1.0, 1.125]


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "float4_e2m1fn", "bfloat16", "float16", "float8_e8m0fnu"])
def test_quantize_is_decode_of_encode(name):
    x = np.random.default_rng(5).standard_normal(100_000).astype(np.float32) * 100
    x[:4] = [np.nan, np.inf, -np.inf, 1e30]
    for sat in (False, True):
        np.testing.assert_array_equal(fl.quantize(x, name, saturate=sat), fl.decode(fl.encode(x, name, saturate=sat), name))
