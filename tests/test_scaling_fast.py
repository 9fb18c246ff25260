"""quantize_tensor's torch fast path (fp8lab.scaling.fast) gives the general path's QTensor, field by field.

The oracle is the general path itself (block_stats -> compute_scales -> finalize through the codec),
which the rest of the scaling tests check against numpy, ml_dtypes and hand-computed scales.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import fp8lab as fl
from fp8lab.codec import force_path
from fp8lab.scaling import AxisScaling, BlockScaling, DelayedScaling, MXScaling, TensorScaling, quantize_tensor
from fp8lab.scaling.fast import FAST_RECIPES, quantize_fast

FORMATS = ["e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz"]

RECIPES = {
    "tensor": TensorScaling(),
    "tensor_pow2": TensorScaling(pow2=True),
    "tensor_margin": TensorScaling(margin=2),
    "row": AxisScaling(axis=-1),
    "col_pow2": AxisScaling(axis=0, pow2=True),
    "row_pow2_margin": AxisScaling(pow2=True, margin=3),
    "1x128": BlockScaling((1, 128)),
    "128x128": BlockScaling((128, 128)),
    "1x128_pow2": BlockScaling((1, 128), pow2=True),
    "mx_floor": MXScaling(),
    "mx_rceil": MXScaling(scale_rounding="rceil"),
    "mx_rceil_axis0": MXScaling(scale_rounding="rceil", axis=0),
    "mx_ceil_axis0": MXScaling(scale_rounding="ceil", axis=0),
    "mx_even": MXScaling(scale_rounding="even"),
}


def _general(x, fmt, recipe, state=None):
    """quantize_tensor with the fast paths switched off (the general path forced in the scaling path table)."""
    with fl.force_scaling_path("general"):
        return quantize_tensor(x, fmt, recipe, state=state)


def _assert_same(q, ref):
    assert q.codes.dtype == ref.codes.dtype and torch.equal(q.codes, ref.codes)
    assert q.scales.dtype == ref.scales.dtype and torch.equal(q.scales, ref.scales)
    assert (q.format, q.block, q.scale_format, q.tensor_scale, q.dtype) == \
        (ref.format, ref.block, ref.scale_format, ref.tensor_scale, ref.dtype)
    assert q.scaling == ref.scaling and q.zero_point is None and ref.zero_point is None
    assert q.info.present == ref.info.present
    for k in ref.info.present:
        a, b = q.info[k], ref.info[k]
        if isinstance(b, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b), k
        else:
            assert type(a) is type(b) and a == b, (k, a, b)


def _tensors():
    g = torch.Generator().manual_seed(0)
    base = torch.randn(256, 384, generator=g)
    yield "randn", base
    yield "tiny", base * 1e-30            # scales near float32's smallest normal
    yield "huge", base * 1e30
    yield "heavy", base ** 5              # a wide spread within each block: subnormal codes
    z = base.clone()
    z[:128] = 0.0
    z[:, :64] = -0.0
    yield "zero_blocks", z
    yield "all_zero", torch.zeros(256, 384)
    yield "constant", torch.full((256, 384), -3.0)
    sub = torch.from_numpy(np.random.default_rng(1).integers(1, 1 << 23, (256, 384)).astype(np.uint32).view(np.float32))
    yield "f32_subnormal", sub
    yield "transposed", torch.randn(384, 256, generator=g).t()
    yield "strided_rows", torch.randn(512, 384, generator=g)[::2]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("rname", list(RECIPES))
def test_the_fast_path_gives_the_general_qtensor(rname, fmt):
    recipe = RECIPES[rname]
    served = 0
    for label, x in _tensors():
        q = quantize_fast(x, fl.get_format(fmt), recipe)
        ref = _general(x, fmt, recipe)
        assert q is not None, f"{label}: every finite, divisible float32 tensor takes the fast path"
        _assert_same(q, ref)
        assert torch.equal(quantize_tensor(x, fmt, recipe).codes, ref.codes)  # and quantize_tensor uses it
        served += 1
    assert served == 10


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_saturating_blocks_are_clamped_as_the_codec_clamps_them(fmt):
    """Delayed scaling lags amax growth: the history's scale makes later tensors saturate."""
    recipe = DelayedScaling(history_len=4)
    h_fast, h_gen = recipe.new_state(), recipe.new_state()
    g = torch.Generator().manual_seed(3)
    saw_saturation = False
    for step, gain in enumerate([1.0, 10.0, 1e3, 1e-2, 1e6, 1.0, 0.0, 5.0]):
        x = torch.randn(64, 128, generator=g) * gain
        q = quantize_fast(x, fl.get_format(fmt), recipe, state=h_fast)
        ref = _general(x, fmt, recipe, state=h_gen)
        _assert_same(q, ref)
        assert (h_fast.amaxes, h_fast.scale, h_fast.steps) == (h_gen.amaxes, h_gen.scale, h_gen.steps), step
        saw_saturation |= ref.info["saturated_blocks"] > 0
    assert saw_saturation


