"""The codec's path table: every path on every format it serves, against the bit-level reference and ml_dtypes.

The sweep covers the registered formats and a family of custom formats chosen to reach the edges
of each path's applicability (biases that push values into float32's subnormal range, formats
without subnormals, unsigned and fnuz formats, 0 to 10 mantissa bits). For each format and each
(operation, backend) every applicable path must give the bits of the numpy bit-level path, which
the scalar search codec and ml_dtypes check in turn.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import fp8lab as fl
from fp8lab.codec import disable_paths, force_path, path_table, which_path
from fp8lab.codec.paths import PATHS, Request, path_names, select
from fp8lab.codec.reference import decode_one, encode_one
from fp8lab.codec.half import half_ok
from fp8lab.registry import list_formats

from .conftest import ML_DTYPES
from .test_codec_oracle import e8m0_quirk


def _custom_formats() -> list[fl.FloatFormat]:
    out = []
    for e, m in [(2, 1), (3, 2), (4, 3), (5, 2), (4, 5), (5, 7), (8, 3), (8, 7), (5, 10)]:
        default = 2 ** (e - 1) - 1
        for bias in sorted({default, max(default - 3, -5), 0, default + 4, 133 - m + 2, 127 + m // 2}):
            for special, signed, subn in [("ieee", True, True), ("fn", True, True), ("finite", True, True),
                                          ("fnuz", True, True), ("fn", False, False), ("finite", True, False)]:
                if special == "ieee" and e == 1:
                    continue
                try:
                    out.append(fl.FloatFormat(f"c_e{e}m{m}_b{bias}_{special}_{int(signed)}{int(subn)}", e, m, bias=bias,
                                              signed=signed, subnormals=subn, special=special))
                except ValueError:
                    pass  # parameters float32 cannot hold exactly, or that leave no finite value
    return out


CUSTOM = _custom_formats()
REGISTERED = [f for f in list_formats() if f.bits <= 16 or f.name == "float32"]
SWEEP = REGISTERED + CUSTOM


def _inputs(fmt, n: int = 2000) -> np.ndarray:
    """Edge values of the format (every value, midpoints, just beyond max), float32 subnormals, randoms."""
    rng = np.random.default_rng(7)
    parts = [np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0], np.float32)]
    if fmt.bits <= 12:
        v = fmt.values()
        mids = (v[1:] + v[:-1]) / 2
        parts += [v.astype(np.float32), mids.astype(np.float32), np.nextafter(mids.astype(np.float32), np.float32(np.inf))]
    if fmt.kind == "float":
        with np.errstate(over="ignore"):  # float32's own threshold is beyond float32: it becomes inf
            parts += [np.array([fmt.max, fmt.overflow_threshold, fmt.overflow_threshold * 1.01, fmt.min_subnormal / 2,
                                fmt.min_subnormal * 0.75, -fmt.max * 1.5], np.float32)]
    sub = rng.integers(1, 0x00800000, 600).astype(np.uint32).view(np.float32)  # float32 subnormals
    rand = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    parts += [sub, -sub, rand]
    return np.concatenate(parts).astype(np.float32)


def _reference_codes(x: np.ndarray, fmt, saturate: bool) -> np.ndarray:
    with force_path("bitlevel", "integer"):
        return np.asarray(fl.encode(x, fmt, saturate=saturate))


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical float32 values, except that any NaN matches any NaN."""
    a, b = np.asarray(a, np.float32).reshape(-1), np.asarray(b, np.float32).reshape(-1)
    nan = np.isnan(a)
    return bool(np.array_equal(nan, np.isnan(b)) and np.array_equal(a[~nan].view(np.uint32), b[~nan].view(np.uint32)))


def _applicable(op: str, fmt, backend: str, saturate: bool, rounding: str = "nearest", code_dtype: str = "uint8"):
    req = Request(op, fmt, backend, rounding, saturate, "cpu", code_dtype if op == "decode" else "float32")
    return [p.name for p in PATHS if p.applies(req) is None and p.name not in ("meta",)]


