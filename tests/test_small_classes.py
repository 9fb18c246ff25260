"""Issue 17 section 5: small classes of bugs, each closed as a whole and swept here.

1. The sign of a decoded NaN is the code's sign bit (ml_dtypes' rule) on every path, backend, size and code dtype.
2. A 0-d array in gives a 0-d array out (numpy and torch) at every codec and scaling entry point.
3. numpy bools are taken wherever a bool is.
4. A format whose only finite value is 0 is rejected with a clear ValueError.
5. A delayed-scaling history holding NaN gives scales that do not depend on where the NaN sits.
6. ``explain`` of NaN and inf says what became of them, with no misleading note.
7. ``force_path`` and ``disable_paths`` hold per thread.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import runpy
import subprocess
import sys
import threading
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import fp8lab as fl
from fp8lab.codec import ckernels, disable_paths, force_path, which_path
from fp8lab.codec.paths import PATHS, Request, path_policy
from fp8lab.registry import list_formats

ROOT = Path(__file__).resolve().parents[1]

#: ml_dtypes' (and numpy's) dtype of each registered float format: the oracle
ORACLE = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
          **{n: getattr(ml_dtypes, n) for n in ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3", "float8_e4m3b11fnuz",
                                                 "float8_e5m2", "float8_e5m2fnuz", "float8_e3m4", "float8_e8m0fnu",
                                                 "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn")}}

FLOATS = list_formats("float")
#: formats ml_dtypes lacks, with NaNs of both signs, one NaN, or none; unsigned; 16 bits
CUSTOM = [fl.FloatFormat(*a, **k) for a, k in [
    (("c_e3m2_fn", 3, 2), dict(special="fn")), (("c_e2m2_ieee", 2, 2), {}), (("c_e3m3_fnuz", 3, 3), dict(special="fnuz")),
    (("c_e5m1_ieee", 5, 1), {}), (("c_u_e4m3_fn", 4, 3), dict(signed=False, special="fn")),
    (("c_e4m3_fn_nosub", 4, 3), dict(subnormals=False, special="fn")), (("c_e6m9_ieee", 6, 9), {}),
    (("c_e5m10_b10", 5, 10), dict(bias=10)), (("c_e4m2_ieee_b1", 4, 2), dict(bias=1)),
]]
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
SIZES = (1, 5, 17, 100, 70_001)  # one, a vector tail, a few lanes, past the codec's 65536-element chunks


# ----------------------------------------------------------------------------------------------
# 1. the sign of a decoded NaN
def _oracle_signbit(fmt, codes: np.ndarray) -> np.ndarray:
    """The sign bit ml_dtypes gives each code's float32 value; for other formats the code's sign bit (+ unsigned)."""
    dt = ORACLE.get(fmt.name)
    if dt is not None:
        return np.signbit(codes.astype(fmt.code_dtype).view(dt).astype(np.float32))
    if not fmt.signed:
        return np.zeros(codes.shape, bool)
    return (codes.astype(np.int64) & fmt.sign_mask) != 0


def _nan_codes(fmt) -> np.ndarray:
    if fmt.bits > 16:  # float32: a sample of its 2^24 NaN patterns, both signs, quiet and signalling
        mags = np.array([0x7FC00000, 0x7F800001, 0x7FFFFFFF, 0x7FA00000, 0x7FC00001], np.int64)
        return np.concatenate([mags, mags | 0x80000000])
    codes = np.arange(2**fmt.bits, dtype=np.int64)
    return codes[fmt.is_nan_code(codes)]


def _mixed_codes(fmt, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` codes of ``fmt``: NaN codes of every sign among ordinary ones, with negative NaNs last (a tail)."""
    nans = _nan_codes(fmt)
    top = 2**fmt.bits
    pool = np.concatenate([nans, rng.integers(0, top, 64, dtype=np.int64)])
    codes = rng.choice(pool, n)
    neg = nans[(nans & fmt.sign_mask) != 0] if fmt.signed else nans
    if len(neg) and n > 1:
        k = min(n // 2, 7)
        codes[-k:] = rng.choice(neg, k)
    return codes


def _decode_paths(fmt, backend: str, code_dtype: str, device: str) -> list[str]:
    req = Request("decode", fmt, backend, device=device, code_dtype=code_dtype)
    return [p.name for p in PATHS if p.name != "meta" and p.applies(req) is None]


def _torch_code_dtypes(fmt) -> list:
    out = [torch.uint8] if fmt.bits <= 8 else [torch.uint16] if fmt.bits <= 16 else [torch.uint32]
    return out + ([torch.int32] if fmt.bits < 32 else []) + [torch.int64]  # (int32 cannot hold float32's codes)


def _nan_sign_mismatches(devices=("cpu",), formats=None, sizes=SIZES) -> list[str]:
    """Every (format, backend, device, path, code dtype, size) whose decoded NaNs' sign bits differ from ml_dtypes'.

    Returns one line per mismatch, and a line "served ..." per (format, backend) that no path served.
    """
    rng = np.random.default_rng(17)
    bad, formats = [], FLOATS + CUSTOM if formats is None else formats
    for fmt in formats:
        for n in sizes:
            if fmt.bits > 16 and n > 100:
                n = 20_001
            codes = _mixed_codes(fmt, n, rng)
            want = _oracle_signbit(fmt, codes)
            cases = [("numpy", "cpu", codes.astype(dt)) for dt in (fmt.code_dtype, np.int64)]
            for device in devices:
                for dt in _torch_code_dtypes(fmt):
                    t = torch.from_numpy(codes.astype(np.int64)).to(dt) if dt not in (torch.uint16, torch.uint32) else \
                        torch.from_numpy(codes.astype(fmt.code_dtype))
                    cases.append(("torch", device, t.to(device)))
            for backend, device, data in cases:
                dtype = data.dtype.name if backend == "numpy" else str(data.dtype).removeprefix("torch.")
                names = _decode_paths(fmt, backend, dtype, device)
                if not names:
                    bad.append(f"served {fmt.name} {backend}/{device}/{dtype}: no path")
                for name in names:
                    with force_path(name):
                        got = fl.decode(data, fmt)
                    got = got.cpu().numpy() if backend == "torch" else np.asarray(got)
                    nan = np.isnan(got)
                    if not np.array_equal(nan, np.isnan(fl.decode(codes.astype(fmt.code_dtype), fmt))):
                        bad.append(f"{fmt.name} {backend}/{device}/{name}/{dtype}/n={n}: NaN positions differ")
                    wrong = nan & (np.signbit(got) != want)
                    if wrong.any():
                        bad.append(f"{fmt.name} {backend}/{device}/{name}/{dtype}/n={n}: codes "
                                   f"{[hex(c) for c in codes[wrong][:4]]} decode to NaNs of the wrong sign")
                # and the default choice, as a user meets it
                got = fl.decode(data, fmt)
                got = got.cpu().numpy() if backend == "torch" else np.asarray(got)
                if (np.isnan(got) & (np.signbit(got) != want)).any():
                    bad.append(f"{fmt.name} {backend}/{device}/default/{dtype}/n={n}: wrong NaN sign")
    return bad


def test_the_rule_is_ml_dtypes_rule_the_codes_sign_bit():
    """ml_dtypes keeps each NaN code's sign bit (0xFF of E4M3FN is -NaN, the fnuz NaN 0x80 is -NaN, E8M0's +NaN)."""
    for name, dt in ORACLE.items():
        fmt = fl.get_format(name)
        codes = _nan_codes(fmt) if fmt.bits > 16 else np.arange(2**fmt.bits)
        vals = codes.astype(fmt.code_dtype).view(dt).astype(np.float32)
        nan = np.isnan(vals)
        sign = (codes & fmt.sign_mask) != 0 if fmt.signed else np.zeros(codes.shape, bool)
        assert np.array_equal(np.signbit(vals[nan]), sign[nan]), name
    e4m3 = fl.decode(np.array([0x7F, 0xFF], np.uint8), "e4m3")
    assert np.signbit(e4m3).tolist() == [False, True]
    assert np.signbit(fl.decode(np.uint8(0x80), "e4m3fnuz")) and not np.signbit(fl.decode(np.uint8(0xFF), "e8m0"))


@pytest.mark.parametrize("fmt", FLOATS + CUSTOM, ids=lambda f: f.name)
def test_every_decode_path_gives_nans_the_codes_sign(fmt):
    assert _nan_sign_mismatches(DEVICES, [fmt]) == []


def test_the_decode_table_and_the_scalar_reference_follow_the_rule():
    from fp8lab.codec.reference import decode_one

    for fmt in FLOATS + CUSTOM:
        if fmt.bits > 16:
            continue
        codes = np.arange(2**fmt.bits)
        table = fl.decode_table(fmt)
        want = _oracle_signbit(fmt, codes)
        nan = np.isnan(table)
        assert np.array_equal(np.signbit(table)[nan], want[nan]), fmt.name
        if fmt.bits <= 8:
            ref = np.array([decode_one(int(c), fmt) for c in codes])
            assert np.array_equal(np.signbit(ref)[nan], want[nan]), fmt.name
            if ckernels.available():  # the C kernels' own copy of the table
                got = ckernels.table_decode(torch.from_numpy(codes.astype(np.uint8)), fmt).numpy()
                assert np.array_equal(np.signbit(got)[nan], want[nan]), fmt.name


def test_without_the_c_kernels_nans_keep_the_same_sign():
    """FP8LAB_NO_CKERNELS=1 (a machine without gcc): the torch decode falls back to half/shift/numpy paths."""
    code = ("import json, runpy\nfrom fp8lab.codec import ckernels\n"
            f"m = runpy.run_path({str(Path(__file__))!r}, run_name='small_classes')\n"
            "print(json.dumps([ckernels.available(), m['_nan_sign_mismatches'](sizes=(1, 17, 70001))]))")
    env = dict(os.environ, FP8LAB_NO_CKERNELS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    available, bad = json.loads(out.stdout.strip().splitlines()[-1])
    assert available is False and bad == []


def _quantize_paths(fmt, backend: str, saturate: bool, device: str) -> list[str]:
    req = Request("quantize", fmt, backend, "nearest", saturate, device)
    return [p.name for p in PATHS if p.name not in ("meta",) and p.applies(req) is None]


@pytest.mark.parametrize("fmt", FLOATS + CUSTOM, ids=lambda f: f.name)
def test_quantize_gives_nans_the_sign_of_their_code(fmt):
    """quantize(x) is decode(encode(x)): a NaN it gives has the sign bit of the code encode gives, on every path."""
    base = np.array([np.nan, -np.nan, np.inf, -np.inf, 3e38, -3e38, -1.0, 1.0, -0.0], np.float32)
    if fmt.max < 1e38:
        base = np.concatenate([base, np.float32([fmt.max * 4, -fmt.max * 4])])
    for n in (len(base), 17, 70_001):
        x = np.resize(base, n)
        x[-7:] = -np.nan
        for saturate in (False, True):
            with force_path("bitlevel"):
                want_codes = np.asarray(fl.encode(x, fmt, saturate=saturate))
            want = _oracle_signbit(fmt, want_codes)
            if fmt.name in ORACLE and not saturate and fmt.name != "float8_e8m0fnu":
                with np.errstate(all="ignore"):
                    theirs = x.astype(ORACLE[fmt.name]).astype(np.float32)
                assert np.array_equal(np.signbit(theirs)[np.isnan(theirs)], want[np.isnan(theirs)]), fmt.name
            for device in DEVICES:
                for backend in ("numpy", "torch"):
                    if backend == "numpy" and device != "cpu":
                        continue
                    data = x if backend == "numpy" else torch.from_numpy(x).to(device)
                    for name in _quantize_paths(fmt, backend, saturate, device):
                        with force_path(name):
                            got = fl.quantize(data, fmt, saturate=saturate)
                        got = got.cpu().numpy() if backend == "torch" else np.asarray(got)
                        nan = np.isnan(got)
                        assert not (nan & (np.signbit(got) != want)).any(), \
                            f"{name}/{backend}/{device}/sat={saturate}/n={n}: x={x[nan & (np.signbit(got) != want)][:4]}"


# ----------------------------------------------------------------------------------------------
# 2. 0-d in, 0-d out
ZERO_D_FORMATS = ["e4m3", "e5m2", "e4m3fnuz", "fp4", "e8m0", "bf16", "fp16", "fp32", "int8", "uint4", "e3m4"]


def _paths_for(op: str, fmt, backend: str, rounding: str, saturate: bool, code_dtype: str = "") -> list[str]:
    req = Request(op, fmt, backend, rounding, saturate, "cpu", code_dtype)
    return [p.name for p in PATHS if p.name != "meta" and p.applies(req) is None]


@pytest.mark.parametrize("name", ZERO_D_FORMATS)
def test_a_0d_array_gives_a_0d_array_on_every_path(name):
    fmt = fl.get_format(name)
    for rounding in ("nearest", "toward_zero", "stochastic"):
        for saturate in (False, True):
            for x in (np.array(1.375, np.float32), np.array(-0.3), np.array(7, np.int32)):
                one = np.asarray(fl.encode(x.reshape(1), fmt, rounding=rounding, saturate=saturate, generator=0))
                for backend, data in (("numpy", x), ("torch", torch.from_numpy(x.copy()))):
                    kind = np.ndarray if backend == "numpy" else torch.Tensor
                    for op in ("encode", "quantize"):
                        for path in _paths_for(op, fmt, backend, rounding, saturate, "float32"):
                            with force_path(path):
                                fn = fl.encode if op == "encode" else fl.quantize
                                got = fn(data, fmt, rounding=rounding, saturate=saturate, generator=0)
                            assert isinstance(got, kind) and tuple(got.shape) == (), (op, path, backend, type(got))
                            if op == "encode" and rounding != "stochastic":
                                assert int(got) == int(one[0]), (op, path, backend)
    codes = np.array(int(fl.encode(1.0, fmt)), fmt.code_dtype)
    for backend, data in (("numpy", codes), ("torch", torch.from_numpy(codes.astype(np.int64)))):
        dtype = data.dtype.name if backend == "numpy" else "int64"
        for path in _paths_for("decode", fmt, backend, "nearest", False, dtype):
            with force_path(path):
                got = fl.decode(data, fmt)
            kind = np.ndarray if backend == "numpy" else torch.Tensor
            assert isinstance(got, kind) and tuple(got.shape) == () and float(got) == 1.0, (path, backend)


def test_scalars_stay_scalars_and_0d_tensors_of_every_code_dtype_stay_0d():
    assert isinstance(fl.encode(1.0, "e4m3"), np.uint8) and isinstance(fl.encode(np.float32(1.0), "e4m3"), np.uint8)
    assert isinstance(fl.decode(56, "e4m3"), np.float32) and isinstance(fl.decode(np.uint8(56), "e4m3"), np.float32)
    assert isinstance(fl.quantize(0.3, "e4m3"), float) and isinstance(fl.quantize(np.float32(0.3), "e4m3"), np.float32)
    assert isinstance(fl.quantize(np.float64(0.3), "e4m3"), np.float64)
    q = fl.quantize(np.array(0.3, ml_dtypes.bfloat16), "e4m3")
    assert isinstance(q, np.ndarray) and q.shape == () and q.dtype == ml_dtypes.bfloat16
    for dt in (torch.uint8, torch.int16, torch.int32, torch.int64):
        assert fl.decode(torch.tensor(56, dtype=dt), "e4m3").shape == ()
    for dt in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        t = torch.tensor(0.3, dtype=dt)
        assert fl.encode(t, "e4m3").shape == () and fl.quantize(t, "e4m3").shape == ()
        assert fl.quantize(t, "e4m3").dtype == dt
    meta = torch.empty((), device="meta")
    assert fl.encode(meta, "e4m3").shape == () and fl.quantize(meta, "e4m3").shape == ()


def test_the_codec_kernels_that_take_any_shape_keep_0d():
    from fp8lab.codec import native
    from fp8lab.codec.half import decode_half_torch
    from fp8lab.codec.shift import shift_decode
    from fp8lab.codec.wide import round_bits_torch

    e4m3, e5m2 = fl.get_format("e4m3"), fl.get_format("e5m2")
    c = torch.tensor(0x38, dtype=torch.uint8)
    assert shift_decode(c, e4m3).shape == () and decode_half_torch(c, e4m3).shape == ()
    assert decode_half_torch(torch.tensor(0x3C, dtype=torch.uint8), e5m2).shape == ()
    assert round_bits_torch(torch.tensor(1.0), 7, "nearest").shape == ()
    assert native.encode(torch.tensor(1.0), e4m3, False).shape == () and native.quantize(torch.tensor(1.0), e5m2, False).shape == ()
    if ckernels.available():
        assert ckernels.table_decode(c, e4m3).shape == ()


@pytest.mark.parametrize("recipe", sorted(fl.scaling.RECIPE_NAMES))
def test_quantize_tensor_of_a_0d_input_is_0d(recipe):
    for x in (np.array(1.5, np.float32), np.array(-2.0), torch.tensor(1.5), torch.tensor(-2.0, dtype=torch.float64)):
        try:
            q = fl.scaling.quantize_tensor(x, None, recipe)
        except ValueError as e:
            assert "dimensions" in str(e)  # 128x128 tiles need two dimensions
            continue
        kind = np.ndarray if isinstance(x, np.ndarray) else torch.Tensor
        assert isinstance(q.codes, kind) and tuple(q.codes.shape) == () and tuple(q.scales.shape) == ()
        assert isinstance(q.values(), kind) and tuple(q.values().shape) == ()
        assert np.shape(q.dequantize()) == () and abs(float(q.dequantize()) - float(x)) <= abs(float(x)) * 0.3


def test_delayed_scaling_and_the_scale_functions_keep_0d():
    for x in (np.array(3.0, np.float32), torch.tensor(3.0)):
        r = fl.scaling.DelayedScaling()
        for _ in range(2):
            q = r.quantize(x, "e4m3")
            assert tuple(q.codes.shape) == () and tuple(q.scales.shape) == ()
            assert isinstance(q.codes, np.ndarray if isinstance(x, np.ndarray) else torch.Tensor)
        assert r.history == (3.0, 3.0)
    s = fl.scaling.float_scales(np.array(3.0), 448.0)
    assert isinstance(s, np.ndarray) and s.shape == ()
    e = fl.scaling.mx_scale_exponents(np.array(3.0), fl.get_format("e4m3"))
    assert isinstance(e, np.ndarray) and e.shape == ()


# ----------------------------------------------------------------------------------------------
# 3. numpy bools wherever a bool is taken
def _bool_parameters() -> set[tuple[str, str]]:
    """Every public function or class parameter of the codec, formats, scaling and FP8 recipes that takes a bool."""
    import importlib
    import pkgutil

    mods = [f"fp8lab.codec.{m.name}" for m in pkgutil.iter_modules(fl.codec.__path__)
            if m.name not in ("kcache",)]  # the kernel cache's file checks: its own module, its own tests
    mods += [f"fp8lab.scaling.{m.name}" for m in pkgutil.iter_modules(fl.scaling.__path__)]
    mods += ["fp8lab.formats", "fp8lab.registry", "fp8lab.anatomy", "fp8lab.validation", "fp8lab.nn.recipe"]
    found = set()
    for mn in mods:
        m = importlib.import_module(mn)
        for name, obj in vars(m).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != mn:
                continue
            targets = [(name, obj)] if inspect.isfunction(obj) or inspect.isclass(obj) else []
            if inspect.isclass(obj):
                targets += [(f"{name}.{k}", v) for k, v in vars(obj).items() if inspect.isfunction(v) and not k.startswith("_")]
            for tn, t in targets:
                try:
                    params = inspect.signature(t).parameters.values()
                except (TypeError, ValueError):
                    continue
                for p in params:
                    if isinstance(p.default, bool) or str(p.annotation) in ("bool", "<class 'bool'>"):
                        found.add((tn, p.name))
    return found


def _outcome(fn):
    """What ``fn()`` gives, or the type of the error it raises."""
    try:
        return fn()
    except (TypeError, ValueError) as e:
        return type(e).__name__


def _bool_calls():
    """(function, parameter) -> a call taking that bool (np.True_ or np.False_ in, the result out to compare)."""
    import fp8lab.codec.native as native
    from fp8lab.codec.reference import encode_one
    from fp8lab.codec.wide import round_bits, round_bits_torch
    from fp8lab.nn.recipe import LinearRecipe, TensorQuant
    from fp8lab.qtensor import QuantInfo
    from fp8lab.scaling import fast

    S = fl.scaling
    x, t = np.array([500.0, 0.3, -1e9], np.float32), torch.tensor([500.0, 0.3, -1e9])
    e4m3 = fl.get_format("e4m3")
    m = torch.randn(4, 64)
    calls = {
        ("encode", "saturate"): lambda b: fl.encode(x, "e4m3", saturate=b).tolist(),
        ("quantize", "saturate"): lambda b: fl.quantize(t, "e5m2", saturate=b).tolist(),
        ("Request", "saturate"): lambda b: Request("encode", e4m3, "numpy", saturate=b) == Request("encode", e4m3, "numpy", saturate=bool(b)),
        ("request_for", "saturate"): lambda b: fl.codec.paths.request_for("encode", x, "e4m3", saturate=b).saturate,
        ("which_path", "saturate"): lambda b: which_path("quantize", t, "e4m3", saturate=b),
        ("encode_one", "saturate"): lambda b: encode_one(500.0, "e4m3", saturate=b),
        ("round_bits", "saturate"): lambda b: round_bits(np.float32([3.4e38]).view(np.int32), fl.get_format("bf16"), "nearest", b).tolist(),
        ("round_bits_torch", "saturate"): lambda b: round_bits_torch(torch.tensor([3.4e38]), 7, "nearest", b).tolist(),
        ("round_bits_torch", "inplace"): lambda b: round_bits_torch(torch.tensor([1.0]), 7, "nearest", inplace=b).tolist(),
        ("round_bits_torch", "keep_nan"): lambda b: round_bits_torch(torch.tensor([1.0]), 7, "nearest", keep_nan=b).tolist(),
        ("NativeCast", "clamps_overflow"): lambda b: bool(native.NativeCast("x", (), clamps_overflow=b).clamps_overflow == bool(b)),
        ("NativeCast", "canonical_nan"): lambda b: bool(native.NativeCast("x", (), canonical_nan=b).canonical_nan == bool(b)),
        ("NativeCast", "signless"): lambda b: bool(native.NativeCast("x", (), signless=b).signless == bool(b)),
        ("encode", "saturate", "native"): lambda b: native.encode(t, e4m3, b).tolist(),
        ("quantize", "saturate", "native"): lambda b: native.quantize(t, e4m3, b).tolist(),
        ("FloatFormat", "signed"): lambda b: fl.FloatFormat("b", 4, 3, signed=b, special="fn").signed is bool(b),
        ("FloatFormat", "subnormals"): lambda b: fl.FloatFormat("b", 4, 3, subnormals=b, special="fn").subnormals is bool(b),
        ("FloatFormat.overflow_code", "saturate"): lambda b: e4m3.overflow_code(saturate=b),
        ("FloatFormat.overflow_code", "infinite"): lambda b: e4m3.overflow_code(infinite=b),
        ("FloatFormat.nan_input_code", "negative"): lambda b: e4m3.nan_input_code(b),
        ("IntFormat", "signed"): lambda b: fl.IntFormat("i", 8, signed=b).signed is bool(b),
        ("explain", "saturate"): lambda b: str(fl.explain(500.0, "e4m3", saturate=b)),
        ("QuantInfo", "overflow"): lambda b: bool(QuantInfo(overflow=b).overflow),
        ("DelayedScaling", "pow2"): lambda b: S.quantize_tensor(x, "e4m3", S.DelayedScaling(pow2=b)).scales.tolist(),
        ("IntScaling", "symmetric"): lambda b: S.quantize_tensor(x, "int8", S.IntScaling(symmetric=b)).scales.tolist(),
        ("IntScaling", "pow2"): lambda b: S.quantize_tensor(x, "int8", S.IntScaling(pow2=b)).scales.tolist(),
        ("TensorScaling", "pow2"): lambda b: S.quantize_tensor(x, "e4m3", S.TensorScaling(pow2=b)).scales.tolist(),
        ("AxisScaling", "pow2"): lambda b: S.quantize_tensor(x.reshape(1, 3), "e4m3", S.AxisScaling(pow2=b)).scales.tolist(),
        ("BlockScaling", "pow2"): lambda b: S.quantize_tensor(x, "e4m3", S.BlockScaling((2,), pow2=b)).scales.tolist(),
        ("PercentileScaling", "pow2"): lambda b: S.quantize_tensor(x, "e4m3", S.PercentileScaling(pow2=b)).scales.tolist(),
        ("float_scales", "pow2"): lambda b: S.float_scales(np.array([3.0]), 448.0, pow2=b).tolist(),
        ("LossScaler.update", "found_inf"): lambda b: S.LossScaler().update(b),
        ("quantize_fast_values", "dequantize"): lambda b: str(fast.quantize_fast_values(m, e4m3, S.TensorScaling(), dequantize=b)),
        ("quantize_fast_values", "contiguous"): lambda b: str(fast.quantize_fast_values(m, e4m3, S.TensorScaling(), contiguous=b)),
        ("quantize_fast_values", "count_flushed"):
            lambda b: str(dict(fast.quantize_fast_values(m, e4m3, S.TensorScaling(), count_flushed=b)[0].info)),
        ("quantize_fast", "count_flushed"): lambda b: str(dict(fast.quantize_fast(m, e4m3, S.TensorScaling(), count_flushed=b).info)),
        ("quantize_tensor", "count_flushed"): lambda b: str(dict(fl.quantize_tensor(m, e4m3, S.TensorScaling(), count_flushed=b).info)),
        ("saturating_blocks", "checked"): lambda b: fl.scaling.base.saturating_blocks(np.array([449.0, 1.0]),
                                                                                      np.array([1.0, 1.0], np.float32), 448.0, checked=b).tolist(),
        ("ScalingRequest", "transposed"): lambda b: fl.scaling.paths.select(fl.scaling.paths.ScalingRequest(
            S.AxisScaling(pow2=True), e4m3, "torch", "cpu", "float32", (4, 64), transposed=b)).name,
        ("QTensor.hold_values", "dequantized"): lambda b: str(fl.QTensor(torch.zeros(1, 2, dtype=torch.uint8), torch.ones(1, 1),
                                                                       "e4m3").hold_values(dequantized=b).held_values()),
        ("TensorQuant", "saturate"): lambda b: bool(TensorQuant("e4m3", saturate=b).saturate == bool(b)),
        ("LinearRecipe", "loss_scaling"): lambda b: bool(LinearRecipe("r", loss_scaling=b).loss_scaling == bool(b)),
        ("LinearRecipe", "control"): lambda b: bool(LinearRecipe("r", control=b).control == bool(b)),
        ("check_bool", "value"): lambda b: fl.validation.check_bool("o", "n", b) is bool(b),
        ("check_int", "optional"): lambda b: _outcome(lambda: fl.validation.check_int("o", "n", None, optional=b)),
        ("check_real", "positive"): lambda b: _outcome(lambda: fl.validation.check_real("o", "n", 0.0, positive=b)),
        ("check_real", "finite"): lambda b: _outcome(lambda: fl.validation.check_real("o", "n", math.inf, finite=b)),
        ("check_real", "exclusive"): lambda b: _outcome(lambda: fl.validation.check_real("o", "n", 1.0, maximum=1, exclusive=b)),
        ("check_block", "allow_empty"): lambda b: _outcome(lambda: fl.validation.check_block((), allow_empty=b)),
        ("encode_bits", "saturate"): lambda b: fl.codec.core.encode_bits(np.float32([1e9]).view(np.int32), e4m3, fl.codec.core.NUMPY,
                                                                        "nearest", b, None).tolist(),
    }
    if ckernels.available():
        mm, ones = torch.randn(2, 32), torch.ones(1, 1)
        for flag in ("reciprocal", "values", "dequantize", "transpose"):
            calls[("scaled_encode", flag)] = lambda b, flag=flag: str(ckernels.scaled_encode(mm, ones, (2, 32), e4m3, **{flag: b}))
        sa, sb = torch.ones(2, 1), torch.full((1, 32), 0.5)
        calls[("scale_epilogue", "check")] = lambda b: str(ckernels.scale_epilogue(mm.clone(), sa, sb, check=b))
        for flag in ("reciprocal", "values", "dequantize", "transpose", "flush"):
            calls[("scaled_encode_measured", flag)] = \
                lambda b, flag=flag: str(ckernels.scaled_encode_measured(mm, ones, (2, 32), e4m3, **{flag: b}))
        for flag in ("values", "dequantize", "transpose", "flush"):
            calls[("band_encode", flag)] = lambda b, flag=flag: str(ckernels.band_encode(mm, (1, 32), e4m3, "pow2", **{flag: b}))
    return calls


def test_every_bool_parameter_takes_numpy_bools_as_bools():
    calls = _bool_calls()
    covered = {k[:2] for k in calls}
    plots = {("plot_scale_map", "colorbar")}  # a plotting switch: matplotlib, not a check
    kernels = {(f, p) for f, p in _bool_parameters()
               if f in ("scaled_encode", "scaled_encode_measured", "band_encode", "scale_epilogue")}
    missing = _bool_parameters() - covered - plots - (kernels if not ckernels.available() else set())
    assert not missing, f"bool parameters this sweep does not call: {sorted(missing)}"
    for key, call in calls.items():
        for b in (True, False):
            assert repr(call(np.bool_(b))) == repr(call(b)), key  # (repr: NaN matches NaN)


@pytest.mark.parametrize("bad", [1, 0, "yes", None, 1.0, np.int8(1), np.array([True])])
def test_things_that_are_not_bools_are_still_refused(bad):
    S = fl.scaling
    checks = [lambda: fl.encode(1.0, "e4m3", saturate=bad), lambda: fl.quantize(1.0, "e4m3", saturate=bad),
              lambda: fl.explain(1.0, "e4m3", saturate=bad), lambda: fl.FloatFormat("b", 4, 3, signed=bad),
              lambda: fl.FloatFormat("b", 4, 3, subnormals=bad), lambda: fl.IntFormat("i", 8, signed=bad),
              lambda: S.DelayedScaling(pow2=bad), lambda: S.TensorScaling(pow2=bad), lambda: S.IntScaling(symmetric=bad)]
    for check in checks:
        with pytest.raises(TypeError, match="must be True or False"):
            check()


def test_recipes_store_a_numpy_bool_as_a_bool():
    r = fl.scaling.DelayedScaling(pow2=np.True_)
    assert r.pow2 is True and r == fl.scaling.DelayedScaling(pow2=True)
    assert fl.FloatFormat("b", 4, 3, signed=np.False_, special="fn").signed is False


# ----------------------------------------------------------------------------------------------
# 4. a format whose only finite value is 0
def _finite_nonzero_magnitudes(e: int, m: int, special: str, signed: bool, subnormals: bool) -> int:
    """How many magnitude codes are finite and nonzero: counted from the layout, not from FloatFormat."""
    count = 0
    for mag in range(2 ** (e + m)):
        top = mag >> m == 2**e - 1
        if special == "ieee" and top:
            continue  # inf and NaN
        if special == "fn" and mag == 2 ** (e + m) - 1:
            continue  # the NaN
        if mag == 0 and subnormals:
            continue  # zero (in fnuz the NaN is the sign bit with a zero magnitude: not a magnitude here)
        count += 1
    return count


def test_a_format_whose_only_finite_value_is_zero_is_refused():
    refused_for_zero = []
    for e in range(1, 6):
        for m in range(0, 4):
            for special in ("ieee", "fn", "fnuz", "finite"):
                for signed in (True, False):
                    for subnormals in (True, False):
                        for bias in (None, -2, 0, 1, 5):
                            only_zero = subnormals and _finite_nonzero_magnitudes(e, m, special, signed, subnormals) == 0
                            try:
                                f = fl.FloatFormat(f"t_e{e}m{m}", e, m, bias=bias, signed=signed, subnormals=subnormals,
                                                   special=special)
                            except ValueError as err:
                                said = "only finite value is 0" in str(err)
                                assert only_zero or not said, (e, m, special, signed, subnormals, bias, str(err))
                                # an only-zero layout may fall to an earlier check first (IEEE-style E1M0: no
                                # mantissa bit to tell NaN from inf); any other only-zero one must say so
                                assert said or not only_zero or special == "ieee", (e, m, special, str(err))
                                if said:
                                    refused_for_zero.append((e, m, special, signed))
                                    assert f"special={special!r}" in str(err) and "add an exponent or mantissa bit" in str(err)
                                continue
                            assert not only_zero, (e, m, special, signed, subnormals, bias)
                            assert f.max > 0 and f.num_finite >= 2 or not f.has_zero, f
                            assert f.min_subnormal > 0 and (f.values() > 0).any()
    assert {(e, m, s) for e, m, s, _ in refused_for_zero} == {(1, 0, "fn")}


def test_a_refused_format_is_refused_by_every_way_of_making_it():
    with pytest.raises(ValueError, match="only finite value is 0"):
        fl.FloatFormat("z", 1, 0, special="fn")
    with pytest.raises(ValueError, match="only finite value is 0"):
        fl.FloatFormat("z", 1, 0, signed=np.False_, special="fn")
    assert fl.FloatFormat("one_value", 1, 0, signed=False, subnormals=False, special="fn").num_finite == 1  # 2^-bias: not zero
    with pytest.raises(ValueError):
        fl.get_format("e1m0")  # IEEE-style by default: refused for its own reason


# ----------------------------------------------------------------------------------------------
# 5. a delayed-scaling history with NaN
finite_amax = st.floats(min_value=0.0, max_value=1e30, allow_nan=False, allow_infinity=False)
amax_lists = st.lists(st.one_of(finite_amax, st.just(math.nan)), min_size=1, max_size=12)


def _same(a, b) -> bool:
    return a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))