def test_delayed_scaling_without_a_state_advances_the_recipe_s_own_history_once():
    fast, gen = DelayedScaling(), DelayedScaling()
    for gain in (1.0, 100.0, 3.0):
        x = torch.randn(32, 64) * gain
        _assert_same(quantize_tensor(x, "e4m3", fast), _general(x, "e4m3", gen))
    assert fast.history == gen.history and fast.scale == gen.scale and len(fast.history) == 3


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
@pytest.mark.parametrize("rname", ["tensor", "row", "mx_floor", "delayed"])
def test_non_finite_tensors_take_the_general_path_before_any_state_moves(rname, bad):
    recipe = DelayedScaling() if rname == "delayed" else RECIPES[rname]
    x = torch.randn(64, 128)
    x[5, 7] = bad
    h = recipe.new_state() if rname == "delayed" else None
    assert quantize_fast(x, fl.get_format("e4m3"), recipe, state=h) is None
    if h is not None:
        assert h.steps == 0 and h.amaxes == () and h.scale == 1.0
    q = quantize_tensor(x, "e4m3", recipe, state=h)  # the general path reports the non-finite block
    assert q.info["nonfinite_blocks"] >= 1


def test_what_the_fast_path_leaves_to_the_general_path():
    e4 = fl.get_format("e4m3")
    x = torch.randn(8, 128)
    assert quantize_fast(torch.randn(8, 100), e4, BlockScaling((1, 128))) is None    # a partial block: padding
    assert quantize_fast(x.double(), e4, TensorScaling()) is None                    # float64 source
    assert quantize_fast(x.half(), e4, TensorScaling()) is None
    assert quantize_fast(x, fl.get_format("fp4"), MXScaling()) is None               # no torch cast
    assert quantize_fast(x, fl.get_format("int8"), TensorScaling()) is None
    assert quantize_fast(x, fl.get_format("bf16"), TensorScaling()) is None
    assert quantize_fast(x, e4, fl.scaling.PercentileScaling()) is None              # its own statistic
    assert quantize_fast(x, e4, fl.scaling.IntScaling()) is None
    assert quantize_fast(torch.zeros(0, 128), e4, TensorScaling()) is None
    assert quantize_fast(torch.tensor(3.0), e4, TensorScaling()) is None
    assert quantize_fast(x.numpy(), e4, TensorScaling()) is None
    assert quantize_fast(torch.empty(8, 128, device="meta"), e4, TensorScaling()) is None

    class MyScaling(TensorScaling):  # a subclass may change a rule: not served
        pass
    assert quantize_fast(x, e4, MyScaling()) is None
    with force_path("bitlevel"):  # forcing a codec path turns the fast path off
        assert quantize_fast(x, e4, TensorScaling()) is None
        q = quantize_tensor(x, "e4m3", TensorScaling())
    assert torch.equal(q.codes, quantize_fast(x, e4, TensorScaling()).codes)
    assert set(FAST_RECIPES) == {TensorScaling, AxisScaling, BlockScaling, MXScaling, DelayedScaling}


@settings(max_examples=60, deadline=None)
@given(rows=st.sampled_from([1, 2, 32, 96]), cols=st.sampled_from([32, 128, 256]),
       log_gain=st.integers(-40, 40), rname=st.sampled_from(list(RECIPES)), fmt=st.sampled_from(FORMATS),
       seed=st.integers(0, 2**16))