def test_the_table_is_complete_and_describable():
    names = path_names()
    assert len(set(names)) == len(names) and names[-1] == "compose"
    for p in PATHS:
        assert p.ops and p.backends and p.description
        assert set(p.impl) == set(p.ops), f"{p.name} lacks a function for {set(p.ops) - set(p.impl)}"
    headers, rows = path_table()
    assert [r[0] for r in rows] == list(names)
    with pytest.raises(ValueError, match="unknown codec path 'fast'"):
        with force_path("fast"):
            pass


@pytest.mark.parametrize("saturate", [False, True])
@pytest.mark.parametrize("fmt", SWEEP, ids=lambda f: f.name)
def test_every_path_gives_the_bit_level_codes(fmt, saturate):
    x = _inputs(fmt)
    want = _reference_codes(x, fmt, saturate)
    xt = torch.from_numpy(x)
    checked = 0
    for backend, data in (("numpy", x), ("torch", xt)):
        for name in _applicable("encode", fmt, backend, saturate):
            with force_path(name):
                got = fl.encode(data, fmt, saturate=saturate)
            got = got.to(torch.int64).numpy() if backend == "torch" else np.asarray(got)
            diff = got.astype(np.int64) != want.astype(np.int64)
            if fmt.bits <= 16 and diff.any():  # several NaN codes may stand for NaN: compare values there
                vals = fl.decode_table(fmt)
                diff &= ~(np.isnan(vals[got[diff].astype(np.int64)]) & np.isnan(vals[want[diff].astype(np.int64)]))
            assert not diff.any(), f"{name}/{backend}: x={x[diff][:4]} got={got[diff][:4]} want={want[diff][:4]}"
            checked += 1
        for name in _applicable("quantize", fmt, backend, saturate):
            with force_path(name):
                got = fl.quantize(data, fmt, saturate=saturate)
            got = got.numpy() if backend == "torch" else np.asarray(got)
            ref = fl.decode(want.astype(fmt.code_dtype), fmt)
            assert _same_values(got, ref), f"quantize {name}/{backend} differs from decode(bitlevel encode)"
            checked += 1
    assert checked >= 3


@pytest.mark.parametrize("fmt", SWEEP, ids=lambda f: f.name)
def test_every_decode_path_gives_the_format_arithmetic(fmt):
    if fmt.bits > 16:
        codes = np.random.default_rng(3).integers(0, 2**fmt.bits, 50_000, dtype=np.uint64).astype(fmt.code_dtype)
    else:
        codes = np.arange(2**fmt.bits).astype(fmt.code_dtype)
    with force_path("bitlevel", "integer"):
        want = np.asarray(fl.decode(codes, fmt))
    tcodes = torch.from_numpy(codes.astype(np.int64) if codes.dtype != np.uint8 else codes)
    for backend, data in (("numpy", codes), ("torch", tcodes)):
        dtype = data.dtype.name if backend == "numpy" else str(data.dtype).removeprefix("torch.")
        for name in _applicable("decode", fmt, backend, False, code_dtype=dtype):
            with force_path(name):
                got = fl.decode(data, fmt)
            got = got.numpy() if backend == "torch" else np.asarray(got)
            assert _same_values(got, want), f"decode {name}/{backend}"
    if fmt.bits <= 10 and fmt.kind == "float":  # the scalar definition, code by code
        ref = np.array([decode_one(int(c), fmt) for c in codes], np.float64)
        assert _same_values(want.astype(np.float64).astype(np.float32), ref.astype(np.float32))


