"""Regressions of the adversarial read (issue 8), each sweeping the class of its bug, not just its example.

Silent wrong answers: stochastic rounding far below the smallest subnormal, zero encoding to a
non-zero code, the table path on float32 subnormals, fnuz without subnormals, NaN through the
accumulator's rounding, float64 beyond float32 in quantize_tensor, formats float32 cannot hold.
Crashes and unclear errors: tensors that require grad, meta tensors, LossScaler edges, flags and
sizes of the wrong type, ml_dtypes arrays keeping their dtype, CLI warnings.
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
import warnings
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import fp8lab as fl
from fp8lab.codec import force_path
from fp8lab.codec.backend import NUMPY, TORCH
from fp8lab.codec.lut import lut_ok
from fp8lab.codec.paths import PATHS, Request
from fp8lab.codec.stochastic import bernoulli_pow2
from fp8lab.gemm import round_mantissa
from fp8lab.registry import list_formats

from .test_codec_paths import CUSTOM, SWEEP

FLOATS = [f for f in SWEEP if f.kind == "float"]


def _paths(op: str, fmt, backend: str, rounding: str = "nearest"):
    req = Request(op, fmt, backend, rounding, False, "cpu", "uint8" if op == "decode" else "float32")
    return [p.name for p in PATHS if p.applies(req) is None and p.name != "meta"]


# ----------------------------------------------------------------------------------------------
# 1. stochastic rounding is unbiased at every magnitude
class _ZeroBits:
    """A generator stand-in whose random integers are all 0 (so R < sig whenever sig > 0)."""

    def integers(self, lo, hi, size, dtype):
        return np.zeros(size, dtype=dtype)


class _OneBits:
    def integers(self, lo, hi, size, dtype):
        return np.full(size, hi - 1, dtype=dtype)


@pytest.mark.parametrize("s", [1, 24, 53, 54, 62, 63, 100, 124, 200])
def test_bernoulli_pow2_is_exact_in_structure_at_every_shift(s):
    sig = np.array([0, 1, min(2**s, 2**53) - 1], np.int64)
    shift = np.full(3, s, np.int64)
    assert bernoulli_pow2(sig, shift, NUMPY, _ZeroBits()).tolist() == [False, True, True]  # all bits zero: R = 0 < sig
    assert not bernoulli_pow2(sig, shift, NUMPY, _OneBits()).any()  # all bits one: R = 2^s - 1 >= sig


@pytest.mark.parametrize("p_log2", [-1, -3, -8, -12])
@pytest.mark.parametrize("s", [10, 60, 64, 70])
def test_bernoulli_pow2_frequency(s, p_log2):
    n = 1 << 18
    sig = np.full(n, 2 ** (s + p_log2) if s + p_log2 <= 53 else 0, np.int64)
    if s + p_log2 > 53:  # sig must stay below 2^53: use the largest, P = sig / 2^s
        sig[:] = 2**53 - 1
    p = float(Fraction(int(sig[0]), 2**s))
    hits = bernoulli_pow2(sig, np.full(n, s, np.int64), NUMPY, np.random.default_rng(s * 100 - p_log2)).sum()
    sd = math.sqrt(n * p * (1 - p)) + 1
    assert abs(hits - n * p) < 6 * sd, (hits, n * p)


@pytest.mark.slow  # a statistical sweep of every binade, up to 4 s per format: make test runs it, test-fast not
@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "fp4", "e2m3", "e3m2", "fp16", "e4m3fnuz", "int8"])
def test_stochastic_rounding_mean_is_x_at_every_measurable_magnitude(fmt, backend):
    """E[SR(x)] = x from well inside the range down to far below the smallest subnormal."""
    f = fl.get_format(fmt)
    n = 1 << 17
    rng = 0
    for k in (0.3, 2, 6, 10, 14):  # x = min_subnormal * 2^-k: P(up) = 2^-k
        x = np.full(n, f.min_subnormal * 2.0**-k, np.float32)
        data = torch.from_numpy(x) if backend == "torch" else x
        q = fl.quantize(data, f, rounding="stochastic", generator=rng)
        q = q.numpy() if backend == "torch" else q
        p = 2.0**-k
        hits = float(np.count_nonzero(q))
        assert abs(hits - n * p) < 6 * math.sqrt(n * p * (1 - p)) + 2, (fmt, k, hits, n * p)
        rng += 1
    for k in (30, 40, 60, 100):  # far below: P(up) < 2^-30, so no hit may appear in 2^17 draws
        tiny = f.min_subnormal * 2.0**-k
        if tiny < 2.0**-149:
            break
        x = np.full(n, tiny, np.float32)
        data = torch.from_numpy(x) if backend == "torch" else x
        q = fl.quantize(data, f, rounding="stochastic", generator=rng)
        assert not np.count_nonzero(q.numpy() if backend == "torch" else q), (fmt, k)
        rng += 1


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "fp4", "bf16"])
def test_the_issues_example_has_almost_no_nonzeros(fmt):
    x = np.full(1 << 20, 2.0**-40, np.float32)
    expected = (1 << 20) * 2.0**-40 / fl.get_format(fmt).min_subnormal
    for data in (x, torch.from_numpy(x)):
        q = fl.quantize(data, fmt, rounding="stochastic", generator=1)
        nz = int(np.count_nonzero(q.numpy() if isinstance(q, torch.Tensor) else q))
        assert nz <= max(10 * expected, 3) if expected < 1e6 else True, (fmt, nz, expected)


# ----------------------------------------------------------------------------------------------
# 3. zero encodes to zero, in every format, on every path and backend
@pytest.mark.parametrize("fmt", FLOATS, ids=lambda f: f.name)
def test_zero_and_negative_zero_encode_to_the_zero_codes(fmt):
    x = np.array([0.0, -0.0], np.float32)
    want = [fmt.zero_input_code, fmt.negative_zero_code]
    for backend, data in (("numpy", x), ("torch", torch.from_numpy(x))):
        for path in _paths("encode", fmt, backend):
            with force_path(path):
                got = fl.encode(data, fmt)
            got = [int(v) for v in (got.tolist() if backend == "torch" else np.asarray(got).tolist())]
            assert got == want, f"{path}/{backend}: {got} != {want}"
    if fmt.has_zero:
        assert fl.decode(np.array([fmt.zero_input_code], fmt.code_dtype), fmt)[0] == 0.0


def test_the_issues_zero_example():
    f = fl.FloatFormat("e8m3_b129", 8, 3, bias=129)
    assert fl.quantize(0.0, f) == 0.0 and fl.encode(0.0, f) == 0


# ----------------------------------------------------------------------------------------------
# 4. the table path is taken only where its index decides the rounding
def test_table_applicability_follows_the_finest_step():
    checked = 0
    for e in range(2, 9):
        for m in range(0, 8):
            for bias in range(2 ** (e - 1) - 1, 150, 3):
                try:
                    f = fl.FloatFormat("t", e, m, bias=bias, special="finite")
                except ValueError:
                    continue
                split = 15 if m == 7 else 16
                assert lut_ok(f, "nearest") == (f.emin - m + 148 >= split), (e, m, bias)
                checked += 1
    assert checked > 300
    assert not lut_ok(fl.FloatFormat("e5m2_b140", 5, 2, bias=140), "nearest")


@pytest.mark.parametrize("fmt", [f for f in CUSTOM if f.mantissa_bits <= 7 and f.min_subnormal < 2.0**-126],
                         ids=lambda f: f.name)
def test_formats_reaching_float32_subnormals_encode_every_subnormal_input_right(fmt):
    a = np.arange(1, 1 << 23, 97, dtype=np.uint32)  # float32 subnormal patterns
    x = np.concatenate([a, a | 0x80000000]).view(np.float32)
    with force_path("bitlevel"):
        want = fl.encode(x, fmt)
    assert np.array_equal(fl.encode(x, fmt), want)  # whatever path the selector takes
    assert np.array_equal(fl.encode(torch.from_numpy(x), fmt).numpy(), want)


# ----------------------------------------------------------------------------------------------
# 5. fnuz without subnormals, and the consistency of the value lists of every format
def test_fnuz_without_subnormals_is_rejected():
    with pytest.raises(ValueError, match="fnuz.*no zero"):
        fl.FloatFormat("x", 4, 3, bias=8, special="fnuz", subnormals=False)


@pytest.mark.parametrize("fmt", [f for f in FLOATS if f.bits <= 12], ids=lambda f: f.name)
def test_values_num_finite_decode_table_and_round_trip_agree(fmt):
    table = fl.decode_table(fmt).astype(np.float64)
    finite = table[np.isfinite(table)]
    assert sorted(set(finite.tolist())) == fmt.values().tolist()
    assert len(set(finite.tolist())) == fmt.num_finite
    nan_codes = [c for c in range(2**fmt.bits) if fmt.is_nan_code(c)]
    assert all(np.isnan(table[c]) for c in nan_codes) and np.isnan(table).sum() == len(nan_codes)
    codes = np.array([c for c in range(2**fmt.bits) if not fmt.is_nan_code(c)], np.int64)
    back = fl.encode(table[codes].astype(np.float32), fmt).astype(np.int64)
    merged = table[codes] == 0  # -0 and +0 may share a code
    assert np.array_equal(back[~merged], codes[~merged])


# ----------------------------------------------------------------------------------------------
# 6. NaN stays NaN through the accumulator's rounding
def test_round_mantissa_keeps_every_nan_a_nan():
    payloads = np.unique(np.concatenate([np.arange(1, 64), 1 << np.arange(23), np.random.default_rng(0).integers(1, 1 << 23, 300)]))
    bits = np.concatenate([0x7F800000 | payloads, 0xFF800000 | payloads]).astype(np.uint32)
    x = torch.from_numpy(bits.view(np.int32).copy()).view(torch.float32)
    for m in range(0, 24):
        for rounding in ("toward_zero", "nearest"):
            y = round_mantissa(x, m, rounding)
            assert torch.isnan(y).all(), (m, rounding)
            assert torch.equal(torch.signbit(y), torch.signbit(x))
    inf = torch.tensor([float("inf"), -float("inf")])
    assert torch.equal(round_mantissa(inf, 4, "nearest"), inf)


# ----------------------------------------------------------------------------------------------
# float32 must hold every value exactly
def test_formats_float32_cannot_hold_are_rejected_and_the_others_are_exact():
    accepted = rejected = 0
    for e in (2, 4, 5, 8):
        for m in (0, 3, 7, 12, 23):
            for bias in (-130, -2, 2 ** (e - 1) - 1, 126, 140, 150, 160, 170):
                try:
                    f = fl.FloatFormat("x", e, m, bias=bias, special="finite" if m == 0 else "ieee",
                                       subnormals=m != 0)
                except ValueError as err:
                    rejected += 1
                    assert "float32" in str(err) or "no finite value" in str(err) or "ieee" in str(err)
                    continue
                accepted += 1
                top = f.max
                assert float(np.float32(top)) == top and f.emin - m >= -149
                smallest = f.min_subnormal
                assert float(np.float32(smallest)) == smallest
                assert float(np.float32(f.min_normal * (1 + f.epsilon))) == f.min_normal * (1 + f.epsilon)
    assert accepted > 40 and rejected > 20


# ----------------------------------------------------------------------------------------------
# 2. float64 beyond float32: right scales or a clear error, never a silent wrong tensor
@pytest.mark.parametrize("recipe,fmt", [("tensor", "e4m3"), ("1x128", "e4m3"), ("128x128", "e4m3"), ("per_token", "e4m3"),
                                        ("mx", "e4m3"), ("mx_rceil", "e4m3"), ("nvfp4", "fp4"), ("int", "int8"),
                                        ("int_asym", "uint8"), ("percentile", "e4m3"), ("1x128_ue8m0", "e4m3")])
@pytest.mark.parametrize("big", [1e40, 1e300])
@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_float64_beyond_float32(recipe, fmt, big, kind):
    x = np.array([[1.0, big, -3.0, 0.5]], np.float64)
    data = torch.from_numpy(x) if kind == "torch" else x
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            q = fl.quantize_tensor(data, fmt, recipe)
        except ValueError as err:
            assert "range" in str(err) or "float32" in str(err)
            return
    y = q.dequantize()
    y = y.numpy() if kind == "torch" else y
    assert y.dtype == np.float64
    tol = {"fp4": 0.25, "int8": 0.01, "uint8": 0.01}.get(fmt, 0.07)
    if recipe != "percentile":  # percentile calibration clips the outlier on purpose
        assert abs(y[0, 1] - big) <= tol * big, (recipe, y)


# ----------------------------------------------------------------------------------------------
# crashes: tensors that require grad, meta tensors
@pytest.mark.parametrize("fmt", [f for f in list_formats()], ids=lambda f: f.name)
def test_tensors_that_require_grad_work_on_every_path_and_rounding(fmt):
    p = torch.nn.Parameter(torch.randn(4, 8))
    for rounding in ("nearest", "toward_zero", "stochastic"):
        q = fl.quantize(p, fmt, rounding=rounding, generator=0)
        assert not q.requires_grad and q.shape == p.shape
        c = fl.encode(p, fmt, rounding=rounding, generator=0)
        assert c.shape == p.shape
        torch.testing.assert_close(fl.quantize(p.detach(), fmt, rounding=rounding, generator=0), q, equal_nan=True,
                                   rtol=0, atol=0)


def test_quantize_tensor_accepts_parameters_and_says_it_cuts_the_graph():
    from fp8lab.scaling import quantize as qmod

    p = torch.nn.Parameter(torch.randn(8, 256))
    qmod._warned_graph_cut = False
    with pytest.warns(UserWarning, match="not differentiable"):
        q = fl.quantize_tensor(p, "e4m3", "1x128")
    for r in ("tensor", "mx", "nvfp4", "int", "per_channel"):
        fmt = {"nvfp4": "fp4", "int": "int8"}.get(r, "e4m3")
        assert fl.quantize_tensor(p, fmt, r).shape == (8, 256)
    with torch.no_grad():
        assert not fl.quantize_tensor(p, "e4m3", "1x128").dequantize().requires_grad
    assert q.codes.dtype == torch.uint8


@pytest.mark.parametrize("fmt", ["e4m3", "bf16", "fp4", "int8", "ue8m0", "fp32"])
def test_meta_tensors_give_shape_only_results(fmt):
    x = torch.empty(3, 5, device="meta")
    c = fl.encode(x, fmt)
    assert c.device.type == "meta" and c.shape == (3, 5)
    assert fl.quantize(x, fmt).device.type == "meta"
    assert fl.decode(c, fmt).shape == (3, 5)
    with pytest.raises(ValueError, match="meta device"):
        fl.quantize_tensor(x, None, "tensor")


# ----------------------------------------------------------------------------------------------
# LossScaler
def test_loss_scaler_follows_gradscaler_down_to_a_zero_scale():
    ours = fl.LossScaler(init_scale=2.0**-140, backoff_factor=0.5)
    theirs = torch.amp.GradScaler("cpu", init_scale=2.0**-140, backoff_factor=0.5)
    w = torch.nn.Parameter(torch.ones(2))
    opt = torch.optim.SGD([w], lr=0.0)
    for _ in range(20):
        theirs.scale(torch.tensor(1.0))
        w.grad = torch.tensor([float("inf"), 1.0])
        theirs.unscale_(opt)
        theirs.step(opt)
        theirs.update()
        ours.update(True)
    assert ours.scale == theirs.get_scale() == 0.0
    g = [torch.tensor([1.0, 0.0])]
    assert ours.unscale_(g) is False  # no ZeroDivisionError: 1/0 is inf, as torch's unscale
    assert torch.isinf(g[0][0]) and torch.isnan(g[0][1])


@pytest.mark.parametrize("good", [4, 4.0, np.float32(4), np.float64(4), np.int64(4)])
def test_loss_scaler_accepts_numpy_scalars(good):
    assert fl.LossScaler(init_scale=good).scale == 4.0


@pytest.mark.parametrize("bad,err", [(1e39, ValueError), (0, ValueError), (-1, ValueError), (float("nan"), ValueError),
                                     (float("inf"), ValueError), ("4", TypeError), (True, TypeError), (None, TypeError)])
def test_loss_scaler_rejects_what_float32_cannot_hold(bad, err):
    with pytest.raises(err, match="init_scale"):
        fl.LossScaler(init_scale=bad)


# ----------------------------------------------------------------------------------------------
# flags are bools, sizes are ints: TypeError for the type, ValueError for the value, everywhere
BOOL_SITES = [
    lambda v: fl.FloatFormat("x", 4, 3, signed=v),
    lambda v: fl.FloatFormat("x", 4, 3, subnormals=v),
    lambda v: fl.IntFormat("x", 8, signed=v),
    lambda v: fl.encode(1.0, "e4m3", saturate=v),
    lambda v: fl.quantize(1.0, "e4m3", saturate=v),
    lambda v: fl.TensorScaling(pow2=v),
    lambda v: fl.AxisScaling(pow2=v),
    lambda v: fl.BlockScaling(pow2=v),
    lambda v: fl.DelayedScaling(pow2=v),
    lambda v: fl.IntScaling(symmetric=v),
    lambda v: fl.PercentileScaling(pow2=v),
]
INT_SITES = [
    (lambda v: fl.FloatFormat("x", v, 3), 9),
    (lambda v: fl.FloatFormat("x", 4, v), 24),
    (lambda v: fl.FloatFormat("x", 4, 3, bias=v), None),
    (lambda v: fl.IntFormat("x", v), 1),
    (lambda v: fl.TensorScaling(margin=v), 2000),
    (lambda v: fl.AxisScaling(margin=v), -2000),
    (lambda v: fl.BlockScaling(margin=v), 300),
    (lambda v: fl.DelayedScaling(history_len=v), 0),
    (lambda v: fl.MXScaling(block_size=v), 0),
    (lambda v: fl.NVFP4Scaling(block_size=v), -1),
    (lambda v: fl.IntScaling(bits=v), 1),
    (lambda v: fl.QTensor(np.zeros((2, 2), np.uint8), np.ones((1, 1), np.float32), "e4m3", block=(v, 2)), 0),
    (lambda v: fl.BlockScaling((v, 128)), 0),
]


@pytest.mark.parametrize("site", range(len(BOOL_SITES)))
@pytest.mark.parametrize("bad", ["no", "yes", 1, 0, None, 1.0])
def test_flags_must_be_booleans(site, bad):
    with pytest.raises(TypeError):
        BOOL_SITES[site](bad)


@pytest.mark.parametrize("site", range(len(INT_SITES)))
@pytest.mark.parametrize("bad", [2.5, "3", True, 3.0])
def test_sizes_must_be_ints(site, bad):
    with pytest.raises(TypeError):
        INT_SITES[site][0](bad)


@pytest.mark.parametrize("site", [i for i, (_, v) in enumerate(INT_SITES) if v is not None])
def test_sizes_out_of_range_are_value_errors(site):
    fn, bad = INT_SITES[site]
    with pytest.raises(ValueError):
        fn(bad)


def test_a_frozen_qtensor_and_its_typed_info():
    q = fl.quantize_tensor(np.ones((2, 256), np.float32), "e4m3", "1x128")
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.block = (1, 1)
    assert q.info.overflow is False and q.info["saturated_blocks"] == 0 and "scale_codes" not in q.info
    t = q.T
    assert t.block == (128, 1) and np.array_equal(t.dequantize(), q.dequantize().T)
    d = fl.quantize_tensor(np.ones(4, np.float32), "e4m3", fl.DelayedScaling())  # first step: no history yet
    assert d.info["amax_used"] is None and d.info["step"] == 0 and "scale_codes" not in d.info
    assert dict(fl.quantize_tensor(np.ones((1, 32), np.float32), "e4m3", "mx").T.info)["scale_codes"].shape == (1, 1)


# ----------------------------------------------------------------------------------------------
# quantize keeps ml_dtypes dtypes; explain and the CLI stay quiet
@pytest.mark.parametrize("dt", [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, np.float16, np.float64])
def test_quantize_returns_the_input_dtype(dt):
    x = np.array([0.3, -1.5, 2.0], np.float32).astype(dt)
    for fmt in ("e5m2", "bf16", "fp4"):
        out = fl.quantize(x, fmt)
        assert out.dtype == np.dtype(dt)
        assert np.array_equal(out.astype(np.float32), fl.quantize(x.astype(np.float32), fmt).astype(dt).astype(np.float32))


def test_explain_and_the_cli_print_no_runtime_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = fl.explain(1e39, "e4m3")
    assert "beyond float32's range" in str(e)
    out = subprocess.run([sys.executable, "-W", "error", "-m", "fp8lab.cli", "explain", "1e39", "--format", "e5m2"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "Warning" not in out.stderr, out.stderr


def test_importing_the_core_imports_no_torch_matplotlib_or_widgets():
    code = ("import sys, fp8lab, fp8lab.cli, fp8lab.interview, fp8lab.scaling.analysis, fp8lab.scaling.mx_analysis; "
            "fp8lab.explain(0.8125, 'e4m3'); "
            "heavy = [m for m in ('torch', 'matplotlib', 'ipywidgets', 'nbgrader') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_numbers_behind_the_figures_need_no_matplotlib():
    code = ("import sys, fp8lab.scaling.analysis as a, fp8lab.scaling.mx_analysis as m, fp8lab.gemm.experiments as e; "
            "import numpy as np; a.window_fractions(np.ones(4, np.float32), 'e4m3'); m.block_max_error([957.0], 'e4m3'); "
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stdout + out.stderr


def test_after_first_use_fp8lab_modules_hold_the_real_torch_and_see_monkeypatches():
    code = ("import sys, types, fp8lab, fp8lab.gemm, fp8lab.scaling, fp8lab.codec.backend as b, fp8lab._optional as o; "
            "before = type(b.torch).__name__; import numpy as np; "
            "fp8lab.quantize(__import__('torch').tensor([0.3]), 'e4m3'); "
            "left = sorted(f'{n}.{k}' for n, m in list(sys.modules.items()) if n.startswith('fp8lab') and m "
            "for k, v in vars(m).items() if isinstance(v, o.LazyModule) and v.__name__ == 'torch'); "
            "import torch; torch.float8_e4m3fn_marker = 1; "
            "print(before, type(b.torch).__name__, b.torch is torch, b.torch.float8_e4m3fn_marker, left)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["LazyModule", "module", "True", "1", "[]"], out.stdout


_BLOCK_ENTRY = st.one_of(st.integers(-3, 300), st.booleans(), st.integers(1, 9).map(np.int64),
                         st.floats(0.5, 4.0), st.just("2"))


@settings(max_examples=300, deadline=None)
@given(entries=st.lists(_BLOCK_ENTRY, max_size=4), as_tuple=st.booleans(), allow_empty=st.booleans())
def test_check_block_shortcut_agrees_with_its_definition(entries, as_tuple, allow_empty):
    """check_block returns an already-valid tuple of ints as it is: for any entries (ints of any sign, bools,
    numpy ints, floats, strings), as a tuple or a list, it gives exactly what its definition says."""
    from fp8lab.validation import check_block

    block = tuple(entries) if as_tuple else list(entries)
    ints = all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in entries)
    if not ints:
        with pytest.raises(TypeError, match="tuple of positive ints"):
            check_block(block, allow_empty=allow_empty)
    elif (not entries and not allow_empty) or any(v < 1 for v in entries):
        with pytest.raises(ValueError, match="non-empty tuple of positive ints"):
            check_block(block, allow_empty=allow_empty)
    else:
        got = check_block(block, allow_empty=allow_empty)
        assert got == tuple(int(v) for v in entries) and all(type(v) is int for v in got) and type(got) is tuple