def test_fast_equals_general_on_random_shapes_and_magnitudes(rows, cols, log_gain, rname, fmt, seed):
    recipe = RECIPES[rname]
    x = torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed)) * float(2.0 ** log_gain)
    q = quantize_fast(x, fl.get_format(fmt), recipe)
    ref = _general(x, fmt, recipe)
    if q is None:  # only partial blocks (rows not a multiple of a 128-row or 32-row block) fall back
        assert any(n % b for n, b in zip(x.shape, recipe.block_for(tuple(x.shape))))
        return
    _assert_same(q, ref)


_F32_MAX = float(np.finfo(np.float32).max)


def _ceil_log2(x: Fraction) -> int:
    """The smallest k with 2^k >= x > 0, by exact comparison."""
    k = x.numerator.bit_length() - x.denominator.bit_length()
    while Fraction(2) ** k < x:
        k += 1
    while Fraction(2) ** (k - 1) >= x:
        k -= 1
    return k


def _floor_log2(x: Fraction) -> int:
    """The largest k with 2^k <= x, x > 0, by exact comparison."""
    k = _ceil_log2(x)
    return k if Fraction(2) ** k == x else k - 1


def _smallest_float32_at_least(t: float) -> np.float32:
    """The smallest float32 >= t (0 < t <= float32's max), walking float32 bit patterns with exact comparisons."""
    bits = int(np.float32(t).view(np.uint32))
    val = lambda b: Fraction(float(np.uint32(b).view(np.float32)))  # noqa: E731
    while val(bits) < Fraction(t):
        bits += 1
    while bits > 0 and val(bits - 1) >= Fraction(t):
        bits -= 1
    return np.uint32(bits).view(np.float32)


def _reference_float_scale(a: float, fmt_max: float, margin: int, pow2: bool) -> np.float32:
    """One scale from float_scales' definition, element by element in exact arithmetic (an independent oracle).

    s = amax * 2^margin / max in float64 (the library's arithmetic); 1 for an amax that is zero or NaN;
    an error for a finite s beyond float32's max (or 2^127 with pow2); then the smallest power of two
    >= s, its exponent clipped to E8M0's -127..127 (pow2), or the smallest float32 >= s once s is clipped
    to [smallest normal, max]. An infinite s (amax inf) gives float32's max, or 1 with pow2 (as numpy's
    frexp reads inf).
    """
    zero = not a > 0
    with np.errstate(over="ignore"):
        s = float(np.float64(1.0 if zero else a) * (2.0 ** margin) / fmt_max)
    if math.isfinite(s) and s > (2.0 ** 127 if pow2 else _F32_MAX):
        raise ValueError("beyond the scale's range")
    if zero:
        return np.float32(1.0)
    if pow2:
        k = 0 if s == math.inf else min(max(_ceil_log2(Fraction(s)), -127), 127)
        return np.float32(2.0 ** k)
    return _smallest_float32_at_least(min(max(s, float(np.finfo(np.float32).tiny)), _F32_MAX))


def _reference_float_scales(amax, fmt_max, margin, pow2):
    amax = np.asarray(amax, dtype=np.float64)
    return np.array([_reference_float_scale(float(v), fmt_max, margin, pow2) for v in amax.reshape(-1)],
                    np.float32).reshape(amax.shape)