@pytest.mark.parametrize("fmt", [f for f in SWEEP if f.bits <= 10 and f.kind == "float"], ids=lambda f: f.name)
def test_bit_level_agrees_with_the_scalar_search_codec(fmt):
    x = _inputs(fmt, n=300)
    if (fmt.exponent_bits, fmt.mantissa_bits, fmt.bias, fmt.subnormals) == (8, 0, 127, False):
        x = x[~e8m0_quirk(x)]  # E8M0 follows ml_dtypes there, the search codec true nearest (documented)
    for saturate in (False, True):
        got = _reference_codes(x, fmt, saturate)
        ref = np.array([encode_one(float(v), fmt, saturate=saturate) for v in x])
        diff = got.astype(np.int64) != ref
        if diff.any():
            vals = fl.decode_table(fmt)
            diff &= ~(np.isnan(vals[got[diff].astype(np.int64)]) & np.isnan(vals[ref[diff]]))
        assert not diff.any(), f"x={x[diff][:4]} bitlevel={got[diff][:4]} search={ref[diff][:4]}"


@pytest.mark.parametrize("name", sorted(ML_DTYPES))
def test_every_path_matches_ml_dtypes(name):
    fmt, dt = fl.get_format(name), ML_DTYPES[name]
    x = _inputs(fmt)
    if name == "float8_e8m0fnu":
        x = x[~e8m0_quirk(x)]  # where ml_dtypes' E8M0 cast and ours part on purpose (tests/test_codec_oracle.py)
    with np.errstate(all="ignore"):
        want = x.astype(dt).view(np.uint8 if fmt.bits <= 8 else np.uint16)
    for backend, data in (("numpy", x), ("torch", torch.from_numpy(x))):
        for path in _applicable("encode", fmt, backend, False):
            with force_path(path):
                got = fl.encode(data, fmt)
            got = got.to(torch.int64).numpy() if backend == "torch" else np.asarray(got)
            vals = fl.decode_table(fmt)
            same = (got.astype(np.int64) == want.astype(np.int64)) | (np.isnan(vals[got.astype(np.int64)])
                                                                        & np.isnan(vals[want.astype(np.int64)]))
            assert same.all(), f"{path}/{backend}: x={x[~same][:4]}"


def test_which_path_and_forcing():
    x = np.zeros(3, np.float32)
    assert which_path("encode", x, "e4m3") == "table"
    assert which_path("encode", x, "fp16") == "bitlevel"
    assert which_path("quantize", x, "bf16") == "inplace"
    assert which_path("encode", x, "int8") == "integer"
    assert which_path("quantize", x, "e4m3", rounding="stochastic") == "compose"
    t = torch.zeros(3)
    assert which_path("encode", t, "e4m3") == "torch_cast"
    assert which_path("encode", t, "fp4") == "via_numpy -> table"
    from fp8lab.codec import ckernels
    c8 = torch.zeros(3, dtype=torch.uint8)
    assert which_path("decode", c8, "e4m3") == ("ckernel" if ckernels.available() else "half")
    assert which_path("decode", c8, "fp4") == ("ckernel" if ckernels.available() else "via_numpy -> table")
    with disable_paths("ckernel"):
        assert which_path("decode", c8, "e4m3") == "half"
        assert which_path("decode", c8, "fp4") == "via_numpy -> table"
    with disable_paths("ckernel", "half"):
        assert which_path("decode", c8, "e4m3") == "via_numpy -> table"
    with disable_paths("ckernel", "half", "via_numpy"):
        assert which_path("decode", c8, "e4m3") == "shift"
    with pytest.raises(ValueError, match="no forced codec path \\(inplace\\) serves encode of float8_e4m3fn"):
        with force_path("inplace"):
            fl.encode(x, "e4m3")
    with force_path("via_numpy"):  # forcing the hand-over lets the numpy side choose
        assert fl.encode(t, "fp4").tolist() == [0, 0, 0]


def test_a_user_format_with_registered_parameters_gets_the_native_cast():
    mine = fl.FloatFormat("my_e5m2", 5, 2)
    t = torch.tensor([1.0, 1e6, float("nan")])
    assert select(Request("encode", mine, "torch")).name == "torch_cast"
    assert fl.encode(t, mine).tolist() == fl.encode(t, "e5m2").tolist()