@settings(max_examples=60, deadline=None)
@given(amax_lists, st.randoms(use_true_random=False), st.sampled_from(["max", "most_recent"]), st.integers(-2, 2),
       st.booleans())
def test_the_scale_from_a_history_with_nan_does_not_depend_on_where_it_sits(amaxes, rnd, algo, margin, pow2):
    r = fl.scaling.DelayedScaling(history_len=16, algo=algo, margin=margin, pow2=pow2)

    def outcome(order):
        h = r.new_state()
        h.scale = 0.25  # a previous scale to keep
        for a in order:
            h.push(a)
        return r.amax_from_history(h), r.next_scale("e4m3", h)

    first = outcome(amaxes)
    has_nan = any(math.isnan(a) for a in amaxes)
    if algo == "max":
        perm = list(amaxes)
        for _ in range(4):
            rnd.shuffle(perm)
            got = outcome(perm)
            assert _same(got[0], first[0]) and got[1] == first[1], (amaxes, perm)
        if has_nan:  # NaN propagates, as TE's torch.max; TE keeps the previous scale for a non-finite amax
            assert math.isnan(first[0]) and first[1] == 0.25
        else:
            assert first[0] == max(amaxes)
    elif math.isnan(amaxes[-1]):
        assert math.isnan(first[0]) and first[1] == 0.25


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(finite_amax, st.just(math.nan)), max_size=40), st.integers(1, 6))
def test_the_nan_count_follows_the_window(pushes, length):
    h = fl.scaling.AmaxHistory(length)
    r = fl.scaling.DelayedScaling(history_len=length)
    for i, a in enumerate(pushes):
        h.push(a)
        window = pushes[max(0, i + 1 - length): i + 1]
        assert h.has_nan == any(math.isnan(v) for v in window)
        want = math.nan if h.has_nan else max(window)
        assert _same(r.amax_from_history(h), want)
    h.reset()
    assert not h.has_nan and r.amax_from_history(h) is None