def test_float_scales_give_the_definition_s_bits_and_errors():
    """Single scales and arrays with and without zero blocks against the definition, raising alike."""
    from fp8lab.scaling.scales import float_scales
    rng = np.random.default_rng(5)
    special = [0.0, -0.0, np.nan, np.inf, -1.0, 1e-45, 1e-40, 1.17e-38, 3e38, 3.4e38, 1e300, 448.0, 447.9999, 57344.0]
    magnitudes = np.abs(rng.standard_normal(200)) * 10.0 ** rng.integers(-45, 40, 200)
    patterns = rng.integers(1, 2**31 - 2**23, 200).astype(np.uint32).view(np.float32).astype(np.float64)
    values = np.concatenate([special, magnitudes, patterns])
    checked = raised = 0
    for fmt_max in (448.0, 57344.0, 6.0):
        for margin in (0, 1, -3, 140, -140):
            for pow2 in (False, True):
                cases = [values[i:i + 1] for i in range(len(values))]
                cases += [rng.choice(values, size=int(rng.integers(2, 9))) for _ in range(30)]
                for a in cases:
                    try:
                        want = _reference_float_scales(a, fmt_max, margin, pow2)
                    except ValueError:
                        with pytest.raises(ValueError), np.errstate(over="ignore"):
                            float_scales(a, fmt_max, margin=margin, pow2=pow2)
                        raised += 1
                        continue
                    with np.errstate(over="ignore"):  # amax 1e300 with margin 140 overflows float64 on the way
                        got = float_scales(a, fmt_max, margin=margin, pow2=pow2)
                    assert got.dtype == np.float32 and got.shape == want.shape
                    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (a, fmt_max, margin, pow2)
                    checked += 1
    assert checked > 10_000 and raised > 100


def _reference_mx_exponent(a: float, fmt, scale_rounding: str) -> int:
    """One MX scale exponent from the rules of SCALE_ROUNDINGS, in exact arithmetic (an independent oracle).

    floor: floor(log2 amax) - emax_elem; ceil: the smallest k with 2^k >= amax / max (the quotient in
    float64); rceil: the smallest k with 2^k >= float32(amax) * float32(1/max) (float32 product); even:
    float32(amax) rounded half up to the element's mantissa width, then the floor rule. An amax that is
    zero or NaN gives -127; beyond float32, amax reads as float32's inf, which stands for 2^128 in the
    bit rules (rceil, even). An infinite amax (which quantize_tensor never passes: it takes amax over
    finite values) follows numpy's frexp(inf) = (inf, 0) in floor and ceil. The result is clipped to
    E8M0's -127..127.
    """
    from fp8lab.scaling.mx import emax_elem
    if not a > 0:
        return -127
    emax = emax_elem(fmt)
    if scale_rounding == "floor":
        k = (-1 if a == math.inf else _floor_log2(Fraction(a))) - emax
    elif scale_rounding == "ceil":
        k = 0 if a == math.inf else _ceil_log2(Fraction(a / float(fmt.max)))
    elif scale_rounding == "rceil":
        with np.errstate(over="ignore"):
            d = float(np.float32(a) * np.float32(1.0 / float(fmt.max)))
        k = 128 if d == math.inf else (-127 if d == 0 else _ceil_log2(Fraction(d)))
    else:
        with np.errstate(over="ignore"):
            a32 = float(np.float32(a))
        if a32 == math.inf:
            k = 128 - emax
        elif a32 == 0:
            k = -127
        else:
            x = Fraction(a32)
            ulp = Fraction(2) ** (_floor_log2(x) - fmt.mantissa_bits)
            r = math.floor(x / ulp + Fraction(1, 2)) * ulp  # half up, at the element's mantissa width
            k = _floor_log2(r) - emax
    return min(max(k, -127), 127)


def _reference_mx_exponents(amax, fmt, scale_rounding):
    amax = np.asarray(amax, dtype=np.float64)
    return np.array([_reference_mx_exponent(float(v), fmt, scale_rounding) for v in amax.reshape(-1)],
                    np.int64).reshape(amax.shape)