PROBES = {}


def test_probe_counts_are_recorded():
    """Not a check: the number of formats the sweep runs (quoted in the closing note)."""
    PROBES["formats"] = len(SWEEP)
    assert len(CUSTOM) > 100 and len(SWEEP) == len(REGISTERED) + len(CUSTOM)


@pytest.mark.parametrize("dtype", ["uint16"])
def test_the_half_path_decodes_every_fp16_code_in_16_bit_dtypes(dtype):
    fmt = fl.get_format("fp16")
    codes = np.arange(2**16, dtype=np.uint16)
    with force_path("bitlevel"):
        want = np.asarray(fl.decode(codes, fmt))
    t = torch.from_numpy(codes.view(np.int16).copy())
    if dtype == "uint16":
        t = t.view(torch.uint16)
    assert which_path("decode", t, fmt) == "half"
    assert _same_values(fl.decode(t, fmt).numpy(), want)
    from fp8lab.gemm.decode import decode_values   # into the GEMM's int32 workspace, too
    assert _same_values(decode_values(t, fmt, slot="half-test").numpy(), want)


@pytest.mark.parametrize("fmt", [f for f in SWEEP if half_ok(f)] + [fl.FloatFormat("e5m1_7bit", 5, 1),
                                                                     fl.FloatFormat("e5m6_12bit", 5, 6)],
                         ids=lambda f: f.name)
def test_the_half_path_agrees_with_the_bit_level_decode(fmt):
    codes = np.arange(2**fmt.bits, dtype=np.uint16)
    with force_path("bitlevel"):
        want = np.asarray(fl.decode(codes, fmt))
    dtypes = [torch.uint16] + ([torch.int16] if fmt.bits < 16 else []) + ([torch.uint8] if fmt.bits <= 8 else [])
    dtypes = [dt for dt in dtypes if half_ok(fmt, str(dt).removeprefix("torch."))]
    assert dtypes
    for dt in dtypes:
        t = torch.from_numpy(codes.astype(np.int32)).to(dt) if dt != torch.uint16 else \
            torch.from_numpy(codes.view(np.int16).copy()).view(torch.uint16)
        with force_path("half"):
            got = fl.decode(t, fmt)
        assert _same_values(got.numpy(), want), (fmt.name, dt)


NARROW8 = [f for f in SWEEP if f.kind == "float" and f.bits == 8 and half_ok(f) and f.exponent_bits <= 4]


def test_the_narrow_half_formats_include_e4m3_and_its_relatives():
    names = {f.name for f in NARROW8}
    assert {"float8_e4m3fn", "float8_e4m3fnuz"} <= names and len(NARROW8) > 10
    assert any(f.special == "fnuz" for f in NARROW8) and any(f.special == "ieee" for f in NARROW8)
    assert any(f.bias != 2 ** (f.exponent_bits - 1) - 1 for f in NARROW8)  # unusual biases are rebiased too


@pytest.mark.parametrize("fmt", NARROW8, ids=lambda f: f.name)
def test_the_narrow_half_decode_into_the_gemm_workspace_matches_bit_level(fmt):
    """Every code, laid out as a transposed (non-contiguous) matrix, decoded into the GEMM's reusable buffer."""
    from fp8lab.gemm.decode import decode_values

    codes = np.arange(256, dtype=np.uint8).reshape(16, 16)
    with force_path("bitlevel"):
        want = np.asarray(fl.decode(codes.T, fmt))
    t = torch.from_numpy(codes).t()
    with disable_paths("ckernel"):
        assert which_path("decode", t, fmt) == "half"
        got = decode_values(t, fmt, slot="narrow-half-test")
    assert got.shape == (16, 16) and _same_values(got.numpy(), want)
    # finite codes are bit-identical; NaN codes give NaN (test_every_decode_path... checks the rest)
    fin = np.isfinite(want)
    assert np.array_equal(got.numpy()[fin].view(np.uint32), want[fin].view(np.uint32))