def test_quantize_keeps_the_previous_scale_while_a_nan_or_inf_is_in_the_history():
    r = fl.scaling.DelayedScaling(history_len=3)
    h = r.new_state()
    r.quantize(np.array([896.0], np.float32), "e4m3", state=h)
    r.quantize(np.array([896.0], np.float32), "e4m3", state=h)
    assert h.scale == 2.0
    for bad in (math.nan, math.inf):
        h.push(bad)
        q = r.quantize(np.array([10.0], np.float32), "e4m3", state=h)
        assert float(q.scales[0]) == 2.0 and h.scale == 2.0
    q = r.quantize(np.array([10.0], np.float32), "e4m3", state=h)  # the inf is still in the window of 3
    assert float(q.scales[0]) == 2.0
    r.quantize(np.array([10.0], np.float32), "e4m3", state=h)
    assert h.amaxes == (10.0, 10.0, 10.0) and r.next_scale("e4m3", h) == pytest.approx(10.0 / 448, rel=1e-6)


# ----------------------------------------------------------------------------------------------
# 6. explain of NaN and inf
MISLEADING = ("underflow", "tie", "rounds beyond max", "|x| is beyond", "has no zero", "no -0")


@pytest.mark.parametrize("fmt", list_formats(), ids=lambda f: f.name)
def test_explain_says_what_becomes_of_nan_and_inf(fmt):
    for x in (math.nan, -math.nan, math.inf, -math.inf):
        for saturate in (False, True):
            e = fl.explain(x, fmt, saturate=saturate)
            q = fl.quantize(np.float32(x), fmt, saturate=saturate)
            assert e.code == int(fl.encode(np.float32(x), fmt, saturate=saturate))
            assert _same(e.value, float(q)), (x, saturate)
            text = " ".join(e.notes)
            assert not any(w in text for w in MISLEADING), (x, saturate, e.notes)
            assert len(e.notes) <= 1, e.notes
            own = (math.isnan(x) and fmt.has_nan) or (math.isinf(x) and fmt.has_inf and not saturate) or \
                (math.isnan(x) and math.isnan(e.value))
            if own:
                assert e.notes == (), (x, saturate, e.notes)
                continue
            assert e.notes, (x, saturate)
            if not fmt.signed and x < 0:
                assert "unsigned" in text
            elif math.isnan(x):
                assert "no NaN" in text and repr(e.value) in text
            elif math.isnan(e.value):
                assert "no inf" in text and "NaN" in text and "saturate=True" in text
            else:
                assert ("max" in text or "saturates" in text) and repr(e.value) in text
            assert "has no finite code" not in str(e)