def _amax_sweep():
    """Every float32 exponent with edge mantissas (around the subnormal rounding point too), zeros, NaN, float64 extremes."""
    mants = np.array([0, 1, 0x3FFFFF, 0x400000, 0x400001, 0x7FFFFE, 0x7FFFFF, 0x123456], np.uint32)
    exps = np.arange(0, 255, dtype=np.uint32)
    f32 = ((exps[:, None] << 23) | mants[None, :]).reshape(-1).view(np.float32).astype(np.float64)
    extra = np.array([0.0, -0.0, np.nan, np.inf, 1e-50, 1e-300, 3.5e38, 1e300, 448.0, 447.99, 57344.0, 6.0])
    return np.concatenate([f32, extra])


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "fp4", "fp6_e2m3", "fp6_e3m2"])
@pytest.mark.parametrize("rounding", ["floor", "ceil", "rceil", "even"])
def test_mx_scale_exponents_and_scales_follow_the_rules(fmt, rounding):
    from fp8lab.scaling.mx import mx_scale_exponents
    f = fl.get_format(fmt)
    amax = _amax_sweep()
    for a in (amax, amax[amax > 0], amax[:1], amax.reshape(-1, 4)[:40]):  # with and without zero/NaN blocks
        with np.errstate(over="ignore", invalid="ignore"):
            want = _reference_mx_exponents(a, f, rounding)
            got = mx_scale_exponents(a, f, rounding)
        assert got.dtype == want.dtype and np.array_equal(got, want)
    a = np.ldexp(1.0, np.arange(-149, 128)) * 1.5  # amaxes whose scales span the E8M0 range
    a = a[a < 3.4e38]
    ss = MXScaling(scale_rounding=rounding).compute_scales(a, f)
    k = mx_scale_exponents(a, f, rounding)
    assert k.min() == -127 and k.max() >= 100
    want_scales = np.ldexp(np.float32(1.0), k.astype(np.int32)).astype(np.float32)
    assert ss.scales.dtype == np.float32 and np.array_equal(ss.scales.view(np.uint32), want_scales.view(np.uint32))
    assert np.array_equal(ss.info["scale_codes"], fl.encode(want_scales, "e8m0"))


def test_plans_are_kept_per_recipe_value_shape_and_layout():
    """The cached block layout belongs to one recipe value, shape and memory layout: recipes of one class that
    differ only in a field, and a matrix and its transpose, alternate on one shape and each matches the general path."""
    e4 = fl.get_format("e4m3")
    x = torch.randn(128, 256, generator=torch.Generator().manual_seed(3)) * 7
    recipes = [MXScaling(), MXScaling(block_size=16), MXScaling(axis=0), MXScaling(scale_rounding="rceil"),
               MXScaling(scale_rounding="rceil", axis=0), AxisScaling(), AxisScaling(axis=0),
               BlockScaling((1, 128)), BlockScaling((32, 32)), TensorScaling(), TensorScaling(pow2=True)]
    for _ in range(2):
        for recipe in recipes:
            for src in (x, x.t()):
                _assert_same(quantize_fast(src, e4, recipe), _general(src, "e4m3", recipe))


def test_the_cast_choice_follows_the_codec_paths_in_effect_after_being_cached():
    """The fast path caches which cast serves a format per state of the forced and disabled codec paths:
    used once normally, it still steps aside inside force_path/disable_paths, and serves again after."""
    e4, x = fl.get_format("e4m3"), torch.randn(8, 128)
    assert quantize_fast(x, e4, TensorScaling()) is not None
    with force_path("bitlevel"):
        assert quantize_fast(x, e4, TensorScaling()) is None
    with fl.codec.disable_paths("torch_cast"):
        assert quantize_fast(x, e4, TensorScaling()) is None
    assert quantize_fast(x, e4, TensorScaling()) is not None


def test_the_trusted_construction_sets_every_field_as_the_constructor_does():
    """QTensor._trusted (the fast path's) against the checking constructor, field by field over dataclasses.fields,
    so that a field added later cannot be left out of it."""
    import dataclasses
    from fp8lab.qtensor import QTensor
    x = torch.randn(64, 96)
    for recipe in (TensorScaling(), AxisScaling(pow2=True), MXScaling(), BlockScaling((32, 32))):
        q = quantize_fast(x, fl.get_format("e4m3"), recipe)
        ref = QTensor(q.codes, q.scales, q.format, scaling=q.scaling, block=q.block, scale_format=q.scale_format,
                      tensor_scale=q.tensor_scale, info=dict(q.info), dtype=q.dtype)
        for f in dataclasses.fields(QTensor):
            a, b = getattr(q, f.name), getattr(ref, f.name)
            if f.name == "info":
                assert a.present == b.present and all(np.array_equal(a[k], b[k]) for k in b.present)
            elif torch.is_tensor(b):
                assert torch.equal(a, b), f.name
            else:
                assert a == b, f.name


