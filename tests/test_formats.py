"""Formats: every derived number equals an independent oracle (ml_dtypes.finfo, numpy.finfo)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import fp8lab as fl
from fp8lab.registry import FORMATS

from .conftest import ML_DTYPES


@pytest.mark.parametrize("name", sorted(ML_DTYPES))
def test_derived_numbers_match_finfo(name):
    fmt = fl.get_format(name)
    fi = ml_dtypes.finfo(ML_DTYPES[name])
    assert fmt.bits == fi.bits
    assert fmt.max == float(fi.max)
    assert fmt.min_normal == float(fi.smallest_normal)
    assert fmt.min_subnormal == float(fi.smallest_subnormal)
    assert fmt.epsilon == float(fi.eps)
    assert fmt.mantissa_bits == fi.nmant


@pytest.mark.parametrize("name", sorted(ML_DTYPES))
def test_value_list_matches_every_code(name):
    fmt = fl.get_format(name)
    dt = ML_DTYPES[name]
    codes = np.arange(2**fmt.bits, dtype=np.uint8 if fmt.bits <= 8 else np.uint16)
    ref = codes.view(dt).astype(np.float64)
    ref = np.unique(ref[np.isfinite(ref)])  # -0 and +0 collapse into one zero
    np.testing.assert_array_equal(fmt.values(), ref)
    assert fmt.num_finite == len(ref)


def test_float32_matches_numpy():
    f = fl.get_format("fp32")
    fi = np.finfo(np.float32)
    assert (f.max, f.min_normal, f.min_subnormal, f.epsilon) == (float(fi.max), float(fi.tiny), float(fi.smallest_subnormal), float(fi.eps))
    assert f.num_finite == 2**32 - 2 * (2**23 - 1) - 2 - 1  # minus NaNs, infs, one of the zeros


def test_rebuilt_from_parameters_equal_registered():
    assert fl.FloatFormat("float16", 5, 10) == fl.get_format("float16")
    assert fl.FloatFormat("bfloat16", 8, 7) == fl.get_format("bf16")
    assert fl.FloatFormat("float8_e4m3fn", 4, 3, special="fn") == fl.get_format("e4m3")
    assert fl.FloatFormat("float8_e8m0fnu", 8, 0, bias=127, signed=False, subnormals=False, special="fn") == fl.get_format("ue8m0")
    # and a rebuilt format encodes like the registered one
    x = np.linspace(-70000, 70000, 10001, dtype=np.float32)
    np.testing.assert_array_equal(fl.encode(x, fl.FloatFormat("e5m10", 5, 10)), fl.encode(x, "float16"))


def test_e4m3_maxima_by_convention():
    # the same 1-4-3 layout gives 448 (OCP fn), 240 (IEEE-like and fnuz), 480 (nothing reserved)
    assert fl.get_format("e4m3").max == 448
    assert fl.get_format("float8_e4m3").max == 240
    assert fl.get_format("e4m3fnuz").max == 240
    assert fl.FloatFormat("e4m3_all_finite", 4, 3, special="finite").max == 480


def test_dynamic_range_in_decades():
    f = fl.get_format("e5m2")
    assert f.dynamic_range == pytest.approx(math.log10(57344 / 2**-14))
    assert f.dynamic_range_subnormal == pytest.approx(math.log10(57344 / 2**-16))


def test_aliases_and_unknown_names():
    for alias, name in [("E4M3", "float8_e4m3fn"), ("fp8", "float8_e4m3fn"), ("ue8m0", "float8_e8m0fnu"),
                        ("bf16", "bfloat16"), ("fp4", "float4_e2m1fn"), ("e2m1", "float4_e2m1fn"),
                        ("fp16", "float16"), ("fp32", "float32"), ("e5m2", "float8_e5m2"), ("int8", "int8")]:
        assert fl.get_format(alias).name == name
    with pytest.raises(ValueError, match="known names:.*float8_e4m3fn"):
        fl.get_format("e4m4fnx")
    with pytest.raises(TypeError):
        fl.get_format(3)


def test_every_registered_format_is_listed():
    # formats registered later (a doctest registers one) come after the built-in ones
    assert fl.list_formats()[: len(FORMATS)] == list(FORMATS)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(exponent_bits=9, mantissa_bits=3), "exponent_bits"),
        (dict(exponent_bits=4, mantissa_bits=24), "mantissa_bits"),
        (dict(exponent_bits=4, mantissa_bits=3, special="weird"), "special"),
        (dict(exponent_bits=4, mantissa_bits=0, special="ieee"), "NaN from inf"),
        (dict(exponent_bits=4, mantissa_bits=3, signed=False, special="fnuz"), "sign bit"),
        (dict(exponent_bits=8, mantissa_bits=3, bias=-10), "float32"),
    ],
)
def test_bad_parameters_are_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        fl.FloatFormat("bad", **kwargs)


def test_int_formats():
    i8, i4, u8 = (fl.get_format(n) for n in ("int8", "int4", "uint8"))
    assert (i8.min, i8.max, i4.min, i4.max, u8.min, u8.max) == (-128, 127, -8, 7, 0, 255)
    assert i4.values().tolist() == list(range(-8, 8))


def test_every_spelling_of_every_registered_name_finds_its_format():
    """get_format answers a name in its normal form from the table directly: that shortcut must agree with the
    normalising look-up for every registered name, in every spelling (case, '-', '_', spaces)."""
    from fp8lab.registry import _BY_NAME
    from fp8lab.validation import lookup_key

    for key, fmt in _BY_NAME.items():
        assert lookup_key(key) == key  # the table's keys are normal forms, so the shortcut is the look-up
        for spelling in (key, key.upper(), key.replace("_", "-"), f"  {key.replace('_', ' ')} ", key.title()):
            assert fl.get_format(spelling) is fmt, spelling
    assert fl.get_format("e3m3").max == 15.0  # an unregistered eXmY is still built
    with pytest.raises(ValueError, match="unknown format"):
        fl.get_format("e4m3x")