def test_the_cli_explains_nan_in_fp4_without_underflow(capsys):
    from fp8lab.cli import main

    assert main(["explain", "nan", "--format", "fp4"]) == 0
    out = capsys.readouterr().out
    assert "underflow" not in out and "has no NaN" in out


# ----------------------------------------------------------------------------------------------
# 7. path contexts per thread
def test_a_path_context_in_one_thread_does_not_reach_another():
    x = np.zeros(3, np.float32)
    default = which_path("encode", x, "e4m3")
    inside, entered, done = {}, threading.Barrier(2, timeout=30), threading.Event()

    def forcing():
        with force_path("bitlevel"), disable_paths("table"):
            inside["forcing"] = (which_path("encode", x, "e4m3"), path_policy())
            entered.wait()  # the other thread looks while this block is open
            done.wait(30)
            inside["forcing_after"] = which_path("encode", x, "e4m3")

    def looking():
        entered.wait()
        inside["looking"] = (which_path("encode", x, "e4m3"), path_policy(), int(fl.encode(np.float32(1.0), "e4m3")))
        with disable_paths("inplace"):
            inside["looking_own"] = path_policy()
        done.set()

    threads = [threading.Thread(target=forcing), threading.Thread(target=looking)]
    with force_path("integer", "bitlevel"):  # the main thread's own block reaches neither
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        assert path_policy() == (frozenset({"integer", "bitlevel"}), frozenset())
    assert inside["forcing"] == ("bitlevel", (frozenset({"bitlevel"}), frozenset({"table"})))
    assert inside["looking"] == (default, (None, frozenset()), 56)
    assert inside["looking_own"] == (None, frozenset({"inplace"}))
    assert inside["forcing_after"] == "bitlevel"  # the other thread's block did not reach back
    assert path_policy() == (None, frozenset())