@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("transposed", [False, True])
def test_the_fused_mx_cast_gives_the_values_and_dequantized_values_of_its_qtensor(axis, transposed):
    """MX with rceil scales fused in C: the QTensor is the general path's, and the values it hands over (decoded,
    dequantized, laid out contiguously for a transposed input) are q.values() and q.dequantize()."""
    from fp8lab.codec import ckernels
    from fp8lab.scaling.fast import quantize_fast_values
    if not ckernels.available():
        pytest.skip(ckernels.reason())
    g = torch.Generator().manual_seed(5)
    x = torch.randn(64, 96, generator=g) * torch.exp2(torch.randint(-60, 40, (64, 96), generator=g).float())
    x[:, :32] = 0.0  # all-zero blocks get 2^-127
    src = x.t() if transposed else x
    recipe, e4 = MXScaling(scale_rounding="rceil", axis=axis), fl.get_format("e4m3")
    ref = _general(src, "e4m3", recipe)
    for deq in (False, True):
        for contiguous in (False, True):
            q, v = quantize_fast_values(src, e4, recipe, dequantize=deq, contiguous=contiguous)
            _assert_same(q, ref)
            want = q.dequantize() if deq else q.values()
            assert torch.equal(v.view(torch.int32), want.view(torch.int32))
            assert v.is_contiguous() == (contiguous or not transposed)


def test_a_fused_scale_out_of_range_takes_the_general_path_and_its_error():
    """A scale beyond 2^127 or float32's max (a huge margin): the fused kernel steps aside and quantize_tensor says why."""
    x = torch.full((4, 64), 1e30)
    with pytest.raises(ValueError, match="beyond float32's range"):
        quantize_tensor(x, "e4m3", AxisScaling(pow2=True, margin=120))
    with pytest.raises(ValueError, match="2\\^127"):  # within float32, beyond the largest power of two UE8M0 holds
        quantize_tensor(torch.full((4, 64), 1e38), "e4m3", AxisScaling(pow2=True, margin=10))
    assert quantize_fast(x, fl.get_format("e4m3"), AxisScaling(pow2=True, margin=120)) is None
    for recipe in (TensorScaling(margin=120), AxisScaling(margin=120), BlockScaling((1, 32), margin=120)):
        # float32 scales (the fused kernel's rule 2): beyond float32's max, the general path says so
        assert fl.which_scaling_path(x, "e4m3", recipe) == "fused_band"
        assert quantize_fast(x, fl.get_format("e4m3"), recipe) is None
        with pytest.raises(ValueError, match="beyond float32's range"):
            quantize_tensor(x, "e4m3", recipe)


@pytest.mark.parametrize("rname", ["tensor", "row", "1x128_pow2", "mx_floor", "mx_rceil", "delayed"])
@pytest.mark.parametrize("path", ["fused_band", "ckernel", "torch", "general"])
def test_counted_flushes_are_the_separate_counts_on_every_path(rname, path):
    """quantize_tensor(count_flushed=True): info.nonzero and info.flushed are flush_counts(x, q) whichever path serves
    the call (counted in the C cast's own walk on the fused paths, afterwards elsewhere), with zeros, subnormal-bound
    values and a transposed input; without the flag the mapping has no such keys."""
    from fp8lab.scaling.metrics import flush_counts

    recipe = DelayedScaling() if rname == "delayed" else RECIPES[rname]
    g = torch.Generator().manual_seed(3)
    base = torch.randn(64, 256, generator=g) * torch.exp2(torch.randint(-40, 6, (64, 256), generator=g).float())
    base[::5] = 0.0
    for x in (base, base.t()):
        for keep in (None, "values"):
            with fl.force_scaling_path(path):
                q = quantize_tensor(x, "e4m3", recipe, keep_values=keep, count_flushed=True)
            assert (q.info.nonzero, q.info.flushed) == flush_counts(x, q) and q.info.flushed > 0
            assert "flushed" in q.info and "flushed" not in quantize_tensor(x, "e4m3", RECIPES["tensor"]).info
    q = quantize_tensor(base.numpy(), "e4m3", RECIPES["tensor"], count_flushed=True)
    assert (q.info.nonzero, q.info.flushed) == flush_counts(base.numpy(), q)