def test_the_path_contexts_say_they_are_per_thread():
    import fp8lab.codec.paths as paths

    for doc in (paths.__doc__, paths.force_path.__doc__, paths.disable_paths.__doc__):
        assert "thread" in doc
    readme = (ROOT / "README.md").read_text()
    i = readme.index("with force_path(")
    assert "per thread" in readme[i - 2000: i + 2000]


def test_model_configs_take_numpy_bools_and_store_python_bools():
    """ModelConfig's bool fields take numpy bools like every other bool keyword, and keep plain bools."""
    import dataclasses
    import fp8lab as fl
    for flag in ("qkv_bias", "bias", "tie_word_embeddings"):
        for v in (np.True_, np.False_, True, False):
            m = dataclasses.replace(fl.get_model("llama-2-7b"), **{flag: v})
            assert getattr(m, flag) is bool(v)
        with pytest.raises(ValueError, match="True or False"):
            dataclasses.replace(fl.get_model("llama-2-7b"), **{flag: 1})


def test_like_keeps_a_0d_array_0d():
    """blocks.like hands a 0-d numpy result back as a 0-d tensor (np.ascontiguousarray made it 1-d)."""
    torch = pytest.importorskip("torch")
    from fp8lab.scaling.blocks import like
    assert like(np.array(3.0, np.float32), torch.zeros(1)).shape == ()
    assert like(np.ones((2, 3), np.float32).T, torch.zeros(1)).is_contiguous()


def test_quantinfo_of_builds_what_from_dict_builds_field_for_field():
    """QuantInfo.of builds its record without the constructor (it runs for every cast): every field, the mapping's
    keys in order, and an unknown field still refused by the constructor."""
    import dataclasses

    import numpy as np

    from fp8lab.qtensor import QuantInfo

    cases = [((3.0, 0, 0), {}), ((3.0, 1, 2), {"nonfinite_mask": np.array([True, False])}),
             ((0.0, 0, 1), {"amax_used": None, "step": 4}), ((5.0, 0, 0), {"scale_codes": np.zeros(2, np.uint8)})]
    for args, extra in cases:
        got = QuantInfo.of(*args, **extra)
        d = {"amax": float(args[0]), "nonfinite_blocks": args[1], "saturated_blocks": args[2], "overflow": bool(args[2])}
        want = QuantInfo.from_dict({**d, **extra})
        assert got.present == want.present
        for f in dataclasses.fields(QuantInfo):
            a, b = getattr(got, f.name), getattr(want, f.name)
            assert type(a) is type(b) and (np.array_equal(a, b) if isinstance(b, np.ndarray) else a == b), f.name
    with pytest.raises(TypeError):
        QuantInfo.of(1.0, 0, 0, not_a_field=1)
